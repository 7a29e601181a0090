#!/usr/bin/env python
"""A large TensorArray in aioflow and in TensorFlow 2.21, side by side: time and memory.

Workloads (the hardening issue's case; --scale shrinks them):
  create         TensorArrayV3 of 3e7 float32 elements, its size read back
  unstack_stack  reduce_sum(TensorArray(3e7).unstack(cast(range(3e7))).stack())
Each measurement runs in a fresh subprocess (so peak RSS belongs to it): build the graph,
run it once with one element (the runtime warm), then time one `run` at full size and take
the peak-RSS growth over the process's size before it.
The peers alternate (ABAB), `--reps` rounds. TensorFlow runs with `--tf-python`, a Python
that has tensorflow-cpu (a throwaway environment; TensorFlow is never a dependency).

Prints one JSON object: per workload and peer the median seconds and peak-RSS growth (MB)
and the ratios aioflow / TF.
Usage: python benchmarks/tensor_array_peer.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKLOADS = ["create", "unstack_stack"]


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(peer: str, workload: str, size: int) -> dict:
    """One measurement in this process: build, then time one run."""
    import time

    if peer == "tf":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow.compat.v1 as lib

        lib.disable_eager_execution()
        graph, session = lib.Graph(), None
    else:
        import aioflow as lib

        graph = lib.Graph()
    with graph.as_default():
        n = lib.placeholder(lib.int32, [])
        ta = lib.TensorArray(lib.float32, size=n, element_shape=[])
        if workload == "create":
            out = ta.size()
        else:
            out = lib.reduce_sum(ta.unstack(lib.cast(lib.range(n), lib.float32)).stack())
    if peer == "tf":
        config = lib.ConfigProto()
        config.graph_options.optimizer_options.opt_level = lib.OptimizerOptions.L0
        config.graph_options.rewrite_options.disable_meta_optimizer = True
        session = lib.Session(graph=graph, config=config)
        session.run(out, {n: 1})  # the runtime warm: what grows next is the array's
        before = _rss_mb()
        start = time.perf_counter()
        value = session.run(out, {n: size})
        seconds = time.perf_counter() - start
        session.close()
    else:
        import asyncio

        async def run():
            async with lib.Session(graph=graph) as sess:
                await sess.run(out, {n: 1})  # the runtime warm (kernels loaded, built)
                rss = _rss_mb()
                start = time.perf_counter()
                result = await sess.run(out, {n: size})
                return result, time.perf_counter() - start, rss

        value, seconds, before = asyncio.run(run())
    return {"seconds": seconds, "peak_growth_mb": _peak_mb() - before, "value": float(value)}


def measure(python: str, peer: str, workload: str, size: int) -> dict:
    proc = subprocess.run([python, __file__, "--child", peer, workload, str(size)],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", required="--child" not in sys.argv)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--child", nargs=3, metavar=("PEER", "WORKLOAD", "SIZE"))
    args = parser.parse_args()
    if args.child:
        peer, workload, size = args.child
        print(json.dumps(child(peer, workload, int(size))))
        return
    size = int(3e7 * args.scale)
    report = {"size": size, "reps": args.reps, "workloads": {}}
    for workload in args.only.split(","):
        runs = {"tf": [], "aioflow": []}
        for _ in range(args.reps):  # ABAB
            runs["tf"].append(measure(args.tf_python, "tf", workload, size))
            runs["aioflow"].append(measure(sys.executable, "aioflow", workload, size))
        entry = {}
        for peer, results in runs.items():
            failed = [r for r in results if "error" in r]
            if failed:
                entry[peer] = {"error": failed[0]["error"]}
                continue
            entry[peer] = {
                "seconds": statistics.median(r["seconds"] for r in results),
                "peak_growth_mb": statistics.median(r["peak_growth_mb"] for r in results),
                "value": results[0]["value"]}
        if "seconds" in entry.get("tf", {}) and "seconds" in entry.get("aioflow", {}):
            entry["time_ratio_aioflow_over_tf"] = round(
                entry["aioflow"]["seconds"] / max(entry["tf"]["seconds"], 1e-9), 4)
            entry["memory_ratio_aioflow_over_tf"] = round(
                max(entry["aioflow"]["peak_growth_mb"], 1.0)
                / max(entry["tf"]["peak_growth_mb"], 1.0), 4)
        report["workloads"][workload] = entry
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
