"""af.gradients' API beyond the fixture programs: the registry (RegisterGradient,
NotDifferentiable, gradient_override_map), TF's errors, hessians, IndexedSlices and their
dense conversion, gradient OpDefs equal to TF's, and a meta graph TensorFlow wrote with
training ops whose gradients run to TF's values."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from op_def_compare import assert_equal_to_tf

import aioflow as af
import aioflow.compat.v1 as tf
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import meta_graph_pb2, op_def_pb2

DATA = Path(__file__).resolve().parent / "data" / "gradients_tf"


def test_gradient_op_defs_equal_tfs():
    ops = op_def_pb2.OpList()
    ops.ParseFromString((DATA / "grad_op_defs.pb").read_bytes())
    assert len(ops.op) == 41
    assert_equal_to_tf(ops)


def test_register_gradient_and_override_map():
    with tf.Graph().as_default() as g:
        @tf.RegisterGradient("TestTimesThree")
        def _times_three(op, grad):
            return grad * 3.0

        x = tf.placeholder(tf.float32, [2], name="x")
        with g.gradient_override_map({"Identity": "TestTimesThree"}):
            y = tf.identity(x, name="y")
        z = tf.identity(x, name="z")
        assert y.op.get_attr("_gradient_op_type") == b"TestTimesThree"
        gy, gz = tf.gradients([y], [x])[0], tf.gradients([z], [x])[0]
        with tf.Session() as sess:
            a, b = sess.run([gy, gz], {x: [1.0, 2.0]})
    np.testing.assert_allclose(a, [3.0, 3.0])
    np.testing.assert_allclose(b, [1.0, 1.0])


def test_register_gradient_twice_is_an_error():
    af.RegisterGradient("TestTwice")(lambda op, grad: grad)
    with pytest.raises(KeyError, match="Registering two gradient with name 'TestTwice'"):
        af.RegisterGradient("TestTwice")(lambda op, grad: grad)


def test_gradient_override_map_wants_strings():
    g = tf.Graph()
    with pytest.raises(TypeError, match="op_type_map must be a dictionary mapping strings"):
        with g.gradient_override_map({"Identity": 3}):
            pass


def test_not_differentiable_gives_none():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        y = tf.cast(tf.greater(x, 0.0), tf.float32) + x
        assert tf.gradients(tf.greater(x, 0.0), x) == [None]
        assert tf.gradients(y, x)[0] is not None


def test_missing_gradient_is_tfs_lookup_error():
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [3])
        with g.gradient_override_map({"Identity": "NoSuchGradientAnywhere"}):
            y = tf.identity(x, name="y")
        with pytest.raises(LookupError, match=r"No gradient defined for operation'y' \(op "
                           r"type: Identity\)"):
            tf.gradients(y, x)


def test_prevent_gradient_raises():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3])
        y = apply_op("PreventGradient", input=x, message="no way")
        # TF formats the attr's bytes as they are
        with pytest.raises(LookupError, match="Gradient explicitly disabled. Reason: b'no way'"):
            tf.gradients(y, x)


def test_grad_ys_length_and_type_checks():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with pytest.raises(ValueError, match="Length mismatch. Passed 2 grad_ys for 1 ys"):
            tf.gradients([x * 2.0], [x], grad_ys=[x, x])
        with pytest.raises(TypeError, match="must be real or integer"):
            tf.gradients([x * 2.0], [x], grad_ys=[tf.constant([True, False])])


def test_unknown_aggregation_and_unconnected():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        with pytest.raises(ValueError, match="Invalid `aggregation_method` specified 7"):
            tf.gradients(x * x, x, aggregation_method=7)
        with pytest.raises(ValueError, match="Unknown value for unconnected_gradients"):
            tf.gradients(x * x, x, unconnected_gradients="sometimes")


def test_hessians():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [3], name="x")
        y = tf.reduce_sum(x * x * x)
        (h,) = tf.hessians(y, x)
        with tf.Session() as sess:
            value = sess.run(h, {x: [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(value, np.diag([6.0, 12.0, 18.0]), rtol=1e-6)


def test_gather_gradient_is_indexed_slices_and_converts():
    with tf.Graph().as_default():
        params = tf.placeholder(tf.float32, [4, 2])
        y = tf.gather(params, [1, 1, 3])
        (g,) = tf.gradients(y, params)
        assert isinstance(g, IndexedSlices)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dense = tf.convert_to_tensor(g)
        assert dense.op.type == "UnsortedSegmentSum"
        with tf.Session() as sess:
            value = sess.run(dense, {params: np.zeros((4, 2), np.float32)})
    np.testing.assert_allclose(value, [[0, 0], [2, 2], [0, 0], [1, 1]])


def test_stop_gradient_builder():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        assert tf.gradients(tf.stop_gradient(x) * 2.0, x) == [None]


def test_gradient_shape_check_names_the_op():
    with tf.Graph().as_default():
        @tf.RegisterGradient("TestWrongShape")
        def _wrong(op, grad):
            return tf.zeros([5])

        g = tf.get_default_graph()
        x = tf.placeholder(tf.float32, [2])
        with g.gradient_override_map({"Identity": "TestWrongShape"}):
            y = tf.identity(x, name="wrong")
        with pytest.raises(ValueError, match="Forward operation: wrong. Input index: 0"):
            tf.gradients(y, x)


@pytest.fixture(scope="module")
def mlp_meta_graph():
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString((DATA / "mlp_meta_graph.pb").read_bytes())
    info = json.loads((DATA / "index.json").read_text())["mlp_meta_graph"]
    return meta, info, np.load(DATA / "mlp_meta_graph.npz")


def test_tf_meta_graph_with_training_ops_imports_and_its_gradients_run(mlp_meta_graph):
    meta, info, want = mlp_meta_graph
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta)
        grads = [g.get_tensor_by_name(n) for n in info["grad_names"]]
        feeds = {g.get_tensor_by_name("x:0"): want["x"],
                 g.get_tensor_by_name("labels:0"): want["labels"]}
        with tf.Session() as sess:
            sess.run(g.get_operation_by_name(info["init"]))
            values = sess.run(grads, feeds)
            sess.run(g.get_operation_by_name(info["train"]), feeds)
            after = sess.run([g.get_tensor_by_name(f"{v}:0") for v in ("w1", "b1", "w2")])
    for i, value in enumerate(values):
        np.testing.assert_allclose(value, want[f"grad_{i}"], rtol=1e-5, atol=1e-6)
    for i, value in enumerate(after):
        np.testing.assert_allclose(value, want[f"after_{i}"], rtol=1e-5, atol=1e-6)


def test_tf_meta_graph_of_a_conv_net_trained_with_adam():
    meta = meta_graph_pb2.MetaGraphDef()
    meta.ParseFromString((DATA / "cnn_adam_meta_graph.pb").read_bytes())
    info = json.loads((DATA / "index.json").read_text())["cnn_adam_meta_graph"]
    want = np.load(DATA / "cnn_adam_meta_graph.npz")
    with tf.Graph().as_default() as g:
        tf.train.import_meta_graph(meta)
        grads = [g.get_tensor_by_name(n) for n in info["grad_names"]]
        feeds = {g.get_tensor_by_name("x:0"): want["x"],
                 g.get_tensor_by_name("labels:0"): want["labels"]}
        reads = [g.get_tensor_by_name(f"{v}/Read/ReadVariableOp:0") for v in info["variables"]]
        with tf.Session() as sess:
            sess.run(g.get_operation_by_name(info["init"]))
            values = sess.run(grads, feeds)
            for _ in range(2):
                sess.run(g.get_operation_by_name(info["train"]), feeds)
            after = sess.run(reads)
    for i, value in enumerate(values):
        np.testing.assert_allclose(value, want[f"grad_{i}"], rtol=1e-4, atol=1e-6)
    for i, value in enumerate(after):
        np.testing.assert_allclose(value, want[f"after_{i}"], rtol=1e-4, atol=1e-6)


def test_gradient_with_respect_to_a_resource_variable_is_its_handles():
    with tf.Graph().as_default():
        v = tf.get_variable("v", initializer=tf.constant([1.0, 2.0]), use_resource=True)
        y = tf.reduce_sum(v * v)
        (g,) = tf.gradients(y, [v])
        assert g is not None
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_allclose(sess.run(g), [2.0, 4.0])


def test_custom_gradient():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return tf.log(1 + e), grad

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        y = log1pexp(x)
        assert y.op.type == "IdentityN"
        assert y.op.get_attr("_gradient_op_type").startswith(b"CustomGradient-")
        (g,) = tf.gradients(y, x)
        with tf.Session() as sess:
            value = sess.run(g, {x: [0.0, 100.0]})
    np.testing.assert_allclose(value, [0.5, 1.0])


def test_max_pool_grad_with_argmax_has_no_gradient_as_in_tf():
    """TF registers no gradient for MaxPoolGradWithArgmax: the second-order gradient of
    max_pool_with_argmax is TF's LookupError naming the op."""
    with tf.Graph().as_default():
        a = tf.placeholder(tf.float32, [1, 4, 4, 1])
        p, _ = apply_op("MaxPoolWithArgmax", input=a, ksize=[1, 2, 2, 1],
                        strides=[1, 2, 2, 1], padding="VALID")
        (ga,) = tf.gradients(tf.reduce_sum(p * p), [a])
        with pytest.raises(LookupError, match=r"No gradient defined for operation"
                                              r"'gradients/MaxPoolWithArgmax_grad/"
                                              r"MaxPoolGradWithArgmax' \(op type: "
                                              r"MaxPoolGradWithArgmax\)"):
            tf.gradients(ga, [a])
