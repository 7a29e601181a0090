#!/usr/bin/env python
"""Forward + backward steps in aioflow and in TensorFlow 2.21, side by side.

Workloads (the same tf.compat.v1 program in both, tests/gradient_programs.py's style):
  mlp          784-256-128-10 MLP, batch 64: loss and the gradients of its 6 weights
  conv         two 3x3 convolutions (32, 64 channels) + max pool + dense, batch 16, 32x32x3
  while_grad   the gradient of a 200-iteration while loop over a [256] vector
  functional_while_grad  the same loop as a functional While (TF's while_v2, as TF 2
               graphs hold it): TF builds it, writes the forward GraphDef, and both
               peers take tf.gradients of it (TF's accumulating while_v2 gradient)
Each peer runs in its own subprocess (`--peer aioflow|tf`): it builds the graph, runs
warm-up steps for WARM_UP_S seconds (at least two), then times `--steps` steps and
prints the median ms per step and the process's CPU ms per step (all its threads). The
peers alternate (ABAB), `--reps` rounds; the result is the median over rounds and the
ratios aioflow / TF of both. TensorFlow runs with `--tf-python`
(a Python with tensorflow-cpu; never a dependency). Do not set OPENBLAS_NUM_THREADS: a
session that leaves intra_op_parallelism_threads at 0 takes BLAS's thread count as its
intra-op count, so OPENBLAS_NUM_THREADS=1 runs every aioflow kernel on one thread while
TF keeps its two (aioflow's kernels place their own threads; NumPy's BLAS is not what
runs here). At load 5 the conv step measured the same either way (13.2-13.3 against
TF's 11.3 ms, 2026-11-29); a quieter machine was not measured with it.

Usage: python benchmarks/gradients_peer.py --tf-python /path/to/tf-venv/bin/python
           [--only conv,mlp,while_grad,functional_while_grad] [--steps 20] [--reps 2]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

WORKLOADS = ["mlp", "conv", "while_grad", "functional_while_grad"]
#: Where the TF peer writes the functional loop's forward GraphDef for both peers.
FORWARD_PB = os.environ.get("FUNCTIONAL_FORWARD_PB", "/tmp/gradients_peer_functional.pb")
#: Seconds of warm-up steps (at least two) before the timed ones: aioflow's compiled
#: loops compile on background threads while its kernels run NumPy for the first steps.
WARM_UP_S = 2.0


def _mlp(tf):
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [64, 784])
    labels = tf.placeholder(tf.int32, [64])
    h = x
    weights = []
    for i, (n_in, n_out) in enumerate([(784, 256), (256, 128), (128, 10)]):
        w = tf.constant(rng.normal(0, 0.05, (n_in, n_out)).astype(np.float32), name=f"w{i}")
        b = tf.constant(np.zeros(n_out, np.float32), name=f"b{i}")
        weights += [w, b]
        h = tf.nn.bias_add(tf.matmul(h, w), b)
        if i < 2:
            h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=h))
    fetches = [loss] + tf.gradients(loss, weights)
    feeds = {x: rng.normal(size=(64, 784)).astype(np.float32),
             labels: rng.integers(0, 10, 64).astype(np.int32)}
    return fetches, feeds


def _conv(tf):
    rng = np.random.default_rng(1)
    x = tf.placeholder(tf.float32, [16, 32, 32, 3])
    labels = tf.placeholder(tf.int32, [16])
    f1 = tf.constant(rng.normal(0, 0.1, (3, 3, 3, 32)).astype(np.float32))
    f2 = tf.constant(rng.normal(0, 0.05, (3, 3, 32, 64)).astype(np.float32))
    w = tf.constant(rng.normal(0, 0.01, (16 * 16 * 64, 10)).astype(np.float32))
    h = tf.nn.relu(tf.nn.conv2d(x, f1, [1, 1, 1, 1], "SAME"))
    h = tf.nn.relu(tf.nn.conv2d(h, f2, [1, 1, 1, 1], "SAME"))
    h = tf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    logits = tf.matmul(tf.reshape(h, [16, -1]), w)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    fetches = [loss] + tf.gradients(loss, [f1, f2, w])
    feeds = {x: rng.normal(size=(16, 32, 32, 3)).astype(np.float32),
             labels: rng.integers(0, 10, 16).astype(np.int32)}
    return fetches, feeds


def _while_grad(tf):
    x = tf.placeholder(tf.float32, [256])
    _, y = tf.while_loop(lambda i, v: i < 200, lambda i, v: (i + 1, tf.tanh(v) * 1.01),
                         [tf.constant(0), x])
    fetches = tf.gradients(tf.reduce_sum(y), [x])
    return fetches, {x: np.linspace(-1, 1, 256).astype(np.float32)}


def write_functional_forward() -> None:
    """(TF peer) The functional loop's forward GraphDef, written to FORWARD_PB."""
    import tensorflow.compat.v1 as tf
    from tensorflow.python.ops import while_v2
    tf.disable_v2_behavior()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [256], name="x")
        _, y = while_v2.while_loop(lambda i, v: i < 200,
                                   lambda i, v: (i + 1, tf.tanh(v) * 1.01),
                                   [tf.constant(0), x])
        tf.reduce_sum(y, name="loss")
    with open(FORWARD_PB, "wb") as f:
        f.write(graph.as_graph_def().SerializeToString())


def _functional_while_grad(tf):
    graph_def = tf.GraphDef()
    with open(FORWARD_PB, "rb") as f:
        graph_def.ParseFromString(f.read())
    tf.import_graph_def(graph_def, name="")
    graph = tf.get_default_graph()
    x = graph.get_tensor_by_name("x:0")
    fetches = tf.gradients(graph.get_tensor_by_name("loss:0"), [x])
    return fetches, {x: np.linspace(-1, 1, 256).astype(np.float32)}


def run_peer(peer: str, workload: str, steps: int) -> tuple[float, float]:
    if peer == "tf":
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
    else:
        import aioflow.compat.v1 as tf
    graph = tf.Graph()
    with graph.as_default():
        fetches, feeds = {"mlp": _mlp, "conv": _conv, "while_grad": _while_grad,
                          "functional_while_grad": _functional_while_grad}[workload](tf)
        with tf.Session() as sess:
            warm_until = time.perf_counter() + WARM_UP_S
            for i in itertools.count():
                sess.run(fetches, feeds)
                if i >= 1 and time.perf_counter() >= warm_until:
                    break
            if peer == "aioflow":  # the numba loops compiled in the background
                from aioflow.kernels.nn import epilogue_jit
                epilogue_jit.wait_ready(300)
            times = []
            cpu = time.process_time()
            for _ in range(steps):
                start = time.perf_counter()
                sess.run(fetches, feeds)
                times.append((time.perf_counter() - start) * 1e3)
            cpu = (time.process_time() - cpu) * 1e3 / steps
    return statistics.median(times), cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer")
    parser.add_argument("--workload")
    parser.add_argument("--tf-python")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--write-functional-forward", action="store_true")
    args = parser.parse_args()
    if args.write_functional_forward:
        write_functional_forward()
        return
    if args.peer:
        print(*run_peer(args.peer, args.workload, args.steps))
        return
    pythons = {"aioflow": sys.executable, "tf": args.tf_python}
    if "functional_while_grad" in args.only.split(","):
        subprocess.run([args.tf_python, __file__, "--write-functional-forward"], check=True,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    result = {}
    for workload in [w for w in WORKLOADS if w in args.only.split(",")]:
        ms: dict = {"aioflow": [], "tf": []}
        cpu: dict = {"aioflow": [], "tf": []}
        for _ in range(args.reps):
            for peer in ("aioflow", "tf"):
                out = subprocess.run(
                    [pythons[peer], __file__, "--peer", peer, "--workload", workload,
                     "--steps", str(args.steps)], capture_output=True, text=True, check=True,
                    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
                wall, step_cpu = out.stdout.strip().splitlines()[-1].split()
                ms[peer].append(float(wall))
                cpu[peer].append(float(step_cpu))
        med = {p: round(statistics.median(v), 2) for p, v in ms.items()}
        med["aioflow_over_tf"] = round(med["aioflow"] / med["tf"], 2)
        for p, v in cpu.items():
            med[f"{p}_cpu"] = round(statistics.median(v), 2)
        med["cpu_aioflow_over_tf"] = round(med["aioflow_cpu"] / med["tf_cpu"], 2)
        result[workload] = med
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
