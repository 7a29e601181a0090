"""Slot variables of an optimizer (TF's slot_creator): a variable per (primary variable,
slot) named `<primary>/<optimizer name>` (then `_1`, `_2`, ... for the next slots of the
same optimizer name), of the primary's kind (ref or resource), not trainable, colocated
with the primary, as tf.compat.v1's optimizers make them, so that TF's checkpoints of
an optimizer's slots restore here."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops, control_flow_ops, init_ops, variable_scope, variables


def _is_resource(primary) -> bool:
    return getattr(primary, "_is_resource", False)


def _prefix(primary) -> str:
    """The primary's shared name (a variable) or its op's name (a tensor)."""
    if isinstance(primary, variables.Variable):
        return primary.op.name
    return primary.op.name


def _create_slot_var(primary, val, validate_shape: bool, shape, dtype):
    """get_variable("", ...) in the slot's variable scope: the variable is named as the
    scope (TF's `_create_slot_var`)."""
    shape = shape if callable(val) else None
    use_resource = True if _is_resource(primary) else (
        False if isinstance(primary, variables.Variable) else None)
    scope = variable_scope.get_variable_scope()
    partitioner = scope.partitioner
    scope.set_partitioner(None)  # a slot is one variable, whatever the scope partitions
    try:
        slot = variable_scope.get_variable("", initializer=val, trainable=False,
                                           use_resource=use_resource, shape=shape,
                                           dtype=dtype, validate_shape=validate_shape)
    finally:
        scope.set_partitioner(partitioner)
    info = getattr(primary, "_save_slice_info", None)
    if isinstance(primary, variables.Variable) and info is not None:
        # the slot of a part is the same part of the full slot ("w/Adam" of "w/part_0")
        real_slot_name = slot.name[len(primary.op.name + "/"):-2]
        n = slot.shape.ndims
        if n is None or n > 0:
            slot._set_save_slice_info(variables.SaveSliceInfo(
                info.full_name + "/" + real_slot_name, info.full_shape[:n],
                info.var_offset[:n], info.var_shape[:n]))
    return slot


def _colocated(primary):
    return ops.colocate_with(primary.op)


def create_slot(primary, val, name: str, colocate_with_primary: bool = True):
    """A slot for `primary` initialized to the tensor `val`."""
    validate_shape = val.get_shape().is_fully_defined()
    with variable_scope.variable_scope(None, _prefix(primary) + "/" + name):
        if colocate_with_primary:
            with _colocated(primary):
                return _create_slot_var(primary, val, validate_shape, None, None)
        return _create_slot_var(primary, val, validate_shape, None, None)


def create_slot_with_initializer(primary, initializer, shape, dtype, name: str,
                                 colocate_with_primary: bool = True):
    """A slot for `primary` of `shape` and `dtype`, made by `initializer`."""
    validate_shape = shape.is_fully_defined()
    with variable_scope.variable_scope(None, _prefix(primary) + "/" + name):
        if colocate_with_primary:
            with _colocated(primary):
                return _create_slot_var(primary, initializer, validate_shape, shape, dtype)
        return _create_slot_var(primary, initializer, validate_shape, shape, dtype)


def create_zeros_slot(primary, name: str, dtype=None, colocate_with_primary: bool = True):
    """A slot of zeros shaped as `primary` (of its dtype unless given)."""
    if dtype is None:
        dtype = primary.dtype.base_dtype
    slot_shape = primary.get_shape()
    if slot_shape.is_fully_defined():
        return create_slot_with_initializer(primary, init_ops.zeros_initializer(), slot_shape,
                                            dtype, name, colocate_with_primary)
    if isinstance(primary, variables.Variable):
        slot_shape = array_ops.shape(control_flow_ops.cond(
            variables.is_variable_initialized(primary), primary.read_value,
            lambda: primary.initial_value))
    else:
        slot_shape = array_ops.shape(primary)
    val = array_ops.zeros(slot_shape, dtype=dtype)
    return create_slot(primary, val, name, colocate_with_primary)
