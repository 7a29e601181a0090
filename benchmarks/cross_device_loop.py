#!/usr/bin/env python
"""Cross-device while loop benchmark; prints one JSON object.

The loop `(i, acc) -> (i + 1, acc * 1.0001 + 1)` with its multiply-add on /cpu:1 and its
counter and condition on /cpu:0 (ConfigProto device_count={"CPU": 2}): every iteration
sends the predicate and the value to /cpu:1 and the result back, through the control
loop TF's partitioner adds. Compared, interleaved ABAB in one process, with the same
loop on one device, compiled (the default: a cheap loop on one device runs as one
generated Python `while`) and interpreted (segments off); the split loop runs with the
session's default (straight-line segments inside its partitions compiled) and, for the
like-for-like ratio, with segments off too:
µs per iteration = (run time - run time at 0 iterations) / iterations.
With --peer-python (a Python with TensorFlow 2.21), TF's v1 session runs the same two
loops (split, one device; optimizers off) in rounds alternating with aioflow's, each TF
round a child process of that Python (this script with --tf-round).
Usage: python benchmarks/cross_device_loop.py [--quick] [--iterations N] [--cpu-time]
           [--peer-python /work/peers-venv/bin/python]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np


def build(body_device: str, af=None):
    if af is None:
        import aioflow as af
    g = af.Graph()
    with g.as_default():
        limit = af.placeholder(af.int32, shape=[], name="limit")
        x = af.placeholder(af.float32, shape=[4], name="x")

        def body(i, acc):
            with af.device(body_device):
                acc = acc * 1.0001 + 1.0
            return i + 1, acc

        with af.device("/cpu:0"):
            out = af.while_loop(lambda i, a: i < limit, body, [af.constant(0), x])[1]
    return g, limit, x, out


async def time_us(sess, fetch, feed, reps: int, clock=time.perf_counter) -> list[float]:
    await sess.run(fetch, feed)
    samples = []
    gc.disable()
    try:
        for _ in range(reps):
            start = clock()
            await sess.run(fetch, feed)
            samples.append((clock() - start) * 1e6)
    finally:
        gc.enable()
    return samples


def tf_round(iterations: int, reps: int) -> dict:
    """One round of TF's timings (run in a child process with TensorFlow)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    tf.compat.v1.disable_control_flow_v2()
    v1 = tf.compat.v1

    class Api:  # the names build() uses, from tf.compat.v1
        Graph, placeholder, constant, while_loop = tf.Graph, v1.placeholder, tf.constant, \
            v1.while_loop
        int32, float32, device = tf.int32, tf.float32, tf.device

    out = {}
    for name, device in (("split_two_devices", "/cpu:1"), ("one_device", "/cpu:0")):
        g, limit, x, fetch = build(device, Api)
        config = v1.ConfigProto(device_count={"CPU": 2})
        config.graph_options.optimizer_options.opt_level = v1.OptimizerOptions.L0
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        with v1.Session(graph=g, config=config) as sess:
            xv = np.ones(4, np.float32)
            samples = {}
            for n in (iterations, 0):
                sess.run(fetch, {limit: n, x: xv})
                samples[n] = []
                for _ in range(reps):
                    start = time.perf_counter()
                    sess.run(fetch, {limit: n, x: xv})
                    samples[n].append((time.perf_counter() - start) * 1e6)
            out[name] = samples
    return out


async def main_async(args) -> dict:
    import aioflow as af

    args.load_at_start = list(os.getloadavg())  # the machine is shared: say how busy

    two = af.ConfigProto(device_count={"CPU": 2})
    cases = {
        "split_two_devices": (build("/cpu:1"), two, True),
        "split_two_devices_interpreted": (build("/cpu:1"), two, False),
        "one_device_compiled": (build("/cpu:0"), two, True),
        "one_device_interpreted": (build("/cpu:0"), two, False),
    }
    xv = np.ones(4, np.float32)
    sessions = {}
    for name, ((g, limit, x, out), config, segments) in cases.items():
        sess = af.Session(graph=g, config=config, compile_segments=segments)
        sessions[name] = (sess, out, {limit: args.iterations, x: xv}, {limit: 0, x: xv})
    # --cpu-time: the loop thread's CPU time, the fastest rep (what other jobs on a
    # shared machine disturb least); else wall time, the median.
    clock, pick = ((time.thread_time, min) if args.cpu_time
                   else (time.perf_counter, statistics.median))
    samples = {name: [] for name in cases}
    base = {name: [] for name in cases}
    tf_samples = {"split_two_devices": ([], []), "one_device": ([], [])}
    for _ in range(args.rounds):  # interleaved: A B C (TF) A B C (TF) ...
        for name, (sess, out, feed, feed0) in sessions.items():
            samples[name] += await time_us(sess, out, feed, args.reps, clock)
            base[name] += await time_us(sess, out, feed0, args.reps, clock)
        if args.peer_python:
            child = subprocess.run(
                [args.peer_python, __file__, "--tf-round", "--iterations",
                 str(args.iterations), "--reps", str(args.reps)],
                capture_output=True, text=True, check=True)
            for name, by_n in json.loads(child.stdout).items():
                tf_samples[name][0].extend(by_n[str(args.iterations)])
                tf_samples[name][1].extend(by_n["0"])
    for sess, *_ in sessions.values():
        await sess.close()
    per_iter = {name: (pick(samples[name]) - pick(base[name]))
                / args.iterations for name in cases}
    split = per_iter["split_two_devices"]
    peer = {}
    if args.peer_python:
        tf_per = {name: (statistics.median(runs) - statistics.median(zero)) / args.iterations
                  for name, (runs, zero) in tf_samples.items()}
        peer = {"tensorflow_us_per_iteration": {k: round(v, 2) for k, v in tf_per.items()},
                "tensorflow_ratio_split_vs_one_device": round(
                    tf_per["split_two_devices"] / tf_per["one_device"], 2),
                "ratio_aioflow_split_vs_tensorflow_split": round(
                    split / tf_per["split_two_devices"], 2)}
        if args.cpu_time:  # TF's rounds are timed in wall time: no cross ratio
            del peer["ratio_aioflow_split_vs_tensorflow_split"]
    return {
        "benchmark": "cross_device_loop",
        "python": platform.python_version(),
        "load_average_at_start_and_end": [args.load_at_start, list(os.getloadavg())],
        "iterations": args.iterations,
        "clock": "thread CPU time, min of reps" if args.cpu_time else "wall, median of reps",
        "us_per_iteration": {k: round(v, 2) for k, v in per_iter.items()},
        "ratio_split_vs_one_device_compiled": round(split / per_iter["one_device_compiled"], 2),
        "ratio_split_vs_one_device_interpreted": round(
            split / per_iter["one_device_interpreted"], 2),
        "ratio_split_interpreted_vs_one_device_interpreted": round(
            per_iter["split_two_devices_interpreted"] / per_iter["one_device_interpreted"], 2),
        **peer,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--peer-python", help="a Python with TensorFlow 2.21")
    parser.add_argument("--cpu-time", action="store_true",
                        help="aioflow's runs timed in thread CPU time, fastest rep")
    parser.add_argument("--tf-round", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tf_round:
        json.dump(tf_round(args.iterations, args.reps), sys.stdout)
        return
    args.rounds, args.reps = (2, 5) if args.quick else (4, 10)
    json.dump(asyncio.run(main_async(args)), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
