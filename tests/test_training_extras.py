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
