#!/usr/bin/env python
"""Partial runs of TF's documented example in aioflow and TensorFlow 2.21, side by side.

The example (Session.partial_run's docstring): a, b, c placeholders, r1 = a + b,
r2 = r1 * c; `h = partial_run_setup([r1, r2], [a, b, c])`, `partial_run(h, r1, {a, b})`,
`partial_run(h, r2, {c})`. Timed per call: the setup, each partial_run, and the whole
example. aioflow runs in this process (an awaitable Session on one event loop);
TensorFlow in a worker process started with `--tf-python` (a Python with tensorflow-cpu:
TensorFlow is never a dependency). The peers alternate in rounds (ABAB), each round
`--iters` examples after a warm-up; the medians over rounds are reported.

Prints one JSON object: per peer the median microseconds per setup, per partial_run call
and per example, and the ratios aioflow / TF.
Usage: python benchmarks/partial_run.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def _example(lib):
    a = lib.placeholder(lib.float32, shape=[], name="a")
    b = lib.placeholder(lib.float32, shape=[], name="b")
    c = lib.placeholder(lib.float32, shape=[], name="c")
    r1 = lib.add(a, b, name="r1")
    r2 = lib.multiply(r1, c, name="r2")
    return a, b, c, r1, r2


def _summary(setup: float, calls: float, iters: int) -> dict:
    return {"setup_us": setup / iters * 1e6, "partial_run_us": calls / (2 * iters) * 1e6,
            "example_us": (setup + calls) / iters * 1e6}


def tf_worker() -> None:
    """In the TF process: for each "ITERS" line on stdin, time that many examples."""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    tf.logging.set_verbosity(tf.logging.ERROR)  # partial runs are deprecated: no warning
    graph = tf.Graph()
    with graph.as_default():
        a, b, c, r1, r2 = _example(tf)
    sess = tf.Session(graph=graph)
    for line in sys.stdin:
        iters = int(line)
        setup = calls = 0.0
        for _ in range(iters):
            t0 = time.perf_counter()
            h = sess.partial_run_setup([r1, r2], [a, b, c])
            t1 = time.perf_counter()
            res = sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
            res = sess.partial_run(h, r2, feed_dict={c: res})
            t2 = time.perf_counter()
            assert res == 9.0
            setup += t1 - t0
            calls += t2 - t1
        print(json.dumps(_summary(setup, calls, iters)), flush=True)


class AioflowPeer:
    def __init__(self):
        import asyncio

        import aioflow as af

        self.loop = asyncio.new_event_loop()
        self.graph = af.Graph()
        with self.graph.as_default():
            self.tensors = _example(af)
        self.sess = af.Session(graph=self.graph)

    async def _measure(self, iters: int) -> dict:
        a, b, c, r1, r2 = self.tensors
        sess = self.sess
        setup = calls = 0.0
        for _ in range(iters):
            t0 = time.perf_counter()
            h = await sess.partial_run_setup([r1, r2], [a, b, c])
            t1 = time.perf_counter()
            res = await sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
            res = await sess.partial_run(h, r2, feed_dict={c: res})
            t2 = time.perf_counter()
            assert res == 9.0
            setup += t1 - t0
            calls += t2 - t1
        return _summary(setup, calls, iters)

    def measure(self, iters: int) -> dict:
        return self.loop.run_until_complete(self._measure(iters))


class TfPeer:
    def __init__(self, python: str):
        self.proc = subprocess.Popen([python, __file__, "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def measure(self, iters: int) -> dict:
        self.proc.stdin.write(f"{iters}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tf-python")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--iters", type=int, default=300)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        tf_worker()
        return
    if not args.tf_python:
        parser.error("--tf-python is required")
    peers = {"aioflow": AioflowPeer(), "tf": TfPeer(args.tf_python)}
    for peer in peers.values():
        peer.measure(max(10, args.iters // 10))  # warm: built, imported, caches filled
    rounds: dict[str, list[dict]] = {name: [] for name in peers}
    for _ in range(args.rounds):
        for name, peer in peers.items():  # ABAB
            rounds[name].append(peer.measure(args.iters))
    peers["tf"].close()
    result = {"benchmark": "partial_run", "example": "TF's Session.partial_run docstring",
              "rounds": args.rounds, "iters": args.iters, "peers": {}}
    for name, measured in rounds.items():
        result["peers"][name] = {key: round(statistics.median(m[key] for m in measured), 1)
                                 for key in measured[0]}
    ours, theirs = result["peers"]["aioflow"], result["peers"]["tf"]
    result["ratio_aioflow_over_tf"] = {key: round(ours[key] / theirs[key], 3) for key in ours}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
