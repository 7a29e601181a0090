"""af.py_func and af.async_py_func: call Python in the middle of a graph."""

from __future__ import annotations

import inspect
from collections.abc import Callable

from aioflow.framework import dtypes, ops, py_func_registry
from aioflow.framework.op_def_library import apply_op_raw


def _apply(op_type: str, func: Callable, inp, Tout, stateful: bool, name):
    single = not isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t) for t in ([Tout] if single else Tout)]
    token = py_func_registry.register(func, "pyfunc" if op_type != "AsyncPyFunc" else "asyncfunc")
    inputs = [ops.convert_to_tensor(x) for x in (inp or [])]
    if op_type == "PyFunc" and not stateful:
        op_type = "PyFuncStateless"
    op = apply_op_raw(op_type, name=name, input=inputs, token=token, Tout=tout)
    if not tout:
        return op
    return op.outputs[0] if single else list(op.outputs)


def py_func(func: Callable, inp, Tout, stateful: bool = True, name: str | None = None):
    """Wrap a synchronous Python function as an op (tf.compat.v1.py_func); it runs on the
    device's thread pool with NumPy inputs and returns values of exactly the `Tout` dtypes:
    as in TF, nothing is converted (a Python float is a double), a mismatch is an error."""
    if inspect.iscoroutinefunction(func):
        raise TypeError("py_func takes a synchronous function; use af.async_py_func for "
                        "coroutine functions")
    return _apply("PyFunc", func, inp, Tout, stateful, name)


def async_py_func(coro_fn: Callable, inp, Tout, name: str | None = None):
    """Wrap a coroutine function as an op: it is awaited on the event loop mid-run (an
    HTTP call, a database query) without holding a thread. Its results are checked as
    py_func's are."""
    if not inspect.iscoroutinefunction(coro_fn):
        raise TypeError(f"async_py_func takes a coroutine function (async def), got {coro_fn!r}")
    return _apply("AsyncPyFunc", coro_fn, inp, Tout, True, name)
