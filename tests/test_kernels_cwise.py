"""Element-wise kernels (math, comparisons, logic, Cast, AddN) against NumPy references,
with TF's dtypes, integer-division semantics and error messages."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from kernel_testutil import create, run1, run_kernel

from aioflow.framework import dtypes, errors

BF16 = ml_dtypes.bfloat16
FLOATS = [np.float16, BF16, np.float32, np.float64]
SIGNED = [np.int8, np.int16, np.int32, np.int64]
UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
rng = np.random.default_rng(0)


def rand(dtype, shape, lo=-5, hi=5):
    dt = np.dtype(dtype)
    if dt.kind == "u":
        return rng.integers(0, hi + 5, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(lo, hi, shape).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    return rng.uniform(lo, hi, shape).astype(dt)


def assert_same(out, expected, rtol=None):
    """Same dtype and shape; exact for ints/bools, close (NaN-aware) for floats."""
    out, expected = np.asarray(out), np.asarray(expected)
    assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
    assert out.shape == expected.shape, (out.shape, expected.shape)
    if out.dtype.kind in "iub" or out.dtype == object:
        np.testing.assert_array_equal(out, expected)
        return
    if rtol is None:
        rtol = 1e-2 if out.dtype.itemsize <= 2 or out.dtype == np.dtype(BF16) else 1e-6
    kind = np.complex128 if out.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(out.astype(kind), expected.astype(kind), rtol=rtol, atol=rtol)


def _ref(fn, x, *rest):
    """NumPy reference computed in float64 (float32 for half types), cast back."""
    dt = np.asarray(x).dtype
    wide = np.float64 if dt.kind == "f" or dt == np.dtype(BF16) else None
    args = [np.asarray(a, wide) if wide else a for a in (x, *rest)]
    with np.errstate(all="ignore"):
        out = np.asarray(fn(*args))
    return out.astype(dt) if out.dtype.kind == "f" else out


UNARY = {
    "Neg": (np.negative, FLOATS + SIGNED + [np.complex64]),
    "Abs": (np.abs, FLOATS + SIGNED),
    "Sign": (np.sign, FLOATS + SIGNED + [np.complex128]),
    "Square": (np.square, FLOATS + SIGNED + UNSIGNED + [np.complex64]),
    "Sqrt": (np.sqrt, FLOATS + [np.complex64]),
    "Rsqrt": (lambda x: 1 / np.sqrt(x), FLOATS),
    "Exp": (np.exp, FLOATS + [np.complex128]),
    "Expm1": (np.expm1, FLOATS),
    "Log": (np.log, FLOATS),
    "Log1p": (np.log1p, FLOATS),
    "Sin": (np.sin, FLOATS),
    "Cos": (np.cos, FLOATS),
    "Tan": (np.tan, FLOATS),
    "Atan": (np.arctan, FLOATS),
    "Sinh": (np.sinh, FLOATS),
    "Cosh": (np.cosh, FLOATS),
    "Tanh": (np.tanh, FLOATS + [np.complex64]),
    "Sigmoid": (lambda x: 1 / (1 + np.exp(-x)), FLOATS),
    "Reciprocal": (np.reciprocal, FLOATS + [np.complex64]),
    "Inv": (np.reciprocal, FLOATS),
    "Floor": (np.floor, FLOATS),
    "Ceil": (np.ceil, FLOATS),
    "Rint": (np.rint, [np.float32, np.float64]),
    "Erf": (np.vectorize(math.erf), FLOATS),
    "Erfc": (np.vectorize(math.erfc), FLOATS),
}


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
def test_unary_matches_numpy(op, shape):
    fn, types = UNARY[op]
    for dt in types:
        x = rand(dt, shape)
        if op in ("Log", "Log1p", "Sqrt", "Rsqrt") and np.dtype(dt).kind == "f":
            x = np.abs(x) + np.asarray(0.5, dt)
        assert_same(run1(op, [x]), _ref(fn, x))


def test_unary_special_values():
    x = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, -1.0], np.float32)
    with np.errstate(all="ignore"):
        assert_same(run1("Sqrt", [x]), np.sqrt(x))
    assert_same(run1("Log", [x]), np.array([-np.inf, -np.inf, np.nan, np.inf, np.nan, np.nan],
                                           np.float32))
    assert_same(run1("Sigmoid", [np.float32([-100, 0, 100])]), np.float32([0, 0.5, 1]))
    assert_same(run1("Reciprocal", [np.float32([0.0, 2.0])]), np.float32([np.inf, 0.5]))
    assert_same(run1("Sign", [np.float32([np.nan, -0.0, -2.0])]), np.float32([np.nan, 0, -1]))
    assert_same(run1("Sign", [np.complex64([3 + 4j, 0])]), np.complex64([0.6 + 0.8j, 0]))


def test_round_is_half_to_even():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32)
    assert_same(run1("Round", [x]), np.float32([0, 2, 2, -0, -2, 2]))
    assert_same(run1("Round", [x.astype(np.float16)]), np.float16([0, 2, 2, -0, -2, 2]))
    assert_same(run1("Rint", [x.astype(np.float64)]), np.float64([0, 2, 2, -0, -2, 2]))
    assert_same(run1("Round", [np.int32([3, -4])]), np.int32([3, -4]))


@pytest.mark.parametrize("op", ["IsNan", "IsInf", "IsFinite"])
@pytest.mark.parametrize("dt", FLOATS)
def test_classification_gives_bool(op, dt):
    x = np.array([0.0, np.nan, np.inf, -np.inf, 1.0], dt)
    fn = {"IsNan": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite}[op]
    assert_same(run1(op, [x]), fn(x.astype(np.float32)))


BINARY = {
    "Add": np.add, "AddV2": np.add, "Sub": np.subtract, "Mul": np.multiply,
    "Maximum": np.maximum, "Minimum": np.minimum,
    "SquaredDifference": lambda x, y: (x - y) * (x - y),
}


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dt", FLOATS + SIGNED + [np.uint8, np.uint32])
@pytest.mark.parametrize("shapes", [((), ()), ((3,), ()), ((2, 3), (3,)), ((2, 1), (1, 3))])
def test_binary_broadcasts_and_keeps_dtype(op, dt, shapes):
    if op == "SquaredDifference" and np.dtype(dt).kind == "u":
        pytest.skip("not in the OpDef")
    if op == "Add" and dt in (np.uint32,):
        pytest.skip("not in the OpDef")
    x, y = rand(dt, shapes[0]), rand(dt, shapes[1])
    out = run1(op, [x, y])
    assert_same(out, BINARY[op](x, y))


def test_binary_incompatible_shapes():
    x, y = np.zeros((2, 3), np.float32), np.zeros((4,), np.float32)
    for op in ("AddV2", "Mul", "Less", "Maximum", "FloorDiv"):
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Incompatible shapes: \[2,3\] vs. \[4\]"):
            run1(op, [x, y])


def test_add_strings_concatenates():
    x = np.array([b"a", b"b"], dtype=object)
    out = run1("Add", [x, np.array(b"c", dtype=object)])
    assert out.dtype == object and out.tolist() == [b"ac", b"bc"]
    scalar = run1("Add", [np.array(b"a", dtype=object), np.array(b"b", dtype=object)])
    assert isinstance(scalar, np.ndarray) and scalar.dtype == object and scalar[()] == b"ab"


def test_integer_division_signs():
    x = np.int32([-7, 7, -7, 7, 6])
    y = np.int32([2, -2, -2, 2, 3])
    assert_same(run1("Div", [x, y]), np.int32([-3, -3, 3, 3, 2]))
    assert_same(run1("TruncateDiv", [x, y]), np.int32([-3, -3, 3, 3, 2]))
    assert_same(run1("FloorDiv", [x, y]), np.int32([-4, -4, 3, 3, 2]))
    assert_same(run1("FloorMod", [x, y]), np.int32([1, -1, -1, 1, 0]))
    assert_same(run1("TruncateMod", [x, y]), np.int32([-1, 1, -1, 1, 0]))
    assert_same(run1("Mod", [x, y]), np.int32([-1, 1, -1, 1, 0]))
    assert_same(run1("Div", [np.uint8([7, 200]), np.uint8([2, 3])]), np.uint8([3, 66]))
    # INT_MIN / -1 wraps, as TF's
    assert_same(run1("FloorDiv", [np.int8([-128]), np.int8([-1])]), np.int8([-128]))


# TF 2.21: TruncateDiv/TruncateMod report a zero divisor as an InternalError.
_ZERO_DIVISOR = {
    "TruncateDiv": (errors.InternalError, r"Unexpected error in binary operator \(only "
                                          r"integer div and mod should have errors\)"),
    "TruncateMod": (errors.InternalError, r"Unexpected error in binary operator \(only "
                                          r"integer div and mod should have errors\)"),
}


@pytest.mark.parametrize("op", ["Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod",
                                "Mod"])
def test_integer_division_by_zero(op):
    cls, message = _ZERO_DIVISOR.get(op, (errors.InvalidArgumentError,
                                          "Integer division by zero"))
    with pytest.raises(cls, match=message):
        run1(op, [np.int32([1, 2]), np.int32([1, 0])])
    if op in ("Div", "FloorDiv", "FloorMod", "TruncateDiv"):
        with pytest.raises(cls, match=message):
            run1(op, [np.uint8([1]), np.uint8(0)])


def test_float_division_semantics():
    x = np.float64([1.0, -7.0, 7.0, 1.0, -1.0, 0.0])
    y = np.float64([0.1, 2.0, -2.0, 0.0, 0.0, 0.0])
    with np.errstate(all="ignore"):
        assert_same(run1("Div", [x, y]), x / y)
        assert_same(run1("RealDiv", [x, y]), x / y)
        # TF's FloorDiv on floats is floor(x / y): 1 // 0.1 is 10 (NumPy says 9)
        assert_same(run1("FloorDiv", [x, y]), np.floor(x / y))
        assert_same(run1("FloorMod", [x, y]), np.mod(x, y))
        assert_same(run1("TruncateDiv", [x, y]), np.trunc(x / y))
        assert_same(run1("Mod", [x, y]), np.fmod(x, y))
    assert run1("FloorDiv", [np.float64(1.0), np.float64(0.1)]) == 10.0
    assert_same(run1("DivNoNan", [np.float32([1, 0, np.nan, 6]), np.float32([0, 0, 0, 3])]),
                np.float32([0, 0, 0, 2]))


def test_pow():
    assert_same(run1("Pow", [np.int32([2, 3, 0]), np.int32([3, 0, 0])]), np.int32([8, 1, 1]))
    assert_same(run1("Pow", [np.int8([3]), np.int8([5])]), np.int8([-13]))  # wraps
    assert_same(run1("Pow", [np.float32([-2, 4]), np.float32([0.5, 0.5])]),
                np.float32([np.nan, 2]))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Integers to negative integer powers are not allowed"):
        run1("Pow", [np.int32([2]), np.int32([-1])])


def test_max_min_propagate_nan():
    x, y = np.float32([np.nan, 1.0, 3.0]), np.float32([1.0, np.nan, 2.0])
    assert_same(run1("Maximum", [x, y]), np.float32([np.nan, np.nan, 3]))
    assert_same(run1("Minimum", [x, y]), np.float32([np.nan, np.nan, 2]))


def test_squared_difference_complex():
    out = run1("SquaredDifference", [np.complex64([1 + 2j]), np.complex64([0])])
    assert_same(out, np.complex64([5 + 0j]))


def test_atan2_takes_y_then_x():
    assert_same(run1("Atan2", [np.float32([1.0]), np.float32([-1.0])]),
                np.float32([np.arctan2(1.0, -1.0)]))


@pytest.mark.parametrize("op,fn", [("Less", np.less), ("LessEqual", np.less_equal),
                                   ("Greater", np.greater), ("GreaterEqual", np.greater_equal),
                                   ("Equal", np.equal), ("NotEqual", np.not_equal)])
@pytest.mark.parametrize("dt", [np.float32, BF16, np.int8, np.uint16, np.int64])
def test_comparisons_give_bool(op, fn, dt):
    x, y = rand(dt, (2, 3)), rand(dt, (3,))
    assert_same(run1(op, [x, y]), fn(x, y))


def test_equality_of_strings_and_bools():
    s = np.array([b"a", b"b"], dtype=object)
    assert_same(run1("Equal", [s, np.array(b"a", dtype=object)]), np.array([True, False]))
    assert_same(run1("NotEqual", [np.array([True, False]), np.array(True)]),
                np.array([False, True]))


def test_equality_with_incompatible_shapes():
    x, y = np.int32([1, 2, 3]), np.int32([1, 2])
    assert run1("Equal", [x, y], incompatible_shape_error=False) is np.False_
    assert run1("NotEqual", [x, y], incompatible_shape_error=False) is np.True_
    with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes: \[3\] vs. \[2\]"):
        run1("Equal", [x, y])


def test_logical():
    x, y = rand(bool, (2, 3)), rand(bool, (3,))
    assert_same(run1("LogicalAnd", [x, y]), x & y)
    assert_same(run1("LogicalOr", [x, y]), x | y)
    assert_same(run1("LogicalNot", [x]), ~x)


def test_add_n():
    xs = [rand(np.float32, (2, 3)) for _ in range(4)]
    assert_same(run1("AddN", xs), xs[0] + xs[1] + xs[2] + xs[3])
    scalars = [np.int8(100), np.int8(100), np.int8(1)]
    assert_same(run1("AddN", scalars), np.int8(-55))
    one = rand(np.float64, (3,))
    assert run1("AddN", [one]) is one
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"must have the same size and shape.  Input 0: \[2\] != input 1: "
                             r"\[3\]"):
        run1("AddN", [np.zeros(2, np.float32), np.zeros(3, np.float32)])


# -- Cast -------------------------------------------------------------------------------------

def _cast(x, dst, **attrs):
    return run1("Cast", [x], DstT=dst, **attrs)


def test_cast_float_to_int_truncates_toward_zero():
    x = np.array([1.7, -1.7, 0.5, -0.5, 127.9, -128.9], np.float32)
    for dst in (dtypes.int8, dtypes.int32, dtypes.int64):
        assert_same(_cast(x, dst), np.array([1, -1, 0, 0, 127, -128], dst.as_numpy_dtype))
    assert_same(_cast(np.float16([2.9, -2.9]), dtypes.int16), np.int16([2, -2]))
    assert_same(_cast(np.float64([250.7]), dtypes.uint8), np.uint8([250]))


def test_cast_int_to_int_wraps():
    assert_same(_cast(np.int32([300, -1, 128]), dtypes.uint8), np.uint8([44, 255, 128]))
    assert_same(_cast(np.int64([2**40 + 5]), dtypes.int32), np.int32([5]))
    assert_same(_cast(np.uint8([255]), dtypes.int8), np.int8([-1]))


def test_cast_to_bool_is_nonzero():
    assert_same(_cast(np.float32([0.0, -0.0, np.nan, 0.5]), dtypes.bool),
                np.array([False, False, True, True]))
    assert_same(_cast(np.int8([0, -3]), dtypes.bool), np.array([False, True]))
    # TF looks at the real part of complex values
    assert_same(_cast(np.complex64([0 + 2j, 1 + 0j, 0j]), dtypes.bool),
                np.array([False, True, False]))


def test_cast_complex_and_bool_and_halves():
    assert_same(_cast(np.complex64([1.5 + 2j]), dtypes.float32), np.float32([1.5]))
    assert_same(_cast(np.complex128([-1.7 + 2j]), dtypes.int32), np.int32([-1]))
    assert_same(_cast(np.float32([1.5]), dtypes.complex64), np.complex64([1.5]))
    assert_same(_cast(np.array([True, False]), dtypes.float32), np.float32([1, 0]))
    assert_same(_cast(np.float32([1.00390625 + 0.0039]), dtypes.bfloat16),
                np.array([1.0078125], BF16))
    assert_same(_cast(np.float32([1.00390625 + 0.0039]), dtypes.bfloat16, Truncate=True),
                np.array([1.0], BF16))
    assert_same(_cast(np.int64([70000]), dtypes.float16), np.float16([np.inf]))


def test_cast_to_same_type_forwards_the_input():
    x = np.float32([1, 2])
    assert _cast(x, dtypes.float32) is x
    s = np.array([b"a"], dtype=object)
    assert _cast(s, dtypes.string) is s


def test_cast_strings_is_unimplemented():
    with pytest.raises(errors.UnimplementedError, match="Cast string to float is not supported"):
        _cast(np.array([b"1"], dtype=object), dtypes.float32)
    with pytest.raises(errors.UnimplementedError, match="Cast int32 to string is not supported"):
        _cast(np.int32([1]), dtypes.string)


def test_scalars_stay_scalars():
    out = run1("AddV2", [np.float32(1), np.float32(2)])
    assert np.ndim(out) == 0 and np.asarray(out).dtype == np.float32
    out = run1("Cast", [np.int32(3)], DstT=dtypes.float64)
    assert np.ndim(out) == 0 and np.asarray(out).dtype == np.float64


def test_unsupported_types_have_no_kernel():
    with pytest.raises(errors.NotFoundError):
        run1("RealDiv", [np.int32([1]), np.int32([1])])
    with pytest.raises(errors.NotFoundError):
        run1("Reciprocal", [np.int32([1])])


def test_expensive_only_when_large():
    small = np.zeros(10, np.float32)
    big = np.zeros(70000, np.float32)
    add = create("AddV2", [small, small])
    assert add.expensive is None
    assert not add.is_expensive([small, small])
    assert add.is_expensive([small, big]) and add.is_expensive([big, small])
    exp = create("Exp", [small])
    assert not exp.is_expensive([small]) and exp.is_expensive([big])
    assert create("Cast", [small], DstT=dtypes.int32).is_expensive([big])


def test_run_kernel_returns_all_outputs():
    assert len(run_kernel("AddV2", [np.float32(1), np.float32(2)])) == 1
