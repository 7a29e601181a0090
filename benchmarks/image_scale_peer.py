#!/usr/bin/env python
"""ResizeArea, ScaleAndTranslate and ScaleAndTranslateGrad: aioflow's NumPy kernels beside
TensorFlow 2.21's CPU kernels, on the same inputs, in one process.

Workloads (float32 NHWC, batch 1, 3 channels, values 0..255):
  area_down2       ResizeArea 512x512 -> 256x256
  area_odd         ResizeArea 512x512 -> 300x200
  area_up          ResizeArea 256x256 -> 512x512
  lanczos3_aa      ScaleAndTranslate lanczos3, antialias, 512x512 -> 224x224
  triangle_aa      ScaleAndTranslate triangle (tf.image.resize bilinear, antialias), 512 -> 256
  keyscubic_up     ScaleAndTranslate keyscubic 256x256 -> 512x512
  lanczos3_grad    ScaleAndTranslateGrad of lanczos3_aa (224 -> 512)
aioflow's kernel is called directly (its compute, as the executor's pool thread would).
TF's runs as tf.raw_ops eagerly with one intra-op thread (its CPU kernels for these ops
run on one thread) in a child process of `--tf-python`, a Python that has tensorflow-cpu
(TensorFlow is never a dependency). The peers alternate (ABAB), `--reps` rounds of
`--runs` calls per workload; each figure is the median ms per call, wall and process CPU
("cpu": every thread's, steadier on a shared machine). Prints one JSON object: per
workload the medians and aioflow / TF.

Usage: python benchmarks/image_scale_peer.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

import numpy as np
from peer_timing import measure, summarize

F32 = np.float32


def workloads() -> dict:
    rng = np.random.default_rng(0)
    big = rng.integers(0, 256, (1, 512, 512, 3)).astype(F32)
    small = rng.integers(0, 256, (1, 256, 256, 3)).astype(F32)
    grads = rng.uniform(-1, 1, (1, 224, 224, 3)).astype(F32)

    def st(img, size, kernel, antialias=True):
        scale = F32([size[0] / img.shape[1], size[1] / img.shape[2]])
        return ("ScaleAndTranslate", [img, np.int32(size), scale, F32([0, 0])],
                {"kernel_type": kernel, "antialias": antialias})

    return {
        "area_down2": ("ResizeArea", [big, np.int32([256, 256])], {}),
        "area_odd": ("ResizeArea", [big, np.int32([300, 200])], {}),
        "area_up": ("ResizeArea", [small, np.int32([512, 512])], {}),
        "lanczos3_aa": st(big, [224, 224], "lanczos3"),
        "triangle_aa": st(big, [256, 256], "triangle"),
        "keyscubic_up": st(small, [512, 512], "keyscubic"),
        "lanczos3_grad": ("ScaleAndTranslateGrad",
                          [grads, big, F32([224 / 512, 224 / 512]), F32([0, 0])],
                          {"kernel_type": "lanczos3", "antialias": True}),
    }


def child_tf(runs: int) -> tuple[dict, dict]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    fns = {}
    for name, (op, inputs, attrs) in workloads().items():
        args = {arg.name: tf.constant(v)
                for arg, v in zip(op_def_registry.get(op).input_arg, inputs, strict=True)}
        raw = getattr(tf.raw_ops, op)
        fns[name] = lambda f=raw, a=args, k=attrs: f(**a, **k).numpy()
    cpu = {}
    return measure(fns, runs, cpu), cpu


class _Construction:
    """What a kernel reads while it is built: its attrs (defaults where absent)."""

    def __init__(self, attrs: dict):
        self.attrs, self.name, self.op_type = attrs, "bench", ""

    def get_attr(self, name, default=None):
        return self.attrs.get(name, default)


def aioflow_fns() -> dict:
    from elementwise_peer import _wait_compiled

    from aioflow.kernels.image import resize_area_kernels as kernels

    _wait_compiled("aioflow.kernels.image.resize_area_jit")
    classes = {"ResizeArea": kernels.ResizeAreaOp,
               "ScaleAndTranslate": kernels.ScaleAndTranslateOp,
               "ScaleAndTranslateGrad": kernels.ScaleAndTranslateGradOp}
    fns = {}
    for name, (op, inputs, attrs) in workloads().items():
        kernel = classes[op](_Construction(attrs))
        fns[name] = lambda k=kernel, i=inputs: k.compute(None, i)
    return fns


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tf-python", required=False)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_tf(args.runs)))
        return
    fns = aioflow_fns()
    times = {name: {"aioflow": [], "tf": []} for name in fns}
    cpu_times = {name: {"aioflow": [], "tf": []} for name in fns}
    load_before = os.getloadavg()[0]
    for _ in range(args.reps):
        cpu = {}
        for name, t in measure(fns, args.runs, cpu).items():
            times[name]["aioflow"] += t
            cpu_times[name]["aioflow"] += cpu[name]
        if args.tf_python:
            out = subprocess.run([args.tf_python, __file__, "--child", "--runs", str(args.runs)],
                                 capture_output=True, text=True, check=True)
            wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
            for name, t in wall.items():
                times[name]["tf"] += t
                cpu_times[name]["tf"] += cpu[name]
    result = summarize(times)
    for name, cpu in summarize(cpu_times).items():  # process CPU ms per call, all threads
        result[name]["cpu"] = cpu
    result["load"] = [load_before, os.getloadavg()[0]]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
