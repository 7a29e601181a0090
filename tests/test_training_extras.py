"""Smaller tf.train pieces: write_graph (text and binary, read back as the GraphDef),
GlobalStepWaiterHook (a worker's first step waits for the global step), and
tf.train.summary_iterator reading the events a SummarySaverHook-free FileWriter wrote."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

import aioflow.compat.v1 as tf
from aioflow.proto import graph_pb2


def test_write_graph_text_and_binary(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.layers.dense(x, 3)
    text_path = tf.train.write_graph(g, str(tmp_path / "logs"), "graph.pbtxt")
    bin_path = tf.train.write_graph(g.as_graph_def(), str(tmp_path / "logs"), "graph.pb",
                                    as_text=False)
    want = g.as_graph_def()
    from_text = text_format.Parse((tmp_path / "logs" / "graph.pbtxt").read_text(),
                                  graph_pb2.GraphDef())
    from_bin = graph_pb2.GraphDef.FromString((tmp_path / "logs" / "graph.pb").read_bytes())
    assert text_path.endswith("graph.pbtxt") and bin_path.endswith("graph.pb")
    assert from_text == want and from_bin == want


def _waiter_session(wait_until_step, start_step):
    g = tf.Graph()
    with g.as_default():
        step = tf.train.get_or_create_global_step()
        set_step = tf.assign(step, start_step)
        w = tf.get_variable("w", initializer=1.0)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w),
                                                                global_step=step)
        scaffold = tf.train.Scaffold(local_init_op=set_step)
        hook = tf.train.GlobalStepWaiterHook(wait_until_step)
        with tf.train.MonitoredSession(
                session_creator=tf.train.ChiefSessionCreator(scaffold=scaffold),
                hooks=[hook]) as sess:
            sess.run(train)
            return sess.run(step), hook


@pytest.mark.parametrize("wait_until_step,start_step", [(0, 0), (3, 5)])
def test_global_step_waiter_lets_the_worker_start(wait_until_step, start_step):
    step, hook = _waiter_session(wait_until_step, start_step)
    assert step == start_step + 1
    assert hook._worker_is_started


def test_global_step_waiter_needs_a_global_step():
    with tf.Graph().as_default():
        hook = tf.train.GlobalStepWaiterHook(2)
        with pytest.raises(RuntimeError, match="Global step should be created"):
            hook.begin()


def test_summary_iterator_reads_a_file_writer(tmp_path):
    g = tf.Graph()
    with g.as_default():
        value = tf.placeholder(tf.float32, [])
        summary = tf.summary.scalar("loss", value)
        writer = tf.summary.FileWriter(str(tmp_path))
        with tf.Session() as sess:
            for step, v in enumerate([3.0, 2.0, 1.5]):
                writer.add_summary(sess.run(summary, {value: v}), step)
        writer.close()
    files = list(tmp_path.glob("events.out.tfevents.*"))
    events = [e for e in tf.train.summary_iterator(str(files[0])) if e.summary.value]
    np.testing.assert_allclose([e.summary.value[0].simple_value for e in events],
                               [3.0, 2.0, 1.5])
    assert [e.step for e in events] == [0, 1, 2]


def _graph_on_cluster(spec):
    import aioflow as af

    g = af.Graph()
    with g.as_default():
        with af.device(af.train.replica_device_setter(cluster=spec)):
            step = af.train.get_or_create_global_step()
            w = af.get_variable("w", initializer=2.0)
            train = af.train.GradientDescentOptimizer(0.25).minimize(af.square(w),
                                                                     global_step=step)
    return g, step, w, train


async def test_worker_session_joins_the_model_the_chief_initialized():
    """ps:1, worker:2 in process: the chief's MonitoredTrainingSession initializes the
    variables on the ps and trains; a non-chief worker's waits for nothing (the model is
    ready), runs its local init, and trains the same variables."""
    import itertools

    import aioflow as af

    ports = itertools.count(43100)
    spec = af.train.ClusterSpec({"ps": [f"localhost:{next(ports)}"],
                                 "worker": [f"localhost:{next(ports)}" for _ in range(2)]})
    servers = [af.train.Server(spec, job, i, protocol="in_process")
               for job, n in (("ps", 1), ("worker", 2)) for i in range(n)]
    try:
        g, step, w, train = _graph_on_cluster(spec)
        with g.as_default():
            async with af.train.MonitoredTrainingSession(master=servers[1].target,
                                                         is_chief=True) as sess:
                for _ in range(3):
                    await sess.run(train)
            async with af.train.MonitoredTrainingSession(master=servers[2].target,
                                                         is_chief=False) as sess:
                for _ in range(2):
                    await sess.run(train)
                got_step, got_w = await sess.run([step, w])
        assert got_step == 5
        np.testing.assert_allclose(got_w, 2.0 * 0.5 ** 5)
    finally:
        for server in servers:
            server.stop()


def test_worker_session_gives_up_after_max_wait_secs():
    g = tf.Graph()
    with g.as_default():
        tf.get_variable("w", initializer=1.0)
        creator = tf.train.WorkerSessionCreator(max_wait_secs=0)
        with pytest.raises(tf.errors.DeadlineExceededError,
                           match="Session was not ready after waiting 0 secs"):
            tf.train.MonitoredSession(session_creator=creator)
