#!/usr/bin/env python
"""Training steps in aioflow and in TensorFlow 2.21, side by side; and the loop's
heartbeat while aioflow trains beside inference requests.

Workloads (the same tf.compat.v1 program in both, variables and optimizer included):
  mlp      784-256-128-10 MLP of tf.layers.dense, batch 64, Adam
  cnn_bn   conv 3x3x16 + batch norm (training) + max pool + conv 3x3x32 + batch norm +
           dense, batch 32 of 28x28x1, Momentum, UPDATE_OPS run with the step
  lstm     BasicLSTMCell(64) under dynamic_rnn over 50 steps, batch 32, input 32, Adam
Each peer runs in its own subprocess (`--peer aioflow|tf`): it builds the graph, runs
warm-up steps for WARM_UP_S seconds (at least two), then times `--steps` training steps
and prints the median ms per step and the process's CPU ms per step (all its threads:
TF's intra-op pool, aioflow's loop, pool and BLAS/OpenMP threads).
The peers alternate (ABAB), `--reps` rounds; the result is the median over rounds and the
ratios aioflow / TF of both (CPU time survives a loaded machine better than wall time).
TensorFlow runs with `--tf-python` (a Python with tensorflow-cpu and tf-keras; never a
dependency).

heartbeat: examples/train_and_serve.py's pattern (a trainer and a batcher serving 64
concurrent clients on one loop): the p50/p99/max lag of a 1 ms sleeper, and, for
reference, the same sleeper's lags on the idle loop in the same window (on a machine
shared by many processes the idle figure shows how much is the OS's doing).

Usage: python benchmarks/training.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

WORKLOADS = ["mlp", "cnn_bn", "lstm"]
#: Seconds of warm-up steps (at least two) before the timed ones: aioflow's compiled
#: loops compile on background threads while its kernels run NumPy (about 10 steps of
#: cnn_bn, 1 s at load 8), which would otherwise land in the timed steps.
WARM_UP_S = 2.0


def _mlp(tf):
    rng = np.random.default_rng(0)
    x = tf.placeholder(tf.float32, [64, 784])
    labels = tf.placeholder(tf.int64, [64])
    h = tf.layers.dense(x, 256, activation=tf.nn.relu)
    h = tf.layers.dense(h, 128, activation=tf.nn.relu)
    logits = tf.layers.dense(h, 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    train = tf.train.AdamOptimizer(0.001).minimize(loss)
    feeds = {x: rng.normal(size=(64, 784)).astype(np.float32),
             labels: rng.integers(0, 10, 64).astype(np.int64)}
    return train, feeds


def _cnn_bn(tf):
    rng = np.random.default_rng(1)
    x = tf.placeholder(tf.float32, [32, 28, 28, 1])
    labels = tf.placeholder(tf.int64, [32])
    h = tf.layers.conv2d(x, 16, 3, padding="same", use_bias=False)
    h = tf.nn.relu(tf.layers.batch_normalization(h, training=True))
    h = tf.layers.max_pooling2d(h, 2, 2)
    h = tf.layers.conv2d(h, 32, 3, padding="same", use_bias=False)
    h = tf.nn.relu(tf.layers.batch_normalization(h, training=True))
    logits = tf.layers.dense(tf.layers.flatten(h), 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
    feeds = {x: rng.normal(size=(32, 28, 28, 1)).astype(np.float32),
             labels: rng.integers(0, 10, 32).astype(np.int64)}
    return train, feeds


def _lstm(tf):
    rng = np.random.default_rng(2)
    x = tf.placeholder(tf.float32, [32, 50, 32])
    y = tf.placeholder(tf.float32, [32, 64])
    outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(64), x,
                                       dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(state.h - y))
    train = tf.train.AdamOptimizer(0.001).minimize(loss)
    feeds = {x: rng.normal(size=(32, 50, 32)).astype(np.float32),
             y: rng.normal(size=(32, 64)).astype(np.float32)}
    return train, feeds


def run_peer(peer: str, workload: str, steps: int) -> tuple[float, float]:
    if peer == "tf":
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
    else:
        import aioflow.compat.v1 as tf
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        train, feeds = {"mlp": _mlp, "cnn_bn": _cnn_bn, "lstm": _lstm}[workload](tf)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            warm_until = time.perf_counter() + WARM_UP_S
            for i in itertools.count():
                sess.run(train, feeds)
                if i >= 1 and time.perf_counter() >= warm_until:
                    break
            if peer == "aioflow":
                _wait_compiled()
            times = []
            cpu = time.process_time()
            for _ in range(steps):
                start = time.perf_counter()
                sess.run(train, feeds)
                times.append((time.perf_counter() - start) * 1e3)
            cpu = (time.process_time() - cpu) * 1e3 / steps
    return statistics.median(times), cpu


def _wait_compiled() -> None:
    """aioflow's numba loops (the fused MatMul's epilogue, the optimizers' updates, the
    element-wise chains of compiled while loops) are compiled in the background, NumPy
    running until then: time the compiled steady state, as the other benchmarks do."""
    from aioflow.kernels.math import fused_cwise
    from aioflow.kernels.nn import epilogue_jit
    from aioflow.kernels.onednn import backend, matmul_onednn
    from aioflow.kernels.training import dense_jit

    epilogue_jit.wait_ready(300)
    dense_jit.wait_ready(300)
    fused_cwise.wait_ready(300)  # the compiled loops' element-wise chains
    if backend.AVAILABLE:
        matmul_onednn.wait_compiled(300)  # the compiled loops' GEMM calls


def heartbeat(seconds: float) -> dict:
    """Lags of a 1 ms sleeper: on the idle loop, then beside training and serving."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import train_and_serve as example

    import aioflow as af

    async def idle() -> list:
        lags, end = [], time.perf_counter() + seconds
        while time.perf_counter() < end:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - start - 0.001)
        return lags

    async def busy() -> list:
        g, m = example.build()
        async with af.Session(graph=g) as sess:
            await sess.run(m["init"])
            first = await m["publisher"].publish(sess)
            x, y = example.X_TRAIN, example.Y_TRAIN
            await sess.run(m["served"], {m["x"]: x[:4], **first.feed_dict(m["weights"])})
            await sess.run(m["train"], {m["x"]: x[:32], m["y"]: y[:32]})
            _wait_compiled()  # the steady state: numba's compile holds the GIL meanwhile
            done, answers, lags = asyncio.Event(), [], []
            batcher = example.Batcher(sess, m)

            async def stop():
                await asyncio.sleep(seconds)
                done.set()

            async def trainer():
                i = 0
                while not done.is_set():
                    batch = example.rng.integers(0, len(x), size=32)
                    await sess.run(m["train"], {m["x"]: x[batch], m["y"]: y[batch]})
                    i += 1
                    if i % example.PUBLISH_EVERY == 0:
                        await m["publisher"].publish(sess)
                    await asyncio.sleep(0)

            await asyncio.gather(stop(), trainer(), example.heartbeat(done, lags),
                                 *(example.client(batcher, done, answers)
                                   for _ in range(example.CLIENTS)))
        return lags, len(answers)

    def stats(lags) -> dict:
        a = np.asarray(lags) * 1e3
        return {"p50_ms": round(float(np.percentile(a, 50)), 2),
                "p99_ms": round(float(np.percentile(a, 99)), 2),
                "max_ms": round(float(a.max()), 2), "beats": len(a)}

    idle_lags = asyncio.run(idle())
    busy_lags, answered = asyncio.run(busy())
    return {"idle_loop": stats(idle_lags), "training_and_serving": stats(busy_lags),
            "requests_answered": answered, "clients": 64}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer")
    parser.add_argument("--workload")
    parser.add_argument("--tf-python")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--heartbeat-seconds", type=float, default=3.0)
    parser.add_argument("--only", default=",".join(WORKLOADS + ["heartbeat"]))
    args = parser.parse_args()
    if args.peer:
        print(*run_peer(args.peer, args.workload, args.steps))
        return
    pythons = {"aioflow": sys.executable, "tf": args.tf_python}
    result = {}
    only = args.only.split(",")
    for workload in [w for w in WORKLOADS if w in only]:
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
    if "heartbeat" in only:
        result["heartbeat"] = heartbeat(args.heartbeat_seconds)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
