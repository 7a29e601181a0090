"""The gradient registry: op type -> the Python function that builds its gradient.

`RegisterGradient("Op")` decorates `fn(op, *out_grads) -> in_grads`;
`NotDifferentiable("Op")` registers None (no gradient flows through the op, and none is
an error). An op created under `Graph.gradient_override_map({"Op": "Other"})` carries
the attr `_gradient_op_type = "Other"` and takes Other's function, as in TF.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable

from aioflow.framework import ops

_registry: dict[str, tuple[Callable | None, str]] = {}


def _caller_location() -> str:
    frame = traceback.extract_stack(limit=4)[0]
    return f"{frame.filename}:{frame.lineno}"


def _register(op_type: str, fn: Callable | None) -> None:
    if op_type in _registry:
        raise KeyError(f"Registering two gradient with name '{op_type}'! "
                       f"(Previous registration was in {_registry[op_type][1]})")
    _registry[op_type] = (fn, _caller_location())


class RegisterGradient:
    """Decorator registering a gradient function for an op type (TF's
    `tf.RegisterGradient`)."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        _register(self._op_type, fn)
        return fn


def NotDifferentiable(op_type: str) -> None:  # noqa: N802  (TF's name)
    """Declare that ops of `op_type` are not differentiable (their inputs get None)."""
    if not isinstance(op_type, str):
        raise TypeError("op_type must be a string")
    _register(op_type, None)


NoGradient = NotDifferentiable


def get_gradient_function(op: ops.Operation) -> Callable | None:
    """The gradient function of `op` (None for ops without inputs or not differentiable);
    LookupError when none is registered."""
    if not op.inputs:
        return None
    try:
        op_type = op.get_attr("_gradient_op_type")
        if isinstance(op_type, bytes):
            op_type = op_type.decode()
    except ValueError:
        op_type = op.type
    if op_type not in _registry:
        raise LookupError(f"gradient registry has no entry for: {op_type}")
    return _registry[op_type][0]


def registered_op_types() -> dict[str, bool]:
    """Every registered op type -> whether it has a gradient function (not None)."""
    return {k: v[0] is not None for k, v in _registry.items()}
