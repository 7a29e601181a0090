"""Neural-network builders (activations, softmax, bias_add) with TF's Python names and the
node names TF's Python layer produces (softmax along a non-last axis transposes, as TF)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors, ops
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, math_ops


def relu(features, name: str | None = None) -> ops.Tensor:
    """max(features, 0)."""
    return apply_op("Relu", name=name, features=features)


def relu6(features, name: str | None = None) -> ops.Tensor:
    """min(max(features, 0), 6)."""
    with ops.name_scope(name, "Relu6", [features]) as name:
        features = ops.convert_to_tensor(features, name="features")
        return apply_op("Relu6", name=name, features=features)


def elu(features, name: str | None = None) -> ops.Tensor:
    """exp(features) - 1 where negative, else features."""
    return apply_op("Elu", name=name, features=features)


def selu(features, name: str | None = None) -> ops.Tensor:
    """Scaled exponential linear unit."""
    return apply_op("Selu", name=name, features=features)


def softsign(features, name: str | None = None) -> ops.Tensor:
    """features / (abs(features) + 1)."""
    return apply_op("Softsign", name=name, features=features)


def leaky_relu(features, alpha: float = 0.2, name: str | None = None) -> ops.Tensor:
    """features where positive, else alpha * features (integers are cast to float32)."""
    with ops.name_scope(name, "LeakyRelu", [features, alpha]) as name:
        features = ops.convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math_ops.cast(features, dtypes.float32)
        if isinstance(alpha, np.ndarray):
            alpha = alpha.item()
        return apply_op("LeakyRelu", name=name, features=features, alpha=alpha)


def _wrap_2d_function(inputs, op_type: str, dim=-1, name=None):
    """Apply a last-axis op along `dim`, transposing `dim` to the end and back as TF does."""

    def swap_axis(tensor, dim_index, last_index, name=None):
        return array_ops.transpose(
            tensor,
            array_ops.concat([math_ops.range(dim_index), [last_index],
                              math_ops.range(dim_index + 1, last_index), [dim_index]], 0),
            name=name)

    inputs = ops.convert_to_tensor(inputs)
    shape = inputs.shape
    ndims = shape.rank
    is_last_dim = (dim == -1) or (ndims is not None and dim == ndims - 1)
    if is_last_dim:
        return apply_op(op_type, name=name, logits=inputs)
    if ndims is None:
        raise ValueError(f"{op_type} along axis {dim} needs a known input rank.")
    dim_val = constant_value(dim) if isinstance(dim, ops.Tensor) else dim
    if dim_val is not None and not -ndims <= dim_val < ndims:
        raise errors.InvalidArgumentError(
            None, None, f"`dim` must be in the range [{-ndims}, {ndims}) where {ndims} is "
                        f"the number of dimensions in the input. Received: dim={dim_val}")
    rank_t = array_ops.rank(inputs)
    if not isinstance(dim, ops.Tensor):
        if dim < 0:
            dim += rank_t
    else:
        dim = array_ops.where(math_ops.less(dim, 0), dim + rank_t, dim)
    input_rank = array_ops.rank(inputs)
    dim_axis = dim % ndims
    inputs = swap_axis(inputs, dim_axis, math_ops.subtract(input_rank, 1))
    outputs = apply_op(op_type, logits=inputs)
    outputs = swap_axis(outputs, dim_axis, math_ops.subtract(input_rank, 1), name=name)
    outputs.set_shape(shape)
    return outputs


def softmax(logits, axis=None, name: str | None = None, dim=None) -> ops.Tensor:
    """exp(logits) / sum(exp(logits)) along `axis` (default -1)."""
    axis = array_ops._lookup("axis", axis, "dim", dim)
    return _wrap_2d_function(logits, "Softmax", -1 if axis is None else axis, name)


def log_softmax(logits, axis=None, name: str | None = None, dim=None) -> ops.Tensor:
    """logits - log(sum(exp(logits))) along `axis` (default -1)."""
    axis = array_ops._lookup("axis", axis, "dim", dim)
    return _wrap_2d_function(logits, "LogSoftmax", -1 if axis is None else axis, name)


def bias_add(value, bias, data_format: str | None = None, name: str | None = None) -> ops.Tensor:
    """value + bias along the channel dimension ("N...C" or "NC...")."""
    with ops.name_scope(name, "BiasAdd", [value, bias]) as name:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError("data_format must be of the form `N...C` or `NC...`")
        value = ops.convert_to_tensor(value, name="input")
        bias = ops.convert_to_tensor(bias, dtype=value.dtype, name="bias")
        return apply_op("BiasAdd", name=name, value=value, bias=bias, data_format=data_format)


softplus = math_ops.softplus
sigmoid = math_ops.sigmoid
tanh = math_ops.tanh

__all__ = [
    "relu", "relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "softmax",
    "log_softmax", "bias_add", "sigmoid", "tanh",
]
