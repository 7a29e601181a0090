"""`assert_near`: values equal within TF's tolerances (tf.test.TestCase's
assertAllCloseAccordingToType): |actual - expected| <= atol + rtol * |expected| element
by element, NaN where the other has NaN, with rtol and atol by dtype unless given:
1e-6 for float64 and float32 (and complex), 1e-3 for float16, 1e-2 for bfloat16 (the
loosest of the two values' dtypes). Lists, tuples and dicts are compared item by item;
strings and bools exactly. A failure says where and by how much, as TF's does."""

from __future__ import annotations

from collections.abc import Mapping

import ml_dtypes
import numpy as np

_DEFAULT = 1e-6
_BY_DTYPE = {  # rtol = atol, the loosest dtype wins (TF's "types with lower tol ... later")
    np.dtype(np.float32): 1e-6, np.dtype(np.complex64): 1e-6,
    np.dtype(np.float16): 1e-3, np.dtype(ml_dtypes.bfloat16): 1e-2,
}
_CUSTOM_FLOATS = (np.dtype(ml_dtypes.bfloat16), np.dtype(ml_dtypes.float8_e5m2),
                  np.dtype(ml_dtypes.float8_e4m3fn))


def default_tolerance(*dtypes) -> float:
    """The rtol (= atol) TF's assertAllCloseAccordingToType uses for these dtypes."""
    return max([_DEFAULT] + [_BY_DTYPE.get(np.dtype(d), _DEFAULT) for d in dtypes])


def _as_array(value) -> np.ndarray:
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    return np.asarray(value)


def _assert_arrays_near(actual, expected, rtol, atol, msg: str) -> None:
    a, b = _as_array(actual), _as_array(expected)
    tol = default_tolerance(a.dtype, b.dtype)
    rtol = tol if rtol is None else rtol
    atol = tol if atol is None else atol
    if a.shape != b.shape:
        contents = f" with contents {a}" if a.ndim <= 3 or a.size < 500 else ""
        raise AssertionError(f"{msg}Shape mismatch: expected {b.shape}, got {a.shape}"
                             f"{contents}.")
    if a.dtype.kind in "OSUb" or b.dtype.kind in "OSUb":
        if not np.array_equal(a, b):
            where = np.nonzero(a != b) if a.ndim else ()
            raise AssertionError(f"{msg}values differ{f' where = {where}' if a.ndim else ''}"
                                 f"\nactual = {a}\nexpected = {b}")
        return
    a_dtype = a.dtype
    a = a.astype(np.float32) if a.dtype in _CUSTOM_FLOATS else a
    b = b.astype(np.float32) if b.dtype in _CUSTOM_FLOATS else b
    with np.errstate(invalid="ignore", over="ignore"):
        if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return
        cond = np.logical_or(np.abs(a - b) > atol + rtol * np.abs(b),
                             np.isnan(a) != np.isnan(b))
    lines = [msg.rstrip()] if msg else []
    if a.ndim:
        where = np.where(cond)
        x, y = a[where], b[where]
        lines.append(f"not close where = {where}")
    else:
        x, y = a, b
    lines += [f"not close lhs = {x}", f"not close rhs = {y}",
              f"not close dif = {np.abs(x - y)}", f"not close tol = {atol + rtol * np.abs(y)}",
              f"dtype = {a_dtype}, shape = {a.shape}"]
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="\n".join(lines),
                               equal_nan=True)


def _recurse(actual, expected, rtol, atol, path: list, msg: str) -> None:
    where = "".join(f"[{p!r}]" for p in path)
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            raise AssertionError(f"{msg}actual{where} is a {type(actual).__name__}, "
                                 f"expected{where} a mapping")
        if set(actual) != set(expected):
            raise AssertionError(f"{msg}actual{where} has keys {sorted(map(str, actual))}, "
                                 f"expected{where} has {sorted(map(str, expected))}")
        for key in expected:
            _recurse(actual[key], expected[key], rtol, atol, path + [key], msg)
    elif isinstance(expected, (list, tuple)) and not _is_numeric_sequence(expected):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            raise AssertionError(f"{msg}actual{where} has length "
                                 f"{len(actual) if isinstance(actual, (list, tuple)) else '?'}"
                                 f", expected{where} has length {len(expected)}")
        for i, (x, y) in enumerate(zip(actual, expected, strict=True)):
            _recurse(x, y, rtol, atol, path + [i], msg)
    else:
        prefix = f"Mismatched value: actual{where} is different from expected{where}. "
        _assert_arrays_near(actual, expected, rtol, atol, prefix + msg)


def _is_numeric_sequence(value) -> bool:
    """A list that is an array's value (numbers or nested lists of them), not a structure
    of separate values (which may be arrays of different shapes)."""
    try:
        return np.asarray(value).dtype != object
    except ValueError:  # ragged
        return False


def assert_near(actual, expected, rtol: float | None = None, atol: float | None = None,
                msg: str | None = None) -> None:
    """AssertionError unless `actual` is within TF's tolerances of `expected` (arrays,
    scalars, or lists / tuples / dicts of them); see the module docstring."""
    _recurse(actual, expected, rtol, atol, [], f"{msg} " if msg else "")
