"""Nodes whose values nobody reads become NoOps (passes/dependency_optimizer.py), as TF's
grappler DependencyOptimizer: compared with what TF 2.21 did to the same programs
(tests/data/make_dependency_optimizer_tf.py wrote dependency_optimizer_tf.json)."""

import json
import pathlib

import numpy as np
import pytest

import aioflow.compat.v1 as tf
from aioflow.proto import rewriter_config_pb2

TF = json.loads((pathlib.Path(__file__).parent / "data" /
                 "dependency_optimizer_tf.json").read_text())
FEED = [1.0, 2.0, 3.0, 4.0]


def _config(toggle=None, level=None):
    cfg = tf.ConfigProto()
    if toggle is not None:
        cfg.graph_options.rewrite_options.dependency_optimization = toggle
    if level is not None:
        cfg.graph_options.optimizer_options.opt_level = level
    return cfg


def _reshape_program():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        bad = tf.reshape(x, [3], name="bad")  # fails for 4 elements
        with tf.control_dependencies([bad]):
            y = tf.identity(x * 2.0, name="y")
    return g, x, bad, y


def _outcome(fn):
    try:
        return {"value": np.asarray(fn()).tolist()}
    except tf.errors.OpError as e:
        return {"error": type(e).__name__, "message": e.message.splitlines()[0]}


@pytest.mark.parametrize("key,config", [
    ("default", _config()),
    ("off", _config(rewriter_config_pb2.RewriterConfig.OFF)),
])
def test_a_node_read_only_through_a_control_edge_does_not_run(key, config):
    g, x, bad, y = _reshape_program()
    with tf.Session(graph=g, config=config) as sess:
        assert _outcome(lambda: sess.run(y, {x: FEED})) == TF["control_only_reshape"][key]
        # A target is what the client asked to run: it runs (and fails) either way.
        got = _outcome(lambda: sess.run(bad.op, {x: FEED}))
        assert got == TF["control_only_reshape"][key + "_target"]


def test_level_l0_and_on_toggle():
    g, x, _, y = _reshape_program()
    with tf.Session(graph=g, config=_config(level=tf.OptimizerOptions.L0)) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Input to reshape"):
            sess.run(y, {x: FEED})
    on = _config(rewriter_config_pb2.RewriterConfig.ON, tf.OptimizerOptions.L0)
    with tf.Session(graph=g, config=on) as sess:
        assert sess.run(y, {x: FEED}).tolist() == [2.0, 4.0, 6.0, 8.0]


def test_the_converted_node_is_a_noop_that_keeps_the_order():
    g, x, _, y = _reshape_program()
    with tf.Session(graph=g) as sess:
        md = tf.RunMetadata()
        sess.run(y, {x: [1.0, 2.0, 3.0]},
                 options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
    nodes = {n.name: n for part in md.partition_graphs for n in part.node}
    assert nodes["bad"].op == "NoOp"
    assert nodes["bad"].input and all(i.startswith("^") for i in nodes["bad"].input)
    assert any("^bad" in n.input for n in nodes.values())  # what waited for it still does


def test_stateful_and_asserting_nodes_still_run():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        v = tf.Variable(0.0, name="v")
        bump = tf.assign_add(v, 1.0)  # stateful (a ref input): runs
        check = tf.debugging.check_numerics(x, "x has a NaN")  # on TF's keep list
        with tf.control_dependencies([bump, check]):
            y = tf.identity(x, name="y")
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        sess.run(y, {x: [1.0]})
        assert sess.run(v) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="x has a NaN"):
            sess.run(y, {x: [np.nan]})


def test_a_convolutions_unused_input_gradient_is_not_computed():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 6, 6, 1], name="x")
        w = tf.Variable(tf.ones([3, 3, 1, 2]), name="w")
        loss = tf.reduce_sum(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") ** 2)
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        md = tf.RunMetadata()
        sess.run(step, {x: np.arange(72, dtype=np.float32).reshape(2, 6, 6, 1) / 72},
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=md)
        ran = {n.node_name: n.timeline_label for d in md.step_stats.dev_stats
               for n in d.node_stats}
        np.testing.assert_allclose(sess.run(w), TF["conv_input_gradient"]["w"], rtol=1e-6)
    tf_ran = TF["conv_input_gradient"]["ran"]
    assert "gradients/Conv2D_grad/Conv2DBackpropFilter" in tf_ran
    assert not any("Conv2DBackpropInput" in n for n in tf_ran)
    assert "gradients/Conv2D_grad/Conv2DBackpropFilter" in ran
    ops = {label.split(" = ")[1].split("(")[0] for label in ran.values() if " = " in label}
    assert "Conv2DBackpropFilter" in ops and "Conv2DBackpropInput" not in ops
    assert ran["gradients/Conv2D_grad/Conv2DBackpropInput"].split(" = ")[1].startswith("NoOp")
