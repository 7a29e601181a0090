"""Array kernels (constants, identities, shapes, reshaping, joining, slicing, gathering,
reversing, padding, Select, Range) against NumPy references and TF's error messages."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_testutil import create, make_node_def, run1, run_kernel
from test_kernels_cwise import assert_same

from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.framework.op_kernel import create_kernel

i32, i64 = np.int32, np.int64
X23 = np.arange(6, dtype=np.float32).reshape(2, 3)
X234 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)


def S(*items):
    return np.array(list(items), dtype=object)


def invalid(fragment):
    return pytest.raises(errors.InvalidArgumentError, match=fragment)


# -- constants, placeholders, identities ------------------------------------------------------

def test_const_returns_the_same_read_only_array():
    value = np.arange(4, dtype=np.float32)
    kernel = create("Const", [], value=value, dtype=dtypes.float32)
    (a,) = kernel.compute(None, [])
    (b,) = kernel.compute(None, [])
    assert a is b
    assert_same(a, value)
    assert not a.flags.writeable
    strings = run1("Const", [], value=S(b"a", b"bc"), dtype=dtypes.string)
    assert strings.tolist() == [b"a", b"bc"]
    assert run1("Const", [], value=np.array(3, np.int64), dtype=dtypes.int64) == 3


def test_placeholder_must_be_fed():
    node = make_node_def("Placeholder", [], name="x", dtype=dtypes.float32,
                         shape=tensor_shape.TensorShape([None, 3]))
    kernel = create_kernel(node)
    with invalid(r"You must feed a value for placeholder tensor 'x' with dtype float and "
                 r"shape \[\?,3\]"):
        kernel.compute(None, [])
    with invalid(r"placeholder tensor 'Placeholder' with dtype int32$"):
        run1("Placeholder", [], dtype=dtypes.int32)


@pytest.mark.parametrize("op", ["Identity", "Snapshot", "StopGradient", "PreventGradient"])
def test_identity_returns_its_input_itself(op):
    for x in (X23, S(b"a"), np.float32(1)):
        assert run1(op, [x]) is x


def test_identity_n_and_placeholder_with_default():
    a, b = X23, S(b"z")
    out = run_kernel("IdentityN", [a, b])
    assert out[0] is a and out[1] is b
    assert run1("PlaceholderWithDefault", [a], shape=tensor_shape.TensorShape([2, 3])) is a
    assert run_kernel("NoOp", []) == []


# -- shapes -----------------------------------------------------------------------------------

def test_shape_size_rank():
    assert_same(run1("Shape", [X234]), i32([2, 3, 4]))
    assert_same(run1("Shape", [np.float32(1)], out_type=dtypes.int64), np.zeros(0, i64))
    out = run_kernel("ShapeN", [X23, np.float32(1)])
    assert_same(out[0], i32([2, 3]))
    assert_same(out[1], np.zeros(0, i32))
    assert_same(run1("Size", [X234]), i32(24))
    assert_same(run1("Size", [X234], out_type=dtypes.int64), i64(24))
    assert_same(run1("Rank", [X234]), i32(3))
    assert_same(run1("Rank", [np.float32(1)]), i32(0))


# -- reshaping --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [[6], [3, 2], [-1], [-1, 2], [3, -1], [1, -1, 1]])
def test_reshape(shape):
    assert_same(run1("Reshape", [X23, i32(shape)]), X23.reshape(shape))


def test_reshape_zero_sizes_and_scalars():
    empty = np.zeros((0, 3), np.float32)
    assert run1("Reshape", [empty, i32([-1, 0])]).shape == (3, 0)  # TF's rule, not NumPy's
    assert run1("Reshape", [empty, i32([2, -1])]).shape == (2, 0)
    assert run1("Reshape", [np.float32(1), i32([1, 1])]).shape == (1, 1)
    assert run1("Reshape", [np.ones((1, 1), np.int8), i32([])]).shape == ()


def test_reshape_errors():
    with invalid("Input to reshape is a tensor with 6 values, but the requested shape has 4"):
        run1("Reshape", [X23, i32([4])])
    with invalid("Input to reshape is a tensor with 6 values, but the requested shape requires "
                 "a multiple of 4"):
        run1("Reshape", [X23, i32([-1, 4])])
    with invalid("Only one input size may be -1, not both 0 and 1"):
        run1("Reshape", [X23, i32([-1, -1])])
    with invalid("Size 0 must be non-negative, not -2"):
        run1("Reshape", [X23, i32([-2, 3])])
    with invalid(r"sizes input must be 1-D, not \[1,1\]"):
        run1("Reshape", [X23, i32([[6]])])


def test_transpose():
    assert_same(run1("Transpose", [X234, i32([2, 0, 1])]), X234.transpose(2, 0, 1))
    assert_same(run1("Transpose", [X23, i64([-1, 0])]), X23.T)
    assert_same(run1("Transpose", [np.float32(3), i32([])]), np.float32(3))
    with invalid("transpose expects a vector of size 2. But input.1. is a vector of size 1"):
        run1("Transpose", [X23, i32([0])])
    with invalid(r"1 is missing from \{0,0\}."):
        run1("Transpose", [X23, i32([0, 0])])
    with invalid(r"2 is out of range \[0 .. 2\)"):
        run1("Transpose", [X23, i32([0, 2])])


def test_expand_dims():
    for d in (0, 1, 2, -1, -3):
        assert_same(run1("ExpandDims", [X23, i32(d)]), np.expand_dims(X23, d))
    assert run1("ExpandDims", [X23, i32([1])]).shape == (2, 1, 3)
    assert run1("ExpandDims", [np.float32(1), i64(0)]).shape == (1,)
    with invalid("Tried to expand dim index 3 for tensor with 2 dimensions."):
        run1("ExpandDims", [X23, i32(3)])
    with invalid("'dim' must be a tensor with a single value"):
        run1("ExpandDims", [X23, i32([1, 2])])


def test_squeeze():
    x = np.zeros((1, 2, 1), np.float32)
    assert run1("Squeeze", [x]).shape == (2,)
    assert run1("Squeeze", [x], squeeze_dims=[0]).shape == (2, 1)
    assert run1("Squeeze", [x], squeeze_dims=[-1]).shape == (1, 2)
    assert run1("Squeeze", [x], squeeze_dims=[0, 2]).shape == (2,)
    with invalid(r"Can not squeeze dim\[1\], expected a dimension of 1, got 2"):
        run1("Squeeze", [x], squeeze_dims=[1])
    with invalid("Tried to squeeze dim index 3 for tensor with 3 dimensions."):
        run1("Squeeze", [x], squeeze_dims=[3])


# -- filling ----------------------------------------------------------------------------------

def test_fill_zeros_ones_broadcast_to():
    assert_same(run1("Fill", [i32([2, 3]), np.float32(1.5)]), np.full((2, 3), 1.5, np.float32))
    assert_same(run1("Fill", [i64([2, 0]), np.int8(3)]), np.zeros((2, 0), np.int8))
    assert run1("Fill", [i32([2]), np.array(b"x", dtype=object)]).tolist() == [b"x", b"x"]
    with invalid("Dimension -1 must be >= 0"):
        run1("Fill", [i32([2, -1]), np.float32(1)])
    with invalid(r"dims must represent a vector, got shape \[1,1\]"):
        run1("Fill", [i32([[2]]), np.float32(1)])
    assert run1("ZerosLike", [S(b"a", b"bb")]).tolist() == [b"", b""]
    assert_same(run1("ZerosLike", [np.complex64([1j])]), np.complex64([0]))
    assert_same(run1("OnesLike", [np.array([True, False])]), np.array([True, True]))
    assert_same(run1("OnesLike", [X23]), np.ones((2, 3), np.float32))
    assert_same(run1("BroadcastTo", [i32([1, 2]), i32([3, 2])]), np.tile(i32([1, 2]), (3, 1)))
    with invalid(r"Incompatible shapes: \[3\] vs. \[2,4\]"):
        run1("BroadcastTo", [np.zeros(3, np.float32), i32([2, 4])])
    with invalid(r"Rank of input \(2\) must be no greater than rank of output shape \(1\)."):
        run1("BroadcastTo", [X23, i32([3])])


@pytest.mark.parametrize("args", [(0, 5, 1), (5, 1, -2), (1, 10, 4), (0, 0, 1), (-3, 3, 2)])
@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_range_ints(args, dt):
    out = run1("Range", [dt(a) for a in args])
    assert_same(out, np.arange(*args, dtype=dt))


@pytest.mark.parametrize("dt", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64])
def test_range_floats_compute_start_plus_i_delta_in_t(dt):
    start, limit, delta = dt(0.5), dt(10.0), dt(0.7)
    out = run1("Range", [start, limit, delta])
    n = int(np.ceil(np.abs((limit - start) / delta)))
    assert_same(out, np.arange(n).astype(dt) * delta + start)
    # 0.1 in half is slightly below 0.1: TF's size (computed in T) is 10, not 11
    assert run1("Range", [np.float16(0), np.float16(1), np.float16(0.1)]).shape == (10,)


def test_range_errors():
    with invalid("Requires start <= limit when delta > 0: 5/1"):
        run1("Range", [i32(5), i32(1), i32(1)])
    with invalid("Requires start >= limit when delta < 0: 1/5"):
        run1("Range", [i32(1), i32(5), i32(-1)])
    with invalid("Requires delta != 0: 0"):
        run1("Range", [i32(5), i32(1), i32(0)])


# -- joining and splitting --------------------------------------------------------------------

def test_concat():
    assert_same(run1("ConcatV2", [X23, X23 + 1, i32(0)]), np.concatenate([X23, X23 + 1], 0))
    assert_same(run1("ConcatV2", [X23, X23, X23, i64(-1)]), np.concatenate([X23] * 3, -1))
    assert_same(run1("Concat", [i32(1), X23, np.zeros((2, 1), np.float32)]),
                np.concatenate([X23, np.zeros((2, 1), np.float32)], 1))
    assert run1("ConcatV2", [S(b"a"), S(b"b", b"c"), i32(0)]).tolist() == [b"a", b"b", b"c"]


def test_concat_errors():
    with invalid(r"ConcatOp : Dimension 1 in both shapes must be equal: shape\[0\] = \[2,3\] vs. "
                 r"shape\[1\] = \[2,4\]"):
        run1("ConcatV2", [X23, np.zeros((2, 4), np.float32), i32(0)])
    with invalid(r"ConcatOp : Ranks of all input tensors should match: shape\[0\] = \[2,3\] vs. "
                 r"shape\[1\] = \[2\]"):
        run1("ConcatV2", [X23, np.zeros(2, np.float32), i32(0)])
    with invalid(r"ConcatOp : Expected concatenating dimensions in the range \[-2, 2\), but got 2"):
        run1("ConcatV2", [X23, X23, i32(2)])
    with invalid(r"ConcatOp : Can't concatenate scalars \(use tf.stack instead\)"):
        run1("ConcatV2", [np.float32(1), np.float32(2), i32(0)])


def test_pack_unpack():
    assert_same(run1("Pack", [X23, X23 + 1]), np.stack([X23, X23 + 1]))
    assert_same(run1("Pack", [X23, X23], axis=-1), np.stack([X23, X23], -1))
    assert_same(run1("Pack", [np.float32(1), np.float32(2)]), np.float32([1, 2]))
    with invalid(r"axis = 3 not in \[-3, 3\)"):
        run1("Pack", [X23, X23], axis=3)
    with invalid(r"Shapes of all inputs must match: values\[0\].shape = \[2\] != "
                 r"values\[1\].shape = \[3\]"):
        run1("Pack", [np.zeros(2, np.float32), np.zeros(3, np.float32)])
    parts = run_kernel("Unpack", [X23], num=3, axis=1)
    for i, p in enumerate(parts):
        assert_same(p, X23[:, i])
    parts = run_kernel("Unpack", [X234], num=3, axis=-2)
    assert [p.shape for p in parts] == [(2, 4)] * 3
    with invalid(r"Input shape axis 0 must equal 3, got shape \[2,3\]"):
        run_kernel("Unpack", [X23], num=3)
    with invalid(r"axis = 2 not in \[-2, 2\)"):
        run_kernel("Unpack", [X23], num=2, axis=2)


def test_split():
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for axis, n in ((1, 3), (-1, 2), (0, 2), (0, 1)):
        for got, want in zip(run_kernel("Split", [i32(axis), x], num_split=n),
                             np.split(x, n, axis=axis), strict=True):
            assert_same(got, want)
    empty = np.zeros((2, 0, 3), np.float32)
    for got, want in zip(run_kernel("Split", [i32(1), empty], num_split=2),
                         np.split(empty, 2, axis=1), strict=True):
        assert_same(got, want)
    with invalid("Number of ways to split should evenly divide the split dimension, but got "
                 r"split_dim 1 \(size = 6\) and num_split 4"):
        run_kernel("Split", [i32(1), x], num_split=4)
    with invalid(r"-input rank\(-2\) <= split_dim < input rank \(2\), but got 2"):
        run_kernel("Split", [i32(2), x], num_split=2)


def test_split_v():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a, b = run_kernel("SplitV", [x, i32([1, -1]), i32(0)], num_split=2)
    assert_same(a, x[:1])
    assert_same(b, x[1:])
    a, b, c = run_kernel("SplitV", [x, i64([1, 1, 2]), i32(-1)], num_split=3)
    assert_same(c, x[:, 2:])
    with invalid("There can only be one -1 in the input."):
        run_kernel("SplitV", [x, i32([-1, -1]), i32(0)], num_split=2)
    with invalid("Determined shape must either match input shape along split_dim exactly"):
        run_kernel("SplitV", [x, i32([1, 1]), i32(0)], num_split=2)
    with invalid("size of the split_tensor must be 1-D and have the same elements as outputs got "
                 "1 -D and 3 elements"):
        run_kernel("SplitV", [x, i32([1, 1, 1]), i32(0)], num_split=2)


def test_tile():
    assert_same(run1("Tile", [i32([[1, 2]]), i32([2, 3])]), np.tile(i32([[1, 2]]), (2, 3)))
    assert_same(run1("Tile", [X23, i64([0, 2])]), np.zeros((0, 6), np.float32))
    with invalid("Expected multiples argument to be a vector of length 2 but got length 1"):
        run1("Tile", [X23, i32([1])])
    with invalid(r"Expected multiples\[1\] >= 0, but got -1"):
        run1("Tile", [X23, i32([1, -1])])


def test_pad():
    assert_same(run1("Pad", [i32([[1, 2]]), i32([[1, 0], [0, 2]])]),
                np.pad(i32([[1, 2]]), [[1, 0], [0, 2]]))
    assert run1("Pad", [S(b"a"), i32([[1, 0]])]).tolist() == [b"", b"a"]
    assert_same(run1("PadV2", [X23, i64([[1, 1], [1, 0]]), np.float32(9)]),
                np.pad(X23, [[1, 1], [1, 0]], constant_values=9))
    assert run1("PadV2", [S(b"a"), i32([[1, 0]]), np.array(b"z", dtype=object)]).tolist() == [
        b"z", b"a"]
    with invalid(r"The first dimension of paddings must be the rank of inputs\[1,2\] \[2,3\]"):
        run1("Pad", [X23, i32([[1, 1]])])
    with invalid("Paddings must be non-negative: -1 0"):
        run1("Pad", [X23, i32([[1, 1], [-1, 0]])])
    with invalid(r"constant_values must be a scalar. Found: \[1\]"):
        run1("PadV2", [X23, i32([[1, 1], [1, 0]]), np.float32([1.0])])


def _mirror_index(i: int, dim: int, symmetric: bool) -> int:
    """Where position i (may be < 0 or >= dim) of a mirror-padded axis reads from."""
    if i < 0:
        return -i - 1 if symmetric else -i
    if i >= dim:
        return 2 * dim - 1 - i if symmetric else 2 * (dim - 1) - i
    return i


def _mirror_pad_ref(x, pads, symmetric: bool):
    """Mirror padding one axis at a time, by gathering the mirrored positions."""
    for axis, (before, after) in enumerate(pads):
        dim = x.shape[axis]
        idx = [_mirror_index(i, dim, symmetric) for i in range(-before, dim + after)]
        x = np.take(x, idx, axis=axis)
    return x


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("x, pads", [
    (np.arange(6, dtype=np.int32).reshape(2, 3), [[1, 1], [2, 2]]),
    (np.arange(6, dtype=np.int32).reshape(2, 3), [[1, 0], [0, 2]]),
    (np.arange(32, dtype=np.float32).reshape((2,) * 5), [[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]]),
    (np.random.RandomState(0).randn(4, 5), [[3, 2], [0, 4]]),
    (S(b"a", b"b", b"c"), [[2, 1]]),
])
def test_mirror_pad(mode, x, pads):
    out = run1("MirrorPad", [x, i32(pads)], mode=mode)
    assert_same(out, _mirror_pad_ref(x, pads, mode == "SYMMETRIC"))


def test_mirror_pad_edges():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    # SYMMETRIC may pad by the whole dimension (repeating the edge), REFLECT by one less
    assert_same(run1("MirrorPad", [x, i64([[2, 2], [3, 3]])], mode="SYMMETRIC"),
                np.pad(x, [[2, 2], [3, 3]], mode="symmetric"))
    assert_same(run1("MirrorPad", [np.float32([5]), i32([[1, 1]])], mode="SYMMETRIC"),
                np.float32([5, 5, 5]))
    assert_same(run1("MirrorPad", [np.float32(3), np.zeros((0, 2), i32)], mode="REFLECT"),
                np.float32(3))
    assert_same(run1("MirrorPad", [np.zeros((0, 3), np.float32), i32([[0, 0], [1, 1]])],
                     mode="SYMMETRIC"), np.zeros((0, 5), np.float32))


@pytest.mark.parametrize("x, pads, mode, error, message", [
    (X23, [[2, 0], [0, 0]], "REFLECT", errors.InvalidArgumentError,
     "^paddings must be less than the dimension size: 2, 0 not less than 2$"),
    (X23, [[0, 0], [0, 3]], "REFLECT", errors.InvalidArgumentError,
     "^paddings must be less than the dimension size: 0, 3 not less than 3$"),
    (np.zeros((0, 3), np.float32), [[0, 0], [1, 1]], "REFLECT", errors.InvalidArgumentError,
     "^paddings must be less than the dimension size: 0, 0 not less than 0$"),
    (X23, [[0, 0], [4, 0]], "SYMMETRIC", errors.InvalidArgumentError,
     "^paddings must be no greater than the dimension size: 4, 0 greater than 3$"),
    (X23, [[-1, 0], [0, 0]], "REFLECT", errors.InvalidArgumentError,
     "^paddings must be non-negative: -1 0$"),
    (X23, [[0, 0], [0, -1]], "SYMMETRIC", errors.InvalidArgumentError,
     "^paddings must be non-negative: 0 -1$"),
    (X23, [[1, 1]], "REFLECT", errors.InvalidArgumentError,
     r"^The first dimension of paddings must be the rank of inputs\[1,2\], \[2,3\]$"),
    (X23, [1, 1], "REFLECT", errors.InvalidArgumentError,
     r"^paddings must be a matrix with 2 columns: \[2\]$"),
    (X23, [[1, 1, 1], [1, 1, 1]], "SYMMETRIC", errors.InvalidArgumentError,
     r"^paddings must be a matrix with 2 columns: \[2,3\]$"),
    (np.zeros((1,) * 6, np.float32), np.zeros((6, 2), int), "REFLECT",
     errors.UnimplementedError, r"^inputs rank not in \[0,5\]: 6$"),
])
def test_mirror_pad_errors(x, pads, mode, error, message):
    with pytest.raises(error, match=message):
        run1("MirrorPad", [x, i32(pads)], mode=mode)


# -- reversing --------------------------------------------------------------------------------

@pytest.mark.parametrize("axes, np_axes", [
    ([1], (1,)), ([-1], (2,)), ([0, 2], (0, 2)), ([2, 0, 1], (0, 1, 2)), ([-3, -1], (0, 2)),
])
def test_reverse_v2(axes, np_axes):
    assert_same(run1("ReverseV2", [X234, i32(axes)]), np.flip(X234, np_axes))
    assert_same(run1("ReverseV2", [X234, i64(axes)]), np.flip(X234, np_axes))


def test_reverse_v2_types_and_pass_through():
    assert run1("ReverseV2", [S(b"a", b"b"), i32([0])]).tolist() == [b"b", b"a"]
    assert_same(run1("ReverseV2", [np.array([True, False]), i32([0])]), np.array([False, True]))
    x8 = np.arange(256, dtype=np.float32).reshape((2,) * 8)
    assert_same(run1("ReverseV2", [x8, i32([0, 3, 7])]), np.flip(x8, (0, 3, 7)))
    assert run1("ReverseV2", [X234, np.zeros(0, i32)]) is X234
    # scalars and empty tensors come back unchecked, whatever the axes
    assert_same(run1("ReverseV2", [np.float32(3), i32([0])]), np.float32(3))
    empty = np.zeros((0, 3), np.float32)
    assert run1("ReverseV2", [empty, i32([5, 5])]) is empty


@pytest.mark.parametrize("x, axes, error, message", [
    (X234, i32([1, 1]), errors.InvalidArgumentError, "^axis 1 specified more than once.$"),
    (X234, i32([1, -2]), errors.InvalidArgumentError, "^axis 1 specified more than once.$"),
    # TF's message really lacks the closing bracket
    (X234, i32([3]), errors.InvalidArgumentError,
     r"^'axis'\[0\] = 3 is out of valid range \[0, 2$"),
    (X234, i32([0, -4]), errors.InvalidArgumentError,
     r"^'axis'\[1\] = -4 is out of valid range \[0, 2$"),
    (X234, i32(1), errors.InvalidArgumentError, "^'dims' must be 1-dimension, not 0$"),
    (X234, i32([[1]]), errors.InvalidArgumentError, "^'dims' must be 1-dimension, not 2$"),
    (np.zeros((1,) * 9, np.float32), np.zeros(0, i32), errors.UnimplementedError,
     r"^reverse is not implemented for tensors of rank > 8.$"),
    (np.zeros((1,) * 9, np.float32), i32([1, 1]), errors.InvalidArgumentError,
     "^axis 1 specified more than once.$"),
])
def test_reverse_v2_errors(x, axes, error, message):
    with pytest.raises(error, match=message):
        run1("ReverseV2", [x, axes])


# -- slicing ----------------------------------------------------------------------------------

def _ss(x, begin, end, strides, **masks):
    return run1("StridedSlice", [x, i32(begin), i32(end), i32(strides)], **masks)


def test_strided_slice_basic():
    x = X234
    assert_same(_ss(x, [0], [1], [1]), x[0:1])
    assert_same(_ss(x, [1], [2], [1], shrink_axis_mask=1), x[1])
    assert_same(_ss(x, [-1], [0], [-1]), x[-1:0:-1])
    assert_same(_ss(x, [-100], [100], [1]), x)
    assert_same(_ss(x, [100], [-100], [-1]), x[::-1])
    assert_same(_ss(x, [0, 1], [2, 3], [1, 2], begin_mask=1, end_mask=2), x[:, 1::2])
    assert_same(_ss(x, [2, 3], [0, 0], [-1, -1], end_mask=3), x[2::-1, 3::-1])
    assert_same(_ss(np.arange(5, dtype=np.float32), [1], [4], [2]), np.float32([1, 3]))
    assert_same(_ss(np.float32(3), [], [], []), np.float32(3))


def test_strided_slice_masks():
    x = X234
    # x[..., 1:2, tf.newaxis]
    out = _ss(x, [0, 1, 0], [0, 2, 0], [1, 1, 1], ellipsis_mask=1, new_axis_mask=4)
    assert_same(out, x[..., 1:2, np.newaxis])
    # x[tf.newaxis, tf.newaxis]
    assert_same(_ss(x, [0, 0], [1, 1], [1, 1], new_axis_mask=3), x[np.newaxis, np.newaxis])
    # x[1, ..., 0]
    assert_same(_ss(x, [1, 0, 0], [2, 0, 1], [1, 1, 1], ellipsis_mask=2, shrink_axis_mask=5),
                x[1, ..., 0])
    # x[0, 1:3, ::-2]; and x[0, 1:3, 0::-2] when only the end is masked
    out = _ss(x, [0, 1, 0], [0, 3, -1], [1, 1, -2], begin_mask=4, end_mask=4, shrink_axis_mask=1)
    assert_same(out, x[0, 1:3, ::-2])
    out = _ss(x, [0, 1, 0], [0, 3, -1], [1, 1, -2], end_mask=4, shrink_axis_mask=1)
    assert_same(out, x[0, 1:3, 0::-2])
    # empty results keep their shape
    assert _ss(x, [0, 1, 0], [0, 3, -1], [1, 1, -2], end_mask=1, shrink_axis_mask=1).shape == (
        2, 0)


def test_strided_slice_errors():
    x = np.zeros(3, np.float32)
    with invalid("slice index 5 of dimension 0 out of bounds."):
        _ss(x, [5], [6], [1], shrink_axis_mask=1)
    with invalid(r"strides\[0\] must be non-zero"):
        _ss(x, [0], [6], [0])
    with invalid("Index out of range using input dim 1; input has only 1 dims"):
        _ss(x, [0, 0], [1, 1], [1, 1])
    with invalid("only stride 1 allowed on non-range indexing."):
        _ss(x, [0], [1], [-1], shrink_axis_mask=1)
    with invalid(r"Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                 r"\[1\], \[2\], and \[1\] instead."):
        _ss(x, [0], [1, 2], [1])
    with invalid("Multiple ellipses in slice spec not allowed"):
        _ss(X234, [0, 0], [0, 0], [1, 1], ellipsis_mask=3)


def test_strided_slice_kernel_reuses_valid_specs_only():
    """One kernel (a slice in a loop body) across shapes and specs: each result is the
    slice of its own inputs, and a spec that fits one shape but not another fails."""
    begin, end, strides = i32([1]), i32([2]), i32([1])
    kernel = create("StridedSlice", [X234, begin, end, strides], shrink_axis_mask=1)
    for x in (X234, X234[:, :2], np.arange(3, dtype=np.int32), X234, X234[:, :2]):
        (got,) = kernel.compute(None, [x, begin, end, strides])
        assert_same(got, x[1])
        (got,) = kernel.compute(None, [x, i32([0]), i32([1]), strides])
        assert_same(got, x[0])
    with invalid("slice index 1 of dimension 0 out of bounds."):
        kernel.compute(None, [np.zeros(1, np.float32), begin, end, strides])
    for k in range(100):  # more specs than it keeps
        x = np.arange(k + 2, dtype=np.int32)
        (got,) = kernel.compute(None, [x, i32([k + 1]), i32([k + 2]), strides])
        assert_same(got, x[k + 1])


def test_slice():
    x = np.arange(12).reshape(3, 4)
    assert_same(run1("Slice", [x, i32([1, 1]), i32([-1, -1])]), x[1:, 1:])
    assert_same(run1("Slice", [x, i64([0, 2]), i64([2, 1])]), x[0:2, 2:3])
    with invalid(r"Expected size\[0\] in \[0, 2\], but got 3"):
        run1("Slice", [x, i32([1, 0]), i32([3, 2])])
    with invalid(r"Expected begin\[0\] in \[0, 3\], but got -1"):
        run1("Slice", [x, i32([-1, 0]), i32([1, 2])])
    with invalid(r"Expected begin and size arguments to be 1-D tensors of size 2, but got shapes "
                 r"\[1\] and \[1\] instead."):
        run1("Slice", [x, i32([1]), i32([1])])


# -- gathering and selection ------------------------------------------------------------------

def test_gather_v2():
    p = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert_same(run1("GatherV2", [p, i32([2, 0]), i32(0)]), p[[2, 0]])
    assert_same(run1("GatherV2", [p, i32([[1, 2], [0, 0]]), i32(1)]), p[:, [[1, 2], [0, 0]]])
    assert_same(run1("GatherV2", [p, i32(1), i64(0)]), p[1])
    assert_same(run1("GatherV2", [p, i64([2, 0]), i32(-1)]), p[:, [2, 0]])
    assert run1("GatherV2", [S(b"a", b"b"), i32([1, 1, 0]), i32(0)]).tolist() == [
        b"b", b"b", b"a"]
    out = run1("GatherV2", [p, i32([[0, 1], [2, 3], [1, 1]]), i32(1)], batch_dims=1)
    assert_same(out, np.stack([p[i, idx] for i, idx in enumerate([[0, 1], [2, 3], [1, 1]])]))
    out = run1("GatherV2", [p, i32([[2], [0], [1]]), i32(1)], batch_dims=-1)
    assert_same(out, i32([[2], [4], [9]]))
    assert_same(run1("Gather", [p, i32([2, 0])]), p[[2, 0]])


def test_gather_errors():
    p = np.zeros((3, 4), np.float32)
    with invalid(r"indices\[0\] = 5 is not in \[0, 3\)"):
        run1("GatherV2", [p, i32([5]), i32(0)])
    with invalid(r"indices\[1,0\] = -1 is not in \[0, 3\)"):
        run1("GatherV2", [p, i32([[0], [-1]]), i32(0)])
    with invalid(r"indices\[0\] = 5 is not in \[0, 3\)"):
        run1("Gather", [p, i32([5])])
    with invalid(r"Shape must be at least rank 3 but is rank 2"):  # TF 2.21's words
        run1("GatherV2", [p, i32([0]), i32(2)])
    with invalid(r"batch_dims \(1\) must be less than or equal to axis \(0\)."):
        run1("GatherV2", [p, i32([[1], [0], [0]]), i32(0)], batch_dims=1)


def test_where_returns_int64_coordinates():
    assert_same(run1("Where", [np.array([[True, False], [False, True]])]), i64([[0, 0], [1, 1]]))
    assert_same(run1("Where", [np.float32([[1, 0], [np.nan, 2]])]), i64([[0, 0], [1, 0], [1, 1]]))
    assert_same(run1("Where", [np.complex64([0, 1j])]), i64([[1]]))
    assert run1("Where", [np.zeros((2, 0, 3), bool)]).shape == (0, 3)
    with invalid("WhereOp : Unhandled input dimensions: 0"):
        run1("Where", [np.array(True)])


def test_select():
    t, e = np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)
    c = np.array([[True, False, True], [False, True, False]])
    assert_same(run1("Select", [c, t, e]), np.where(c, t, e))
    assert_same(run1("Select", [np.array(True), t, e]), t)
    assert_same(run1("Select", [np.array([True, False]), t, e]),
                np.float32([[0, 0, 0], [1, 1, 1]]))
    with invalid("Number of batches of 'then' must match size of 'cond', but saw: 2 vs. 3"):
        run1("Select", [np.array([True, False, True]), t, e])
    with invalid(r"'then' and 'else' must have the same size.  but received: \[2,3\] vs. "
                 r"\[2,2\]"):
        run1("Select", [np.array(True), t, np.ones((2, 2), np.float32)])
    with invalid(r"must have the same size and shape.  Input 0: \[2,1\] != input 1: \[2,3\]"):
        run1("Select", [np.array([[True], [False]]), t, e])


def test_select_v2_broadcasts():
    c = np.array([True, False, True])
    out = run1("SelectV2", [c, np.zeros((2, 3), np.float32), np.ones(1, np.float32)])
    assert_same(out, np.where(c, np.zeros((2, 3), np.float32), np.float32(1)))
    with invalid(r"condition \[2\], then \[3\], and else \[3\] must be broadcastable"):
        run1("SelectV2", [np.array([True, False]), np.zeros(3, np.float32),
                          np.zeros(3, np.float32)])


def test_one_hot():
    out = run1("OneHot", [i64([0, 2, -1, 5]), i32(3), np.float32(5), np.float32(0)])
    assert_same(out, np.float32([[5, 0, 0], [0, 0, 5], [0, 0, 0], [0, 0, 0]]))
    out = run1("OneHot", [i32([0, 2]), i32(3), np.int32(1), np.int32(0)], axis=0)
    assert_same(out, i32([[1, 0], [0, 0], [0, 1]]))
    out = run1("OneHot", [i32([[0, -1], [1, 5]]), i32(3), np.float32(5), np.float32(1)], axis=1)
    assert out.shape == (2, 3, 2)
    assert_same(out[:, :, 0], np.float32([[5, 1, 1], [1, 5, 1]]))
    out = run1("OneHot", [np.uint8([1]), i32(2), np.array(b"on", dtype=object),
                          np.array(b"off", dtype=object)])
    assert out.tolist() == [[b"off", b"on"]]
    with invalid("depth must be non-negative, got: -1"):
        run1("OneHot", [i32([0]), i32(-1), np.float32(1), np.float32(0)])
    with invalid(r"Expected axis to be -1 or between \[0, 2\).  But received: 2"):
        run1("OneHot", [i32([0, 2]), i32(3), np.int32(1), np.int32(0)], axis=2)


def test_copying_kernels_are_expensive_only_when_large():
    """A Concat above BIG elements is worth a pool thread when the loop has other work;
    it always goes to the pool only above CONCAT_INLINE (executor_state: the lone
    ready Concat of an Inception block runs inline)."""
    from aioflow.kernels.array.array_kernels import CONCAT_INLINE

    small, big = np.zeros(4, np.float32), np.zeros(70000, np.float32)
    huge = np.zeros(CONCAT_INLINE, np.float32)
    for op, axis_first in (("ConcatV2", False), ("Concat", True)):
        def args(*values, axis_first=axis_first):
            return [i32(0), *values] if axis_first else [*values, i32(0)]

        kernel = create(op, args(small, small))
        assert kernel.expensive is None and not kernel.learns_cost
        assert not kernel.is_expensive(args(small, small))
        assert not kernel.worth_a_thread(args(small, small))
        assert not kernel.is_expensive(args(big, small))
        assert kernel.worth_a_thread(args(big, small))
        assert kernel.is_expensive(args(huge, small))
    for op, inputs in (("Identity", [small]), ("Reshape", [small, i32([-1])]),
                       ("Shape", [small]), ("Const", [])):
        attrs = {"value": small, "dtype": dtypes.float32} if op == "Const" else {}
        assert create(op, inputs, **attrs).expensive is False
