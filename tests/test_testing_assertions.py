"""aioflow.testing's assertions: assert_graph_equal (TF's EqualGraphDef: node order, attr
order and tensor encoding do not matter; every difference named by node and field) and
assert_near (tf.test's assertAllCloseAccordingToType tolerances by dtype)."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import aioflow as af
from aioflow.framework import tensor_util
from aioflow.proto import graph_pb2
from aioflow.testing import assert_graph_equal, assert_near, default_tolerance, graph_diff


def _graph(build) -> graph_pb2.GraphDef:
    g = af.Graph()
    with g.as_default():
        build()
    return g.as_graph_def()


def _model(order="xy", scale=2.0, device=""):
    def build():
        inputs = {n: af.placeholder(af.float32, [None], name=n) for n in order}
        with af.device(device):
            prod = af.multiply(inputs["x"], scale, name="prod")
        af.add(prod, inputs["y"], name="out")
    return _graph(build)


def test_equal_graphs_whatever_the_order_of_nodes_and_attrs():
    a, b = _model("xy"), _model("yx")
    assert [n.name for n in a.node] != [n.name for n in b.node]
    assert_graph_equal(a, b)
    shuffled = graph_pb2.GraphDef()
    shuffled.CopyFrom(a)
    shuffled.node.reverse()
    for node in shuffled.node:  # attrs written in the other order
        items = sorted(node.attr.items(), reverse=True)
        node.ClearField("attr")
        for k, v in items:
            node.attr[k].CopyFrom(v)
    assert_graph_equal(shuffled, a)
    assert graph_diff(a, shuffled) == []


def test_tensors_compare_by_value_not_encoding():
    a = _model()
    b = graph_pb2.GraphDef()
    b.CopyFrom(a)
    const = next(n for n in b.node if n.op == "Const")
    value = tensor_util.make_ndarray(const.attr["value"].tensor)
    proto = const.attr["value"].tensor
    proto.ClearField("float_val")
    proto.tensor_content = np.asarray(value, np.float32).tobytes()
    assert a != b
    assert_graph_equal(a, b)


def test_every_difference_is_named_by_node_and_field():
    diffs = graph_diff(_model(scale=2.0, device="/cpu:0"), _model(scale=3.0))
    assert diffs == [
        "node 'prod': device '/device:CPU:0' != ''",
        "node 'prod/y': device '/device:CPU:0' != ''",
        "node 'prod/y': attr 'value': tensor { dtype: DT_FLOAT tensor_shape { } float_val: 2.0 }"
        " != tensor { dtype: DT_FLOAT tensor_shape { } float_val: 3.0 }",
    ]
    with pytest.raises(AssertionError, match=re.escape("graphs differ (3 differences):\n"
                                                       "  node 'prod': device")):
        assert_graph_equal(_model(scale=2.0, device="/cpu:0"), _model(scale=3.0))


def test_structure_differences():
    a = _model()
    b = graph_pb2.GraphDef()
    b.CopyFrom(a)
    out = next(n for n in b.node if n.name == "out")
    out.op = "AddV2" if out.op != "AddV2" else "Add"
    a_out = next(n for n in a.node if n.name == "out")
    a_out.input.append("^y")  # control inputs compare as a set: "^y" vs "^x"
    out.input[:] = ["y", "prod", "^x"]
    del out.attr["T"]
    b.node.add(name="extra", op="NoOp")
    assert graph_diff(a, b) == [
        "node 'extra' (NoOp) only in the second graph",
        f"node 'out': op '{next(n for n in a.node if n.name == 'out').op}' != '{out.op}'",
        "node 'out': input 0 'prod' != 'y'",
        "node 'out': input 1 'y' != 'prod'",
        "node 'out': control input '^y' only in the first graph",
        "node 'out': control input '^x' only in the second graph",
        "node 'out': attr 'T' only in the first graph: type: DT_FLOAT",
    ]


def test_internal_attrs_are_ignored_unless_asked():
    g = af.Graph()
    with g.as_default():
        af.placeholder(af.float32, [2], name="x")
    assert_graph_equal(g.as_graph_def(add_shapes=True), g.as_graph_def())
    assert graph_diff(g.as_graph_def(add_shapes=True), g.as_graph_def(),
                      ignore_internal_attrs=False) == [
        "node 'x': attr '_output_shapes' only in the first graph: "
        "list { shape { dim { size: 2 } } }"]


def test_graphs_of_any_kind():
    a = _model()

    class GraphDef:  # another protobuf library's GraphDef (TensorFlow's), by its bytes
        def SerializeToString(self):
            return a.SerializeToString()

    assert_graph_equal(GraphDef(), a)
    assert_graph_equal(a.SerializeToString(), a)
    with pytest.raises(TypeError, match="Expected a Graph or a GraphDef for the second graph, "
                                        "got int"):
        assert_graph_equal(a, 3)


# -- assert_near ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype, tol", [
    (np.float64, 1e-6), (np.float32, 1e-6), (np.complex64, 1e-6), (np.float16, 1e-3),
    (ml_dtypes.bfloat16, 1e-2), (np.int32, 1e-6),
])
def test_tolerance_by_dtype(dtype, tol):
    assert default_tolerance(dtype) == tol
    assert default_tolerance(dtype, np.float64) == tol  # the looser of the two


@pytest.mark.parametrize("dtype, inside, outside", [
    (np.float64, 1.9e-6, 2.1e-6), (np.float32, 1.9e-6, 2.5e-6), (np.float16, 1.5e-3, 4e-3),
    (ml_dtypes.bfloat16, 1.5e-2, 4e-2),
])
def test_assert_near_at_the_dtype_tolerance(dtype, inside, outside):
    """|a - b| <= atol + rtol * |b|, with rtol = atol = the dtype's tolerance: at 1.0 the
    bound is twice the tolerance."""
    expected = np.array([1.0, -1.0], np.float64)
    assert_near((expected + inside).astype(dtype), expected.astype(dtype))
    with pytest.raises(AssertionError, match="not close where"):
        assert_near((expected + [0, outside]).astype(dtype), expected.astype(dtype))


def test_assert_near_explicit_tolerances_and_nans():
    assert_near(np.float32(1.05), np.float32(1.0), rtol=0.1)
    assert_near([np.nan, 1.0], [np.nan, 1.0])
    with pytest.raises(AssertionError):
        assert_near([np.nan, 1.0], [0.0, 1.0])
    with pytest.raises(AssertionError, match="not close lhs = 2.0"):
        assert_near(2.0, 1.0, atol=0.5, rtol=0)


def test_assert_near_structures_shapes_and_strings():
    assert_near({"a": [np.ones(2), np.zeros((2, 3))], "b": b"x"},
                {"a": [np.ones(2), np.zeros((2, 3))], "b": b"x"})
    with pytest.raises(AssertionError, match=re.escape(
            "Mismatched value: actual['a'][1] is different from expected['a'][1]. "
            "Shape mismatch: expected (2, 3), got (3, 2)")):
        assert_near({"a": [np.ones(2), np.zeros((3, 2))]}, {"a": [np.ones(2), np.zeros((2, 3))]})
    with pytest.raises(AssertionError, match=re.escape("actual has keys ['a'], expected has")):
        assert_near({"a": 1}, {"a": 1, "b": 2})
    with pytest.raises(AssertionError, match="values differ"):
        assert_near(np.array([b"a", b"b"], object), np.array([b"a", b"c"], object))
    with pytest.raises(AssertionError, match="my context"):
        assert_near([1.0], [2.0], msg="my context")


def test_control_inputs_compare_as_a_set():
    a = graph_pb2.GraphDef()
    a.node.add(name="p", op="NoOp")
    a.node.add(name="q", op="NoOp")
    a.node.add(name="r", op="NoOp", input=["^p", "^q"])
    b = graph_pb2.GraphDef()
    b.CopyFrom(a)
    b.node[2].input[:] = ["^q", "^p"]
    assert_graph_equal(a, b)
    b.node[2].input[:] = ["^q"]
    assert graph_diff(a, b) == ["node 'r': control input '^p' only in the first graph"]
