"""Second-order gradients of fused batch norm (TF's nn_fused_batch_norm_grad.py): the
gradients of FusedBatchNormGrad, FusedBatchNormGradV2 and FusedBatchNormGradV3.

_batch_norm_grad writes batch norm's gradient with plain ops (training: batch statistics;
inference: the population's), and its gradient is taken with respect to grad_y, x and
scale, seeded with the incoming gradients of grad_x, grad_scale and grad_offset, with a
GradientTape in graph mode as TF's (gradients/tape.py replays TF's C++ tape), so the
nodes are TF's."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.gradients.registry import RegisterGradient
from aioflow.gradients.tape import Tape
from aioflow.ops import array_ops, math_ops


def _reduce_axis(data_format: bytes) -> list[int]:
    return {b"NHWC": [0, 1, 2], b"NDHWC": [0, 1, 2, 3], b"NCHW": [0, 2, 3]}.get(
        data_format, [0, 2, 3, 4])


def _channel_shape(data_format: bytes, channels) -> list:
    return [1, channels, 1, 1] if data_format == b"NCHW" else [1, channels, 1, 1, 1]


def _batch_norm_grad(grad_y, x, scale, pop_mean, pop_var, epsilon, data_format,
                     is_training=True):
    """(grad_x, grad_scale, grad_offset) of batch norm, as TF's _BatchNormGrad."""
    x_dtype = x.dtype.base_dtype
    if x_dtype in (dtypes.float16, dtypes.bfloat16):
        x = math_ops.cast(x, dtypes.float32)
        grad_y = math_ops.cast(grad_y, dtypes.float32)
    reduce_axis = _reduce_axis(data_format)
    channels_last = data_format in (b"NHWC", b"NDHWC")
    if is_training:
        keepdims = not channels_last
        if not channels_last:
            scale = array_ops.reshape(scale, _channel_shape(data_format, array_ops.size(scale)))
        mean_grad_y = math_ops.reduce_mean(grad_y, reduce_axis, keepdims=keepdims)
        mean_x = math_ops.reduce_mean(x, reduce_axis, keepdims=keepdims)
        var_x = math_ops.reduce_mean(
            math_ops.squared_difference(x, array_ops.stop_gradient(mean_x)), reduce_axis,
            keepdims=keepdims)
        grad_y_offset = grad_y - mean_grad_y
        x_offset = x - mean_x
        mean = math_ops.reduce_mean(grad_y * x_offset, axis=reduce_axis, keepdims=keepdims)
        grad_x = scale * math_ops.rsqrt(var_x + epsilon) * (
            grad_y_offset - math_ops.reciprocal(var_x + epsilon) * mean * x_offset)
        grad_scale = math_ops.rsqrt(var_x + epsilon) * math_ops.reduce_sum(
            grad_y * x_offset, axis=reduce_axis, keepdims=keepdims)
        if not channels_last:
            grad_scale = array_ops.squeeze(grad_scale)
        grad_offset = math_ops.reduce_sum(grad_y, axis=reduce_axis)
        return math_ops.cast(grad_x, x_dtype), grad_scale, grad_offset
    if not channels_last:
        shape = _channel_shape(data_format, array_ops.size(pop_mean))
        pop_mean = array_ops.reshape(pop_mean, shape)
        pop_var = array_ops.reshape(pop_var, shape)
        scale = array_ops.reshape(scale, shape)
    grad_offset = math_ops.reduce_sum(grad_y, axis=reduce_axis)
    var_rsqrt = math_ops.rsqrt(pop_var + epsilon)
    grad_scale = math_ops.reduce_sum(grad_y * (x - pop_mean) * var_rsqrt, axis=reduce_axis)
    grad_x = grad_y * scale * var_rsqrt
    return math_ops.cast(grad_x, x_dtype), grad_scale, grad_offset


@RegisterGradient("FusedBatchNormGrad")
def _fused_batch_norm_grad_grad(op, *grad):
    data_format = op.get_attr("data_format")
    if isinstance(data_format, str):
        data_format = data_format.encode()
    epsilon = op.get_attr("epsilon")
    is_training = op.get_attr("is_training")
    grad_y, x, scale, pop_mean, pop_var = op.inputs[:5]
    tape = Tape([grad_y, x, scale])
    targets = tape.record(op.graph, lambda: _batch_norm_grad(
        grad_y, x, scale, pop_mean, pop_var, epsilon, data_format, is_training))
    grad_grad_y, grad_x, grad_scale = tape.gradient(
        list(targets), [grad_y, x, scale], list(grad[:3]))
    return grad_grad_y, grad_x, grad_scale, None, None


@RegisterGradient("FusedBatchNormGradV2")
def _fused_batch_norm_grad_grad_v2(op, *grad):
    return _fused_batch_norm_grad_grad(op, *grad)


@RegisterGradient("FusedBatchNormGradV3")
def _fused_batch_norm_grad_grad_v3(op, *grad):
    grad_grad_y, grad_x, grad_scale, _, _ = _fused_batch_norm_grad_grad(op, *grad)
    return grad_grad_y, grad_x, grad_scale, None, None, None
