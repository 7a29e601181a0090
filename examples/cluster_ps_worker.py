"""Between-graph replication as TF 1.x scripts write it: one ps task holds the
variables, two worker tasks each build the same graph (replica_device_setter) and
update them through the ps, every task its own process talking gRPC on loopback.

The script is the classic launch script, flags and all:

    python cluster_ps_worker.py --job_name=ps --task_index=0 \\
        --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224
    python cluster_ps_worker.py --job_name=worker --task_index=0 ...   (and task 1)

Without flags it starts that cluster itself (three processes on free ports), waits for
the workers, stops the ps and prints what the chief learnt: y = 3x + 2.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time

import numpy as np

STEPS = 150


def run_task(args) -> None:
    from aioflow.compat import v1 as tf

    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","),
                                    "worker": args.worker_hosts.split(",")})
    server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        server.join()
        return
    is_chief = args.task_index == 0
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster)):
        w = tf.Variable(0.0, name="w")
        b = tf.Variable(0.0, name="b")
        step = tf.Variable(0, name="global_step")
        x = tf.placeholder(tf.float32, [None], name="x")
        y = tf.placeholder(tf.float32, [None], name="y")
        error = w * x + b - y
        grad_w = tf.reduce_mean(2.0 * error * x)
        grad_b = tf.reduce_mean(2.0 * error)
        train = tf.group(tf.assign_sub(w, 0.1 * grad_w), tf.assign_sub(b, 0.1 * grad_b),
                         tf.assign_add(step, 1))
        loss = tf.reduce_mean(tf.square(error))
    init = tf.group(w.initializer, b.initializer, step.initializer)
    rng = np.random.default_rng(args.task_index)
    # Each worker talks to the ps and itself only (TF's advice for between-graph
    # replication): a worker that starts late need not find its peer still running.
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{args.task_index}"])
    with tf.Session(server.target, config=config) as sess:
        if is_chief:
            sess.run(init)
        else:  # the chief initializes the ps's variables; wait for it
            while not sess.run(tf.is_variable_initialized(step)):
                time.sleep(0.05)
        for _ in range(STEPS):
            xs = rng.uniform(-1, 1, 32).astype(np.float32)
            sess.run(train, {x: xs, y: 3.0 * xs + 2.0})
        xs = np.linspace(-1, 1, 8, dtype=np.float32)
        final_loss = sess.run(loss, {x: xs, y: 3.0 * xs + 2.0})
        if is_chief:
            print(f"worker 0 done: w = {sess.run(w):.2f}, b = {sess.run(b):.2f}, "
                  f"loss < 1e-3: {final_loss < 1e-3}", flush=True)


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch_local_cluster() -> None:
    """Start the ps and both workers as processes of this script, as a launcher would."""
    ports = _free_ports(3)
    hosts = [f"--ps_hosts=localhost:{ports[0]}",
             f"--worker_hosts=localhost:{ports[1]},localhost:{ports[2]}"]
    task = [sys.executable, __file__, *hosts]
    ps = subprocess.Popen([*task, "--job_name=ps", "--task_index=0"])
    workers = [subprocess.Popen([*task, "--job_name=worker", f"--task_index={i}"])
               for i in range(2)]
    try:
        codes = [w.wait(timeout=120) for w in workers]
    finally:
        ps.kill()
        ps.wait()
    if any(codes):
        raise SystemExit(f"a worker failed: exit codes {codes}")
    print("ps/worker cluster of 3 processes: both workers finished", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job_name", choices=["ps", "worker"])
    parser.add_argument("--task_index", type=int, default=0)
    parser.add_argument("--ps_hosts", default="")
    parser.add_argument("--worker_hosts", default="")
    args = parser.parse_args()
    if args.job_name is None:
        launch_local_cluster()
    else:
        run_task(args)


if __name__ == "__main__":
    main()
