#!/usr/bin/env python
"""Clusters beside TensorFlow 2.21's own (tf.distribute.Server, v1 Sessions on its
grpc:// target), on the same loopback, in the same run.

Workloads (task 0 holds the session's master; x is fed there, the middle op is pinned to
task 1, the fetch comes back to task 0):
  tiny_in_process   2 tasks in one process: ms per step of z = (x + 1 on task 1) * 2
                    (aioflow: in-process servers, no sockets; TF: its servers, gRPC)
  tiny_processes    the same with task 1 in another process (gRPC both)
  tensor_64mb       a 64 MB float32 feed summed on task 1 in another process: ms per step
The peers alternate (ABAB), `--reps` rounds; each figure is the median. Prints one JSON
object with the ratios aioflow / TF.

Usage: python benchmarks/distributed.py --tf-python /work/tfvenv/bin/python
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
from peer_timing import summarize

TINY_STEPS = 200
BIG_STEPS = 4
BIG = np.ones(16 * 1024 * 1024, np.float32)  # 64 MB

TF_TASK = r'''
import sys, tensorflow as tf
spec = tf.train.ClusterSpec({"worker": sys.argv[1].split(",")})
server = tf.distribute.Server(spec, job_name="worker", task_index=1)
print("serving", flush=True)
server.join()
'''

TF_CHILD = r'''
import json, socket, subprocess, sys, time
import numpy as np
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_eager_execution()

def free():
    with socket.socket() as s:
        s.bind(("localhost", 0)); return s.getsockname()[1]

def cluster(in_process):
    hosts = [f"localhost:{free()}", f"localhost:{free()}"]
    spec = tf.train.ClusterSpec({"worker": hosts})
    s0 = tf.distribute.Server(spec, job_name="worker", task_index=0)
    if in_process:
        keep = tf.distribute.Server(spec, job_name="worker", task_index=1)
    else:
        keep = subprocess.Popen([sys.executable, "-c", TASK, ",".join(hosts)],
                                stdout=subprocess.PIPE, text=True)
        keep.stdout.readline()
    return s0, keep

def graph(shape):
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, shape)
        with v1.device("/job:worker/task:1"):
            y = x + 1.0 if shape == [] else tf.reduce_sum(x)
        z = y * 2.0
    return g, x, z

TASK = sys.stdin.readline().strip().encode().decode("unicode_escape")
sessions = {}
for name, in_process, shape in (("tiny_in_process", True, []), ("tiny_processes", False, []),
                                ("tensor_64mb", False, [None])):
    s0, keep = cluster(in_process)
    g, x, z = graph(shape)
    sess = v1.Session(s0.target, graph=g)
    value = np.float32(1.0) if shape == [] else np.ones(16 * 1024 * 1024, np.float32)
    sess.run(z, {x: value})
    sessions[name] = (sess, x, z, value, s0, keep)
print("ready", flush=True)
for line in sys.stdin:
    name, n = line.split()
    sess, x, z, value = sessions[name][:4]
    start = time.perf_counter()
    for _ in range(int(n)):
        sess.run(z, {x: value})
    print(json.dumps((time.perf_counter() - start) * 1e3 / int(n)), flush=True)
for entry in sessions.values():
    if hasattr(entry[5], "kill"):
        entry[5].kill()
'''

AF_TASK = r'''
import sys, aioflow as af
server = af.train.Server({"worker": sys.argv[1].split(",")}, "worker", 1)
print("serving", flush=True)
server.join()
'''


def _free() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def af_cluster(in_process: bool):
    import aioflow as af

    hosts = [f"localhost:{_free()}", f"localhost:{_free()}"]
    spec = {"worker": hosts}
    if in_process:
        servers = [af.train.Server(spec, "worker", i, protocol="in_process") for i in (0, 1)]
        return servers[0], servers
    keep = subprocess.Popen([sys.executable, "-c", AF_TASK, ",".join(hosts)],
                            stdout=subprocess.PIPE, text=True)
    keep.stdout.readline()
    return af.train.Server(spec, "worker", 0), keep


def af_graph(shape):
    import aioflow as af

    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, shape)
        with af.device("/job:worker/task:1"):
            y = x + 1.0 if shape == [] else af.reduce_sum(x)
        z = y * 2.0
    return g, x, z


async def af_steps(sess, x, z, value, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await sess.run(z, {x: value})
    return (time.perf_counter() - start) * 1e3 / n


async def main_async(args) -> dict:
    import aioflow as af

    cases = {"tiny_in_process": (True, [], np.float32(1.0), TINY_STEPS),
             "tiny_processes": (False, [], np.float32(1.0), TINY_STEPS),
             "tensor_64mb": (False, [None], BIG, BIG_STEPS)}
    ours, keep = {}, []
    for name, (in_process, shape, value, _) in cases.items():
        server, kept = af_cluster(in_process)
        keep.append(kept)
        g, x, z = af_graph(shape)
        sess = af.Session(server.target, graph=g)
        await af_steps(sess, x, z, value, 2)
        ours[name] = (sess, x, z, value)
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    child = subprocess.Popen([args.tf_python, "-c", TF_CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=env)
    child.stdin.write(TF_TASK.encode("unicode_escape").decode() + "\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "ready"

    def tf(name: str, n: int) -> float:
        child.stdin.write(f"{name} {n}\n")
        child.stdin.flush()
        return json.loads(child.stdout.readline())

    times = {name: {"aioflow": [], "tf": []} for name in cases}
    for _ in range(args.reps):  # ABAB
        for name, (_, _, _, n) in cases.items():
            times[name]["aioflow"].append(await af_steps(*ours[name], n))
            times[name]["tf"].append(tf(name, n))
    child.stdin.close()
    child.wait()
    for sess, *_ in ours.values():
        await sess.close()
    for kept in keep:
        if isinstance(kept, subprocess.Popen):
            kept.kill()
        else:
            for server in kept:
                server.stop()
    return summarize(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args)), indent=1))


if __name__ == "__main__":
    main()
