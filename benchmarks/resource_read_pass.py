#!/usr/bin/env python
"""What ResourceVariableReadPass saves: fetching a 100 MB resource variable with the
pass off (ReadVariableOp; the session copies the read-only value it returns into a
writable array) and on (AIOFLOW_UNSAFE_READ_VARIABLE=1: `_UnsafeReadVariable` lends the
variable's buffer, read-only, and nothing is copied).

Both sessions hold the same 100 MB float32 variable; they alternate (ABAB) for `--reps`
rounds of `--runs` timed fetches each, after a warm-up. A second measure times a fetch
followed by a one-element update (ResourceScatterAdd) while the fetched value is still
held: with the pass on, that update copies the buffer first (copy-on-write), so the pair
is what a program that both reads and updates pays.

Prints one JSON object: per mode the median ms per fetch (and per fetch + update), and
the ratio on / off.
Usage: python benchmarks/resource_read_pass.py [--mb 100] [--runs 10] [--reps 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time

import numpy as np

import aioflow as af
from aioflow.framework.op_def_library import apply_op
from aioflow.passes.resource_variable_read import ENV


def _build(mb: int):
    """A graph with a `mb` MB float32 resource variable: (fetch, update, init)."""
    g = af.Graph()
    with g.as_default():
        n = mb * (1 << 20) // 4
        v = af.get_variable("v", [n], initializer=af.zeros_initializer(), use_resource=True)
        read = v.read_value()
        update = apply_op("ResourceScatterAdd", resource=v.handle, indices=[0],
                          updates=np.ones(1, np.float32))
        init = af.global_variables_initializer()
    return g, read, update, init


async def _session(mb: int, unsafe: bool):
    """An open session of the benchmark graph, its signatures built with the pass on or
    off (the pass reads its switch when a signature is built)."""
    g, read, update, init = _build(mb)
    sess = af.Session(graph=g)
    os.environ[ENV] = "1" if unsafe else "0"
    try:
        await sess.run(init)
        await sess.run(read)
        await sess.run(update)
    finally:
        os.environ.pop(ENV, None)
    return sess, read, update


async def _time(sess, fetch, update, runs: int, with_update: bool) -> list[float]:
    """ms per fetch (or per fetch + update), each run timed alone."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        value = await sess.run(fetch)
        if with_update:
            await sess.run(update)
        out.append((time.perf_counter() - start) * 1e3)
        del value
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    sessions = {"off": await _session(args.mb, False), "on": await _session(args.mb, True)}
    times = {(mode, kind): [] for mode in sessions for kind in ("fetch", "fetch_update")}
    for _ in range(args.reps):
        for mode, (sess, read, update) in sessions.items():
            times[mode, "fetch"] += await _time(sess, read, update, args.runs, False)
            times[mode, "fetch_update"] += await _time(sess, read, update, args.runs, True)
    for sess, _read, _update in sessions.values():
        await sess.close()
    med = {f"{mode}_{kind}_ms": round(statistics.median(v), 3)
           for (mode, kind), v in times.items()}
    print(json.dumps({
        "benchmark": "resource_read_pass", "variable_mb": args.mb,
        "runs": args.runs * args.reps, "python": platform.python_version(),
        "cpus": os.cpu_count(), **med,
        "fetch_on_over_off": round(med["on_fetch_ms"] / med["off_fetch_ms"], 3),
        "fetch_update_on_over_off": round(
            med["on_fetch_update_ms"] / med["off_fetch_update_ms"], 3)}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
