#!/usr/bin/env python
"""Restoring a 200 MB V2 checkpoint: aioflow's RestoreV2 against TensorFlow 2.21's, and
the event loop's heartbeat while aioflow restores.

The checkpoint (written once by aioflow's BundleWriter; TF writes the same bytes) holds
--mb megabytes of float32 in tensors of mixed sizes (a few 16 MB kernels, many 1 MB
ones, some small), as a model's variables are. Each peer restores it with one RestoreV2
op of every tensor (as a Saver's restore does) in a graph session; the page cache is
warm (a first untimed restore), so this measures the format's decoding and checksums,
not the disk. Each measurement runs in a fresh subprocess; the peers alternate (ABAB)
for --reps rounds and each round times the median of --runs restores.

aioflow's child also runs a heartbeat coroutine (sleep 1 ms, record the gap) during its
timed restores and reports the largest gap among the beats inside each restore's window
(the freeing of the previous outputs, a benchmark artefact, falls outside): the restore
runs on the pool, so the loop must stay free.

Prints one JSON object: MB, per peer the median seconds and MB/s over the rounds, the
ratio aioflow/TF of MB/s, aioflow's heartbeat max gap (ms, the worst round) and p99, and
which CRC-32C aioflow used ("numpy", or "google-crc32c" when that optional package is
installed; AIOFLOW_CRC32C=numpy forces NumPy).
Usage: python benchmarks/checkpoint_restore.py --tf-python /work/peers-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def layout(mb: int) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes adding up to about `mb` MB of float32."""
    shapes: dict[str, tuple[int, ...]] = {}
    big = max(1, mb // 2 // 16)  # half the bytes in 16 MB kernels
    for i in range(big):
        shapes[f"layer{i:02d}/kernel"] = (2048, 2048)
    rest = mb - 16 * big
    for i in range(max(0, rest)):
        shapes[f"block{i:03d}/weights"] = (512, 512)
        shapes[f"block{i:03d}/bias"] = (512,)
    return shapes


def write_checkpoint(prefix: str, mb: int) -> int:
    """Write the benchmark checkpoint with aioflow; returns its data bytes."""
    from aioflow.lib import tensor_bundle

    rng = np.random.default_rng(0)
    writer = tensor_bundle.BundleWriter(prefix)
    total = 0
    for name, shape in layout(mb).items():
        value = rng.standard_normal(shape, dtype=np.float32)
        writer.add(name, value)
        total += value.nbytes
    writer.finish()
    return total


def child_aioflow(prefix: str, mb: int, runs: int) -> dict:
    """Time `runs` restores in aioflow with a heartbeat running beside them."""
    import asyncio

    import aioflow as af
    from aioflow.framework.op_def_library import apply_op_raw

    names = list(layout(mb))

    async def main():
        g = af.Graph()
        with g.as_default():
            op = apply_op_raw("RestoreV2", prefix=af.constant(prefix),
                              tensor_names=af.constant(names),
                              shape_and_slices=af.constant([""] * len(names)),
                              dtypes=[af.float32] * len(names))
        beats: list[tuple[float, float]] = []  # (time, gap since the previous beat)
        gaps: list[float] = []
        times = []
        async with af.Session(graph=g) as sess:
            await sess.run(list(op.outputs))  # warm: page cache, kernels, pool

            async def heartbeat():
                last = time.perf_counter()
                while True:
                    await asyncio.sleep(0.001)
                    now = time.perf_counter()
                    beats.append((now, now - last))
                    last = now

            beat = asyncio.ensure_future(heartbeat())
            await asyncio.sleep(0.01)
            for _ in range(runs):
                beats.clear()
                t0 = time.perf_counter()
                out = await sess.run(list(op.outputs))
                t1 = time.perf_counter()
                times.append(t1 - t0)
                await asyncio.sleep(0.002)  # the beat that was due at the end
                # The beats of the run's window (not the freeing of its outputs after).
                gaps += [gap for at, gap in beats if t0 < at <= t1 + 0.002]
                del out
                await asyncio.sleep(0.01)
            beat.cancel()
        return times, gaps

    times, gaps = asyncio.run(main())
    from aioflow.lib import crc32c
    return {"crc32c": "google-crc32c" if crc32c._native else "numpy",
            "seconds": statistics.median(times), "max_gap_ms": max(gaps) * 1e3,
            "p99_gap_ms": float(np.percentile(gaps, 99)) * 1e3, "beats": len(gaps)}


def child_tf(prefix: str, mb: int, runs: int) -> dict:
    """Time `runs` restores in TensorFlow (graph mode, one RestoreV2)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    names = list(layout(mb))
    g = tf.Graph()
    with g.as_default():
        outs = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=names,
                                    shape_and_slices=[""] * len(names),
                                    dtypes=[tf.float32] * len(names))
    times = []
    with tf.Session(graph=g) as sess:
        sess.run(outs)
        for _ in range(runs):
            t0 = time.perf_counter()
            out = sess.run(outs)
            times.append(time.perf_counter() - t0)
            del out
    return {"seconds": statistics.median(times)}


def _measure(python: str, peer: str, prefix: str, mb: int, runs: int) -> dict:
    cmd = [python, os.path.abspath(__file__), "--child", peer, "--prefix", prefix,
           "--mb", str(mb), "--runs", str(runs)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tf-python", help="a Python with tensorflow-cpu (else aioflow only)")
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3, help="ABAB rounds")
    parser.add_argument("--runs", type=int, default=3, help="restores timed per round")
    parser.add_argument("--child", choices=["aioflow", "tf"])
    parser.add_argument("--prefix")
    args = parser.parse_args()
    if args.child:
        fn = child_aioflow if args.child == "aioflow" else child_tf
        print(json.dumps(fn(args.prefix, args.mb, args.runs)))
        return 0
    with tempfile.TemporaryDirectory(prefix="ckpt_bench") as tmp:
        prefix = os.path.join(tmp, "model")
        nbytes = write_checkpoint(prefix, args.mb)
        mb = nbytes / 2**20
        rounds: dict[str, list[dict]] = {"aioflow": [], "tf": []}
        for _ in range(args.reps):
            rounds["aioflow"].append(_measure(sys.executable, "aioflow", prefix, args.mb,
                                              args.runs))
            if args.tf_python:
                rounds["tf"].append(_measure(args.tf_python, "tf", prefix, args.mb, args.runs))
    result: dict = {"benchmark": "checkpoint_restore", "mb": round(mb, 1),
                    "tensors": len(layout(args.mb)), "cpus": os.cpu_count()}
    for peer, runs in rounds.items():
        if not runs:
            continue
        seconds = statistics.median(r["seconds"] for r in runs)
        result[peer] = {"seconds": round(seconds, 4), "mb_per_s": round(mb / seconds, 1),
                        "rounds_s": [round(r["seconds"], 4) for r in runs]}
    aio = rounds["aioflow"]
    result["aioflow"]["crc32c"] = aio[0]["crc32c"]
    result["aioflow"]["heartbeat_max_gap_ms"] = round(max(r["max_gap_ms"] for r in aio), 2)
    result["aioflow"]["heartbeat_p99_gap_ms"] = round(max(r["p99_gap_ms"] for r in aio), 2)
    if rounds["tf"]:
        result["ratio_mb_per_s_aioflow_over_tf"] = round(
            result["aioflow"]["mb_per_s"] / result["tf"]["mb_per_s"], 3)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
