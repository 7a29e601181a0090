"""Kernels calling registered Python functions: PyFunc on the thread pool, AsyncPyFunc
awaited on the loop (a graph can await I/O mid-run without holding a thread)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel
from aioflow.framework.py_func_registry import lookup


def _outputs(name: str, result, tout) -> tuple:
    """The function's result as a tuple of arrays of the declared Tout dtypes."""
    if not tout:
        return ()
    if len(tout) == 1 and not isinstance(result, (list, tuple)):
        result = (result,)
    if not isinstance(result, (list, tuple)) or len(result) != len(tout):
        got = len(result) if isinstance(result, (list, tuple)) else 1
        raise errors.InvalidArgumentError(
            None, None, f"{name} returned {got} values, but expects to see {len(tout)} values.")
    out = []
    for value, dtype in zip(result, tout, strict=True):
        if dtype.name == "string":
            out.append(np.asarray(value, dtype=object))
            continue
        try:
            array = np.asarray(value, dtype=dtype.as_numpy_dtype)
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(
                None, None, f"{name} returned {value!r}, which does not convert to "
                            f"{dtype.name}: {e}") from e
        out.append(array[()] if array.ndim == 0 else array)
    return tuple(out)


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
        self.token = ctx.get_attr("token").decode()
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
