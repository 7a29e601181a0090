#!/usr/bin/env python
"""Convolution, pooling and batch-norm kernels against TensorFlow's, at MobileNetV2 1.0
(224x224) and ResNet50 shapes, batch 1 and 8; prints one JSON object.

For each case: the median time of aioflow's kernel (its `compute`, called directly, in
this process) and of TF's same op (a `tf.compat.v1.Session` running only that op, its
inputs read from ref variables so nothing is fed or fetched, in a separate worker process
run with TF's Python), and the ratio aioflow / TF. The two sides are interleaved A B A B
per case, so both see the same machine state; each side's fastest single call is reported
too (ratio_of_mins: on a shared machine, what a quiet one gives). TF runs with its
defaults (oneDNN on, every core); `--tf-eigen` turns oneDNN off (TF's plain Eigen
kernels). aioflow's kernels run under the host memory policy a session applies
(aioflow/runtime/allocator.py: freed buffers reused, not page-faulted in again;
`--no-memory-policy` leaves malloc as it is) and, with `--intra-op N`, with the BLAS
thread count a session with intra_op_parallelism_threads=N sets (the convolutions then
split their blocks over at most N threads; by default over the cores, BLAS single-threaded
inside each convolution either way).

`--backend onednn` (the default where the onednn extra is installed) runs aioflow's oneDNN
kernels (aioflow/kernels/onednn/), their filters and statistics read-only as a frozen
graph's Consts are (so a filter is reordered into oneDNN's layout once, as in a served
model); `--backend numpy` the NumPy/numba kernels (AIOFLOW_ONEDNN=0).

Usage: python benchmarks/conv_ops.py [--quick] [--only substring] [--batches 1,8]
           [--tf-python /work/peers-venv/bin/python] [--tf-eigen] [--mallopt]
           [--intra-op N] [--no-memory-policy] [--rounds N] [--backend onednn|numpy]
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

# (name, op, input shapes, attrs); shapes use B for the batch.
M = "mobilenetv2"
R = "resnet50"
CASES = [
    (f"{M}/conv3x3s2_224x3_32", "Conv2D", [("B", 224, 224, 3), (3, 3, 3, 32)],
     dict(strides=[1, 2, 2, 1], padding="SAME")),
    (f"{M}/conv1x1_112x32_16", "Conv2D", [("B", 112, 112, 32), (1, 1, 32, 16)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{M}/conv1x1_112x16_96", "Conv2D", [("B", 112, 112, 16), (1, 1, 16, 96)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{M}/conv1x1_56x144_24", "Conv2D", [("B", 56, 56, 144), (1, 1, 144, 24)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{M}/conv1x1_14x64_384", "Conv2D", [("B", 14, 14, 64), (1, 1, 64, 384)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{M}/conv1x1_7x320_1280", "Conv2D", [("B", 7, 7, 320), (1, 1, 320, 1280)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{M}/dw3x3s1_112x32", "DepthwiseConv2dNative", [("B", 112, 112, 32), (3, 3, 32, 1)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{M}/dw3x3s2_112x96", "DepthwiseConv2dNative", [("B", 112, 112, 96), (3, 3, 96, 1)],
     dict(strides=[1, 2, 2, 1], padding="SAME")),
    (f"{M}/dw3x3s1_56x144", "DepthwiseConv2dNative", [("B", 56, 56, 144), (3, 3, 144, 1)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{M}/dw3x3s1_28x192", "DepthwiseConv2dNative", [("B", 28, 28, 192), (3, 3, 192, 1)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{M}/dw3x3s1_14x384", "DepthwiseConv2dNative", [("B", 14, 14, 384), (3, 3, 384, 1)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{M}/dw3x3s1_7x960", "DepthwiseConv2dNative", [("B", 7, 7, 960), (3, 3, 960, 1)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{M}/fbn_112x32", "FusedBatchNormV3", [("B", 112, 112, 32), (32,), (32,), (32,), (32,)],
     dict(is_training=False, epsilon=0.001)),
    (f"{M}/fbn_7x1280", "FusedBatchNormV3", [("B", 7, 7, 1280), (1280,), (1280,), (1280,),
                                             (1280,)],
     dict(is_training=False, epsilon=0.001)),
    (f"{M}/avgpool7x7_7x1280", "AvgPool", [("B", 7, 7, 1280)],
     dict(ksize=[1, 7, 7, 1], strides=[1, 1, 1, 1], padding="VALID")),
    (f"{R}/conv7x7s2_224x3_64", "Conv2D", [("B", 224, 224, 3), (7, 7, 3, 64)],
     dict(strides=[1, 2, 2, 1], padding="SAME")),
    (f"{R}/maxpool3x3s2_112x64", "MaxPool", [("B", 112, 112, 64)],
     dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")),
    (f"{R}/conv1x1_56x64_256", "Conv2D", [("B", 56, 56, 64), (1, 1, 64, 256)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{R}/conv1x1s2_56x256_512", "Conv2D", [("B", 56, 56, 256), (1, 1, 256, 512)],
     dict(strides=[1, 2, 2, 1], padding="VALID")),
    (f"{R}/conv3x3_56x64_64", "Conv2D", [("B", 56, 56, 64), (3, 3, 64, 64)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{R}/conv3x3_28x128_128", "Conv2D", [("B", 28, 28, 128), (3, 3, 128, 128)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{R}/conv3x3_14x256_256", "Conv2D", [("B", 14, 14, 256), (3, 3, 256, 256)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{R}/conv3x3_7x512_512", "Conv2D", [("B", 7, 7, 512), (3, 3, 512, 512)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    (f"{R}/conv1x1_7x2048_512", "Conv2D", [("B", 7, 7, 2048), (1, 1, 2048, 512)],
     dict(strides=[1, 1, 1, 1], padding="VALID")),
    (f"{R}/fbn_56x256", "FusedBatchNormV3", [("B", 56, 56, 256), (256,), (256,), (256,),
                                             (256,)],
     dict(is_training=False, epsilon=1.001e-5)),
    (f"{R}/avgpool7x7_7x2048", "AvgPool", [("B", 7, 7, 2048)],
     dict(ksize=[1, 7, 7, 1], strides=[1, 1, 1, 1], padding="VALID")),
    ("decoder/convT3x3s2_14x256_28x128", "Conv2DBackpropInput",
     [("shape", "B", 28, 28, 128), (3, 3, 128, 256), ("B", 14, 14, 256)],
     dict(strides=[1, 2, 2, 1], padding="SAME")),
    ("video/conv3d3x3x3_8x56x3_64", "Conv3D", [("B", 8, 56, 56, 3), (3, 3, 3, 3, 64)],
     dict(strides=[1, 1, 1, 1, 1], padding="SAME")),
    ("video/maxpool3d2x2x2_8x28x64", "MaxPool3D", [("B", 8, 28, 28, 64)],
     dict(ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="VALID")),
    ("video/avgpool3d2x2x2_8x28x64", "AvgPool3D", [("B", 8, 28, 28, 64)],
     dict(ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="VALID")),
    ("alexnet/lrn_27x96", "LRN", [("B", 27, 27, 96)],
     dict(depth_radius=2, alpha=2e-5, beta=0.75, bias=1.0)),
    # The other poolings of the models the issue lists, each padding, and MaxPoolV2.
    ("inceptionv3/maxpool3x3s2_147x64", "MaxPool", [("B", 147, 147, 64)],
     dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="VALID")),
    ("inceptionv3/avgpool3x3s1_35x192", "AvgPool", [("B", 35, 35, 192)],
     dict(ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")),
    ("densenet121/avgpool2x2s2_56x128", "AvgPool", [("B", 56, 56, 128)],
     dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")),
    ("vgg/maxpool2x2s2_56x256", "MaxPool", [("B", 56, 56, 256)],
     dict(ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")),
    ("resnet50/maxpoolv2_3x3s2_112x64", "MaxPoolV2",
     [("B", 112, 112, 64), ("shape", 1, 3, 3, 1), ("shape", 1, 2, 2, 1)],
     dict(padding="SAME")),
    ("video/maxpool3d3x3x3s2_16x56x64", "MaxPool3D", [("B", 16, 56, 56, 64)],
     dict(ksize=[1, 3, 3, 3, 1], strides=[1, 2, 2, 2, 1], padding="SAME")),
    ("video/avgpool3d3x3x3s1_8x28x64", "AvgPool3D", [("B", 8, 28, 28, 64)],
     dict(ksize=[1, 3, 3, 3, 1], strides=[1, 1, 1, 1, 1], padding="SAME")),
    ("resnet50/fbn_nchw_256x56", "FusedBatchNormV3",
     [("B", 256, 56, 56), (256,), (256,), (256,), (256,)],
     dict(is_training=False, epsilon=1.001e-5, data_format="NCHW")),
]


def make_inputs(shapes, batch: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        if shape[0] == "shape":
            out.append(np.array([batch if d == "B" else d for d in shape[1:]], np.int32))
            continue
        dims = [batch if d == "B" else d for d in shape]
        value = rng.standard_normal(dims).astype(np.float32)
        if len(dims) == 1:
            value = np.abs(value) + 0.5
        out.append(value)
    return out


def time_fn(fn, min_time: float, min_reps: int = 3) -> float:
    """Median seconds of fn() after one warm-up call."""
    return time_stats(fn, min_time, min_reps)[0]


def time_stats(fn, min_time: float, min_reps: int = 3) -> tuple[float, float, float]:
    """(median, fastest, median process CPU) seconds of fn() after one warm-up call. The
    CPU seconds (every thread of the process) are the work a call costs whatever share
    of the cores it got: on a loaded machine a steadier measure than the wall clock
    (though a thread pool spinning while it waits counts as work)."""
    fn()
    times, cpus = [], []
    start = time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        if len(times) >= 200:
            break
    return statistics.median(times), min(times), statistics.median(cpus)


# -- the TF worker (runs under TF's Python; reads one JSON case a line) ----------------------

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
                values = make_inputs([tuple(s) for s in req["shapes"]], req["batch"])
                args = []
                for i, v in enumerate(values):
                    if v.dtype == np.int32:
                        args.append(tf.constant(v))
                    else:
                        var = tf1.Variable(v, use_resource=False, name=f"in{i}")
                        args.append(var)
                op = getattr(tf.raw_ops, req["op"])
                names = _arg_names(req["op"])
                out = op(**dict(zip(names, args, strict=True)), **req["attrs"])
                target = out[0].op if isinstance(out, (list, tuple)) else out.op
                sess = tf1.Session(graph=g)
                sess.run(tf1.global_variables_initializer())
            sessions[key] = (sess, target)
        sess, target = sessions[key]
        t, fastest, cpu = time_stats(lambda sess=sess, target=target: sess.run(target),
                                     req["min_time"])
        print(json.dumps({"seconds": t, "fastest": fastest, "cpu": cpu}), flush=True)


def _arg_names(op: str) -> list[str]:
    return {
        "Conv2D": ["input", "filter"], "Conv3D": ["input", "filter"],
        "DepthwiseConv2dNative": ["input", "filter"],
        "Conv2DBackpropInput": ["input_sizes", "filter", "out_backprop"],
        "MaxPool": ["input"], "MaxPoolV2": ["input", "ksize", "strides"],
        "AvgPool": ["value"], "MaxPool3D": ["input"],
        "AvgPool3D": ["input"], "LRN": ["input"],
        "FusedBatchNormV3": ["x", "scale", "offset", "mean", "variance"],
    }[op]


# -- aioflow's side ------------------------------------------------------------------------

def af_kernel(op: str, values, attrs):
    import aioflow as af
    from aioflow.framework.op_def_library import apply_op
    from aioflow.framework.op_kernel import create_kernel
    from aioflow.runtime.kernel_library import load_builtin_kernels

    load_builtin_kernels()
    g = af.Graph()
    with g.as_default():
        args = [af.placeholder(af.as_dtype(v.dtype), shape=v.shape) for v in values]
        out = apply_op(op, **dict(zip(_arg_names(op), args, strict=True)), **attrs)
        node = (out[0] if isinstance(out, (list, tuple)) else out).op.node_def
    return create_kernel(node, device_type="CPU")


def blas_info() -> list:
    """The BLAS libraries NumPy loaded, with the kernel set each runs ("Haswell", "SkylakeX":
    OPENBLAS_CORETYPE picks it; the GEMM convolutions' speed depends on it)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")}
            for i in threadpool_info() if i.get("user_api") == "blas"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--tf-python", default=os.environ.get("TF_PYTHON", next(
        (p for p in ("/work/peers-venv/bin/python", "/work/tfvenv/bin/python")
         if os.path.exists(p)), "/work/peers-venv/bin/python")))
    parser.add_argument("--tf-eigen", action="store_true")
    parser.add_argument("--mallopt", action="store_true",
                        help="keep freed large blocks in glibc's heap in aioflow's process "
                             "(no page faults on each large output; TF's allocator caches too)")
    parser.add_argument("--rounds", type=int, default=0,
                        help="A B turns per case (default 2, 1 with --quick)")
    parser.add_argument("--intra-op", type=int, default=0,
                        help="BLAS threads per call as a session with "
                             "intra_op_parallelism_threads=N sets them (0: BLAS's default)")
    parser.add_argument("--no-memory-policy", action="store_true",
                        help="leave malloc as it is (a session applies the host memory policy)")
    parser.add_argument("--backend", choices=("onednn", "numpy"), default="onednn",
                        help="aioflow's kernels: oneDNN's (when installed) or NumPy's")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tf_worker()
        return
    if args.backend == "numpy":
        os.environ["AIOFLOW_ONEDNN"] = "0"  # read when aioflow's kernels load
    from aioflow.kernels.onednn import backend as onednn_backend
    memory_policy = False
    if not args.no_memory_policy:
        from aioflow.runtime.allocator import retain_freed_memory

        memory_policy = retain_freed_memory()
    from aioflow.kernels.nn import box_pool_jit, epilogue_jit, normalization_jit, pooling_jit
    for loops in (epilogue_jit, normalization_jit, pooling_jit, box_pool_jit):
        loops.wait_ready(300)  # compiled in the background: NumPy runs until they are
    if args.intra_op > 0:
        from aioflow.runtime.device import _limit_blas_threads

        _limit_blas_threads(args.intra_op)
    if args.mallopt:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: large arrays from the heap
        libc.mallopt(-1, 1 << 31)  # M_TRIM_THRESHOLD: freed memory kept for reuse
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    if args.tf_eigen:
        env["TF_ENABLE_ONEDNN_OPTS"] = "0"
    worker = subprocess.Popen([args.tf_python, os.path.abspath(__file__), "--worker"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    load_before = os.getloadavg()[0]
    args.rounds = args.rounds or (1 if args.quick else 2)
    min_time = 0.2 if args.quick else 0.6
    results = []
    for name, op, shapes, attrs in CASES:
        if args.only and args.only not in name:
            continue
        for batch in [int(b) for b in args.batches.split(",")]:
            values = make_inputs(shapes, batch)
            for v in values[1:]:
                v.setflags(write=False)  # filters and statistics: a frozen graph's Consts
            kernel = af_kernel(op, values, attrs)
            req = dict(name=name, op=op, shapes=[list(s) for s in shapes], attrs=attrs,
                       batch=batch, min_time=min_time)
            af_times, tf_times, af_fast, tf_fast, af_cpu, tf_cpu = [], [], [], [], [], []
            for _ in range(args.rounds):  # A B A B
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
            af_min, tf_min = min(af_fast), min(tf_fast)
            results.append({"case": name, "op": op, "batch": batch,
                            "aioflow_ms": round(a * 1e3, 3), "tf_ms": round(t * 1e3, 3),
                            "ratio": round(a / t, 2),
                            # The fastest single call of each side: what a quiet machine
                            # gives (the medians carry a shared machine's stalls).
                            "aioflow_min_ms": round(af_min * 1e3, 3),
                            "tf_min_ms": round(tf_min * 1e3, 3),
                            "ratio_of_mins": round(af_min / tf_min, 2),
                            # Process CPU seconds a call (every thread): the work, whatever
                            # share of a loaded machine's cores each side got.
                            "aioflow_cpu_ms": round(min(af_cpu) * 1e3, 3),
                            "tf_cpu_ms": round(min(tf_cpu) * 1e3, 3),
                            "cpu_ratio": round(min(af_cpu) / max(min(tf_cpu), 1e-9), 2),
                            "aioflow_pool": bool(kernel.is_expensive(values))})
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    worker.stdin.close()
    worker.wait()
    ratios = [r["ratio"] for r in results]
    min_ratios = [r["ratio_of_mins"] for r in results]
    print(json.dumps({
        "benchmark": "conv_ops", "tf": "oneDNN off (Eigen)" if args.tf_eigen else "default",
        "backend": "onednn" if onednn_backend.AVAILABLE else "numpy",
        "mallopt": args.mallopt, "memory_policy": memory_policy, "intra_op": args.intra_op,
        "blas": blas_info(),
        "load_before": load_before, "load_after": os.getloadavg()[0],
        "cpus": os.cpu_count(), "results": results,
        "worst_ratio": max(ratios) if ratios else None,
        "worst_ratio_of_mins": max(min_ratios) if min_ratios else None,
        "geomean_ratio": round(float(np.exp(np.mean(np.log(ratios)))), 2) if ratios else None,
    }, indent=1))


if __name__ == "__main__":
    main()
