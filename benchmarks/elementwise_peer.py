#!/usr/bin/env python
"""Large element-wise kernels (Relu, Relu6, the residual AddV2) and Pad against
TensorFlow's, at ResNet50 and MobileNetV2 1.0 (224x224) shapes, batch 1 and 8; prints one
JSON object.

As benchmarks/grad_ops.py times the gradient kernels (its timing helper is reused): for
each case the median time of aioflow's kernel (its `compute`, called directly in this
process, under the host memory policy a session applies) and of TF 2.21's same raw op (a
`tf.compat.v1.Session` running only that op, its inputs read from ref variables, in a
worker process under TF's Python, TF's defaults: oneDNN on, every core), interleaved
A B A B; the ratio aioflow / TF of the medians, of the fastest calls, and of the process
CPU seconds per call (all threads: steadier than the wall clock on a loaded machine).

Usage: python benchmarks/elementwise_peer.py [--quick] [--only substring] [--batches 1,8]
           [--tf-python /work/tfvenv/bin/python] [--rounds N] [--intra-op N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from conv_ops import blas_info
from grad_ops import time_stats

M = "mobilenetv2"
R = "resnet50"
_STEM7 = [[0, 0], [3, 3], [3, 3], [0, 0]]
_POOL1 = [[0, 0], [1, 1], [1, 1], [0, 0]]
_S2 = [[0, 0], [0, 1], [0, 1], [0, 0]]

# (name, op, inputs, attrs): an input is a shape (B: the batch) or ("const", value).
CASES = [
    (f"{R}/relu_56x256", "Relu", [("B", 56, 56, 256)], {}),
    (f"{R}/relu_28x512", "Relu", [("B", 28, 28, 512)], {}),
    (f"{R}/relu_14x1024", "Relu", [("B", 14, 14, 1024)], {}),
    (f"{R}/relu_7x2048", "Relu", [("B", 7, 7, 2048)], {}),
    (f"{R}/add_56x256", "AddV2", [("B", 56, 56, 256), ("B", 56, 56, 256)], {}),
    (f"{R}/add_14x1024", "AddV2", [("B", 14, 14, 1024), ("B", 14, 14, 1024)], {}),
    (f"{M}/relu6_112x96", "Relu6", [("B", 112, 112, 96)], {}),
    (f"{M}/relu6_56x144", "Relu6", [("B", 56, 56, 144)], {}),
    (f"{R}/pad_stem_224x3", "Pad", [("B", 224, 224, 3), ("const", _STEM7)], {}),
    (f"{R}/pad_pool1_112x64", "Pad", [("B", 112, 112, 64), ("const", _POOL1)], {}),
    (f"{M}/pad_stem_224x3", "Pad", [("B", 224, 224, 3), ("const", _S2)], {}),
    (f"{M}/pad_112x96", "Pad", [("B", 112, 112, 96), ("const", _S2)], {}),
    (f"{M}/pad_56x144", "Pad", [("B", 56, 56, 144), ("const", _S2)], {}),
    (f"{M}/pad_14x576", "Pad", [("B", 14, 14, 576), ("const", _S2)], {}),
]
_ARG_NAMES = {"Relu": ["features"], "Relu6": ["features"], "AddV2": ["x", "y"],
              "Pad": ["input", "paddings"]}


def make_inputs(specs, batch: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        if spec[0] == "const":
            out.append(np.array(spec[1], np.int32))
            continue
        dims = [batch if d == "B" else d for d in spec]
        out.append((rng.standard_normal(dims) * 4).astype(np.float32))
    return out


def tf_worker() -> None:
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    sessions = {}
    for line in sys.stdin:
        req = json.loads(line)
        key = (req["name"], req["batch"])
        if key not in sessions:
            g = tf.Graph()
            with g.as_default():
                values = make_inputs(req["specs"], req["batch"])
                args = [tf.constant(v) if v.dtype == np.int32 else
                        tf1.Variable(v, use_resource=False, name=f"in{i}")
                        for i, v in enumerate(values)]
                out = getattr(tf.raw_ops, req["op"])(
                    **dict(zip(_ARG_NAMES[req["op"]], args, strict=True)), **req["attrs"])
                sess = tf1.Session(graph=g)
                sess.run(tf1.global_variables_initializer())
            sessions[key] = (sess, out.op)
        sess, target = sessions[key]
        t, fastest, cpu = time_stats(lambda sess=sess, target=target: sess.run(target),
                                     req["min_time"])
        print(json.dumps({"seconds": t, "fastest": fastest, "cpu": cpu}), flush=True)


def af_kernel(op: str, values, attrs):
    import aioflow as af
    from aioflow.framework.op_def_library import apply_op
    from aioflow.framework.op_kernel import create_kernel
    from aioflow.runtime.kernel_library import load_builtin_kernels

    load_builtin_kernels()
    g = af.Graph()
    with g.as_default():
        args = [af.placeholder(af.as_dtype(v.dtype), shape=v.shape) for v in values]
        out = apply_op(op, **dict(zip(_ARG_NAMES[op], args, strict=True)), **attrs)
    return create_kernel(out.op.node_def, device_type="CPU")


def _wait_compiled(module: str) -> None:
    """Wait for a module's loops, compiled in the background (NumPy runs until they
    are); an older checkout without the module (a before/after run) runs as it is."""
    import importlib

    try:
        importlib.import_module(module).wait_ready(300)
    except ImportError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--tf-python", default=os.environ.get("TF_PYTHON",
                                                              "/work/tfvenv/bin/python"))
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--intra-op", type=int, default=0,
                        help="threads as a session with intra_op_parallelism_threads=N "
                             "sets them (0: the default, every core)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tf_worker()
        return
    from aioflow.runtime.allocator import retain_freed_memory

    memory_policy = retain_freed_memory()  # as a session applies it
    _wait_compiled("aioflow.kernels.nn.activation_jit")
    if args.intra_op > 0:
        from aioflow.runtime.device import _limit_blas_threads

        _limit_blas_threads(args.intra_op)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    worker = subprocess.Popen([args.tf_python, os.path.abspath(__file__), "--worker"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              env=env)
    load_before = os.getloadavg()[0]
    rounds = args.rounds or (1 if args.quick else 2)
    min_time = 0.2 if args.quick else 0.5
    results = []
    for name, op, specs, attrs in CASES:
        if args.only and args.only not in name:
            continue
        for batch in [int(b) for b in args.batches.split(",")]:
            values = make_inputs(specs, batch)
            kernel = af_kernel(op, values, attrs)
            req = dict(name=name, op=op, specs=specs, attrs=attrs, batch=batch,
                       min_time=min_time)
            af_times, tf_times, af_fast, tf_fast, af_cpu, tf_cpu = [], [], [], [], [], []
            for _ in range(rounds):  # A B A B
                worker.stdin.write(json.dumps(req) + "\n")
                worker.stdin.flush()
                answer = json.loads(worker.stdout.readline())
                tf_times.append(answer["seconds"])
                tf_fast.append(answer["fastest"])
                tf_cpu.append(answer["cpu"])
                med, fast, cpu = time_stats(lambda k=kernel, v=values: k.compute(None, v),
                                            min_time)
                af_times.append(med)
                af_fast.append(fast)
                af_cpu.append(cpu)
            a, t = min(af_times), min(tf_times)
            results.append({"case": name, "op": op, "batch": batch,
                            "aioflow_ms": round(a * 1e3, 3), "tf_ms": round(t * 1e3, 3),
                            "ratio": round(a / t, 2),
                            "ratio_of_mins": round(min(af_fast) / min(tf_fast), 2),
                            "aioflow_cpu_ms": round(min(af_cpu) * 1e3, 3),
                            "tf_cpu_ms": round(min(tf_cpu) * 1e3, 3),
                            "cpu_ratio": round(min(af_cpu) / max(min(tf_cpu), 1e-9), 2)})
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    worker.stdin.close()
    worker.wait()
    ratios = [r["ratio"] for r in results]
    print(json.dumps({
        "benchmark": "elementwise_peer", "tf": "default (oneDNN on)",
        "memory_policy": memory_policy, "intra_op": args.intra_op, "blas": blas_info(),
        "load_before": load_before, "load_after": os.getloadavg()[0],
        "cpus": os.cpu_count(), "results": results,
        "worst_ratio": max(ratios) if ratios else None,
        "worst_cpu_ratio": max(r["cpu_ratio"] for r in results) if results else None,
    }, indent=1))


if __name__ == "__main__":
    main()
