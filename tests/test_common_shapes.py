"""Shape functions of the core ops and constant_value, on small graphs built op by op.

Expected shapes are what TensorFlow's shape inference gives for the same graphs (unknown
dims as None, unknown rank as None).
"""

from __future__ import annotations

import numpy as np
import pytest

from aioflow.framework import dtypes
from aioflow.framework.constant_value import constant_value, constant_value_as_shape
from aioflow.framework.op_def_library import apply_op_raw

pytestmark = pytest.mark.usefixtures("graph")  # every shape is inferred in a fresh graph


def ph(shape, dtype=dtypes.float32):
    return apply_op_raw("Placeholder", dtype=dtype, shape=shape).outputs[0]


def const(value, dtype=np.int32):
    value = np.asarray(value, dtype)
    return apply_op_raw("Const", value=value, dtype=dtypes.as_dtype(value.dtype)).outputs[0]


def shapes(op_type, **kw):
    op = apply_op_raw(op_type, **kw)
    return [None if t.shape.rank is None else t.shape.as_list() for t in op.outputs]


def test_broadcast_binary():
    assert shapes("AddV2", x=ph([2, 3]), y=ph([3])) == [[2, 3]]
    assert shapes("AddV2", x=ph([None, 3]), y=ph([1])) == [[None, 3]]
    assert shapes("AddV2", x=ph([None, 1]), y=ph([None])) == [[None, None]]
    assert shapes("AddV2", x=ph([5, 1]), y=ph([None])) == [[5, None]]
    assert shapes("AddV2", x=ph(None), y=ph([3])) == [None]
    assert shapes("Less", x=ph([2, 1]), y=ph([1, 3])) == [[2, 3]]
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        apply_op_raw("AddV2", x=ph([2, 3]), y=ph([4]))
    assert shapes("Equal", x=ph([2]), y=ph([3]), incompatible_shape_error=False) == [None]


def test_unary_and_cast_keep_shape():
    assert shapes("Exp", x=ph([2, None])) == [[2, None]]
    assert shapes("Cast", x=ph([2, None]), DstT=dtypes.int32) == [[2, None]]
    assert shapes("AddN", inputs=[ph([2, None]), ph([None, 3])]) == [[2, 3]]


def test_reductions():
    x = ph([2, 3, 4])
    assert shapes("Sum", input=x, reduction_indices=const([0, 2])) == [[3]]
    assert shapes("Sum", input=x, reduction_indices=const(1), keep_dims=True) == [[2, 1, 4]]
    assert shapes("Mean", input=x, reduction_indices=ph([2], dtypes.int32)) == [None]
    assert shapes("Max", input=x, reduction_indices=ph([2], dtypes.int32),
                  keep_dims=True) == [[None, None, None]]
    assert shapes("Sum", input=x, reduction_indices=const([], np.int32)) == [[2, 3, 4]]
    assert shapes("ArgMax", input=x, dimension=const(1)) == [[2, 4]]
    assert shapes("ArgMax", input=x, dimension=ph([], dtypes.int32)) == [[None, None]]
    with pytest.raises(ValueError, match="Invalid reduction dimension 5"):
        apply_op_raw("Sum", input=ph([2, 3]), reduction_indices=const(5))


def test_matmul():
    assert shapes("MatMul", a=ph([2, 3]), b=ph([3, 4])) == [[2, 4]]
    assert shapes("MatMul", a=ph([3, 2]), b=ph([3, 4]), transpose_a=True) == [[2, 4]]
    assert shapes("MatMul", a=ph([None, 3]), b=ph([None, 4])) == [[None, 4]]
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        apply_op_raw("MatMul", a=ph([2, 3]), b=ph([4, 5]))
    assert shapes("BatchMatMulV2", x=ph([2, 1, 3, 4]), y=ph([5, 4, 6])) == [[2, 5, 3, 6]]
    assert shapes("BatchMatMulV2", x=ph([2, 3, 4]), y=ph([2, 3, 4]), adj_x=True) == [[2, 4, 4]]


def test_reshape():
    x = ph([2, 3])
    assert shapes("Reshape", tensor=x, shape=const([3, 2])) == [[3, 2]]
    assert shapes("Reshape", tensor=x, shape=const([-1])) == [[6]]
    assert shapes("Reshape", tensor=ph([None, 3]), shape=const([-1, 3])) == [[None, 3]]
    assert shapes("Reshape", tensor=x, shape=ph([2], dtypes.int32)) == [[None, None]]
    like = apply_op_raw("Shape", input=ph([None, 3])).outputs[0]
    assert shapes("Reshape", tensor=ph([None]), shape=like) == [[None, 3]]
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 6 elements"):
        apply_op_raw("Reshape", tensor=x, shape=const([4]))


def test_array_shapes():
    x = ph([2, 3, 4])
    assert shapes("Transpose", x=x, perm=const([2, 0, 1])) == [[4, 2, 3]]
    assert shapes("Transpose", x=x, perm=ph([3], dtypes.int32)) == [[None, None, None]]
    assert shapes("ConcatV2", values=[ph([2, 3]), ph([None, 5])], axis=const(-1)) == [[2, 8]]
    assert shapes("ConcatV2", values=[ph([2, 3]), ph([4, 3])],
                  axis=ph([], dtypes.int32)) == [[None, None]]
    assert shapes("Concat", concat_dim=const(0), values=[ph([2, 3]), ph([4, 3])]) == [[6, 3]]
    assert shapes("Pack", values=[ph([2, 3]), ph([2, None])], axis=1) == [[2, 2, 3]]
    assert shapes("Unpack", value=ph([2, 3]), num=3, axis=1) == [[2], [2], [2]]
    assert shapes("ExpandDims", input=ph([2, 3]), dim=const(-1)) == [[2, 3, 1]]
    assert shapes("Squeeze", input=ph([1, 2, 1])) == [[2]]
    assert shapes("Squeeze", input=ph([None, 2, 1]), squeeze_dims=[-1]) == [[None, 2]]
    assert shapes("Squeeze", input=ph([None, 2, 1])) == [None]
    assert shapes("Shape", input=ph([2, None])) == [[2]]
    assert shapes("ShapeN", input=[ph([2, None]), ph([])]) == [[2], [0]]
    assert shapes("Size", input=ph(None)) == [[]]
    assert shapes("Fill", dims=const([2, 3]), value=const(1.0, np.float32)) == [[2, 3]]
    assert shapes("BroadcastTo", input=ph([3]), shape=const([2, 3])) == [[2, 3]]
    assert shapes("Tile", input=ph([2, None]), multiples=const([2, 2])) == [[4, None]]
    assert shapes("Slice", input=ph([5, 6]), begin=const([1, 2]), size=const([2, -1])) == [
        [2, 4]]
    assert shapes("Pad", input=ph([2, None]), paddings=const([[1, 1], [0, 2]])) == [[4, None]]
    assert shapes("Where", input=ph([2, 3], dtypes.bool)) == [[None, 2]]
    assert shapes("OneHot", indices=ph([2, 3], dtypes.int64), depth=const(4),
                  on_value=const(1.0, np.float32), off_value=const(0.0, np.float32)) == [
        [2, 3, 4]]
    assert shapes("Split", split_dim=const(1), value=ph([2, 6]), num_split=3) == [[2, 2]] * 3
    assert shapes("SplitV", value=ph([5, 6]), size_splits=const([1, -1]), split_dim=const(0),
                  num_split=2) == [[1, 6], [4, 6]]
    assert shapes("SelectV2", condition=ph([3], dtypes.bool), t=ph([2, 1]), e=ph([])) == [
        [2, 3]]


def test_gather_shapes():
    assert shapes("GatherV2", params=ph([5, 6]), indices=ph([2, 3], dtypes.int32),
                  axis=const(1)) == [[5, 2, 3]]
    assert shapes("GatherV2", params=ph([4, 5, 6]), indices=ph([4, 3], dtypes.int32),
                  axis=const(1), batch_dims=1) == [[4, 3, 6]]
    assert shapes("GatherV2", params=ph([5, 6]), indices=ph([2, 3], dtypes.int32),
                  axis=ph([], dtypes.int32)) == [[None, None, None]]
    assert shapes("Gather", params=ph([5, 6]), indices=ph([7], dtypes.int32)) == [[7, 6]]


def test_gather_nd_and_scatter_nd_shapes():
    i32 = dtypes.int32
    assert shapes("GatherNd", params=ph([3, 2]), indices=ph([None, 4, 1], i32)) == [
        [None, 4, 2]]
    assert shapes("GatherNd", params=ph([3, 2]), indices=ph([5, None], i32)) == [None]
    assert shapes("GatherNd", params=ph(None), indices=ph([5, 1], i32)) == [None]
    with pytest.raises(ValueError, match=r"indices.shape\[-1\] must be <= params.rank, but saw "
                                         r"indices shape: \[5,3\] and params shape: \[3,2\]"):
        apply_op_raw("GatherNd", params=ph([3, 2]), indices=ph([5, 3], i32))
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        apply_op_raw("GatherNd", params=ph([3, 2]), indices=ph([], i32))
    assert shapes("ScatterNd", indices=ph([4, 1], i32), updates=ph([4]), shape=const([8])) == [
        [8]]
    assert shapes("ScatterNd", indices=ph([None, 1], i32), updates=ph([None, 3]),
                  shape=ph([2], i32)) == [[None, None]]
    with pytest.raises(ValueError, match=r"Dimensions \[0,1\) of indices\[shape=\[4,1\]\] = "
                                         r"\[4\] must match dimensions \[0,1\) of "
                                         r"updates\[shape=\[3\]\] = \[3\]"):
        apply_op_raw("ScatterNd", indices=ph([4, 1], i32), updates=ph([3]), shape=const([8]))
    with pytest.raises(ValueError, match=r"Dimensions \[1,2\) of input\[shape=\[8,3\]\] = "
                                         r"\[3\] must match dimensions \[1,2\) of "
                                         r"updates\[shape=\[4,2\]\] = \[2\]"):
        apply_op_raw("ScatterNd", indices=ph([4, 1], i32), updates=ph([4, 2]),
                     shape=const([8, 3]))
    with pytest.raises(ValueError, match="Indices and updates specified for empty input"):
        apply_op_raw("ScatterNd", indices=ph([4, 1], i32), updates=ph([4]), shape=const([0]))


def test_reverse_and_mirror_pad_shapes():
    assert shapes("ReverseV2", tensor=ph([2, None]), axis=const([1])) == [[2, None]]
    assert shapes("ReverseV2", tensor=ph([2, None]), axis=ph([None], dtypes.int32)) == [
        [2, None]]
    with pytest.raises(ValueError, match="^axis 1 specified more than once. for"):
        apply_op_raw("ReverseV2", tensor=ph([2, None]), axis=const([1, -1]))
    with pytest.raises(ValueError, match=r"^'axis'\[0\] = 2 is out of valid range \[0, 1 for"):
        apply_op_raw("ReverseV2", tensor=ph([2, None]), axis=const([2]))
    with pytest.raises(ValueError, match="reverse does not work on tensors with more than 8 "
                                         "dimensions"):
        apply_op_raw("ReverseV2", tensor=ph([1] * 9), axis=const([1]))
    assert shapes("MirrorPad", input=ph([2, None]), paddings=const([[1, 1], [2, 0]]),
                  mode="REFLECT") == [[4, None]]
    assert shapes("MirrorPad", input=ph([2, 3]), paddings=ph([2, 2], dtypes.int32),
                  mode="SYMMETRIC") == [[None, None]]
    with pytest.raises(ValueError, match="Paddings must be non-negative"):
        apply_op_raw("MirrorPad", input=ph([2, 3]), paddings=const([[1, -1], [2, 0]]),
                     mode="REFLECT")


def test_range_shapes():
    assert shapes("Range", start=const(0), limit=const(10), delta=const(3)) == [[4]]
    assert shapes("Range", start=const(0.0, np.float32), limit=const(1.0, np.float32),
                  delta=const(0.1, np.float32)) == [[10]]
    assert shapes("Range", start=const(0), limit=ph([], dtypes.int32), delta=const(1)) == [
        [None]]
    with pytest.raises(ValueError, match="Requires start <= limit when delta > 0: 5/1"):
        apply_op_raw("Range", start=const(5), limit=const(1), delta=const(1))


def test_strided_slice_shapes():
    x = ph([5, 6, 7])
    ss = dict(begin=const([1, 0]), end=const([3, 0]), strides=const([1, 1]))
    assert shapes("StridedSlice", input=x, end_mask=2, **ss) == [[2, 6, 7]]
    assert shapes("StridedSlice", input=x, begin=const([1]), end=const([2]),
                  strides=const([1]), shrink_axis_mask=1) == [[6, 7]]
    assert shapes("StridedSlice", input=ph([5, None, 7]), begin=const([0, 1]),
                  end=const([0, 3]), strides=const([1, 1]), ellipsis_mask=1) == [[5, None, 2]]
    assert shapes("StridedSlice", input=ph([5, 6]), begin=const([0, 0]), end=const([0, 0]),
                  strides=const([1, 1]), new_axis_mask=1, end_mask=2) == [[1, 5, 6]]
    # Computed begin/end: as TF, the sliced dim is unknown, the others are kept, and a
    # shrunk dim vanishes (x[i] of a vector is a scalar).
    assert shapes("StridedSlice", input=x, begin=ph([1], dtypes.int32), end=const([1]),
                  strides=const([1])) == [[None, 6, 7]]
    assert shapes("StridedSlice", input=ph([None]), begin=ph([1], dtypes.int32),
                  end=ph([1], dtypes.int32), strides=const([1]), shrink_axis_mask=1) == [[]]
    with pytest.raises(ValueError, match="slice index 9 of dimension 0 out of bounds."):
        apply_op_raw("StridedSlice", input=ph([5, 6]), begin=const([9]), end=const([10]),
                     strides=const([1]), shrink_axis_mask=1)


def test_constant_value():
    c = const([[1, 2], [3, 4]])
    np.testing.assert_array_equal(constant_value(c), [[1, 2], [3, 4]])
    shape = apply_op_raw("Shape", input=ph([2, 5])).outputs[0]
    np.testing.assert_array_equal(constant_value(shape), [2, 5])
    assert constant_value(apply_op_raw("Shape", input=ph([None, 5])).outputs[0]) is None
    assert constant_value(apply_op_raw("Size", input=ph([2, 5])).outputs[0]) == 10
    assert constant_value(apply_op_raw("Rank", input=ph([2, None])).outputs[0]) == 2
    assert constant_value(ph([2])) is None
    packed = apply_op_raw("Pack", values=[const(1), const(2)]).outputs[0]
    np.testing.assert_array_equal(constant_value(packed), [1, 2])
    cast = apply_op_raw("Cast", x=const([1.7], np.float32), DstT=dtypes.int32).outputs[0]
    assert constant_value(cast).dtype == np.int32


def test_constant_value_as_shape():
    assert constant_value_as_shape(const([2, -1, 3])).as_list() == [2, None, 3]
    dim = apply_op_raw("Placeholder", dtype=dtypes.int32, shape=[]).outputs[0]
    packed = apply_op_raw("Pack", values=[dim, const(4)]).outputs[0]
    assert constant_value_as_shape(packed).as_list() == [None, 4]
    assert constant_value_as_shape(ph([3], dtypes.int32)).as_list() == [None, None, None]
    assert constant_value_as_shape(ph([None], dtypes.int32)).rank is None
