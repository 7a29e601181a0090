#!/usr/bin/env python
"""Variable run overhead in aioflow and in TensorFlow 2.21, side by side.

Workloads (a 4-element float32 variable; one `run` each, sequential, after warm-up):
  read            sess.run(v) of a ref variable
  assign_add      sess.run(assign_add(v, 1)) of a ref variable (the update op fetched)
  resource_read   sess.run(v.read_value()) of a resource variable
  resource_add    sess.run(v.assign_add(1, read_value=False)) of a resource variable
Each peer runs in its own subprocess; the peers alternate (ABAB), `--reps` rounds, and
each measurement is the median of `--runs` timed runs in µs. TensorFlow runs with
`--tf-python`, a Python that has tensorflow-cpu (TensorFlow is never a dependency).

Prints one JSON object: per workload and peer the median µs per run, and aioflow / TF.
Usage: python benchmarks/variables_peer.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

WORKLOADS = ["read", "assign_add", "resource_read", "resource_add"]


def _build(lib, workload: str):
    """The fetch of `workload` and the initializer, on the default graph."""
    resource = workload.startswith("resource")
    if resource:
        v = lib.get_variable("v", [4], initializer=lib.zeros_initializer(),
                             use_resource=True)
        fetch = v.read_value() if workload == "resource_read" else \
            v.assign_add(lib.ones([4]), read_value=False)
    else:
        v = lib.Variable(lib.zeros([4]), name="v")
        fetch = v if workload == "read" else lib.assign_add(v, lib.ones([4])).op
    return fetch, lib.global_variables_initializer()


def child_tf(workload: str, runs: int) -> list[float]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    with tf.Graph().as_default():
        fetch, init = _build(tf, workload)
        with tf.Session() as sess:
            sess.run(init)
            for _ in range(200):
                sess.run(fetch)
            out = []
            for _ in range(runs):
                start = time.perf_counter()
                sess.run(fetch)
                out.append((time.perf_counter() - start) * 1e6)
    return out


def child_aioflow(workload: str, runs: int) -> list[float]:
    import asyncio

    import aioflow as af

    async def main() -> list[float]:
        g = af.Graph()
        with g.as_default():
            fetch, init = _build(af, workload)
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            for _ in range(200):
                await sess.run(fetch)
            out = []
            for _ in range(runs):
                start = time.perf_counter()
                await sess.run(fetch)
                out.append((time.perf_counter() - start) * 1e6)
        return out

    return asyncio.run(main())


def measure(python: str, peer: str, workload: str, runs: int) -> float:
    """The median µs per run of one subprocess measuring `workload` on `peer`."""
    out = subprocess.run([python, __file__, "--child", peer, "--workload", workload,
                          "--runs", str(runs)], capture_output=True, text=True, check=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tf-python", default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        fn = child_tf if args.child == "tf" else child_aioflow
        print(json.dumps(fn(args.workload, args.runs)))
        return
    results = {}
    for workload in WORKLOADS:
        times: dict[str, list[float]] = {"aioflow": [], "tf": []}
        for _ in range(args.reps):
            times["aioflow"].append(measure(sys.executable, "aioflow", workload, args.runs))
            if args.tf_python:
                times["tf"].append(measure(args.tf_python, "tf", workload, args.runs))
        entry = {peer: round(statistics.median(t), 2) for peer, t in times.items() if t}
        if "tf" in entry:
            entry["aioflow_over_tf"] = round(entry["aioflow"] / entry["tf"], 3)
        results[workload] = entry
    print(json.dumps({"unit": "us per run (median)", "results": results}, indent=2))


if __name__ == "__main__":
    main()
