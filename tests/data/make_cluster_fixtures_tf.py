"""Writes cluster_tf.json: what TF 2.21's TF 1 distributed runtime (tf.compat.v1 with
in-process tf.distribute.Server tasks, sessions on their grpc:// targets) answers to
the acceptance programs of issue 27: values, where ops were placed, error classes.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_cluster_fixtures_tf.py

Each ``program_*(tf, cluster)`` takes the TF-1-like module (``tf.compat.v1`` here,
``aioflow.compat.v1`` in tests/test_cluster_fixtures.py) and a cluster harness
(``cluster.spec``: the ClusterSpec; ``cluster.target(job, task)``: a task's session
target) and returns a JSON-able dict. Here every task is a real TF server of this
process; aioflow's test gives in-process servers. This module does not import
TensorFlow at import time."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
JOBS_2TASK = {"worker": 2}
JOBS_PS = {"ps": 1, "worker": 2}


def _error(tf, fn) -> dict:
    try:
        fn()
    except tf.errors.OpError as e:
        return {"error": type(e).__name__}
    return {"error": None}


def program_two_task(tf, cluster):
    """A matmul on task 1 of an input made on task 0, fetched through task 0's master
    and through task 1's."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0"):
            a = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="a")
            x = tf.placeholder(tf.float32, [2, 2], name="x")
            s = tf.add(a, x, name="s")
        with tf.device("/job:worker/task:1"):
            m = tf.matmul(s, a, name="m")
            r = tf.reduce_sum(m, name="r")
        out = {}
        feed = np.arange(4, dtype=np.float32).reshape(2, 2)
        for task in (0, 1):
            with tf.Session(cluster.target("worker", task), graph=g) as sess:
                mv, rv = sess.run([m, r], {x: feed})
                out[f"via_task{task}"] = {"m": mv.tolist(), "r": float(rv)}
    return out


def program_pinning(tf, cluster):
    """tf.device("/job:worker/task:1") pins ops there: the partition graphs name the
    devices; an op asking for nothing runs on the session's task. (u reads a feed: no
    constant folding hides it.)"""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            p = tf.constant(3.0, name="p")
            q = tf.multiply(p, 2.0, name="q")
            r = tf.placeholder(tf.float32, [], name="r")
            w = tf.multiply(r, 2.0, name="w")
        x = tf.placeholder(tf.float32, [], name="x")
        u = tf.add(q + w, x, name="u")
        opts = tf.RunOptions(output_partition_graphs=True)
        out = {}
        for task in (0, 1):
            meta = tf.RunMetadata()
            with tf.Session(cluster.target("worker", task), graph=g) as sess:
                value = sess.run(u, {x: 1.0, r: 0.5}, options=opts, run_metadata=meta)
            devices = {}
            for part in meta.partition_graphs:
                for node in part.node:
                    if node.name in ("w", "u"):
                        devices[node.name] = node.device
            out[f"via_task{task}"] = {"u": float(value), "devices": devices}
    return out


def program_while_remote_body(tf, cluster):
    """A while loop whose condition runs on task 0 and whose body runs on task 1."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:0"):
            n = tf.placeholder(tf.int32, [], name="n")
            i0 = tf.constant(0, name="i0")
            acc0 = tf.constant(1.0, name="acc0")

        def cond(i, acc):
            with tf.device("/job:worker/task:0"):
                return tf.less(i, n)

        def body(i, acc):
            with tf.device("/job:worker/task:1"):
                return i + 1, acc * 1.5 + tf.cast(i, tf.float32)

        with tf.device("/job:worker/task:0"):
            i_out, acc_out = tf.while_loop(cond, body, [i0, acc0])
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            values = [list(map(float, sess.run([i_out, acc_out], {n: k}))) for k in (0, 1, 5)]
    return {"values": values}


def program_ps_variable(tf, cluster):
    """A variable on the ps task assigned from a worker; a second session (another
    worker's target) sees the value: it lives on the ps task."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable([1.0, 2.0], name="v")
        with tf.device("/job:worker/task:1"):
            delta = tf.placeholder(tf.float32, [2], name="delta")
            new = tf.multiply(delta, 10.0, name="new")
            assign = tf.assign_add(v, new, name="assign")
        with tf.device("/job:worker/task:0"):
            read = tf.identity(v, name="read")
        init = v.initializer
        out = {}
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            sess.run(init)
            out["after_assign"] = sess.run(assign, {delta: [0.5, -1.0]}).tolist()
        with tf.Session(cluster.target("worker", 1), graph=g) as sess:
            out["other_session"] = sess.run(read).tolist()
            out["again"] = sess.run(assign, {delta: [1.0, 1.0]}).tolist()
    return out


def program_shared_queue(tf, cluster):
    """A FIFOQueue with a shared_name on the ps task: one worker's session enqueues,
    another worker's session (its own graph) dequeues."""
    def queue(tf):
        with tf.device("/job:ps/task:0"):
            return tf.FIFOQueue(10, [tf.float32], shapes=[[2]], shared_name="shared_q",
                                name="q")

    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        q = queue(tf)
        with tf.device("/job:worker/task:0"):
            item = tf.placeholder(tf.float32, [2], name="item")
        enq = q.enqueue([item])
        size1 = q.size()
    with g2.as_default():
        q2 = queue(tf)
        with tf.device("/job:worker/task:1"):
            deq = q2.dequeue() * 2.0
        size2 = q2.size()
    out = {}
    with tf.Session(cluster.target("worker", 0), graph=g1) as s1:
        s1.run(enq, {item: [1.0, 2.0]})
        s1.run(enq, {item: [3.0, 4.0]})
        out["size_after_enqueue"] = int(s1.run(size1))
    with tf.Session(cluster.target("worker", 1), graph=g2) as s2:
        out["dequeued"] = s2.run(deq).tolist()
        out["size_after_dequeue"] = int(s2.run(size2))
    return out


def program_remote_error(tf, cluster):
    """Errors raised on a remote task reach the client with TF's class; the session
    goes on working."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:1"):
            x = tf.placeholder(tf.float32, [], name="x")
            checked = tf.debugging.check_numerics(tf.math.log(x), "log of x", name="checked")
            v = tf.Variable(1.0, name="uninit")
            read = tf.identity(v, name="read_uninit")
        with tf.device("/job:worker/task:0"):
            y = tf.add(checked, 1.0, name="y")
        out = {}
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            out["negative_log"] = _error(tf, lambda: sess.run(y, {x: -1.0}))
            out["uninitialized"] = _error(tf, lambda: sess.run(read))
            out["after_errors"] = float(sess.run(y, {x: 1.0}))
    return out


def program_soft_placement(tf, cluster):
    """A task the cluster does not have: InvalidArgumentError, soft placement or not;
    a device type the task lacks (a GPU) runs on its CPU with soft placement."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:worker/task:7"):
            c = tf.constant(2.0, name="c")
            d = tf.multiply(c, 3.0, name="d")
        out = {}
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            out["hard"] = _error(tf, lambda: sess.run(d))
        config = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(cluster.target("worker", 0), graph=g, config=config) as sess:
            out["soft"] = _error(tf, lambda: sess.run(d))
    g2 = tf.Graph()
    with g2.as_default():
        with tf.device("/job:worker/task:1/device:GPU:0"):
            e = tf.multiply(tf.constant(2.0), 5.0, name="e")
        with tf.Session(cluster.target("worker", 0), graph=g2, config=config) as sess:
            out["soft_gpu"] = float(sess.run(e))
        with tf.Session(cluster.target("worker", 0), graph=g2) as sess:
            out["hard_gpu"] = _error(tf, lambda: sess.run(e))
    return out


def program_cluster_spec(tf, cluster):
    """ClusterSpec's forms and accessors."""
    spec = tf.train.ClusterSpec({"worker": ["w0:2222", "w1:2222"], "ps": {1: "ps1:2222"}})
    from_def = tf.train.ClusterSpec(spec.as_cluster_def())
    return {"as_dict": {k: (v if isinstance(v, list) else {str(i): a for i, a in v.items()})
                        for k, v in spec.as_dict().items()},
            "repr": repr(spec), "jobs": spec.jobs, "from_def_jobs": from_def.jobs,
            "num_tasks": spec.num_tasks("ps"), "job_tasks_ps": spec.job_tasks("ps"),
            "task_address": spec.task_address("worker", 1),
            "task_indices": spec.task_indices("ps"),
            "cluster_def": str(spec.as_cluster_def()),
            "equal": spec == from_def}


def program_device_setter(tf, cluster):
    """replica_device_setter's devices for variables and other ops (round-robin)."""
    g = tf.Graph()
    with g.as_default():
        setter = tf.train.replica_device_setter(cluster=cluster.spec)
        with tf.device(setter):
            v1 = tf.Variable(1.0, name="v1")
            v2 = tf.Variable(2.0, name="v2")
            v3 = tf.Variable(3.0, name="v3")
            s = tf.add_n([v1, v2, v3], name="s")
        devices = {op.name: op.device for op in (v1.op, v2.op, v3.op, s.op)}
        with tf.Session(cluster.target("worker", 0), graph=g) as sess:
            sess.run([v1.initializer, v2.initializer, v3.initializer])
            value = float(sess.run(s))
    with tf.Graph().as_default():  # built only: ps task 2 is not in the cluster
        setter2 = tf.train.replica_device_setter(ps_tasks=3, worker_device="/job:worker/task:1")
        with tf.device(setter2):
            w = [tf.Variable(float(i), name=f"w{i}") for i in range(4)]
            with tf.device("/job:ps/task:0"):
                pinned = tf.Variable(9.0, name="pinned")
            t = tf.add(w[0], w[1], name="t")
        devices.update({op.name: op.device for op in [x.op for x in w] + [t.op, pinned.op]})
    return {"devices": devices, "s": value}


def wire_messages(tf) -> dict:
    """Messages TF's Python serializes (hex) that aioflow's cluster protos must parse
    field for field: ServerDef, DeviceAttributes (GetStatus's), and the TensorProto a
    RecvTensorResponse or RunGraphRequest carries. (TF's wheel ships no worker_pb2 or
    master_pb2: those messages are checked against TF's .proto text.)"""
    from tensorflow.core.framework import device_attributes_pb2
    from tensorflow.core.protobuf import tensorflow_server_pb2

    server_def = tensorflow_server_pb2.ServerDef(
        cluster=tf.train.ClusterSpec({"worker": ["a:1", "b:2"]}).as_cluster_def(),
        job_name="worker", task_index=1, protocol="grpc", port=2)
    server_def.default_session_config.operation_timeout_in_ms = 250
    device = device_attributes_pb2.DeviceAttributes(
        name="/job:w/replica:0/task:0/device:CPU:0", device_type="CPU",
        memory_limit=268435456, incarnation=2**63 + 5)
    tensors = {
        "float32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "int64": np.array([-1, 2**40], np.int64),
        "bool": np.array([True, False]),
        "scalar_f64": np.float64(2.5),
        "string": np.array([b"ab", b""], object),
    }
    out = {"ServerDef": server_def.SerializeToString().hex(),
           "DeviceAttributes": device.SerializeToString().hex()}
    for name, value in tensors.items():
        out[f"TensorProto_{name}"] = tf.make_tensor_proto(value).SerializeToString().hex()
    return out


PROGRAMS = {
    "two_task": (program_two_task, JOBS_2TASK),
    "pinning": (program_pinning, JOBS_2TASK),
    "while_remote_body": (program_while_remote_body, JOBS_2TASK),
    "ps_variable": (program_ps_variable, JOBS_PS),
    "shared_queue": (program_shared_queue, JOBS_PS),
    "remote_error": (program_remote_error, JOBS_2TASK),
    "soft_placement": (program_soft_placement, JOBS_2TASK),
    "cluster_spec": (program_cluster_spec, JOBS_2TASK),
    "device_setter": (program_device_setter, JOBS_PS),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


class TFCluster:
    """Real TF servers of this process, one per task."""

    def __init__(self, tf, jobs: dict):
        self.spec = tf.train.ClusterSpec(
            {job: [f"localhost:{_free_port()}" for _ in range(n)] for job, n in jobs.items()})
        self.servers = {(job, i): tf.distribute.Server(self.spec, job_name=job, task_index=i)
                        for job, n in jobs.items() for i in range(n)}

    def target(self, job: str, task: int) -> str:
        return self.servers[(job, task)].target


def main() -> None:
    import tensorflow as tf1

    tf = tf1.compat.v1
    tf.disable_v2_behavior()  # TF 1: ref variables, v1 control flow
    out = {}
    for name, (program, jobs) in PROGRAMS.items():
        out[name] = program(tf, TFCluster(tf, jobs))
        print(name, out[name], file=sys.stderr)
    out["wire"] = wire_messages(tf)
    (HERE / "cluster_tf.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
