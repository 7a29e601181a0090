#!/usr/bin/env python
"""How long aioflow holds the event loop: the longest heartbeat gap while each graph runs.

A coroutine sleeps 1 ms in a loop and records how late it wakes; each workload runs
(once warm, once cold where the first run builds the step) while it beats. Workloads
(sizes from the hardening issue; --scale shrinks them):
  fill           reduce_sum(fill([3e8], 1.0)) (Fill's output is not bounded by its input)
  range          reduce_sum(range(3e8))
  tile           reduce_sum(tile(x[1e4], [3e4]))
  pad            reduce_sum(pad(x[10], [[0, 6e8]]))
  broadcast_to   broadcast_to(1.0, [30000, 30000]) fetched (fetch conversion of 3.6 GB)
  tensor_array   a TensorArray of 3e7 float32 elements: unstack(range) then stack, summed
  fold_py_func   a stateless py_func of 0.2 s on a Const, constant-folded (optimizers on)
  fold_reduce    reduce_sum(fill([2e8], 1.0)) constant-folded (optimizers on)
  burst          10,000 `sess.run` of a one-node graph started together, against 10,000
                 plain coroutines doing as little
Prints one JSON object: per workload the max and p99 gap (ms) and the wall time.
Usage: python benchmarks/loop_stall.py [--scale 0.1] [--only a,b]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time

import numpy as np

import aioflow as af

ALL = ["fill", "range", "tile", "pad", "broadcast_to", "tensor_array", "fold_py_func",
       "fold_reduce", "burst"]


def config(fold: bool) -> af.ConfigProto:
    cfg = af.ConfigProto()
    if not fold:
        cfg.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
    return cfg


async def heartbeat_during(make_awaitable, period: float = 0.001):
    """(result, gaps in seconds): a 1 ms heartbeat's lateness while the awaitable runs."""
    gaps = []
    done = False

    async def beat():
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(period)
            gaps.append(time.perf_counter() - start - period)

    hb = asyncio.ensure_future(beat())
    await asyncio.sleep(0)
    try:
        result = await make_awaitable()
    finally:
        done = True
        await hb
    return result, gaps


def summary(gaps, wall: float) -> dict:
    ms = np.array(gaps or [0.0]) * 1e3
    return {"max_gap_ms": round(float(ms.max()), 2),
            "p99_gap_ms": round(float(np.percentile(ms, 99)), 2),
            "wall_ms": round(wall * 1e3, 1), "samples": len(gaps)}


async def measure_run(graph, fetch, feed=None, fold=False) -> dict:
    """Gap during the first run (it builds the step) and during a second run."""
    out = {}
    async with af.Session(graph=graph, config=config(fold)) as sess:
        for label in ("first_run", "second_run"):
            gc.collect()
            start = time.perf_counter()
            _, gaps = await heartbeat_during(lambda: sess.run(fetch, feed_dict=feed))
            out[label] = summary(gaps, time.perf_counter() - start)
    return out


def n(base: float, scale: float) -> int:
    return max(1, int(base * scale))


async def fill(scale):
    g = af.Graph()
    with g.as_default():
        dims = af.placeholder(af.int32, [1])
        y = af.reduce_sum(af.fill(dims, 1.0))
    return await measure_run(g, y, {dims: [n(3e8, scale)]})


async def range_(scale):
    g = af.Graph()
    with g.as_default():
        limit = af.placeholder(af.int32, [])
        y = af.reduce_sum(af.range(limit))
    return await measure_run(g, y, {limit: n(3e8, scale)})


async def tile(scale):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None])
        reps = af.placeholder(af.int32, [1])
        y = af.reduce_sum(af.tile(x, reps))
    return await measure_run(g, y, {x: np.ones(10_000, np.float32), reps: [n(3e4, scale)]})


async def pad(scale):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None])
        paddings = af.placeholder(af.int32, [1, 2])
        y = af.reduce_sum(af.pad(x, paddings))
    return await measure_run(g, y, {x: np.ones(10, np.float32),
                                    paddings: [[0, n(6e8, scale)]]})


async def broadcast_to(scale):
    g = af.Graph()
    with g.as_default():
        shape = af.placeholder(af.int32, [2])
        y = af.broadcast_to(af.constant(1.0), shape)
    side = n(30000, scale ** 0.5)
    return await measure_run(g, y, {shape: [side, side]})


async def tensor_array(scale):
    g = af.Graph()
    with g.as_default():
        size = af.placeholder(af.int32, [])
        values = af.cast(af.range(size), af.float32)
        ta = af.TensorArray(af.float32, size=size, element_shape=[])
        y = af.reduce_sum(ta.unstack(values).stack())
    return await measure_run(g, y, {size: n(3e7, scale)})


async def fold_py_func(scale):
    def slow(v):
        time.sleep(0.2)
        return v

    g = af.Graph()
    with g.as_default():
        y = af.py_func(slow, [af.constant(1.0)], af.float32, stateful=False) + 1.0
    return await measure_run(g, y, fold=True)


async def fold_reduce(scale):
    g = af.Graph()
    with g.as_default():
        y = af.reduce_sum(af.fill([n(2e8, scale)], 1.0))
    return await measure_run(g, y, fold=True)


async def burst(scale):
    runs = n(10_000, min(1.0, scale * 10))
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])
        y = af.identity(x)
    out = {"runs": runs}
    async with af.Session(graph=g, config=config(False)) as sess:
        await sess.run(y, {x: 1.0})

        async def plain(i):
            await asyncio.sleep(0)
            return i

        for label, make in (("sess_run", lambda: sess.run(y, {x: 1.0})),
                            ("plain_coroutines", lambda: plain(1))):
            gc.collect()
            start = time.perf_counter()
            _, gaps = await heartbeat_during(
                lambda make=make: asyncio.gather(*(make() for _ in range(runs))))
            out[label] = summary(gaps, time.perf_counter() - start)
    return out


WORKLOADS = {"fill": fill, "range": range_, "tile": tile, "pad": pad,
             "broadcast_to": broadcast_to, "tensor_array": tensor_array,
             "fold_py_func": fold_py_func, "fold_reduce": fold_reduce, "burst": burst}


async def main(args) -> dict:
    only = args.only.split(",") if args.only else ALL
    results = {}
    for name in only:
        try:
            results[name] = await WORKLOADS[name](args.scale)
        except Exception as e:  # noqa: BLE001 - record it and go on
            results[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
        gc.collect()
    return {"benchmark": "loop_stall", "scale": args.scale, "target_max_gap_ms": 20,
            "results": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="")
    print(json.dumps(asyncio.run(main(parser.parse_args())), indent=2))
