"""Reduction, ArgMax/ArgMin and scan kernels against NumPy references, with TF's dtypes,
axis handling and error messages."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_testutil import create, run1
from test_kernels_cwise import assert_same, rand

from aioflow.framework import dtypes, errors
from aioflow.kernels.math.reduction_kernels import POOL_ABOVE

BF16 = ml_dtypes.bfloat16
NUMERIC = [np.float16, BF16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8,
           np.uint32]
AXES = [np.int32(0), np.int32(-1), np.int32([0, 2]), np.int64([2, -3]), np.int32([]),
        np.int32([[1]])]


def _axis_tuple(axes, ndim):
    return tuple(sorted({int(a) % ndim for a in np.ravel(axes)}))


@pytest.mark.parametrize("op,fn", [("Sum", np.sum), ("Prod", np.prod), ("Max", np.max),
                                   ("Min", np.min)])
@pytest.mark.parametrize("dt", NUMERIC)
@pytest.mark.parametrize("keep", [False, True])
def test_reduction_keeps_dtype(op, fn, dt, keep):
    x = rand(dt, (2, 3, 4), -3, 3)
    for axes in AXES:
        axis = _axis_tuple(axes, 3)
        with np.errstate(all="ignore"):
            wide = x.astype(np.float64) if np.dtype(dt).kind == "f" or dt is BF16 else x
            expected = fn(wide, axis=axis, keepdims=keep)
        expected = np.asarray(expected).astype(dt)
        assert_same(run1(op, [x, axes], keep_dims=keep), expected, rtol=2e-2)


def test_sum_of_small_ints_wraps_in_the_input_type():
    assert_same(run1("Sum", [np.int8([100, 100, 100]), np.int32(0)]), np.int8(44))
    assert_same(run1("Prod", [np.int8([100, 100]), np.int32(0)]), np.int8(16))


def test_sum_of_half_accumulates_wide():
    assert_same(run1("Sum", [np.ones(5000, np.float16), np.int32(0)]), np.float16(5000))
    assert_same(run1("Sum", [np.ones(1000, BF16), np.int32(0)]), np.asarray(1000, BF16)[()])


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.complex64])
def test_mean_floats(dt):
    x = rand(dt, (3, 4))
    assert_same(run1("Mean", [x, np.int32(1)]), np.mean(x, axis=1).astype(dt))
    assert_same(run1("Mean", [x, np.int32([0, 1])], keep_dims=True),
                np.mean(x, keepdims=True).astype(dt))


def test_mean_of_ints_truncates_toward_zero_without_overflow():
    assert_same(run1("Mean", [np.int32([-3, -4]), np.int32(0)]), np.int32(-3))
    assert_same(run1("Mean", [np.int32([3, 4]), np.int32(0)]), np.int32(3))
    assert_same(run1("Mean", [np.int8([100, 100, 100]), np.int32(0)]), np.int8(100))
    assert_same(run1("Mean", [np.int8([-100, -100, -101]), np.int32(0)]), np.int8(-100))
    assert_same(run1("Mean", [np.uint8([255, 255, 254]), np.int32(0)]), np.uint8(254))
    assert_same(run1("Mean", [np.int32([2**31 - 1] * 2), np.int32(0)]), np.int32(2**31 - 1))
    x = rand(np.int64, (3, 5), -50, 50)
    assert_same(run1("Mean", [x, np.int32(1)]), np.trunc(x.sum(1) / 5).astype(np.int64))


def test_empty_reductions_give_the_identity():
    e = np.zeros((0, 3), np.float32)
    assert_same(run1("Sum", [e, np.int32(0)]), np.zeros(3, np.float32))
    assert_same(run1("Prod", [np.zeros(0, np.int32), np.int32(0)]), np.int32(1))
    assert_same(run1("Max", [e, np.int32(0)]), np.full(3, -np.inf, np.float32))
    assert_same(run1("Min", [np.zeros(0, np.float16), np.int32(0)]), np.float16(np.inf))
    assert_same(run1("Max", [np.zeros(0, np.int32), np.int32(0)]), np.int32(-2**31))
    assert_same(run1("Min", [np.zeros(0, np.uint8), np.int32(0)]), np.uint8(255))
    with np.errstate(all="ignore"):
        assert_same(run1("Mean", [e, np.int32(0)]), np.full(3, np.nan, np.float32))
    assert_same(run1("Mean", [np.zeros(0, np.int32), np.int32(0)]), np.int32(0))
    assert_same(run1("Any", [np.zeros(0, bool), np.int32(0)]), np.False_)
    assert_same(run1("All", [np.zeros(0, bool), np.int32(0)]), np.True_)


def test_max_propagates_nan():
    assert_same(run1("Max", [np.float32([np.nan, 1.0]), np.int32(0)]), np.float32(np.nan))
    assert_same(run1("Min", [np.float32([1.0, np.nan]), np.int32(0)]), np.float32(np.nan))


@pytest.mark.parametrize("op,fn", [("All", np.all), ("Any", np.any)])
def test_logical_reductions(op, fn):
    x = rand(bool, (2, 3))
    for axes in (np.int32(0), np.int32([0, 1]), np.int32([]), np.int64(-1)):
        for keep in (False, True):
            assert_same(run1(op, [x, axes], keep_dims=keep),
                        fn(x, axis=_axis_tuple(axes, 2), keepdims=keep))


def test_scalar_reductions():
    assert_same(run1("Sum", [np.float32(2.5), np.int32([])]), np.float32(2.5))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Invalid reduction dimension \(0 for input with 0 dimension\(s\)"):
        run1("Sum", [np.float32(2.5), np.int32(0)])


def test_reduction_axis_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Invalid reduction dimension \(5 for input with 2 dimension\(s\)"):
        run1("Sum", [x, np.int32(5)])
    with pytest.raises(errors.InvalidArgumentError, match=r"Invalid reduction dimension \(-3"):
        run1("Max", [x, np.int32(-3)])
    with pytest.raises(errors.InvalidArgumentError,
                       match="Axes contains duplicate dimension: 1"):
        run1("Mean", [x, np.int32([1, -1])])


# -- ArgMax / ArgMin --------------------------------------------------------------------------

@pytest.mark.parametrize("op,fn", [("ArgMax", np.argmax), ("ArgMin", np.argmin)])
@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.int8, np.uint16, np.int64,
                                np.bool_])
def test_arg_min_max(op, fn, dt):
    x = rand(dt, (3, 4), -3, 3)
    for axis in (0, 1, -1):
        out = run1(op, [x, np.int32(axis)])
        assert_same(out, fn(x, axis=axis).astype(np.int64))
    out = run1(op, [x, np.int64(1)], output_type=dtypes.int32)
    assert_same(out, fn(x, axis=1).astype(np.int32))


def test_arg_max_ties_and_nan():
    assert_same(run1("ArgMax", [np.float32([3, 1, 3]), np.int32(0)]), np.int64(0))
    # TF skips NaN (NumPy would pick it)
    assert_same(run1("ArgMax", [np.float32([np.nan, 1, 3]), np.int32(0)]), np.int64(2))
    assert_same(run1("ArgMin", [np.float32([1, np.nan, 0.5]), np.int32(0)]), np.int64(2))
    assert_same(run1("ArgMax", [np.float32([np.nan, np.nan]), np.int32(0)]), np.int64(0))


def test_arg_max_errors():
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Expected dimension in the range \[-2, 2\), but got 5"):
        run1("ArgMax", [x, np.int32(5)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Reduction axis 0 is empty in shape \[0,3\]"):
        run1("ArgMin", [np.zeros((0, 3), np.float32), np.int32(0)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"dim must be a scalar, but received tensor of shape: \[1\]"):
        run1("ArgMax", [x, np.int32([1])])


# -- scans ------------------------------------------------------------------------------------

def _scan_ref(fn, x, axis, exclusive, reverse, identity):
    if reverse:
        x = np.flip(x, axis)
    out = fn(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = np.roll(out, 1, axis=axis)
        idx = [slice(None)] * x.ndim
        idx[axis] = 0
        out[tuple(idx)] = identity
    return np.flip(out, axis) if reverse else out


@pytest.mark.parametrize("op,fn,identity", [("Cumsum", np.cumsum, 0), ("Cumprod", np.cumprod, 1)])
@pytest.mark.parametrize("dt", [np.float32, np.int32, np.int8, np.complex64])
def test_scans(op, fn, identity, dt):
    x = rand(dt, (3, 4), -3, 3)
    for axis in (0, 1, -1):
        for exclusive in (False, True):
            for reverse in (False, True):
                out = run1(op, [x, np.int32(axis)], exclusive=exclusive, reverse=reverse)
                assert_same(out, _scan_ref(fn, x, axis % 2, exclusive, reverse, identity))


def test_scan_examples_and_errors():
    assert_same(run1("Cumsum", [np.int32([1, 2, 3]), np.int32(0)], exclusive=True, reverse=True),
                np.int32([5, 3, 0]))
    assert_same(run1("Cumprod", [np.int32([1, 2, 3]), np.int32(0)], exclusive=True),
                np.int32([1, 1, 2]))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"ScanOp: Expected scan axis in the range \[-1, 1\), but got 1"):
        run1("Cumsum", [np.int32([1, 2, 3]), np.int32(1)])


def test_reductions_are_expensive_only_when_large():
    """Up to POOL_ABOVE elements a reduction is left to the executor's learned cost:
    InceptionV3's final Mean (1x8x8x2048, 131k elements, ~10 µs) runs inline, where a
    pool thread's round trip cost more than the sum; a larger one always goes to the
    pool."""
    axes = np.int32([1, 2])
    small = np.zeros((1, 2, 2, 4), np.float32)
    head = np.zeros((1, 8, 8, 2048), np.float32)
    big = np.zeros((1, 8, 8, POOL_ABOVE // 64 + 1), np.float32)
    for op in ("Mean", "Sum", "Max"):
        kernel = create(op, [small, axes])
        assert kernel.expensive is None
        assert not kernel.is_expensive([small, axes])
        assert not kernel.is_expensive([head, axes])
        assert kernel.is_expensive([big, axes])
