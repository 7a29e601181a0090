#!/usr/bin/env python
"""What building and starting steps costs the event loop; prints one JSON object.

Workloads:
  first_run   a freshly imported 10,000-node chain GraphDef (x placeholder, 10,000 AddV2 of
              one Const, identity out) run once: p99/max lateness of a 1 ms heartbeat while
              the session builds and runs the step, and the same for a second run
  cold_start  import_graph_def + Session() + first run of that chain, wall ms (median of
              --reps fresh processes); --peer also times TensorFlow's (tf.compat.v1) in the
              peers venv, same graph, same steps
  extend      add-an-op-then-run, 200 times, on a session holding the 10k chain: ms per step
              (the op apart from the chain: what grows with the graph is the extension)
  burst       10,000 `sess.run` of a one-node graph started together (asyncio.gather) vs
              10,000 plain coroutines: heartbeat max/p99 and wall ms
  deadline    RunOptions(timeout_in_ms=200) on an async kernel that swallows cancellation
              (sleeps 3 s, and 3 s more when cancelled): when the run raises
Usage: python benchmarks/session_build.py [--only a,b] [--reps 5] [--peer /path/to/python]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ALL = ["first_run", "cold_start", "extend", "burst", "deadline"]
CHAIN = 10_000


def chain_graph_def(graph_pb2, dtype_float: int, n: int = CHAIN):
    """The chain as a GraphDef, written with protobuf only (as a .pb TensorFlow wrote)."""
    from google.protobuf import text_format  # noqa: F401  (imported with the protos)

    gd = graph_pb2.GraphDef()
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = dtype_float
    one = gd.node.add(name="one", op="Const")
    one.attr["dtype"].type = dtype_float
    one.attr["value"].tensor.dtype = dtype_float
    one.attr["value"].tensor.float_val.append(1.0)
    one.attr["value"].tensor.tensor_shape.SetInParent()
    prev = "x"
    for i in range(n):
        node = gd.node.add(name=f"add_{i}", op="AddV2", input=[prev, "one"])
        node.attr["T"].type = dtype_float
        prev = node.name
    out = gd.node.add(name="out", op="Identity", input=[prev])
    out.attr["T"].type = dtype_float
    return gd


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


async def first_run(args) -> dict:
    import aioflow as af
    from aioflow.proto import graph_pb2

    gd = chain_graph_def(graph_pb2, af.float32.as_datatype_enum)
    out = {}
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(gd, name="")
    config = af.ConfigProto()
    async with af.Session(graph=g, config=config) as sess:
        for label in ("first_run", "second_run"):
            gc.collect()
            start = time.perf_counter()
            value, gaps = await heartbeat_during(lambda: sess.run("out:0", {"x:0": 0.0}))
            out[label] = summary(gaps, time.perf_counter() - start)
            assert value == CHAIN, value
    return out


COLD_AIOFLOW = """
import asyncio, sys, time
sys.path.insert(0, {bench!r})
t0 = time.perf_counter()
import aioflow as af
from aioflow.proto import graph_pb2
from session_build import chain_graph_def
gd = chain_graph_def(graph_pb2, af.float32.as_datatype_enum)
async def main():
    start = time.perf_counter()
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(gd, name="")
    sess = af.Session(graph=g)
    v = await sess.run("out:0", {{"x:0": 0.0}})
    took = time.perf_counter() - start
    assert v == {n}, v
    await sess.close()
    return took
print(asyncio.run(main()))
"""

COLD_TF = """
import os, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
sys.path.insert(0, {bench!r})
import tensorflow as tf
from tensorflow.core.framework import graph_pb2
from session_build import chain_graph_def
tf.compat.v1.disable_eager_execution()
gd = chain_graph_def(graph_pb2, tf.float32.as_datatype_enum)
start = time.perf_counter()
g = tf.Graph()
with g.as_default():
    tf.compat.v1.import_graph_def(gd, name="")
sess = tf.compat.v1.Session(graph=g)
v = sess.run("out:0", {{"x:0": 0.0}})
took = time.perf_counter() - start
assert v == {n}, v
print(took)
"""


def _cold(python: str, template: str, reps: int) -> dict:
    code = template.format(bench=os.path.dirname(os.path.abspath(__file__)), n=CHAIN)
    times = []
    for _ in range(reps):
        res = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
        times.append(float(res.stdout.strip().splitlines()[-1]) * 1e3)
    return {"median_ms": round(statistics.median(times), 1), "min_ms": round(min(times), 1)}


async def cold_start(args) -> dict:
    out = {"aioflow": _cold(sys.executable, COLD_AIOFLOW, args.reps)}
    if args.peer:
        out["tensorflow"] = _cold(args.peer, COLD_TF, args.reps)
    return out


async def extend(args) -> dict:
    import aioflow as af
    from aioflow.proto import graph_pb2

    g = af.Graph()
    with g.as_default():
        af.import_graph_def(chain_graph_def(graph_pb2, af.float32.as_datatype_enum), name="")
        out_t = g.get_tensor_by_name("out:0")
        c = af.constant(1.0)
    async with af.Session(graph=g) as sess:
        await sess.run(out_t, {"x:0": 0.0})
        steps = 200
        start = time.perf_counter()
        for i in range(steps):
            with g.as_default():
                y = af.add(c, float(i))
            await sess.run(y)
        took = time.perf_counter() - start
    return {"steps": steps, "ms_per_step": round(took / steps * 1e3, 2)}


async def burst(args) -> dict:
    import aioflow as af

    runs = 10_000
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])
        y = af.identity(x)
    config = af.ConfigProto()
    config.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
    out = {"runs": runs}
    async with af.Session(graph=g, config=config) as sess:
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


async def deadline(args) -> dict:
    import aioflow as af
    from aioflow.framework import errors

    async def stubborn(v):
        try:
            await asyncio.sleep(3)
        except asyncio.CancelledError:
            await asyncio.sleep(3)
        return v

    g = af.Graph()
    with g.as_default():
        y = af.async_py_func(stubborn, [af.constant(1.0)], af.float32)
    async with af.Session(graph=g) as sess:
        start = time.perf_counter()
        try:
            await sess.run(y, options=af.RunOptions(timeout_in_ms=200))
            outcome = "returned"
        except errors.DeadlineExceededError:
            outcome = "DeadlineExceededError"
        except Exception as e:  # noqa: BLE001 - reported
            outcome = f"{type(e).__name__}: {e}"[:200]
        took = time.perf_counter() - start
    return {"timeout_ms": 200, "raised_after_ms": round(took * 1e3, 1), "outcome": outcome}


WORKLOADS = {"first_run": first_run, "cold_start": cold_start, "extend": extend,
             "burst": burst, "deadline": deadline}


async def main(args) -> dict:
    only = args.only.split(",") if args.only else ALL
    results = {}
    for name in only:
        results[name] = await WORKLOADS[name](args)
        gc.collect()
    return {"benchmark": "session_build", "results": results}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--peer", default="", help="python of a venv with TensorFlow")
    print(json.dumps(asyncio.run(main(parser.parse_args())), indent=2))
