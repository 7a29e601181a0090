#!/usr/bin/env python
"""tf.data beside TensorFlow 2.21's: the same TF 1.x input pipelines, run to the end.

Workloads:
  tfrecord_pipeline  TFRecordDataset (2,000 tf.train.Examples) -> map(parse_single_example)
                     -> map -> shuffle(256) -> batch(32) -> prefetch(2): ms per epoch, and
                     elements per second
  slices_batch       from_tensor_slices(20,000 float32 [8]).batch(32): µs per element
  heartbeat_p99_ms   aioflow only: the loop's heartbeat (a 1 ms sleep in a loop) while the
                     tfrecord pipeline runs: the 99th percentile of the gaps, in ms; beside
                     it the same heartbeat next to a plain Python task busy 0.5 ms between
                     yields (what the machine's scheduling alone costs), and
                     loop_hold_p99_ms: the 99th percentile of the CPU time one loop
                     callback (a task step) held the loop for while the pipeline ran
aioflow's epochs are `await sess.run(get_next)` until OutOfRangeError; TF's are a v1
Session's `run` in a child process of `--tf-python`. The peers alternate (ABAB), `--reps`
rounds; each figure is the median. Beside each epoch's wall time, its CPU time (the
process's, all threads: TF's parse on its inter-op threads, aioflow's file reads on its
pool), `cpu_ms`: on a shared machine the wall time depends on how many cores each peer
gets, the CPU time much less. The load average before and after is printed with them.
aioflow's parse loop (aioflow/kernels/io/parsing_jit.py) is compiled before the warm-up
epoch, as TF's kernels are compiled before it runs (numba caches it on disk: a one-time
cost per machine). Prints one JSON object.

Usage: python benchmarks/data_pipeline.py --tf-python /work/tfvenv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from peer_timing import summarize

EXAMPLES = 2000
SLICES = 20000

PIPELINES = r'''
def tfrecord_pipeline(tf, path):
    features = {"id": tf.FixedLenFeature([], tf.int64),
                "values": tf.FixedLenFeature([16], tf.float32),
                "label": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.TFRecordDataset(path)
    ds = ds.map(lambda r: tf.parse_single_example(r, features))
    ds = ds.map(lambda ex: (ex["values"] * 2.0 + 1.0, ex["label"]))
    ds = ds.shuffle(256, seed=1).batch(32).prefetch(2)
    return tf.data.make_initializable_iterator(ds)


def slices_batch(tf, n):
    data = (__import__("numpy").arange(n * 8, dtype="float32").reshape(n, 8))
    ds = tf.data.Dataset.from_tensor_slices(data).batch(32)
    return tf.data.make_initializable_iterator(ds)
'''

TF_CHILD = PIPELINES + r'''
import json, sys, time
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_eager_execution()
path, n = sys.argv[1], int(sys.argv[2])
g = tf.Graph()
with g.as_default():
    its = {"tfrecord_pipeline": tfrecord_pipeline(v1, path), "slices_batch": slices_batch(v1, n)}
    nexts = {k: it.get_next() for k, it in its.items()}
sess = v1.Session(graph=g, config=v1.ConfigProto(inter_op_parallelism_threads=2,
                                                 intra_op_parallelism_threads=2))

def epoch(name):
    sess.run(its[name].initializer)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        while True:
            sess.run(nexts[name])
    except tf.errors.OutOfRangeError:
        pass
    return [(time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3]

for name in its: epoch(name)
print("ready", flush=True)
for line in sys.stdin:
    print(json.dumps(epoch(line.strip())), flush=True)
'''


def write_examples(path: str) -> None:
    import aioflow as af
    from aioflow.proto import example_pb2

    rng = np.random.default_rng(0)
    with af.io.TFRecordWriter(path) as writer:
        for i in range(EXAMPLES):
            ex = example_pb2.Example()
            ex.features.feature["id"].int64_list.value.append(i)
            ex.features.feature["values"].float_list.value.extend(rng.normal(size=16))
            ex.features.feature["label"].int64_list.value.append(i % 10)
            writer.write(ex.SerializeToString())


async def af_epoch(sess, it, nxt) -> float:
    return (await af_epoch_cpu(sess, it, nxt))[0]


async def af_epoch_cpu(sess, it, nxt) -> list[float]:
    """[wall ms, CPU ms (the process's, all threads)] of one epoch."""
    import aioflow as af

    await sess.run(it.initializer)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        while True:
            await sess.run(nxt)
    except af.errors.OutOfRangeError:
        pass
    return [(time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3]


async def heartbeat_p99(sess, it, nxt) -> tuple[float, float]:
    """While an epoch of the pipeline runs: the 99th percentile of the loop's 1 ms
    heartbeat's gaps, and of the time each loop callback (a task's step) held the loop."""
    gaps: list[float] = []
    holds: list[float] = []
    stop = asyncio.Event()
    run = asyncio.events.Handle._run

    def timed(handle):  # CPU time of the loop's thread: what the callback itself cost
        start = time.thread_time()
        run(handle)
        holds.append((time.thread_time() - start) * 1e3)

    async def beat():
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append((now - last) * 1e3)
            last = now

    task = asyncio.create_task(beat())
    asyncio.events.Handle._run = timed
    try:
        await af_epoch(sess, it, nxt)
    finally:
        asyncio.events.Handle._run = run
    stop.set()
    await task
    return float(np.percentile(gaps, 99)), float(np.percentile(holds, 99))


async def busy_baseline_p99() -> float:
    """The same heartbeat beside a plain Python task that computes 0.5 ms between yields:
    what the machine's scheduling alone does to the heartbeat (a shared machine
    deschedules a busy process)."""
    gaps: list[float] = []
    stop = False

    async def spin():
        while not stop:
            start = time.perf_counter()
            while time.perf_counter() - start < 0.0005:
                pass
            await asyncio.sleep(0)

    task = asyncio.create_task(spin())
    last = time.perf_counter()
    for _ in range(500):
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append((now - last) * 1e3)
        last = now
    stop = True
    await task
    return float(np.percentile(gaps, 99))


async def main_async(args, path: str) -> dict:
    import aioflow as af
    import aioflow.compat.v1 as v1
    from aioflow.kernels.io import parsing_jit

    parsing_jit.wait_ready()
    scope: dict = {}
    exec(PIPELINES, scope)  # noqa: S102 - the same pipeline source as TF's child
    graph = af.Graph()
    with graph.as_default():
        its = {"tfrecord_pipeline": scope["tfrecord_pipeline"](v1, path),
               "slices_batch": scope["slices_batch"](v1, SLICES)}
        nexts = {k: it.get_next() for k, it in its.items()}
    sess = af.Session(graph=graph)
    child = subprocess.Popen([args.tf_python, "-c", TF_CHILD, path, str(SLICES)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True,
                             env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert child.stdout.readline().strip() == "ready"

    def tf(name: str) -> list[float]:
        child.stdin.write(f"{name}\n")
        child.stdin.flush()
        return json.loads(child.stdout.readline())

    for name in its:
        await af_epoch(sess, its[name], nexts[name])
    times = {name: {"aioflow": [], "tf": []} for name in its}
    cpu = {name: {"aioflow": [], "tf": []} for name in its}
    beats, baselines = [], []
    load_before = os.getloadavg()[0]
    for _ in range(args.reps):  # ABAB
        for name in its:
            for peer, (wall, used) in (("aioflow", await af_epoch_cpu(sess, its[name],
                                                                       nexts[name])),
                                       ("tf", tf(name))):
                times[name][peer].append(wall)
                cpu[name][peer].append(used)
        beats.append(await heartbeat_p99(sess, its["tfrecord_pipeline"],
                                         nexts["tfrecord_pipeline"]))
        baselines.append(await busy_baseline_p99())
    child.stdin.close()
    child.wait()
    await sess.close()
    result = summarize(times)
    for name, per_peer in summarize(cpu).items():
        result[name]["cpu_ms"] = per_peer
    for peer in ("aioflow", "tf"):
        ms = result["tfrecord_pipeline"][peer]
        result["tfrecord_pipeline"][f"{peer}_elements_per_s"] = round(EXAMPLES / ms * 1e3)
        result["tfrecord_pipeline"][f"{peer}_cpu_us_per_element"] = round(
            result["tfrecord_pipeline"]["cpu_ms"][peer] * 1e3 / EXAMPLES, 2)
        result["slices_batch"][f"{peer}_us_per_element"] = round(
            result["slices_batch"][peer] * 1e3 / SLICES, 3)
    result["load_average_before_after"] = [round(load_before, 2),
                                           round(os.getloadavg()[0], 2)]
    result["heartbeat_p99_ms"] = round(float(np.median([b[0] for b in beats])), 2)
    result["heartbeat_p99_busy_python_baseline_ms"] = round(float(np.median(baselines)), 2)
    result["loop_hold_p99_ms"] = round(float(np.median([b[1] for b in beats])), 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "examples.tfrecord")
        write_examples(path)
        result = asyncio.run(main_async(args, path))
    print(json.dumps({"benchmark": "data_pipeline", "unit": "ms per epoch", "reps": args.reps,
                      "python": sys.version.split()[0], "results": result}, indent=1))


if __name__ == "__main__":
    main()
