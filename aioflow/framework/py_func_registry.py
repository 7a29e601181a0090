"""The registry of Python callables that PyFunc / AsyncPyFunc nodes name by token."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from aioflow.framework import errors

_funcs: dict[str, Callable] = {}
_counter = itertools.count()


def register(func: Callable, prefix: str = "pyfunc") -> str:
    """Keep `func` and return the token a node's `token` attr refers to it by."""
    token = f"{prefix}_{next(_counter)}"
    _funcs[token] = func
    return token


def lookup(token: str) -> Callable:
    func = _funcs.get(token)
    if func is None:
        raise errors.InvalidArgumentError(
            None, None, f"Callback {token} is not found: the Python function of a py_func node "
                        f"lives in the process that built the graph.")
    return func


def unregister(token: str) -> None:
    _funcs.pop(token, None)
