#!/usr/bin/env python
"""map_fn and scan in aioflow and in TensorFlow 2.21 (tf.compat.v1, v1 control flow),
side by side: µs per element.

Workloads, over a fed float32 [n, 8] matrix:
  map    map_fn(lambda e: reduce_sum(e * e + 1.0), x)     (one small fn per row)
  scan   scan(lambda a, e: a * 0.5 + e, x)                (a running accumulator)
Each measurement runs in a fresh subprocess: build the graph, run it twice (warm), then
take the median of `--reps` runs at n rows, divided by n. The peers alternate (ABAB) for
`--rounds` rounds; TensorFlow runs with `--tf-python`, a Python that has tensorflow-cpu
(a throwaway environment; TensorFlow is never a dependency), with its default session
config (Grappler on, as users run it).

Prints one JSON object: per workload and n, each peer's median µs/element over the rounds
and the ratio aioflow / TF, of wall time and of the process's CPU time (all threads:
steadier than the wall clock on a loaded machine, where TF's several threads win a
larger share of the cores than aioflow's one), and the load average.
Usage: python benchmarks/map_fn_peer.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKLOADS = ["map", "scan"]


def child(peer: str, workload: str, n: int, reps: int) -> dict:
    """One measurement in this process: µs per element of `workload` at n rows."""
    import time

    import numpy as np

    if peer == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as lib

        lib.disable_v2_behavior()
    else:
        import aioflow as lib
    graph = lib.Graph()
    with graph.as_default():
        x = lib.placeholder(lib.float32, [None, 8])
        if workload == "map":
            out = lib.map_fn(lambda e: lib.reduce_sum(e * e + 1.0), x)
        else:
            out = lib.scan(lambda a, e: a * 0.5 + e, x)
    value = np.random.default_rng(0).standard_normal((n, 8)).astype(np.float32)
    samples, cpu = [], []
    if peer == "tf":
        with lib.Session(graph=graph) as sess:
            for _ in range(2):
                sess.run(out, {x: value})
            for _ in range(reps):
                start, cpu_start = time.perf_counter(), time.process_time()
                sess.run(out, {x: value})
                samples.append(time.perf_counter() - start)
                cpu.append(time.process_time() - cpu_start)
    else:
        import asyncio

        async def run():
            async with lib.Session(graph=graph) as sess:
                for _ in range(2):
                    await sess.run(out, {x: value})
                for _ in range(reps):
                    start, cpu_start = time.perf_counter(), time.process_time()
                    await sess.run(out, {x: value})
                    samples.append(time.perf_counter() - start)
                    cpu.append(time.process_time() - cpu_start)

        asyncio.run(run())
    return {"us_per_element": statistics.median(samples) / n * 1e6,
            "cpu_us_per_element": statistics.median(cpu) / n * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--tf-python", required=True)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=3, metavar=("PEER", "WORKLOAD", "N"))
    args = parser.parse_args()
    if args.child:
        peer, workload, n = args.child
        print(json.dumps(child(peer, workload, int(n), args.reps)))
        return
    here = os.path.abspath(__file__)
    pythons = {"aioflow": sys.executable, "tf": args.tf_python}
    results: dict = {}
    load_before = os.getloadavg()[0]
    for workload in WORKLOADS:
        for n in [int(s) for s in args.sizes.split(",")]:
            runs: dict[str, list[dict]] = {"aioflow": [], "tf": []}
            for _ in range(args.rounds):
                for peer in ("aioflow", "tf"):  # ABAB
                    cmd = [pythons[peer], here, "--tf-python", args.tf_python, "--reps",
                           str(args.reps), "--child", peer, workload, str(n)]
                    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
                    runs[peer].append(json.loads(out.stdout.strip().splitlines()[-1]))
            entry = {}
            for key, name in (("us_per_element", ""), ("cpu_us_per_element", "cpu_")):
                for peer, got in runs.items():
                    entry[f"{name}{peer}"] = round(statistics.median(g[key] for g in got), 2)
                entry[f"{name}ratio_aioflow_over_tf"] = round(
                    entry[f"{name}aioflow"] / entry[f"{name}tf"], 2)
            results[f"{workload}_{n}"] = entry
    print(json.dumps({"benchmark": "map_fn_peer", "rounds": args.rounds, "reps": args.reps,
                      "load_before_after": [load_before, os.getloadavg()[0]],
                      "results": results}, indent=1))


if __name__ == "__main__":
    main()
