#!/usr/bin/env python
"""Cross-device while loop benchmark; prints one JSON object.

The loop `(i, acc) -> (i + 1, acc * 1.0001 + 1)` with its multiply-add on /cpu:1 and its
counter and condition on /cpu:0 (ConfigProto device_count={"CPU": 2}): every iteration
sends the predicate and the value to /cpu:1 and the result back, through the control
loop TF's partitioner adds. Compared, interleaved ABAB in one process, with the same
loop on one device, compiled (the default: a cheap loop on one device runs as one
generated Python `while`) and interpreted (segments off, as the split loop runs):
µs per iteration = (run time - run overhead of a trivial graph) / iterations.
Usage: python benchmarks/cross_device_loop.py [--quick] [--iterations N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import time

import numpy as np

import aioflow as af


def build(body_device: str):
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


async def time_us(sess, fetch, feed, reps: int) -> list[float]:
    await sess.run(fetch, feed)
    samples = []
    gc.disable()
    try:
        for _ in range(reps):
            start = time.perf_counter()
            await sess.run(fetch, feed)
            samples.append((time.perf_counter() - start) * 1e6)
    finally:
        gc.enable()
    return samples


async def main_async(args) -> dict:
    two = af.ConfigProto(device_count={"CPU": 2})
    cases = {
        "split_two_devices": (build("/cpu:1"), two, True),
        "one_device_compiled": (build("/cpu:0"), two, True),
        "one_device_interpreted": (build("/cpu:0"), two, False),
    }
    xv = np.ones(4, np.float32)
    sessions = {}
    for name, ((g, limit, x, out), config, segments) in cases.items():
        sess = af.Session(graph=g, config=config, compile_segments=segments)
        sessions[name] = (sess, out, {limit: args.iterations, x: xv}, {limit: 0, x: xv})
    samples = {name: [] for name in cases}
    base = {name: [] for name in cases}
    for _ in range(args.rounds):  # interleaved: A B C A B C ...
        for name, (sess, out, feed, feed0) in sessions.items():
            samples[name] += await time_us(sess, out, feed, args.reps)
            base[name] += await time_us(sess, out, feed0, args.reps)
    for sess, *_ in sessions.values():
        await sess.close()
    per_iter = {name: (statistics.median(samples[name]) - statistics.median(base[name]))
                / args.iterations for name in cases}
    split = per_iter["split_two_devices"]
    return {
        "benchmark": "cross_device_loop",
        "python": platform.python_version(),
        "iterations": args.iterations,
        "us_per_iteration": {k: round(v, 2) for k, v in per_iter.items()},
        "ratio_split_vs_one_device_compiled": round(split / per_iter["one_device_compiled"], 2),
        "ratio_split_vs_one_device_interpreted": round(
            split / per_iter["one_device_interpreted"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--iterations", type=int, default=1000)
    args = parser.parse_args()
    args.rounds, args.reps = (2, 5) if args.quick else (4, 10)
    json.dump(asyncio.run(main_async(args)), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
