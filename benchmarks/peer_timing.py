"""Timing shared by the kernel-against-TF benchmarks (image_scale_peer.py,
image_codec_peer.py): per workload, ms per call, and the medians' ratio to TF's."""

from __future__ import annotations

import statistics
import time


def measure(fns: dict, runs: int, cpu: dict | None = None) -> dict:
    """{workload: [ms per call] over `runs` calls}, after one warm-up call each; with a
    `cpu` dict, also {workload: [process CPU ms per call]} into it (every thread's: on a
    shared machine steadier than the wall clock)."""
    out = {}
    for name, fn in fns.items():
        fn()
        times, cpus = [], []
        for _ in range(runs):
            start, cpu_start = time.perf_counter(), time.process_time()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
            cpus.append((time.process_time() - cpu_start) * 1e3)
        out[name] = times
        if cpu is not None:
            cpu[name] = cpus
    return out


def summarize(times: dict) -> dict:
    """{workload: {peer: median ms, "aioflow_over_tf": ratio}} from {workload: {peer: [ms]}}."""
    result = {}
    for name, peers in times.items():
        ms = {peer: round(statistics.median(t), 3) for peer, t in peers.items() if t}
        if "tf" in ms:
            ms["aioflow_over_tf"] = round(ms["aioflow"] / ms["tf"], 2)
        result[name] = ms
    return result
