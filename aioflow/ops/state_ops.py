"""Builders of the variable ops (TF's state_ops and gen_resource_variable_ops): the raw
ops, and `assign`, `assign_add`, `assign_sub`, `scatter_*`, `count_up_to` and
`is_variable_initialized` taking a Variable (ref or resource) or a ref tensor, as TF's
tf.compat.v1 functions do."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.framework import ops as ops_mod
from aioflow.framework.op_def_library import apply_op


def _ref(value):
    """A ref variable's ref tensor, a resource variable itself, or the tensor given."""
    return value._ref() if hasattr(value, "_ref") and not _is_resource(value) else value


def _is_resource(value) -> bool:
    return getattr(value, "_is_resource", False)


# -- raw ops -----------------------------------------------------------------------------
def variable_op_v2(shape, dtype, name: str = "Variable", container: str = "",
                   shared_name: str = "") -> ops_mod.Tensor:
    """A VariableV2 op: the ref of a variable of `shape` and `dtype`."""
    return apply_op("VariableV2", name=name, shape=shape, dtype=dtypes.as_dtype(dtype),
                    container=container, shared_name=shared_name)


def var_handle_op(dtype, shape, container: str = "", shared_name: str = "",
                  debug_name: str = "", name: str | None = None) -> ops_mod.Tensor:
    """A VarHandleOp: the handle of the resource variable (container, shared_name)."""
    return apply_op("VarHandleOp", name=name, dtype=dtypes.as_dtype(dtype), shape=shape,
                    container=container, shared_name=shared_name, debug_name=debug_name)


def read_variable_op(resource, dtype, name: str | None = None) -> ops_mod.Tensor:
    return apply_op("ReadVariableOp", name=name, resource=resource, dtype=dtype)


def assign_variable_op(resource, value, validate_shape: bool = False, name=None):
    return apply_op("AssignVariableOp", name=name, resource=resource, value=value,
                    validate_shape=validate_shape)


def var_is_initialized_op(resource, name: str | None = None) -> ops_mod.Tensor:
    return apply_op("VarIsInitializedOp", name=name, resource=resource)


def variable_shape(resource, out_type=dtypes.int32, name: str | None = None):
    return apply_op("VariableShape", name=name, input=resource, out_type=out_type)


def destroy_resource_op(resource, ignore_lookup_error: bool = True, name=None):
    return apply_op("DestroyResourceOp", name=name, resource=resource,
                    ignore_lookup_error=ignore_lookup_error)


def resource_gather(resource, indices, dtype, batch_dims: int = 0,
                    validate_indices: bool = True, name: str | None = None):
    return apply_op("ResourceGather", name=name, resource=resource, indices=indices,
                    dtype=dtype, batch_dims=batch_dims, validate_indices=validate_indices)


# -- tf.compat.v1 functions ------------------------------------------------------------------
def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """ref = value; returns the ref (ref variables) or the assign (resource: as TF's,
    a read of the new value)."""
    if _is_resource(ref):
        return ref.assign(value, name=name)
    return apply_op("Assign", name=name or "Assign", ref=_ref(ref), value=value,
                    validate_shape=validate_shape, use_locking=use_locking)


def assign_add(ref, value, use_locking=None, name=None):
    if _is_resource(ref):
        return ref.assign_add(value)
    return apply_op("AssignAdd", name=name or "AssignAdd", ref=_ref(ref), value=value,
                    use_locking=use_locking)


def assign_sub(ref, value, use_locking=None, name=None):
    if _is_resource(ref):
        return ref.assign_sub(value)
    return apply_op("AssignSub", name=name or "AssignSub", ref=_ref(ref), value=value,
                    use_locking=use_locking)


def is_variable_initialized(variable, name=None) -> ops_mod.Tensor:
    if _is_resource(variable):
        return variable.is_initialized(name=name)
    ref = _ref(variable)
    return apply_op("IsVariableInitialized", name=name or "IsVariableInitialized", ref=ref,
                    dtype=ref.dtype.base_dtype)


def count_up_to(ref, limit: int, name=None) -> ops_mod.Tensor:
    return apply_op("CountUpTo", name=name or "CountUpTo", ref=_ref(ref), limit=limit)


def _scatter(op_type: str, resource_op: str):
    def scatter(ref, indices, updates, use_locking=None, name=None):
        if _is_resource(ref):  # as TF's: the op, then a read that waits for it
            op = apply_op(resource_op, name=name, resource=ref.handle, indices=indices,
                          updates=ops_mod.convert_to_tensor(updates, dtype=ref.dtype))
            return ref._lazy_read(op)
        return apply_op(op_type, name=name or op_type, ref=_ref(ref), indices=indices,
                        updates=updates, use_locking=use_locking)

    scatter.__name__ = scatter.__qualname__ = "scatter_" + op_type[7:].lower()
    scatter.__doc__ = f"{op_type} of a ref variable ({resource_op} of a resource one)."
    return scatter


scatter_update = _scatter("ScatterUpdate", "ResourceScatterUpdate")
scatter_add = _scatter("ScatterAdd", "ResourceScatterAdd")
scatter_sub = _scatter("ScatterSub", "ResourceScatterSub")
scatter_mul = _scatter("ScatterMul", "ResourceScatterMul")
scatter_div = _scatter("ScatterDiv", "ResourceScatterDiv")
scatter_min = _scatter("ScatterMin", "ResourceScatterMin")
scatter_max = _scatter("ScatterMax", "ResourceScatterMax")


def _scatter_nd(op_type: str):
    def scatter_nd(ref, indices, updates, use_locking=None, name=None):
        return apply_op(op_type, name=name or op_type, ref=_ref(ref), indices=indices,
                        updates=updates, use_locking=use_locking)

    scatter_nd.__name__ = scatter_nd.__qualname__ = "scatter_nd_" + op_type[9:].lower()
    scatter_nd.__doc__ = f"{op_type} of a ref variable."
    return scatter_nd


scatter_nd_update = _scatter_nd("ScatterNdUpdate")
scatter_nd_add = _scatter_nd("ScatterNdAdd")
scatter_nd_sub = _scatter_nd("ScatterNdSub")
