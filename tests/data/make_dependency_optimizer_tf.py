"""What TF 2.21's grappler DependencyOptimizer does to a v1 session's graph, for
tests/test_dependency_optimizer.py: a stateless node read only through a control edge is
not run by default (its error never raised), is run with dependency_optimization OFF, and
is run when it is a target, and what is left of it in the partition graph (nothing); a
convolution's input gradient that only the gradient `tuple` waits for is not run; and a
model frozen as TF freezes Keras models (each weight read by an `Identity` the fetched
output waits for through a NoOp): which nodes its partition keeps and runs. Run with
TensorFlow 2.21:

    python tests/data/make_dependency_optimizer_tf.py  # writes dependency_optimizer_tf.json
"""

import json
import os

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

tf.disable_v2_behavior()
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dependency_optimizer_tf.json")


def _config(off: bool):
    cfg = tf.ConfigProto()
    if off:
        cfg.graph_options.rewrite_options.dependency_optimization = \
            rewriter_config_pb2.RewriterConfig.OFF
    return cfg


def _outcome(sess, fetch, feed):
    try:
        return {"value": np.asarray(sess.run(fetch, feed)).tolist()}
    except tf.errors.OpError as e:
        lines = [ln.strip() for ln in e.message.splitlines() if "Input to reshape" in ln]
        return {"error": type(e).__name__, "message": lines[0] if lines else ""}


def control_only_reshape() -> dict:
    out = {}
    for off in (False, True):
        g = tf.Graph()
        with g.as_default():
            x = tf.placeholder(tf.float32, [None], name="x")
            bad = tf.reshape(x, [3], name="bad")  # fails for 4 elements
            with tf.control_dependencies([bad]):
                y = tf.identity(x * 2.0, name="y")
            with tf.Session(config=_config(off)) as s:
                key = "off" if off else "default"
                out[key] = _outcome(s, y, {x: [1.0, 2.0, 3.0, 4.0]})
                out[key + "_target"] = _outcome(s, bad.op, {x: [1.0, 2.0, 3.0, 4.0]})
    return out


def _partition(s, fetch, feed) -> dict:
    """The partition graph's nodes ({name: [op, inputs]}) and the nodes that ran."""
    md = tf.RunMetadata()
    value = s.run(fetch, feed, options=tf.RunOptions(
        output_partition_graphs=True, trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    nodes = {n.name: [n.op, list(n.input)] for p in md.partition_graphs for n in p.node}
    ran = sorted({n.node_name for d in md.step_stats.dev_stats for n in d.node_stats})
    return {"value": np.asarray(value).tolist(), "nodes": nodes,
            "ran": [n for n in ran if n != "_SOURCE"]}


def reshape_partition() -> dict:
    """control_only_reshape's program run for y: the partition without `bad`."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None], name="x")
        bad = tf.reshape(x, [3], name="bad")
        with tf.control_dependencies([bad]):
            y = tf.identity(x * 2.0, name="y")
        with tf.Session() as s:
            return _partition(s, y, {x: [1.0, 2.0, 3.0]})


def frozen_reads() -> dict:
    """A dense layer frozen as convert_variables_to_constants_v2 writes Keras models:
    Const -> Identity (the read) -> the layer, every read also gathered by the function's
    NoOp, which the fetched Identity waits for."""
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
        with tf.Session() as s:
            return _partition(s, out, {x: [[1.0, -1.0, 0.5, 2.0]]})


def wide_noop() -> dict:
    """A NoOp three updates feed and three reads wait for: bypassing it would make nine
    control edges of six, so TF keeps it."""
    g = tf.Graph()
    with g.as_default():
        vs = [tf.Variable(float(i), name=f"v{i}") for i in range(3)]
        with tf.control_dependencies([tf.assign_add(v, 1.0) for v in vs]):
            gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            reads = [tf.identity(v.read_value(), name=f"read{i}") for i, v in enumerate(vs)]
        init = tf.global_variables_initializer()
        with tf.Session() as s:
            s.run(init)
            got = _partition(s, reads, {})
    got["nodes"] = {n: v for n, v in got["nodes"].items() if n == "gate" or "read" in n}
    return got


def conv_input_gradient() -> dict:
    """The first convolution's input gradient: which nodes of the gradient run."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [2, 6, 6, 1], name="x")
        w = tf.Variable(tf.ones([3, 3, 1, 2]), name="w")
        loss = tf.reduce_sum(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME") ** 2)
        step = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        with tf.Session() as s:
            s.run(tf.global_variables_initializer())
            md = tf.RunMetadata()
            s.run(step, {x: np.arange(72, dtype=np.float32).reshape(2, 6, 6, 1) / 72},
                  options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                  run_metadata=md)
            ran = sorted({n.node_name for d in md.step_stats.dev_stats for n in d.node_stats})
            weights = s.run(w)
    return {"ran": [n for n in ran if "Conv2D_grad" in n], "w": weights.tolist()}


if __name__ == "__main__":
    with open(OUT, "w") as f:
        json.dump({"control_only_reshape": control_only_reshape(),
                   "conv_input_gradient": conv_input_gradient(),
                   "reshape_partition": reshape_partition(),
                   "frozen_reads": frozen_reads(),
                   "wide_noop": wide_noop()}, f, indent=1)
    print(OUT)
