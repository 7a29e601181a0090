"""TF 1's graph-mode assertions (check_ops.py) as the metrics and losses build them:
assert_type (a static check and a NoOp), assert_rank_in (a NoOp when the ranks decide
statically, else an Assert), and the element-wise comparisons assert_less,
assert_less_equal, assert_greater, assert_greater_equal, assert_equal, assert_non_negative
(an Assert on reduce_all of the comparison; InvalidArgumentError at build time when both
sides are constants that fail)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import constant_value, dtypes, errors, ops
from aioflow.ops import control_flow_ops, math_ops
from aioflow.ops.array_ops import no_op, rank, shape


def _message_prefix(message) -> str:
    return f"{message}.  " if message else ""


def _static_string(x) -> str:
    value = constant_value.constant_value(x) if isinstance(x, ops.Tensor) else None
    if value is None:
        return str(x)
    if value.dtype.kind in "SO":
        return "\n".join(v.decode() if isinstance(v, bytes) else str(v)
                         for v in np.ravel(value))
    return str(value)


def _assert_static(condition, data) -> None:
    if not condition:
        raise errors.InvalidArgumentError(None, None,
                                          "\n".join(_static_string(x) for x in data))


def assert_type(tensor, tf_type, message=None, name=None) -> ops.Operation:
    """A NoOp once `tensor`'s dtype is statically `tf_type`; TypeError otherwise."""
    tf_type = dtypes.as_dtype(tf_type)
    with ops.name_scope(name, "assert_type", [tensor]):
        tensor = ops.convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(f"{_message_prefix(message)}{tensor.name} must be of type "
                            f"tf.{tf_type.name}; got tf.{tensor.dtype.name}")
        return no_op("statically_determined_correct_type")


def _dynamic_rank_in(actual_rank, given_ranks):
    if not given_ranks:
        return ops.convert_to_tensor(False)
    result = math_ops.equal(given_ranks[0], actual_rank)
    for given in given_ranks[1:]:
        result = math_ops.logical_or(result, math_ops.equal(given, actual_rank))
    return result


def assert_rank_in(x, ranks, data=None, summarize=None, message=None, name=None):
    """An op failing unless the rank of `x` is one of `ranks` (a NoOp when static)."""
    with ops.name_scope(name, "assert_rank_in", (x,) + tuple(ranks) + tuple(data or [])):
        x = ops.convert_to_tensor(x, name="x")
        ranks = tuple(ops.convert_to_tensor(r, name="rank") for r in ranks)
        prefix = _message_prefix(message)
        if data is None:
            data = ([prefix, f"Tensor {x.name} must have rank in"] + list(ranks)
                    + ["Received shape: ", shape(x)])
        for r in ranks:
            assert_type(r, dtypes.int32)
        statics = tuple(constant_value.constant_value(r) for r in ranks)
        if not any(s is None for s in statics):
            if any(np.ndim(s) != 0 for s in statics):
                raise ValueError("Rank must be a scalar.")
            x_rank = x.get_shape().ndims
            if x_rank is not None:
                if x_rank not in [int(s) for s in statics]:
                    raise ValueError(
                        f"{prefix}Tensor {x.name} must have rank in "
                        f"{tuple(int(s) for s in statics)}.  Received rank {x_rank}, shape "
                        f"{x.get_shape()}")
                return no_op(name="static_checks_determined_all_ok")
        condition = _dynamic_rank_in(rank(x), ranks)
        return control_flow_ops.Assert(condition, data, summarize=summarize)


def _binary_assert(sym: str, opname: str, op_func, static_func, x, y, data, summarize,
                   message, name):
    with ops.name_scope(name, opname, [x, y, data]):
        x = ops.convert_to_tensor(x, name="x")
        y = ops.convert_to_tensor(y, name="y")
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:",
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        if message is not None:
            data = [message] + list(data)
        condition = math_ops.reduce_all(op_func(x, y))
        x_static = constant_value.constant_value(x)
        y_static = constant_value.constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(np.all(static_func(x_static, y_static)), data)
        return control_flow_ops.Assert(condition, data, summarize=summarize)


def assert_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("==", "assert_equal", math_ops.equal, np.equal, x, y, data,
                          summarize, message, name)


def assert_less(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("<", "assert_less", math_ops.less, np.less, x, y, data,
                          summarize, message, name)


def assert_less_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert("<=", "assert_less_equal", math_ops.less_equal, np.less_equal,
                          x, y, data, summarize, message, name)


def assert_greater(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(">", "assert_greater", math_ops.greater, np.greater, x, y, data,
                          summarize, message, name)


def assert_greater_equal(x, y, data=None, summarize=None, message=None, name=None):
    return _binary_assert(">=", "assert_greater_equal", math_ops.greater_equal,
                          np.greater_equal, x, y, data, summarize, message, name)


def assert_non_negative(x, data=None, summarize=None, message=None, name=None):
    """x >= 0 everywhere (assert_less_equal(0, x) under "assert_non_negative")."""
    prefix = _message_prefix(message)
    with ops.name_scope(name, "assert_non_negative", [x, data]):
        x = ops.convert_to_tensor(x, name="x")
        if data is None:
            data = [prefix, "Condition x >= 0 did not hold element-wise:",
                    f"x ({x.name}) = ", x]
        zero = ops.convert_to_tensor(0, dtype=x.dtype)
        return assert_less_equal(zero, x, data=data, summarize=summarize)
