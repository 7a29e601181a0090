"""Kernels calling registered Python functions: PyFunc on the thread pool, AsyncPyFunc
awaited on the loop (a graph can await I/O mid-run without holding a thread)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel
from aioflow.framework.py_func_registry import lookup
from aioflow.kernels.math.cwise_kernels import tf_type_name


def _outputs(name: str, result, tout) -> tuple:
    """The function's result as output values, checked as TF's py_func checks it: no
    conversion to the declared types (a Python float is a double, not a float), a list or
    tuple gives one output per item, a lone None gives none; TF's errors and messages."""
    try:
        arrays = _as_arrays(result)
    except Exception as e:  # noqa: BLE001 - TF's FuncRegistry converts in Python, mapped so
        raise _call_error(name, e) from e
    if len(arrays) != len(tout):
        raise errors.InvalidArgumentError(
            None, None,
            f"{name} returns {len(arrays)} values, but expects to see {len(tout)} values.")
    out = []
    for i, (array, dtype) in enumerate(zip(arrays, tout, strict=True)):
        expected = dtypes.as_dtype(dtype).base_dtype
        got = _tensor_type(array)
        if got != expected:
            raise errors.InvalidArgumentError(
                None, None, f"{i}-th value returned by {name} is {tf_type_name(got)}, but "
                            f"expects {tf_type_name(expected)}")
        out.append(array[()] if array.ndim == 0 and array.dtype != object else array)
    return tuple(out)


def _as_arrays(result) -> list[np.ndarray]:
    """TF's FuncRegistry: bytes are one value, a list or tuple is one value per item, a
    0-d object array holding None (a lone None) is no value."""
    if isinstance(result, bytes):
        result = [result]
    if isinstance(result, (list, tuple)):
        return [_to_tensor_value(_convert(v)) for v in result]
    array = _convert(result)
    if array.ndim == 0 and array.dtype == object and array[()] is None:
        return []
    return [_to_tensor_value(array)]


def _convert(value) -> np.ndarray:
    """TF's FuncRegistry._convert: np.asarray, with str values made UTF-8 bytes."""
    array = np.asarray(value, order="C")
    if array.dtype.char == "S" and array is not value:
        return np.asarray(value, order="C", dtype=object)
    if array.dtype.char == "U" and array is not value:
        encoded = np.vectorize(lambda x: x.encode("utf8"), otypes=[object])(value)
        return np.asarray(encoded, order="C", dtype=object)
    if array.dtype.char == "U":
        return array.astype(np.bytes_)
    return array


# NumPy types no TF type stands for, named as TF's NdarrayToTensor names them.
_NPY_NAMES = {"g": "NPY_LONGDOUBLE", "G": "NPY_CLONGDOUBLE", "M": "NPY_DATETIME",
              "m": "NPY_TIMEDELTA"}


def _to_tensor_value(array: np.ndarray) -> np.ndarray:
    """An array as a tensor value (TF's NdarrayToTensor): bytes and str objects become a
    string tensor; InternalError for other objects and for NumPy types TF lacks."""
    if array.dtype.char == "S":
        return array.astype(object)
    if array.dtype == object:
        flat = array.ravel()
        for i, item in enumerate(flat):
            if isinstance(item, str):
                flat[i] = item.encode("utf8")
            elif not isinstance(item, bytes):
                raise errors.InternalError(
                    None, None, f"Unsupported object type {type(item).__name__}")
        return flat.reshape(array.shape)
    if array.dtype.char in _NPY_NAMES:
        raise errors.InternalError(
            None, None, f"Unsupported numpy type: {_NPY_NAMES[array.dtype.char]}")
    try:
        dtypes.as_dtype(array.dtype)
    except (TypeError, ValueError, KeyError):
        raise errors.InternalError(None, None, "Unsupported numpy data type") from None
    return array


def _tensor_type(array: np.ndarray) -> dtypes.DType:
    return dtypes.string if array.dtype == object else dtypes.as_dtype(array.dtype)


# How TF's py_func maps a Python exception to a status (py_func.cc).
_EXCEPTION_CLASSES = (
    ((ValueError, TypeError), errors.InvalidArgumentError),
    ((StopIteration,), errors.OutOfRangeError),
    ((MemoryError,), errors.ResourceExhaustedError),
    ((NotImplementedError,), errors.UnimplementedError),
)


def _call_error(name: str, exc: BaseException) -> errors.OpError:
    """The OpError a Python function's exception becomes, with TF's py_func mapping;
    anything else is UnknownError."""
    if isinstance(exc, errors.OpError):
        return exc
    cls = next((c for types, c in _EXCEPTION_CLASSES if isinstance(exc, types)),
               errors.UnknownError)
    return cls(None, None, f"{type(exc).__name__}: {exc}")


class _PyFuncBase:
    def _setup(self, ctx):
        self.token = ctx.get_attr("token").decode(errors="backslashreplace")
        self.tout = ctx.get_attr("Tout")
        self.func = lookup(self.token)


@register_kernel("PyFunc", "CPU")
@register_kernel("PyFuncStateless", "CPU")
class PyFuncOp(_PyFuncBase, OpKernel):
    """Call a synchronous Python function on the device's thread pool."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._setup(ctx)

    def compute(self, ctx, inputs):
        try:
            result = self.func(*inputs)
        except BaseException as e:  # noqa: BLE001 - reported with TF's error class
            raise _call_error(self.token, e) from e
        return _outputs(self.token, result, self.tout)


@register_kernel("AsyncPyFunc", "CPU")
class AsyncPyFuncOp(_PyFuncBase, AsyncOpKernel):
    """Await a coroutine function on the event loop."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._setup(ctx)

    async def compute_async(self, ctx, inputs):
        try:
            result = await self.func(*inputs)
        except BaseException as e:  # noqa: BLE001 - reported with TF's error class
            if isinstance(e, (KeyboardInterrupt, SystemExit)) or type(e).__name__ == \
                    "CancelledError":
                raise
            raise _call_error(self.token, e) from e
        return _outputs(self.token, result, self.tout)
