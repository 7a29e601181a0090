#!/usr/bin/env python
"""Adaptive scheduling benchmark (learned inline-or-pool decisions, kernel_stats.py);
prints one JSON object.

The static rule decides by element count; it is wrong both ways here:
- cheap_on_pool: a chain of 24 element-wise ops on a float32 [100000] (a few µs each
  inline): the rule sends each to the pool (over 65536 elements), paying a thread
  round trip per op;
- expensive_inline: four independent TopKV2 sorting a float32 [60000] (milliseconds
  each): under the rule's threshold, so they run inline one after the other, stalling
  the loop; on the pool they overlap (where cores are free) and the loop stays free;
- both: the two in one graph.
And where the rule is right, the 10,000-node scalar add chain (peers' `chain`), compiled
(the default) and interpreted (AIOFLOW_SEGMENTS=0: every node asks the decision).

Each case runs in two sessions, static (AIOFLOW_ADAPTIVE=0 when its executors are built)
and adaptive, warmed up (the adaptive one learns in its first runs), then timed
interleaved ABAB in one process: median µs per run, the ratio static / adaptive (>1:
adaptive faster), and for expensive_inline the largest event-loop lag a 1 ms ticker saw.
Usage: python benchmarks/adaptive_scheduling.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

import aioflow as af


def cheap_chain(g, x):
    y = x
    for i in range(24):
        y = af.negative(y) if i % 2 else y * 1.0001
    return y


def topks(x):
    return [af.nn.top_k(x * float(i + 1), k=60000)[0][0] for i in range(4)]


def build(case: str):
    g = af.Graph()
    with g.as_default():
        big = af.placeholder(af.float32, [100000], name="big")
        mid = af.placeholder(af.float32, [60000], name="mid")
        if case == "cheap_on_pool":
            fetch = af.reduce_sum(cheap_chain(g, big))
        elif case == "expensive_inline":
            fetch = af.add_n(topks(mid))
        else:
            fetch = af.add_n(topks(mid) + [af.reduce_sum(cheap_chain(g, big))])
    rng = np.random.default_rng(0)
    feed = {big: rng.random(100000, dtype=np.float32), mid: rng.random(60000, dtype=np.float32)}
    return g, fetch, feed


def build_chain(n: int = 10000):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[], name="x")
        one = af.constant(1.0, name="one")
        y = x
        for _ in range(n):
            y = y + one
    return g, y, {x: 0.0}


async def _session(g, fetch, feed, adaptive: bool, segments: bool):
    """A session whose executors are built (and warmed up) with adaptivity on or off."""
    os.environ["AIOFLOW_ADAPTIVE"] = "1" if adaptive else "0"
    os.environ["AIOFLOW_SEGMENTS"] = "1" if segments else "0"
    sess = af.Session(graph=g)
    for _ in range(6):
        await sess.run(fetch, feed)
    return sess


async def _max_lag_during(coro) -> tuple[float, object]:
    """(largest lateness of a 1 ms ticker in ms, the coroutine's result)."""
    lags = []
    stop = False

    async def ticker():
        while not stop:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append(time.perf_counter() - t - 0.001)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        result = await coro
    finally:
        stop = True
        await task
    return (max(lags) * 1e3 if lags else 0.0), result


async def compare(g, fetch, feed, rounds: int, reps: int, segments: bool = True,
                  lag: bool = False) -> dict:
    static = await _session(g, fetch, feed, False, segments)
    adaptive = await _session(g, fetch, feed, True, segments)
    times = {"static": [], "adaptive": []}
    lags = {"static": [], "adaptive": []}
    for _ in range(rounds):
        for name, sess in (("static", static), ("adaptive", adaptive)):
            for _ in range(reps):
                t = time.perf_counter()
                if lag:
                    worst, _ = await _max_lag_during(sess.run(fetch, feed))
                    lags[name].append(worst)
                else:
                    await sess.run(fetch, feed)
                times[name].append((time.perf_counter() - t) * 1e6)
    check = [await s.run(fetch, feed) for s in (static, adaptive)]
    np.testing.assert_allclose(check[0], check[1], rtol=1e-6)
    await static.close()
    await adaptive.close()
    out = {f"{k}_us": round(statistics.median(v), 1) for k, v in times.items()}
    out["speedup_static_over_adaptive"] = round(
        statistics.median(times["static"]) / statistics.median(times["adaptive"]), 2)
    if lag:
        out.update({f"{k}_max_loop_lag_ms": round(statistics.median(v), 2)
                    for k, v in lags.items()})
    return out


async def main_async(args) -> dict:
    rounds, reps = (3, 5) if args.quick else (6, 10)
    result = {"benchmark": "adaptive_scheduling", "python": platform.python_version(),
              "cpus": os.cpu_count(), "cases": {}}
    for case in ("cheap_on_pool", "expensive_inline", "both"):
        g, fetch, feed = build(case)
        result["cases"][case] = await compare(g, fetch, feed, rounds, reps,
                                              lag=case == "expensive_inline")
    g, fetch, feed = build_chain()
    for segments in (True, False):
        entry = await compare(g, fetch, feed, rounds, max(2, reps // 2), segments=segments)
        for k in ("static_us", "adaptive_us"):
            entry[k.replace("_us", "_per_node_us")] = round(entry[k] / 10000, 3)
        result["cases"]["chain_10k_" + ("compiled" if segments else "interpreted")] = entry
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    json.dump(asyncio.run(main_async(args)), sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
