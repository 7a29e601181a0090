"""Weights against values (TF's weights_broadcast_ops): assert_broadcastable (a no-op
when the static shapes decide, else an Assert) and broadcast_weights."""

from __future__ import annotations

from aioflow.framework import constant_value, ops
from aioflow.ops import array_ops, control_flow_ops, math_ops, sets

_PREFIX = "weights can not be broadcast to values."


def _has_valid_dims(weights_shape, values_shape):
    """Each weights dim is 1 or the values' dim: no weights dim outside {dim, 1}."""
    with ops.name_scope(None, "has_invalid_dims", (weights_shape, values_shape)) as scope:
        values_shape_2d = array_ops.expand_dims(values_shape, -1)
        valid_dims = array_ops.concat((values_shape_2d, array_ops.ones_like(values_shape_2d)),
                                      axis=1)
        weights_shape_2d = array_ops.expand_dims(weights_shape, -1)
        invalid_dims = sets.set_difference(weights_shape_2d, valid_dims)
        num_invalid_dims = array_ops.size(invalid_dims.values, name="num_invalid_dims")
        return math_ops.equal(0, num_invalid_dims, name=scope)


def _has_valid_nonscalar_shape(weights_rank, weights_shape, values_rank, values_shape):
    with ops.name_scope(None, "has_valid_nonscalar_shape",
                        (weights_rank, weights_shape, values_rank, values_shape)) as scope:
        is_same_rank = math_ops.equal(values_rank, weights_rank, name="is_same_rank")
        return control_flow_ops.cond(
            is_same_rank, lambda: _has_valid_dims(weights_shape, values_shape),
            lambda: is_same_rank, name=scope)


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
        is_valid = control_flow_ops.cond(
            is_scalar, lambda: is_scalar,
            lambda: _has_valid_nonscalar_shape(weights_rank, weights_shape, values_rank,
                                               values_shape),
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
