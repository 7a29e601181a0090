#!/usr/bin/env python
"""Clusters beside TensorFlow 2.21's own (tf.distribute.Server, v1 Sessions on its
grpc:// target), on the same loopback, in the same run.

Workloads (task 0 holds the session's master; x is fed there, the middle op is pinned to
task 1, the fetch comes back to task 0):
  tiny_in_process   2 tasks in one process: ms per step of z = (x + 1 on task 1) * 2
                    (aioflow: in-process servers, no sockets; TF: its servers, gRPC)
  tiny_processes    the same with task 1 in another process (gRPC both)
  tensor_64mb       a 64 MB float32 feed summed on task 1 in another process: ms per step
  sync_replicas_mlp a SyncReplicasOptimizer training step of a 64-128-10 MLP (batch 32,
                    weights on a ps task in a process of its own), two workers (worker 0,
                    the chief, in the driver's process; worker 1 in another), each
                    driven by its own session (between-graph replication); ms per global
                    step, both workers' train ops and the chief's sync op
The peers alternate (ABAB), `--reps` rounds; each figure is the median. Each peer's CPU
time per step (every process of its cluster, all threads) is measured too: on a shared
machine it is steadier than the wall clock. Prints one JSON object with the ratios
aioflow / TF. BLAS/OpenMP threads: 1 (OMP_NUM_THREADS, set here for both peers).

Usage: python benchmarks/distributed.py --tf-python /work/tfvenv/bin/python
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from peer_timing import summarize  # noqa: E402

TINY_STEPS = 200
BIG_STEPS = 4
SYNC_STEPS = 20
BIG = np.ones(16 * 1024 * 1024, np.float32)  # 64 MB

#: The SyncReplicas MLP of one worker, in TF 1's API (run with tf.compat.v1 and with
#: aioflow.compat.v1's builders): `sync_graph(tf, spec, task)` -> (graph, feed, ops).
SYNC_MLP = r'''
import numpy as np

def sync_graph(tf, spec, task):
    rng = np.random.RandomState(0)
    g = tf.Graph()
    with g.as_default():
        with tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{task}", cluster=spec)):
            x = tf.placeholder(tf.float32, [32, 64], name="x")
            y = tf.placeholder(tf.float32, [32, 10], name="y")
            w1 = tf.Variable(rng.normal(0, 0.1, (64, 128)).astype(np.float32), name="w1")
            b1 = tf.Variable(np.zeros(128, np.float32), name="b1")
            w2 = tf.Variable(rng.normal(0, 0.1, (128, 10)).astype(np.float32), name="w2")
            b2 = tf.Variable(np.zeros(10, np.float32), name="b2")
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            loss = tf.reduce_mean(tf.square(tf.matmul(hidden, w2) + b2 - y))
            step = tf.train.get_or_create_global_step()
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.01),
                                                 replicas_to_aggregate=2,
                                                 total_num_replicas=2)
            train = opt.minimize(loss, global_step=step)
            init = tf.global_variables_initializer()
            local_init = tf.local_variables_initializer()
            tokens = opt.get_init_tokens_op()
    feed = {x: rng.normal(size=(32, 64)).astype(np.float32),
            y: rng.normal(size=(32, 10)).astype(np.float32)}
    return g, feed, {"opt": opt, "train": train, "init": init, "local_init": local_init,
                     "tokens": tokens, "step": step}
'''

TF_TASK = r'''
import json, sys, tensorflow as tf
spec = tf.train.ClusterSpec(json.loads(sys.argv[1]))
server = tf.distribute.Server(spec, job_name=sys.argv[2], task_index=int(sys.argv[3]))
print("serving", flush=True)
server.join()
'''

#: CPU seconds of a process (all threads), from /proc.
CPU_OF = r'''
def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
'''

TF_CHILD = r'''
import json, os, socket, subprocess, sys, threading, time
import numpy as np
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_eager_execution()
v1.disable_resource_variables()  # TF 1's ref variables, as aioflow's
''' + CPU_OF + SYNC_MLP + r'''
def free():
    with socket.socket() as s:
        s.bind(("localhost", 0)); return s.getsockname()[1]

TASK = sys.stdin.readline().strip().encode().decode("unicode_escape")
children = []

def task(spec, job, index):
    keep = subprocess.Popen([sys.executable, "-c", TASK, json.dumps(spec), job, str(index)],
                            stdout=subprocess.PIPE, text=True)
    keep.stdout.readline()
    children.append(keep)

def cluster(in_process):
    hosts = [f"localhost:{free()}", f"localhost:{free()}"]
    spec = {"worker": hosts}
    s0 = tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="worker", task_index=0)
    if in_process:
        keep = tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="worker",
                                    task_index=1)
    else:
        keep = task(spec, "worker", 1)
    return s0, keep

def graph(shape):
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, shape)
        with v1.device("/job:worker/task:1"):
            y = x + 1.0 if shape == [] else tf.reduce_sum(x)
        z = y * 2.0
    return g, x, z

def plain(sess, x, z, value):
    return lambda: sess.run(z, {x: value})

def sync_cluster():
    spec = {"ps": [f"localhost:{free()}"],
            "worker": [f"localhost:{free()}", f"localhost:{free()}"]}
    task(spec, "ps", 0)
    task(spec, "worker", 1)
    s0 = tf.distribute.Server(tf.train.ClusterSpec(spec), job_name="worker", task_index=0)
    targets = [s0.target, "grpc://" + spec["worker"][1]]
    built = [sync_graph(v1, tf.train.ClusterSpec(spec), t) for t in (0, 1)]
    sessions = [v1.Session(targets[t], graph=built[t][0]) for t in (0, 1)]
    (g0, f0, o0), (g1, f1, o1) = built
    sessions[0].run(o0["init"])
    sessions[0].run([o0["local_init"], o0["opt"].chief_init_op])
    sessions[0].run(o0["tokens"])
    sessions[1].run([o1["local_init"], o1["opt"].local_step_init_op])
    coord = v1.train.Coordinator()
    o0["opt"].get_chief_queue_runner().create_threads(sessions[0], coord=coord,
                                                      daemon=True, start=True)

    def step():
        other = threading.Thread(target=sessions[1].run, args=(o1["train"], f1))
        other.start()
        sessions[0].run(o0["train"], f0)
        other.join()
    return s0, step

steps = {}
for name, in_process, shape in (("tiny_in_process", True, []), ("tiny_processes", False, []),
                                ("tensor_64mb", False, [None])):
    s0, keep = cluster(in_process)
    g, x, z = graph(shape)
    sess = v1.Session(s0.target, graph=g)
    value = np.float32(1.0) if shape == [] else np.ones(16 * 1024 * 1024, np.float32)
    sess.run(z, {x: value})
    steps[name] = (plain(sess, x, z, value), s0, keep)
s0, step = sync_cluster()
step()
steps["sync_replicas_mlp"] = (step, s0)
print("ready", flush=True)
pids = [os.getpid()] + [c.pid for c in children]
for line in sys.stdin:
    name, n = line.split()
    fn = steps[name][0]
    cpu0 = sum(cpu_of(p) for p in pids)
    start = time.perf_counter()
    for _ in range(int(n)):
        fn()
    wall = (time.perf_counter() - start) * 1e3 / int(n)
    cpu = (sum(cpu_of(p) for p in pids) - cpu0) * 1e3 / int(n)
    print(json.dumps([wall, cpu]), flush=True)
for c in children:
    c.kill()
os._exit(0)
'''

AF_TASK = r'''
import json, sys, aioflow as af
server = af.train.Server(json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
print("serving", flush=True)
server.join()
'''

_helpers: dict = {"os": os}
exec(CPU_OF, _helpers)
cpu_of = _helpers["cpu_of"]
_sync_mlp: dict = {}
exec(SYNC_MLP, _sync_mlp)


def _free() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def af_task(spec: dict, job: str, index: int) -> subprocess.Popen:
    keep = subprocess.Popen([sys.executable, "-c", AF_TASK, json.dumps(spec), job,
                             str(index)], stdout=subprocess.PIPE, text=True)
    keep.stdout.readline()
    return keep


def af_cluster(in_process: bool):
    import aioflow as af

    hosts = [f"localhost:{_free()}", f"localhost:{_free()}"]
    spec = {"worker": hosts}
    if in_process:
        servers = [af.train.Server(spec, "worker", i, protocol="in_process") for i in (0, 1)]
        return servers[0], servers
    keep = af_task(spec, "worker", 1)
    return af.train.Server(spec, "worker", 0), keep


def af_graph(shape):
    import aioflow as af

    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, shape)
        with af.device("/job:worker/task:1"):
            y = x + 1.0 if shape == [] else af.reduce_sum(x)
        z = y * 2.0
    return g, x, z


async def af_sync_cluster():
    """The SyncReplicas MLP: ps and worker 1 in processes of their own, worker 0 here;
    (one global step's coroutine function, servers, processes)."""
    import aioflow as af
    from aioflow.compat import v1

    spec = {"ps": [f"localhost:{_free()}"],
            "worker": [f"localhost:{_free()}", f"localhost:{_free()}"]}
    kept = [af_task(spec, "ps", 0), af_task(spec, "worker", 1)]
    s0 = af.train.Server(spec, "worker", 0)
    targets = [s0.target, "grpc://" + spec["worker"][1]]
    built = [_sync_mlp["sync_graph"](v1, af.train.ClusterSpec(spec), t) for t in (0, 1)]
    sessions = [af.Session(targets[t], graph=built[t][0]) for t in (0, 1)]
    (_, f0, o0), (_, f1, o1) = built
    await sessions[0].run(o0["init"])
    await sessions[0].run([o0["local_init"], o0["opt"].chief_init_op])
    await sessions[0].run(o0["tokens"])
    await sessions[1].run([o1["local_init"], o1["opt"].local_step_init_op])
    runner = o0["opt"].get_chief_queue_runner().create_tasks(sessions[0])

    async def step():
        await asyncio.gather(sessions[0].run(o0["train"], f0),
                             sessions[1].run(o1["train"], f1))
    return step, [s0], kept, sessions, runner


def _plain(sess, x, z, value):
    async def step():
        await sess.run(z, {x: value})
    return step


async def af_steps(step, n: int, pids: list) -> tuple[float, float]:
    """(wall ms, CPU ms) per step of `step` run `n` times; CPU of this process and
    `pids`."""
    cpu0 = time.process_time() + sum(cpu_of(p) for p in pids)
    start = time.perf_counter()
    for _ in range(n):
        await step()
    wall = (time.perf_counter() - start) * 1e3 / n
    cpu = (time.process_time() + sum(cpu_of(p) for p in pids) - cpu0) * 1e3 / n
    return wall, cpu


async def main_async(args) -> dict:
    import aioflow as af

    cases = {"tiny_in_process": (True, [], np.float32(1.0), TINY_STEPS),
             "tiny_processes": (False, [], np.float32(1.0), TINY_STEPS),
             "tensor_64mb": (False, [None], BIG, BIG_STEPS)}
    ours, servers, processes, sessions, runners = {}, [], [], [], []
    for name, (in_process, shape, value, _) in cases.items():
        server, kept = af_cluster(in_process)
        if isinstance(kept, subprocess.Popen):
            processes.append(kept)
            servers.append(server)
        else:
            servers.extend(kept)
        g, x, z = af_graph(shape)
        sess = af.Session(server.target, graph=g)
        sessions.append(sess)
        ours[name] = _plain(sess, x, z, value)
    step, sync_servers, kept, sync_sessions, runners = await af_sync_cluster()
    ours["sync_replicas_mlp"] = step
    servers += sync_servers
    processes += kept
    sessions += sync_sessions
    for step in ours.values():
        await step()
    counts = {name: n for name, (*_, n) in cases.items()}
    counts["sync_replicas_mlp"] = SYNC_STEPS
    env = {"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "OMP_NUM_THREADS": os.environ["OMP_NUM_THREADS"]}
    child = subprocess.Popen([args.tf_python, "-c", TF_CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=env)
    child.stdin.write(TF_TASK.encode("unicode_escape").decode() + "\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "ready"

    def tf(name: str, n: int) -> list:
        child.stdin.write(f"{name} {n}\n")
        child.stdin.flush()
        return json.loads(child.stdout.readline())

    pids = [p.pid for p in processes]
    times = {name: {"aioflow": [], "tf": []} for name in ours}
    cpus = {name: {"aioflow": [], "tf": []} for name in ours}
    for _ in range(args.reps):  # ABAB
        for name, step in ours.items():
            wall, cpu = await af_steps(step, counts[name], pids)
            times[name]["aioflow"].append(wall)
            cpus[name]["aioflow"].append(cpu)
            wall, cpu = tf(name, counts[name])
            times[name]["tf"].append(wall)
            cpus[name]["tf"].append(cpu)
    child.stdin.close()
    child.wait()
    for task in runners:
        task.cancel()
    for sess in sessions:
        await sess.close()
    for process in processes:
        process.kill()
    for server in servers:
        server.stop()
    wall = summarize(times)
    cpu = summarize(cpus)
    return {name: {**wall[name], "cpu_ms": cpu[name]} for name in wall} | {
        "load": os.getloadavg()[0], "omp_threads": os.environ["OMP_NUM_THREADS"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args)), indent=1))


if __name__ == "__main__":
    main()
