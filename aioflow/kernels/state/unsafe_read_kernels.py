"""The CPU kernel of `_UnsafeReadVariable`: a resource variable's value without the
copy a fetch would make. It returns the variable's buffer itself, read-only, as a
`VariableBuffer` (an ndarray subclass the session hands to the caller as it is, where it
copies a read-only plain ndarray to give back a writable one).

Copy-on-write keeps it safe: the returned array holds a reference to the variable's
buffer, so any later update (AssignAddVariableOp, ResourceScatter*, ...) sees a reader
and copies before writing (Var.writable), and AssignVariableOp installs a new buffer. A
value once fetched therefore never changes, and it cannot be written through."""

from __future__ import annotations

import numpy as np

from aioflow.framework.op_kernel import register_kernel
from aioflow.kernels.state.resource_variable_kernels import ReadVariableOp, handle_of, lookup_var


class VariableBuffer(np.ndarray):
    """A variable's buffer, lent read-only. NumPy operations on it give plain arrays."""

    def __array_wrap__(self, array, context=None, return_scalar=False):
        if return_scalar:
            return array[()]
        return array.view(np.ndarray) if isinstance(array, VariableBuffer) else array


def lend(var) -> np.ndarray:
    """The variable's buffer as a read-only VariableBuffer (call under var.lock; an
    update then copies before writing, Var.writable, a view-valued buffer included)."""
    out = var.value.view(VariableBuffer)
    out.flags.writeable = False
    return out


@register_kernel("_UnsafeReadVariable")
class UnsafeReadVariableOp(ReadVariableOp):
    """ReadVariableOp's checks and errors; the value lent, not copied on fetch."""

    def compute(self, ctx, inputs):
        (view,) = super().compute(ctx, inputs)
        if view.ndim == 0:
            return (view,)  # a scalar: fetched as a NumPy scalar anyway
        var = lookup_var(ctx, handle_of(inputs[0]))
        with var.lock:
            return (lend(var),)
