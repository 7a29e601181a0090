"""Sparse kernels (SparseToDense, SparseTensorDenseMatMul, SparseReshape, SparseReorder,
SparseReduceSum(Sparse), SparseFillEmptyRows, SparseAdd, SparseSlice, SparseConcat) against
TensorFlow 2.21's own answers (tests/data/sparse_cases.*, made by make_sparse_fixtures.py):
the same values, or the same error class and message; then the builders, SparseTensor feeds
and fetches through a Session, and the inline/pool decision."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from google.protobuf import text_format
from kernel_testutil import create, run_kernel
from op_def_compare import ours

import aioflow as af
from aioflow.client.sync_session import SyncSession
from aioflow.framework import errors
from aioflow.proto import op_def_pb2

DATA = os.path.join(os.path.dirname(__file__), "data")
with open(os.path.join(DATA, "sparse_cases.json")) as _f:
    _FIXTURES = json.load(_f)
CASES = _FIXTURES["cases"]
OPDEFS = _FIXTURES["op_defs"]
ARRAYS = np.load(os.path.join(DATA, "sparse_cases.npz"), allow_pickle=False)


def _value(key):
    value = ARRAYS[key]
    return value.astype(object) if value.dtype.kind == "S" else value


def _run_case(c):
    inputs = [_value(k) for k in c["inputs"]]
    attrs = dict(c["attrs"])
    if c["op"] == "SparseConcat":
        attrs["N"] = len(inputs) // 3
    return run_kernel(c["op"], inputs, **attrs)


def _assert_same(got, want, name):
    got = np.asarray(got)
    if want.dtype.kind == "S":
        want = want.astype(object)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
    else:
        assert got.tolist() == want.tolist(), name


@pytest.mark.parametrize("c", CASES, ids=[c["name"] for c in CASES])
def test_as_tensorflow(c):
    if "error" in c:
        with pytest.raises(getattr(errors, c["error"])) as info:
            _run_case(c)
        assert info.value.message == c["message"]
        return
    outputs = _run_case(c)
    assert len(outputs) == len(c["outputs"])
    for got, key in zip(outputs, c["outputs"], strict=True):
        _assert_same(got, ARRAYS[key], key)


@pytest.mark.parametrize("name", sorted(OPDEFS))
def test_op_def_equals_tensorflows(name):
    expected = text_format.Parse(OPDEFS[name], op_def_pb2.OpDef())
    got = ours(name)
    assert got == expected, text_format.MessageToString(got)


# -- index checks before use: random bad indices give TF's errors, never NumPy's -------------

_SPARSE_INPUT_OPS = {
    # op: (inputs from (indices, values, shape), extra attrs)
    "SparseToDense": (lambda ix, v, sh: [ix, sh, v, np.float32(0)], {}),
    "SparseReorder": (lambda ix, v, sh: [ix, v, sh], {}),
    "SparseReduceSum": (lambda ix, v, sh: [ix, v, sh, np.int32([0])], {}),
    "SparseReduceSumSparse": (lambda ix, v, sh: [ix, v, sh, np.int32([1])], {}),
    "SparseFillEmptyRows": (lambda ix, v, sh: [ix, v, sh, np.float32(0)], {}),
    "SparseAdd": (lambda ix, v, sh: [ix, v, sh, ix[::-1], v, sh, np.float32(0)], {}),
    "SparseSlice": (lambda ix, v, sh: [ix, v, sh, np.int64([0, 1]), np.int64([3, 3])], {}),
    "SparseReshape": (lambda ix, v, sh: [ix, sh, np.int64([-1])], {}),
    "SparseTensorDenseMatMul": (lambda ix, v, sh: [ix, v, sh, np.ones((4, 3), np.float32)], {}),
}


@pytest.mark.parametrize("op", sorted(_SPARSE_INPUT_OPS))
def test_random_bad_indices_raise_tf_errors_only(op):
    make, attrs = _SPARSE_INPUT_OPS[op]
    rng = np.random.RandomState(3)
    for trial in range(60):
        n = rng.randint(0, 6)
        ix = rng.randint(-3, 8, size=(n, 2)).astype(np.int64)
        values = rng.randn(n).astype(np.float32)
        shape = rng.randint(0, 5, size=2).astype(np.int64)
        if op == "SparseTensorDenseMatMul":
            shape[1] = 4
        try:
            outputs = run_kernel(op, make(ix, values, shape), **attrs)
        except errors.OpError:
            continue
        for out in outputs:
            assert isinstance(out, np.ndarray), (op, trial)


# -- edge cases beyond the fixtures -----------------------------------------------------------

def test_sparse_to_dense_int64_indices_and_large_output_is_pooled():
    ix = np.array([[0, 5], [299, 399]], np.int64)
    kernel = create("SparseToDense", [ix, np.int64([300, 400]), np.float32([1, 2]),
                                      np.float32(0)])
    inputs = [ix, np.int64([300, 400]), np.float32([1, 2]), np.float32(0)]
    assert kernel.is_expensive(inputs)  # a 120000-element output
    small = [ix[:1], np.int64([2, 6]), np.float32([1]), np.float32(0)]
    assert not kernel.is_expensive(small)
    out = kernel.compute(None, inputs)[0]
    assert out.shape == (300, 400) and out[0, 5] == 1 and out[299, 399] == 2 and out.sum() == 3


def test_matmul_pool_decision_by_work():
    b = np.ones((50, 8), np.float32)
    ix = np.zeros((10, 2), np.int64)
    kernel = create("SparseTensorDenseMatMul", [ix, np.ones(10, np.float32), np.int64([5, 50]),
                                                b])
    assert not kernel.is_expensive([ix, np.ones(10, np.float32), np.int64([5, 50]), b])
    big = np.zeros((20000, 2), np.int64)
    assert kernel.is_expensive([big, np.ones(20000, np.float32), np.int64([5, 50]), b])


def test_matmul_negative_shape_is_an_error_not_a_crash():
    # TF 2.21's kernel aborts the process here; aioflow gives TensorShape's own error.
    with pytest.raises(errors.InvalidArgumentError,
                       match="Expected shape dimensions to be non-negative, got -2"):
        run_kernel("SparseTensorDenseMatMul", [np.int64([[0, 1]]), np.float32([1]),
                                               np.int64([-2, 3]), np.ones((3, 2), np.float32)])


def test_fill_empty_rows_int64_rank3_and_reverse_map():
    ix = np.array([[3, 0, 1], [1, 1, 0], [3, 1, 1]], np.int64)
    out_ix, out_v, empty, rev = run_kernel(
        "SparseFillEmptyRows", [ix, np.int64([7, 8, 9]), np.int64([5, 2, 2]), np.int64(-1)])
    assert empty.tolist() == [True, False, True, False, True]
    assert out_ix.tolist() == [[0, 0, 0], [1, 1, 0], [2, 0, 0], [3, 0, 1], [3, 1, 1], [4, 0, 0]]
    assert out_v.tolist() == [-1, 8, -1, 7, 9, -1]
    assert rev.tolist() == [3, 1, 4]
    assert (out_v[rev] == [7, 8, 9]).all()


def test_sparse_add_unsorted_follows_tf_merge():
    a = np.int64([[2], [0]]), np.float32([1, 2])
    b = np.int64([[0], [2]]), np.float32([10, 20])
    ix, v, sh = run_kernel("SparseAdd", [a[0], a[1], np.int64([3]), b[0], b[1], np.int64([3]),
                                         np.float32(0)])
    # the merge meets (2 vs 0): b first; (2 vs 2): a sum; then a's leftover 0
    assert ix.ravel().tolist() == [0, 2, 0] and v.tolist() == [10, 21, 2]


# -- builders, feeds and fetches through a Session ---------------------------------------------

# The nodes tf.compat.v1 (TF 2.21) builds for the same program, in order.
_TF_NODES = [
    "SparseTensor/indices", "SparseTensor/values", "SparseTensor/dense_shape", "zeros",
    "SparseToDense", "SparseTensor_1/indices", "SparseTensor_1/values",
    "SparseTensor_1/dense_shape", "SparseReorder", "SparseTensor_2/dense_shape", "sp/shape",
    "sp/values", "sp/indices", "SparseReduceSum/reduction_axes", "SparseReduceSum",
    "SparseTensorDenseMatMul/b", "SparseTensorDenseMatMul/SparseTensorDenseMatMul",
    "SparseTensor_4/indices", "SparseTensor_4/values", "SparseTensor_4/dense_shape",
    "SparseFillEmptyRows/Const", "SparseFillEmptyRows/SparseFillEmptyRows", "threshold",
    "SparseAdd", "SparseTensor_5/dense_shape", "Cast/x", "Cast", "SparseReshape",
    "SparseReshape/Const", "SparseReshape/Identity"]


def _program():
    sp = af.SparseTensor(indices=[[0, 1], [1, 2]], values=[1.0, 2.0], dense_shape=[2, 3])
    out = {"dense": af.sparse.to_dense(sp)}
    out["reordered"] = af.sparse.reorder(af.SparseTensor([[1, 0], [0, 1]], [3, 4], [2, 2]))
    ph = af.sparse_placeholder(af.float32, name="sp")
    out["sum"] = af.sparse.reduce_sum(ph, axis=1)
    out["mm"] = af.sparse.sparse_dense_matmul(sp, np.ones((3, 2), np.float32))
    out["filled"], out["empty"] = af.sparse.fill_empty_rows(
        af.SparseTensor([[1, 0]], [5.0], [3, 2]), -1.0)
    out["add"] = af.sparse.add(sp, sp)
    out["flat"] = af.sparse.reshape(sp, [-1])
    return ph, out


def test_builders_make_tf_nodes_and_run():
    g = af.Graph()
    with g.as_default():
        ph, out = _program()
    assert [n.name for n in g.as_graph_def().node] == _TF_NODES
    assert out["flat"].shape.as_list() == [6]
    assert out["dense"].shape.as_list() == [2, 3]
    assert af.sparse.matmul is af.sparse.sparse_dense_matmul
    fed = af.SparseTensorValue(np.int64([[0, 0], [0, 2], [1, 1]]), np.float32([1, 2, 3]),
                               np.int64([2, 3]))
    with SyncSession(graph=g) as sess:
        got = sess.run(out, {ph: fed})
        echoed = sess.run(ph, {ph: (fed.indices, fed.values, fed.dense_shape)})
    assert got["dense"].tolist() == [[0, 1, 0], [0, 0, 2]]
    assert isinstance(got["reordered"], af.SparseTensorValue)
    assert got["reordered"].indices.tolist() == [[0, 1], [1, 0]]
    assert got["reordered"].values.tolist() == [4, 3]
    assert got["reordered"].dense_shape.tolist() == [2, 2]
    assert got["sum"].tolist() == [3, 3]
    assert got["mm"].tolist() == [[1, 1], [2, 2]]
    assert got["filled"].values.tolist() == [-1, 5, -1]
    assert got["empty"].tolist() == [True, False, True]
    assert got["add"].values.tolist() == [2, 4]
    assert got["flat"].indices.tolist() == [[1], [5]]
    assert got["flat"].dense_shape.tolist() == [6]
    assert isinstance(echoed, af.SparseTensorValue)
    assert echoed.values.tolist() == [1, 2, 3]


def test_kernel_error_names_the_node():
    g = af.Graph()
    with g.as_default():
        ix = af.placeholder(af.int64, [None, 2])
        dense = af.sparse_to_dense(ix, [2, 2], [1.0, 2.0], name="to_dense")
    with SyncSession(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(dense, {ix: [[1, 0], [0, 0]]})
    assert info.value.message.startswith("indices[1] = [0,0] is out of order.")
    assert "{{node to_dense}}" in info.value.message


def test_sparse_tensor_checks_static_shapes():
    with af.Graph().as_default():
        with pytest.raises(ValueError):
            af.SparseTensor([[0, 1]], [1.0, 2.0], [2, 3])  # 1 index row, 2 values
        with pytest.raises(ValueError):
            af.SparseTensor([[0, 1]], [1.0], [2, 3, 4])  # rank 2 indices, rank 3 shape
        with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
            af.sparse.add(af.constant([1.0]), af.constant([1.0]))


def test_fast_paths_agree_with_general_ones():
    """The one-key merge/sort (indices within the shape) gives what the column-wise lexsort
    merge and TF's step-by-step merge give, repeats included."""
    from aioflow.kernels.sparse import sparse_kernels as sk
    rng = np.random.RandomState(11)
    for _ in range(40):
        shape = [int(d) for d in rng.randint(1, 5, size=rng.randint(1, 4))]
        sides = []
        for _side in range(2):
            n = rng.randint(0, 12)
            ix = np.stack([rng.randint(0, d, n) for d in shape], axis=1).astype(np.int64)
            ix = ix[sk._lex_order(ix)]
            sides += [ix, rng.randint(-3, 4, n).astype(np.int32)]
        a, av, b, bv = sides
        fast = sk._merge_flat(a, av, b, bv, 2, shape)
        general = sk._merge_sorted(a, av, b, bv, 2)
        loop = sk._merge_loop(a, av, b, bv, 2)
        for got in (fast, general):
            assert got[0].tolist() == loop[0].tolist() and got[1].tolist() == loop[1].tolist()
        mixed = np.concatenate([a, b])[rng.permutation(len(a) + len(b))]
        by_key = sk._lex_order(mixed, shape=shape)
        by_columns = sk._lex_order(mixed)
        assert by_key.tolist() == by_columns.tolist()
