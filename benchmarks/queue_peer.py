#!/usr/bin/env python
"""Queues beside TensorFlow 2.21's: runs that enqueue and dequeue one FIFOQueue.

Workloads (a FIFOQueue of float32 [16] elements, capacity 32):
  roundtrip   one client: run the enqueue, then run the dequeue; ms per pair
  pipe_2x2    2 producers and 2 consumers, 400 elements each way, concurrently (a run
              waits on the queue whenever it is empty or full); ms per element
aioflow's producers and consumers are coroutines on one event loop (`await sess.run`,
gathered); TF's are threads calling a v1 Session's blocking `run` (how TF 1 fed queues),
in a child process of `--tf-python`. The peers alternate (ABAB), `--reps` rounds; each
figure is the median. Prints one JSON object.

Usage: python benchmarks/queue_peer.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

import numpy as np
from peer_timing import summarize

ROUNDTRIPS = 300
PIPE_ELEMENTS = 400

TF_CHILD = r'''
import json, sys, threading, time
import numpy as np
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_eager_execution()
g = tf.Graph()
with g.as_default():
    q = v1.FIFOQueue(32, tf.float32, shapes=[[16]])
    x = v1.placeholder(tf.float32, [16])
    enq, deq = q.enqueue(x), q.dequeue()
sess = v1.Session(graph=g, config=v1.ConfigProto(inter_op_parallelism_threads=2,
                                                 intra_op_parallelism_threads=1))
value = np.ones(16, np.float32)

def roundtrip(n):
    start = time.perf_counter()
    for _ in range(n):
        sess.run(enq, {x: value})
        sess.run(deq)
    return (time.perf_counter() - start) * 1e3 / n

def pipe(n):
    def produce():
        for _ in range(n):
            sess.run(enq, {x: value})
    def consume():
        for _ in range(n):
            sess.run(deq)
    threads = [threading.Thread(target=f) for f in (produce, produce, consume, consume)]
    start = time.perf_counter()
    for t in threads: t.start()
    for t in threads: t.join()
    return (time.perf_counter() - start) * 1e3 / (2 * n)

roundtrip(20); pipe(20)
print("ready", flush=True)
for line in sys.stdin:
    name, n = line.split()
    ms = roundtrip(int(n)) if name == "roundtrip" else pipe(int(n))
    print(json.dumps(ms), flush=True)
'''


def build_af():
    import aioflow as af

    g = af.Graph()
    with g.as_default():
        q = af.FIFOQueue(32, af.float32, shapes=[[16]])
        x = af.placeholder(af.float32, [16])
        enq, deq = q.enqueue(x), q.dequeue()
    return af.Session(graph=g), x, enq, deq


async def af_roundtrip(sess, x, enq, deq, n: int) -> float:
    value = np.ones(16, np.float32)
    start = time.perf_counter()
    for _ in range(n):
        await sess.run(enq, {x: value})
        await sess.run(deq)
    return (time.perf_counter() - start) * 1e3 / n


async def af_pipe(sess, x, enq, deq, n: int) -> float:
    value = np.ones(16, np.float32)

    async def produce():
        for _ in range(n):
            await sess.run(enq, {x: value})

    async def consume():
        for _ in range(n):
            await sess.run(deq)

    start = time.perf_counter()
    await asyncio.gather(produce(), produce(), consume(), consume())
    return (time.perf_counter() - start) * 1e3 / (2 * n)


async def main_async(args) -> dict:
    sess, x, enq, deq = build_af()
    child = subprocess.Popen([args.tf_python, "-c", TF_CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert child.stdout.readline().strip() == "ready"

    def tf(name: str, n: int) -> float:
        child.stdin.write(f"{name} {n}\n")
        child.stdin.flush()
        return json.loads(child.stdout.readline())

    await af_roundtrip(sess, x, enq, deq, 20)
    await af_pipe(sess, x, enq, deq, 20)
    times = {"roundtrip": {"aioflow": [], "tf": []}, "pipe_2x2": {"aioflow": [], "tf": []}}
    for _ in range(args.reps):  # ABAB
        times["roundtrip"]["aioflow"].append(await af_roundtrip(sess, x, enq, deq, ROUNDTRIPS))
        times["roundtrip"]["tf"].append(tf("roundtrip", ROUNDTRIPS))
        times["pipe_2x2"]["aioflow"].append(await af_pipe(sess, x, enq, deq, PIPE_ELEMENTS))
        times["pipe_2x2"]["tf"].append(tf("pipe", PIPE_ELEMENTS))
    child.stdin.close()
    child.wait()
    await sess.close()
    return summarize(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tf-python", default="/work/peers-venv/bin/python")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    print(json.dumps({"benchmark": "queue_peer", "unit": "ms", "reps": args.reps,
                      "python": sys.version.split()[0], "results": result}, indent=1))


if __name__ == "__main__":
    main()
