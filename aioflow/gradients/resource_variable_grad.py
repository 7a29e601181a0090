"""Gradients of the resource-variable ops, as TF's resource_variable_ops.py registers them:
a read passes its gradient through; a ResourceGather's gradient is IndexedSlices of the
variable's shape (its rows `indices`)."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.gradients.handle_data import variable_handle_data
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops, constant_op, state_ops


@RegisterGradient("ReadVariableOp")
def _read_grad(_, grad):
    return grad


def _variable_shape(handle):
    """The variable's shape: a constant when the handle's data declares it fully (its
    VarHandleOp, or the If input a branch's input stands for: TF's handle data), else a
    VariableShape op."""
    data = variable_handle_data(handle)
    if data is not None and data[0].is_fully_defined():
        return constant_op.constant(data[0].as_list(), dtype=dtypes.int32)
    return state_ops.variable_shape(handle)


@RegisterGradient("ResourceGather")
def _gather_grad(op, grad):
    handle, indices = op.inputs[0], op.inputs[1]
    params_shape = _variable_shape(handle)
    size = array_ops.expand_dims(array_ops.size(indices), 0)
    values_shape = array_ops.concat([size, params_shape[1:]], 0)
    values = array_ops.reshape(grad, values_shape)
    indices = array_ops.reshape(indices, size)
    return (IndexedSlices(values, indices, params_shape), None)
