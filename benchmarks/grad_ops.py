#!/usr/bin/env python
"""The gradient kernels (convolution, pooling, batch norm, LRN, resize) against
TensorFlow's, at MobileNetV2 1.0 (224x224), ResNet50 and small video-model shapes;
prints one JSON object.

As benchmarks/conv_ops.py times the forward kernels (its timing and input helpers are
reused): for each case the median time of aioflow's kernel (its `compute`, called
directly in this process) and of TF 2.21's same raw op (a `tf.compat.v1.Session` running
only that op, its inputs read from ref variables, in a worker process under TF's
Python), interleaved A B A B, and the ratio aioflow / TF (ratio_of_mins: the fastest
calls', what a quiet machine gives; cpu_ratio: the process CPU seconds per call, all
threads, steadier than the wall clock on a loaded machine). TF runs with its defaults
(oneDNN on, every core).
The pooling gradients' orig_output is the forward pooling of orig_input (NumPy here, the
same arrays on both sides), so the argmax searches do their real work.

`--backend onednn` (the default where the onednn extra is installed) runs aioflow's oneDNN
kernels (aioflow/kernels/onednn/) where they exist; `--backend numpy` the NumPy/numba
ones (AIOFLOW_ONEDNN=0).

Usage: python benchmarks/grad_ops.py [--quick] [--only substring] [--batches 8]
           [--tf-python /work/tfvenv/bin/python] [--rounds N] [--backend onednn|numpy]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
from conv_ops import blas_info


def time_stats(fn, min_time: float, min_reps: int = 3) -> tuple[float, float, float]:
    """(median, fastest, median process CPU) seconds of fn() after one warm-up call. The
    CPU seconds (every thread of the process) are the work a call costs whatever share
    of the cores it got: on a loaded machine a steadier measure than the wall clock
    (though a thread pool spinning while it waits counts as work)."""
    fn()
    walls, cpus = [], []
    start = time.perf_counter()
    while len(walls) < min_reps or time.perf_counter() - start < min_time:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        if len(walls) >= 200:
            break
    return statistics.median(walls), min(walls), statistics.median(cpus)

M = "mobilenetv2"
R = "resnet50"
V = "video"
S1 = dict(strides=[1, 1, 1, 1], padding="SAME")
S2 = dict(strides=[1, 2, 2, 1], padding="SAME")
V1 = dict(strides=[1, 1, 1, 1], padding="VALID")
V2 = dict(strides=[1, 2, 2, 1], padding="VALID")

# (name, op, inputs, attrs). An input is a shape (B: the batch), ("sizes", *dims): an
# int32 vector, or ("maxpool", shape, ksize, strides, padding): the max pooling of the
# random array of that shape (the one given as the op's first input).
CASES = []


def _conv(name, x, w, attrs, filter_too=True, input_too=True):
    out = _out_shape(x, w, attrs)
    if filter_too:
        CASES.append((f"{name}/filter", "Conv2DBackpropFilter", [x, ("sizes", *w), out], attrs))
    if input_too:
        CASES.append((f"{name}/input", "Conv2DBackpropInput", [("sizes", *x), w, out], attrs))


def _dw(name, x, w, attrs):
    out = _out_shape(x, (w[0], w[1], w[2], w[2] * w[3]), attrs)
    CASES.append((f"{name}/filter", "DepthwiseConv2dNativeBackpropFilter",
                  [x, ("sizes", *w), out], attrs))
    CASES.append((f"{name}/input", "DepthwiseConv2dNativeBackpropInput",
                  [("sizes", *x), w, out], attrs))


def _out_shape(x, w, attrs):
    s = attrs["strides"]
    dims = [x[0]]
    for i, size in enumerate(x[1:-1]):
        k = w[i]
        st = s[1 + i]
        dims.append(-(-size // st) if attrs["padding"] == "SAME" else (size - k + st) // st)
    return (*dims, w[-1])


_conv(f"{M}/conv3x3s2_224x3_32", ("B", 224, 224, 3), (3, 3, 3, 32), S2, input_too=False)
_conv(f"{M}/conv1x1_112x16_96", ("B", 112, 112, 16), (1, 1, 16, 96), V1)
_conv(f"{M}/conv1x1_56x144_24", ("B", 56, 56, 144), (1, 1, 144, 24), V1)
_conv(f"{M}/conv1x1_7x320_1280", ("B", 7, 7, 320), (1, 1, 320, 1280), V1)
_dw(f"{M}/dw3x3s1_112x32", ("B", 112, 112, 32), (3, 3, 32, 1), S1)
_dw(f"{M}/dw3x3s2_112x96", ("B", 112, 112, 96), (3, 3, 96, 1), S2)
_dw(f"{M}/dw3x3s1_14x384", ("B", 14, 14, 384), (3, 3, 384, 1), S1)
# benchmarks/training.py's cnn_bn (run with --batches 32 --only smallcnn)
_conv("smallcnn/conv3x3_28x1_16", ("B", 28, 28, 1), (3, 3, 1, 16), S1)
_conv("smallcnn/conv3x3_14x16_32", ("B", 14, 14, 16), (3, 3, 16, 32), S1)
_conv(f"{R}/conv7x7s2_224x3_64", ("B", 224, 224, 3), (7, 7, 3, 64), S2, input_too=False)
_conv(f"{R}/conv3x3_56x64_64", ("B", 56, 56, 64), (3, 3, 64, 64), S1)
_conv(f"{R}/conv1x1_56x64_256", ("B", 56, 56, 64), (1, 1, 64, 256), V1)
_conv(f"{R}/conv1x1s2_56x256_512", ("B", 56, 56, 256), (1, 1, 256, 512), V2)
_conv(f"{R}/conv3x3_14x256_256", ("B", 14, 14, 256), (3, 3, 256, 256), S1)
_conv(f"{R}/conv3x3_7x512_512", ("B", 7, 7, 512), (3, 3, 512, 512), S1)
CASES += [
    (f"{R}/maxpool3x3s2_112x64/grad", "MaxPoolGrad",
     [("B", 112, 112, 64), ("maxpool", ("B", 112, 112, 64), 3, 2, "SAME"), ("B", 56, 56, 64)],
     dict(ksize=[1, 3, 3, 1], **S2)),
    (f"{R}/maxpool3x3s2_112x64/gradgrad", "MaxPoolGradGrad",
     [("B", 112, 112, 64), ("maxpool", ("B", 112, 112, 64), 3, 2, "SAME"),
      ("B", 112, 112, 64)],
     dict(ksize=[1, 3, 3, 1], **S2)),
    ("smallcnn/maxpool2x2s2_28x16/grad", "MaxPoolGrad",
     [("B", 28, 28, 16), ("maxpool", ("B", 28, 28, 16), 2, 2, "VALID"), ("B", 14, 14, 16)],
     dict(ksize=[1, 2, 2, 1], **V2)),
    ("smallcnn/fbn_28x16/grad_train", "FusedBatchNormGradV3",
     [("B", 28, 28, 16), ("B", 28, 28, 16), (16,), (16,), (16,), (16,)],
     dict(is_training=True, epsilon=0.001)),
    ("vgg/maxpool2x2s2_56x256/grad", "MaxPoolGrad",
     [("B", 56, 56, 256), ("maxpool", ("B", 56, 56, 256), 2, 2, "VALID"), ("B", 28, 28, 256)],
     dict(ksize=[1, 2, 2, 1], **V2)),
    (f"{M}/avgpool7x7_7x1280/grad", "AvgPoolGrad", [("sizes", "B", 7, 7, 1280),
                                                     ("B", 1, 1, 1280)],
     dict(ksize=[1, 7, 7, 1], **V1)),
    ("inceptionv3/avgpool3x3s1_35x192/grad", "AvgPoolGrad",
     [("sizes", "B", 35, 35, 192), ("B", 35, 35, 192)], dict(ksize=[1, 3, 3, 1], **S1)),
    (f"{R}/fbn_56x256/grad_train", "FusedBatchNormGradV3",
     [("B", 56, 56, 256), ("B", 56, 56, 256), (256,), (256,), (256,), (256,)],
     dict(is_training=True, epsilon=1.001e-5)),
    (f"{M}/fbn_112x32/grad_train", "FusedBatchNormGradV3",
     [("B", 112, 112, 32), ("B", 112, 112, 32), (32,), (32,), (32,), (32,)],
     dict(is_training=True, epsilon=0.001)),
    ("alexnet/lrn_27x96/grad", "LRNGrad",
     [("B", 27, 27, 96), ("B", 27, 27, 96), ("B", 27, 27, 96)],
     dict(depth_radius=2, alpha=2e-5, beta=0.75, bias=1.0)),
    ("segmentation/resize_bilinear_56to112x32/grad", "ResizeBilinearGrad",
     [("B", 112, 112, 32), ("B", 56, 56, 32)], dict(half_pixel_centers=True)),
    ("segmentation/resize_nearest_56to112x32/grad", "ResizeNearestNeighborGrad",
     [("B", 112, 112, 32), ("sizes", 56, 56)], dict()),
    (f"{V}/conv3d3x3x3_8x28x32/filter", "Conv3DBackpropFilterV2",
     [("B", 8, 28, 28, 32), ("sizes", 3, 3, 3, 32, 32), ("B", 8, 28, 28, 32)],
     dict(strides=[1, 1, 1, 1, 1], padding="SAME")),
    (f"{V}/conv3d3x3x3_8x28x32/input", "Conv3DBackpropInputV2",
     [("sizes", "B", 8, 28, 28, 32), (3, 3, 3, 32, 32), ("B", 8, 28, 28, 32)],
     dict(strides=[1, 1, 1, 1, 1], padding="SAME")),
    (f"{V}/maxpool3d2x2x2_8x28x64/grad", "MaxPool3DGrad",
     [("B", 8, 28, 28, 64), ("maxpool", ("B", 8, 28, 28, 64), 2, 2, "VALID"),
      ("B", 4, 14, 14, 64)],
     dict(ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="VALID")),
    (f"{V}/avgpool3d2x2x2_8x28x64/grad", "AvgPool3DGrad",
     [("sizes", "B", 8, 28, 28, 64), ("B", 4, 14, 14, 64)],
     dict(ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="VALID")),
]

_ARG_NAMES = {
    "Conv2DBackpropFilter": ["input", "filter_sizes", "out_backprop"],
    "Conv2DBackpropInput": ["input_sizes", "filter", "out_backprop"],
    "DepthwiseConv2dNativeBackpropFilter": ["input", "filter_sizes", "out_backprop"],
    "DepthwiseConv2dNativeBackpropInput": ["input_sizes", "filter", "out_backprop"],
    "Conv3DBackpropFilterV2": ["input", "filter_sizes", "out_backprop"],
    "Conv3DBackpropInputV2": ["input_sizes", "filter", "out_backprop"],
    "MaxPoolGrad": ["orig_input", "orig_output", "grad"],
    "MaxPoolGradGrad": ["orig_input", "orig_output", "grad"],
    "MaxPool3DGrad": ["orig_input", "orig_output", "grad"],
    "AvgPoolGrad": ["orig_input_shape", "grad"],
    "AvgPool3DGrad": ["orig_input_shape", "grad"],
    "FusedBatchNormGradV3": ["y_backprop", "x", "scale", "reserve_space_1",
                             "reserve_space_2", "reserve_space_3"],
    "LRNGrad": ["input_grads", "input_image", "output_image"],
    "ResizeBilinearGrad": ["grads", "original_image"],
    "ResizeNearestNeighborGrad": ["grads", "size"],
}


def _max_pool(x: np.ndarray, k: int, s: int, padding: str) -> np.ndarray:
    """NumPy max pooling of x (N, *spatial, C), a k-wide window moved by s on each axis."""
    spatial = x.shape[1:-1]
    if padding == "SAME":
        outs = [-(-d // s) for d in spatial]
        pads = [max(0, (o - 1) * s + k - d) for o, d in zip(outs, spatial, strict=True)]
        x = np.pad(x, [(0, 0)] + [(p // 2, p - p // 2) for p in pads] + [(0, 0)],
                   constant_values=-np.inf)
    else:
        outs = [(d - k) // s + 1 for d in spatial]
    y = None
    for tap in np.ndindex(*(k,) * len(spatial)):
        view = x[(slice(None),) + tuple(slice(t, t + (o - 1) * s + 1, s)
                                        for t, o in zip(tap, outs, strict=True))]
        y = view.copy() if y is None else np.maximum(y, view)
    return y


def make_inputs(specs, batch: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        if spec[0] == "sizes":
            out.append(np.array([batch if d == "B" else d for d in spec[1:]], np.int32))
        elif spec[0] == "maxpool":
            _, _, k, s, padding = spec
            out.append(_max_pool(out[0], k, s, padding).astype(np.float32))
        else:
            dims = [batch if d == "B" else d for d in spec]
            value = rng.standard_normal(dims).astype(np.float32)
            if len(dims) == 1:
                value = np.abs(value) + 0.5
            out.append(value)
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
                target = out[0].op if isinstance(out, (list, tuple)) else out.op
                sess = tf1.Session(graph=g)
                sess.run(tf1.global_variables_initializer())
            sessions[key] = (sess, target)
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
        node = (out[0] if isinstance(out, (list, tuple)) else out).op.node_def
    return create_kernel(node, device_type="CPU")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--batches", default="8")
    parser.add_argument("--tf-python", default=os.environ.get("TF_PYTHON",
                                                              "/work/tfvenv/bin/python"))
    parser.add_argument("--rounds", type=int, default=0)
    parser.add_argument("--backend", choices=("onednn", "numpy"), default="onednn")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tf_worker()
        return
    if args.backend == "numpy":
        os.environ["AIOFLOW_ONEDNN"] = "0"  # read when aioflow's kernels load
    from aioflow.kernels.image import resize_grad_jit
    from aioflow.kernels.nn import batch_norm_grad_jit, depthwise_grad_jit, pooling_grad_jit
    from aioflow.kernels.onednn import backend as onednn_backend
    from aioflow.runtime.allocator import retain_freed_memory

    memory_policy = retain_freed_memory()  # as a session applies it
    for loops in (batch_norm_grad_jit, depthwise_grad_jit, pooling_grad_jit, resize_grad_jit):
        loops.wait_ready(300)  # compiled in the background: NumPy runs until they are
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
                            # CPU seconds a call costs, all threads of each process.
                            "aioflow_cpu_ms": round(min(af_cpu) * 1e3, 3),
                            "tf_cpu_ms": round(min(tf_cpu) * 1e3, 3),
                            "cpu_ratio": round(min(af_cpu) / max(min(tf_cpu), 1e-9), 2)})
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    worker.stdin.close()
    worker.wait()
    ratios = [r["ratio"] for r in results]
    print(json.dumps({
        "benchmark": "grad_ops", "tf": "default (oneDNN on)", "memory_policy": memory_policy,
        "backend": "onednn" if onednn_backend.AVAILABLE else "numpy",
        "blas": blas_info(), "load_before": load_before, "load_after": os.getloadavg()[0],
        "cpus": os.cpu_count(), "results": results,
        "worst_ratio": max(ratios) if ratios else None,
        "geomean_ratio": round(float(np.exp(np.mean(np.log(ratios)))), 2) if ratios else None,
    }, indent=1))


if __name__ == "__main__":
    main()
