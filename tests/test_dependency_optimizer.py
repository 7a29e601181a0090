"""Nodes whose values nobody reads become NoOps, constants' control edges are dropped and
NoOps bypassed (passes/dependency_optimizer.py), as TF's grappler DependencyOptimizer:
compared with what TF 2.21 did to the same programs
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


def _partition(sess, fetch, feed) -> dict:
    """As the fixture's: the partition's nodes ({name: [op, inputs]}) and what ran."""
    md = tf.RunMetadata()
    value = sess.run(fetch, feed, options=tf.RunOptions(
        output_partition_graphs=True, trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    nodes = {n.name: [n.op, list(n.input)] for p in md.partition_graphs for n in p.node}
    ran = sorted({n.node_name for d in md.step_stats.dev_stats for n in d.node_stats})
    return {"value": np.asarray(value).tolist(), "nodes": nodes,
            "ran": [n for n in ran if n != "_SOURCE"]}


def test_the_unread_node_is_gone_from_the_partition_as_in_tf():
    """`bad` became a NoOp only y waited for; bypassed, y waits for nothing new: TF's
    partition node for node (TF's grappler also swaps Mul's inputs: not compared)."""
    g, x, _, y = _reshape_program()
    with tf.Session(graph=g) as sess:
        got = _partition(sess, y, {x: [1.0, 2.0, 3.0]})
    want = TF["reshape_partition"]
    assert got["value"] == want["value"] and got["ran"] == want["ran"]
    assert {n: op for n, (op, _) in got["nodes"].items()} == \
        {n: op for n, (op, _) in want["nodes"].items()}
    assert got["nodes"]["y"] == want["nodes"]["y"] == ["Identity", ["mul"]]


def _frozen_reads_program():
    """The fixture's frozen dense layer (see make_dependency_optimizer_tf.frozen_reads)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        reads = []
        for name, value in (("dense/MatMul", np.arange(12, dtype=np.float32).reshape(4, 3)),
                            ("dense/BiasAdd", np.array([1.0, -2.0, 3.0], np.float32))):
            resource = tf.constant(value, name=f"{name}/ReadVariableOp/resource")
            reads.append(tf.identity(resource, name=f"{name}/ReadVariableOp"))
        y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, reads[0]), reads[1]), name="dense/Relu")
        with tf.control_dependencies(reads):
            done = tf.no_op(name="NoOp")
        with tf.control_dependencies([done]):
            out = tf.identity(y, name="Identity")
    return g, x, out, done


def _folded(name: str) -> str:
    """A folded constant's name without its `/_<n>__cf__<m>` suffix: TF's grappler keeps
    the node's own name where aioflow's folding names it as TF's GraphOptimizer does."""
    return name.split("/_")[0] if "__cf__" in name else name


def test_frozen_weight_reads_and_their_noop_do_not_run_as_in_tf():
    """The reads' Identities, their NoOp and the resource Consts are gone; the fetched
    Identity waits for nothing but its value; what runs is TF's set of nodes."""
    g, x, out, _ = _frozen_reads_program()
    with tf.Session(graph=g) as sess:
        got = _partition(sess, out, {x: [[1.0, -1.0, 0.5, 2.0]]})
    want = TF["frozen_reads"]
    np.testing.assert_allclose(got["value"], want["value"], rtol=1e-6)
    names = {_folded(n): op for n, (op, _) in got["nodes"].items()}
    assert names.keys() == want["nodes"].keys()
    assert {n: op for n, op in names.items() if op != "_FusedMatMul"} == \
        {n: op for n, (op, _) in want["nodes"].items() if op != "_MklNativeFusedMatMul"}
    assert got["nodes"]["Identity"][1] == want["nodes"]["Identity"][1] == ["dense/Relu"]
    assert sorted(_folded(n) for n in got["ran"]) == want["ran"]


def test_with_dependency_optimization_off_the_reads_and_noop_run():
    g, x, out, _ = _frozen_reads_program()
    with tf.Session(graph=g, config=_config(rewriter_config_pb2.RewriterConfig.OFF)) as sess:
        got = _partition(sess, out, {x: [[1.0, -1.0, 0.5, 2.0]]})
    assert got["nodes"]["NoOp"][0] == "NoOp"
    assert "^NoOp" in got["nodes"]["Identity"][1]
    assert "NoOp" in got["ran"] and "dense/MatMul/ReadVariableOp" in got["ran"]


def test_a_noop_or_constant_run_as_a_target_still_runs():
    """A NoOp and a Const nothing waits for are what the client asked to run: kept."""
    g, x, out, done = _frozen_reads_program()
    with g.as_default():
        v = tf.Variable(0.0, name="v")
        with tf.control_dependencies([tf.assign_add(v, 1.0)]):
            bump = tf.no_op(name="bump")
        c = tf.constant(5.0, name="c")
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        got = _partition(sess, [bump, c.op], {})
        assert sess.run(v) == 1.0
        assert got["nodes"]["bump"][0] == "NoOp" and "bump" in got["ran"]
        assert got["nodes"]["c"][0] == "Const" and "c" in got["ran"]
        # and a NoOp bypassed on a path still orders what waited for it
        got = _partition(sess, [done], {})
        assert "NoOp" in got["ran"]


def test_a_bypassed_noop_still_orders_a_read_after_an_update():
    """read waits for a NoOp that waits for the update: once the NoOp is bypassed, read
    waits for the update itself, every run."""
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(0.0, name="v")
        update = tf.assign_add(v, 1.0, name="update")
        with tf.control_dependencies([update]):
            gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            read = tf.identity(v.read_value(), name="read")
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        assert [float(sess.run(read)) for _ in range(3)] == [1.0, 2.0, 3.0]
        got = _partition(sess, read, {})
    assert "gate" not in got["nodes"]
    assert "^update" in got["nodes"]["read"][1] or any(
        "^update" in ins for _, ins in got["nodes"].values())


def test_a_noop_whose_bypass_would_add_edges_stays_as_in_tf():
    """Three updates into the NoOp, three reads out of it: nine edges of six, kept."""
    g = tf.Graph()
    with g.as_default():
        vs = [tf.Variable(float(i), name=f"v{i}") for i in range(3)]
        with tf.control_dependencies([tf.assign_add(v, 1.0) for v in vs]):
            gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            reads = [tf.identity(v.read_value(), name=f"read{i}") for i, v in enumerate(vs)]
        init = tf.global_variables_initializer()
    with tf.Session(graph=g) as sess:
        sess.run(init)
        got = _partition(sess, reads, {})
    want = TF["wide_noop"]
    assert got["value"] == want["value"] == [1.0, 2.0, 3.0]
    op, inputs = got["nodes"]["gate"]
    assert op == want["nodes"]["gate"][0] == "NoOp"
    assert sorted(inputs) == sorted(want["nodes"]["gate"][1])
    for name in ("read", "read_1", "read_2"):
        assert "^gate" in got["nodes"][name][1] and "^gate" in want["nodes"][name][1]
    assert "gate" in got["ran"] and "gate" in want["ran"]


@pytest.mark.parametrize("pred,want", [(True, 11.0), (False, -1.0)])
def test_a_bypassed_noop_in_a_cond_branch_keeps_its_deadness(pred, want):
    """In the branch not taken the NoOp is dead; what waited for it is dead as well once
    it waits for the NoOp's inputs, so the Merge takes the branch that ran."""
    g = tf.Graph()
    with g.as_default():
        p = tf.placeholder(tf.bool, [], name="p")
        x = tf.placeholder(tf.float32, [], name="x")

        def taken():
            a = tf.add(x, 1.0, name="a")
            with tf.control_dependencies([tf.group(a, name="g")]):
                return tf.identity(a * 10.0 - 9.0, name="out")

        y = tf.cond(p, taken, lambda: tf.identity(x - 2.0))
    with tf.Session(graph=g) as sess:
        assert float(sess.run(y, {p: pred, x: 1.0})) == want


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
    # TF's NoOp in its place was bypassed too (only the gradient tuple waited for it)
    assert "gradients/Conv2D_grad/Conv2DBackpropInput" not in tf_ran
    assert "gradients/Conv2D_grad/Conv2DBackpropInput" not in ran
