"""Weights against values (TF's weights_broadcast_ops): assert_broadcastable (a no-op
when the static shapes decide, else an Assert) and broadcast_weights."""

from __future__ import annotations

from aioflow.framework import constant_value, ops
from aioflow.ops import array_ops, control_flow_ops, math_ops

_PREFIX = "weights can not be broadcast to values."


def assert_broadcastable(weights, values):
    """An op asserting that `weights` broadcast to `values` (scalar, or each dim 1 or
    equal); ValueError at build time when the static shapes already say no."""
    with ops.name_scope(None, "assert_broadcastable", (weights, values)) as scope:
        with ops.name_scope(None, "weights", (weights,)) as weights_scope:
            weights = ops.convert_to_tensor(weights, name=weights_scope)
            weights_shape = array_ops.shape(weights, name="shape")
            weights_rank = array_ops.rank(weights, name="rank")
        weights_rank_static = constant_value.constant_value(weights_rank)
        with ops.name_scope(None, "values", (values,)) as values_scope:
            values = ops.convert_to_tensor(values, name=values_scope)
            values_shape = array_ops.shape(values, name="shape")
            values_rank = array_ops.rank(values, name="rank")
        values_rank_static = constant_value.constant_value(values_rank)
        if weights_rank_static is not None and values_rank_static is not None:
            if weights_rank_static == 0:
                return control_flow_ops.no_op(name="static_scalar_check_success")
            if weights_rank_static != values_rank_static:
                raise ValueError(f"{_PREFIX} values.rank={values_rank_static}. "
                                 f"weights.rank={weights_rank_static}. values.shape="
                                 f"{values.shape}. weights.shape={weights.shape}. Received "
                                 f"weights={weights}, values={values}")
            weights_static = constant_value.constant_value(weights_shape)
            values_static = constant_value.constant_value(values_shape)
            if weights_static is not None and values_static is not None:
                for i, (w, v) in enumerate(zip(weights_static, values_static, strict=True)):
                    if w not in (1, v):
                        raise ValueError(f"{_PREFIX} Mismatch at dim {i}. values.shape="
                                         f"{values_static}, weights.shape={weights_static}. "
                                         f"Received weights={weights}, values={values}")
                return control_flow_ops.no_op(name="static_dims_check_success")
        is_scalar = math_ops.equal(0, weights_rank, name="is_scalar")

        def valid_dims():
            same = math_ops.equal(weights_rank, values_rank)
            return control_flow_ops.cond(
                same, lambda: math_ops.reduce_all(math_ops.logical_or(
                    math_ops.equal(weights_shape, 1),
                    math_ops.equal(weights_shape, values_shape))), lambda: same)

        is_valid = control_flow_ops.cond(is_scalar, lambda: is_scalar, valid_dims,
                                         name="is_valid_shape")
        data = (_PREFIX, "weights.shape=", weights.name, weights_shape, "values.shape=",
                values.name, values_shape, "is_scalar=", is_scalar)
        return control_flow_ops.Assert(is_valid, data, name=scope)


def broadcast_weights(weights, values):
    """`weights` broadcast to the shape of `values`."""
    with ops.name_scope(None, "broadcast_weights", (weights, values)) as scope:
        values = ops.convert_to_tensor(values, name="values")
        weights = ops.convert_to_tensor(weights, dtype=values.dtype.base_dtype,
                                        name="weights")
        w, v = weights.get_shape(), values.get_shape()
        if w.is_fully_defined() and v.is_fully_defined() and w.is_compatible_with(v):
            return weights
        with ops.control_dependencies((assert_broadcastable(weights, values),)):
            return math_ops.multiply(weights, array_ops.ones_like(values), name=scope)
