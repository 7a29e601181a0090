#!/usr/bin/env python
"""While-loop benchmark; prints one JSON object.

A cheap counting loop `(i, acc) -> (i + 1, acc + i)` while `i < limit` (limit fed), at
parallel_iterations 1 and 10: µs per iteration (run time minus the run overhead of a
trivial graph, divided by the iteration count). With --big, also a 1,000,000-iteration
run and the process's peak RSS before and after it (memory must not grow with the
iteration count: iterations are freed as they finish).
Usage: python benchmarks/while_loop.py [--quick] [--big] [--loop asyncio|uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import resource
import statistics
import sys
import time

import aioflow as af


def build(parallel_iterations: int):
    g = af.Graph()
    with g.as_default():
        limit = af.placeholder(af.int32, shape=[], name="limit")
        out = af.while_loop(lambda i, a: i < limit, lambda i, a: (i + 1, a + i),
                            [af.constant(0), af.constant(0)],
                            parallel_iterations=parallel_iterations)
    return g, limit, out


async def median_us(fn, reps: int) -> float:
    await fn()
    samples = []
    gc.disable()
    try:
        for _ in range(reps):
            start = time.perf_counter()
            await fn()
            samples.append((time.perf_counter() - start) * 1e6)
    finally:
        gc.enable()
    return statistics.median(samples)


async def overhead_us(reps: int) -> float:
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.int32, shape=[])
        y = af.identity(x)
    async with af.Session(graph=g) as sess:
        return await median_us(lambda: sess.run(y, {x: 1}), reps * 50)


async def main_async(args) -> dict:
    iterations = 2000 if args.quick else 10000
    reps = 3 if args.quick else 9
    base = await overhead_us(reps)
    results: dict = {"iterations": iterations, "run_overhead_us": round(base, 2)}
    for pi in (1, 10):
        g, limit, out = build(pi)
        async with af.Session(graph=g) as sess:
            i, acc = await sess.run(out, {limit: iterations})
            assert int(i) == iterations and int(acc) == iterations * (iterations - 1) // 2
            t = await median_us(lambda s=sess, l=limit, o=out: s.run(o, {l: iterations}), reps)
        results[f"parallel_iterations={pi}"] = {
            "run_us": round(t, 1), "per_iteration_us": round((t - base) / iterations, 3)}
    r1 = results["parallel_iterations=1"]["per_iteration_us"]
    r10 = results["parallel_iterations=10"]["per_iteration_us"]
    results["ratio_pi10_over_pi1"] = round(r10 / r1, 3)
    if args.big:
        n = 1_000_000
        g, limit, out = build(10)
        async with af.Session(graph=g) as sess:
            await sess.run(out, {limit: 1000})
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            start = time.perf_counter()
            i, _ = await sess.run(out, {limit: n})
            wall = time.perf_counter() - start
            rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert int(i) == n
        results["million_iterations"] = {
            "wall_s": round(wall, 2), "per_iteration_us": round(wall / n * 1e6, 3),
            "peak_rss_kib_before": rss_before, "peak_rss_kib_after": rss_after,
            "peak_rss_growth_kib": rss_after - rss_before}
    return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--big", action="store_true", help="also run 1,000,000 iterations")
    parser.add_argument("--loop", default="asyncio", choices=["asyncio", "uvloop"])
    args = parser.parse_args()
    if args.loop == "uvloop":
        import uvloop

        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    try:
        results = loop.run_until_complete(main_async(args))
    finally:
        loop.close()
    print(json.dumps({"benchmark": "while_loop", "python": platform.python_version(),
                      "loop": args.loop, "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
