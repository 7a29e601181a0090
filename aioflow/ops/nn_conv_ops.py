"""Convolution, pooling and normalisation builders with TF's Python names, arguments and the
node names TF's Python layer produces (tf.compat.v1.nn: conv2d, conv2d_transpose, conv3d,
depthwise_conv2d(_native), max_pool(2d/_v2/3d), avg_pool(3d), fused_batch_norm, lrn,
l2_loss)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.value_repr import summarize
from aioflow.ops import array_ops
from aioflow.ops.constant_op import constant


def _get_sequence(value, n: int, channel_index: int, name: str) -> list[int]:
    """TF's _get_sequence: an int or an n- or (n+2)-list as a full per-dimension list."""
    if value is None:
        return [1] * (n + 2)
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, (int, np.integer)):
        current_n = 1
        value = [int(value)]
    elif isinstance(value, (list, tuple, np.ndarray)):
        value = [int(v) for v in value]
        current_n = len(value)
    else:
        raise TypeError(f"{name} should be an integer or a list of integers, got "
                        f"{summarize(value)}")
    if current_n == n + 2:
        return value
    if current_n == 1:
        value = value * n
    elif current_n != n:
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2} but was {current_n}")
    if channel_index == 1:
        return [1, 1] + value
    return [1] + value + [1]


def convert_padding(padding, expected_length: int = 4):
    """TF's convert_padding: a padding string, or a list of [before, after] pairs
    ("EXPLICIT" with explicit_paddings)."""
    explicit_paddings = []
    if padding == "EXPLICIT":
        raise ValueError("'EXPLICIT' is not a valid value for `padding`. To use explicit "
                         "padding, `padding` must be a list.")
    if isinstance(padding, (list, tuple)):
        for i, dim_paddings in enumerate(padding):
            if not isinstance(dim_paddings, (list, tuple)):
                raise ValueError("When `padding` is a list, each element of `padding` must be "
                                 f"a list/tuple of size 2. Received: padding={padding} with "
                                 f"element at index {i} of type {type(dim_paddings)}")
            if len(dim_paddings) != 2:
                raise ValueError("When `padding` is a list, each element of `padding` must be "
                                 f"a list/tuple of size 2. Received: padding={padding} with "
                                 f"element at index {i} of size {len(dim_paddings)}")
            explicit_paddings.extend(int(p) for p in dim_paddings)
        if len(padding) != expected_length:
            raise ValueError(f"When padding is a list, it must be of size {expected_length}. "
                             f"Received: padding={padding} of size {len(padding)}")
        padding = "EXPLICIT"
    return padding, explicit_paddings


def _channel_index(data_format: str | None, rank: int) -> int:
    return 1 if data_format is not None and data_format.startswith("NC") else rank - 1


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """2-D convolution (Conv2D); strides/dilations an int, 2 or 4 values."""
    filter = array_ops._lookup("filters", filters, "filter", filter)  # noqa: A001
    padding, explicit_paddings = convert_padding(padding)
    if data_format is None:
        data_format = "NHWC"
    channel_index = _channel_index(data_format, 4)
    strides = _get_sequence(strides, 2, channel_index, "strides")
    dilations = _get_sequence(dilations, 2, channel_index, "dilations")
    return apply_op("Conv2D", name=name, input=input, filter=filter, strides=strides,
                    padding=padding, use_cudnn_on_gpu=use_cudnn_on_gpu,
                    explicit_paddings=explicit_paddings, data_format=data_format,
                    dilations=dilations)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None,  # noqa: A002
                     padding="SAME", data_format="NHWC", name=None, input=None,  # noqa: A002
                     filters=None, dilations=None):
    """The transpose of conv2d (Conv2DBackpropInput with out_backprop = value)."""
    filter = array_ops._lookup("filters", filters, "filter", filter)  # noqa: A001
    value = array_ops._lookup("input", input, "value", value)
    with ops.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as name:
        with ops.name_scope(name, "conv2d_transpose",
                            [value, filter, output_shape]) as name:
            if data_format is None:
                data_format = "NHWC"
            channel_index = _channel_index(data_format, 4)
            strides = _get_sequence(strides, 2, channel_index, "strides")
            dilations = _get_sequence(dilations, 2, channel_index, "dilations")
            padding, explicit_paddings = convert_padding(padding)
            return apply_op("Conv2DBackpropInput", name=name, input_sizes=output_shape,
                            filter=filter, out_backprop=value, strides=strides,
                            padding=padding, explicit_paddings=explicit_paddings,
                            data_format=data_format, dilations=dilations)


def conv3d(input, filter=None, strides=None, padding=None,  # noqa: A002
           data_format="NDHWC", dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    """3-D convolution (Conv3D); strides and dilations are 5 values."""
    filter = array_ops._lookup("filters", filters, "filter", filter)  # noqa: A001
    return apply_op("Conv3D", name=name, input=input, filter=filter, strides=list(strides),
                    padding=padding, data_format=data_format,
                    dilations=list(dilations) if dilations is not None else [1] * 5)


def depthwise_conv2d_native(input, filter, strides, padding,  # noqa: A002
                            data_format="NHWC", dilations=(1, 1, 1, 1), name=None):
    """DepthwiseConv2dNative: each input channel convolved with its own filters."""
    padding, explicit_paddings = convert_padding(padding)
    return apply_op("DepthwiseConv2dNative", name=name, input=input, filter=filter,
                    strides=list(strides), padding=padding,
                    explicit_paddings=explicit_paddings, data_format=data_format,
                    dilations=list(dilations))


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """TF's composition: a "depthwise" scope holding the filter's Shape, the dilation rate
    and the DepthwiseConv2dNative node (a rate above 1 is given to the op's dilations)."""
    rate = array_ops._lookup("dilations", dilations, "rate", rate)
    with ops.name_scope(name, "depthwise", [input, filter]) as name:
        input = ops.convert_to_tensor(input, name="tensor_in")  # noqa: A001
        filter = ops.convert_to_tensor(filter, name="filter_in")  # noqa: A001
        if rate is None:
            rate = [1, 1]
        array_ops.shape(filter)
        constant(np.asarray(rate, np.int32), name="dilation_rate")
        rate = [int(r) for r in np.ravel(rate)]
        if data_format is None:
            data_format = "NHWC"
        channel_index = _channel_index(data_format, 4)
        full_rate = _get_sequence(rate, 2, channel_index, "dilations")
        return depthwise_conv2d_native(input, filter, strides, padding,
                                       data_format=data_format, dilations=full_rate,
                                       name=name)


def max_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """MaxPool under a "MaxPool" scope (tf.compat.v1.nn.max_pool)."""
    value = array_ops._lookup("input", input, "value", value)
    with ops.name_scope(name, "MaxPool", [value]) as name:
        return _max_pool(value, ksize, strides, padding, data_format, name)


def _max_pool(value, ksize, strides, padding, data_format, name):
    if data_format is None:
        data_format = "NHWC"
    channel_index = _channel_index(data_format, 4)
    ksize = _get_sequence(ksize, 2, channel_index, "ksize")
    strides = _get_sequence(strides, 2, channel_index, "strides")
    if any(v == 0 for v in ksize):
        raise ValueError(f"`ksize` cannot be zero. Received: ksize={ksize}")
    padding, explicit_paddings = convert_padding(padding)
    value = ops.convert_to_tensor(value, name="input")
    return apply_op("MaxPool", name=name, input=value, ksize=ksize, strides=strides,
                    padding=padding, explicit_paddings=explicit_paddings,
                    data_format=data_format)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """MaxPool under a "MaxPool2d" scope (tf.nn.max_pool2d)."""
    with ops.name_scope(name, "MaxPool2d", [input]) as name:
        return _max_pool(input, ksize, strides, padding, data_format, name)


def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """tf.nn.max_pool (TF2; v1 name nn.max_pool_v2): 2-D or 3-D by the input's rank."""
    if input.shape is not None and input.shape.rank is not None:
        n = input.shape.rank - 2
    elif data_format is not None:
        n = len(data_format) - 2
    else:
        raise ValueError("`input` must have a static shape or a data format must be given. "
                         f"Received: input.shape={input.shape} and "
                         f"data_format={data_format}")
    if not 1 <= n <= 3:
        raise ValueError(f"`input.shape.rank` must be 3, 4 or 5. Received: "
                         f"input.shape={input.shape} of rank {n + 2}.")
    if data_format is None:
        data_format = "NHWC" if n == 2 else "NDHWC"
    if isinstance(padding, (list, tuple)) and data_format == "NCHW_VECT_C":
        raise ValueError("`data_format='NCHW_VECT_C'` is not supported with explicit "
                         f"padding. Received: padding={padding}")
    if n == 3:
        return max_pool3d(input, ksize, strides, padding, data_format=data_format, name=name)
    if n == 1:
        raise NotImplementedError("1-D max pooling is not built by aioflow")
    return max_pool2d(input, ksize, strides, padding, data_format=data_format, name=name)


def avg_pool(value, ksize, strides, padding, data_format="NHWC", name=None,
             input=None):  # noqa: A002
    """AvgPool under an "AvgPool" scope (tf.compat.v1.nn.avg_pool)."""
    value = array_ops._lookup("input", input, "value", value)
    with ops.name_scope(name, "AvgPool", [value]) as name:
        if data_format is None:
            data_format = "NHWC"
        channel_index = _channel_index(data_format, 4)
        ksize = _get_sequence(ksize, 2, channel_index, "ksize")
        strides = _get_sequence(strides, 2, channel_index, "strides")
        value = ops.convert_to_tensor(value, name="input")
        return apply_op("AvgPool", name=name, value=value, ksize=ksize, strides=strides,
                        padding=padding, data_format=data_format)


def _pool3d(op_type, input, ksize, strides, padding, data_format, name):  # noqa: A002
    with ops.name_scope(name, op_type, [input]) as name:
        if data_format is None:
            data_format = "NDHWC"
        channel_index = _channel_index(data_format, 5)
        ksize = _get_sequence(ksize, 3, channel_index, "ksize")
        strides = _get_sequence(strides, 3, channel_index, "strides")
        return apply_op(op_type, name=name, input=input, ksize=ksize, strides=strides,
                        padding=padding, data_format=data_format)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """MaxPool3D under a "MaxPool3D" scope."""
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """AvgPool3D under an "AvgPool3D" scope."""
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """FusedBatchNormV3; returns (y, running_mean, running_var) as tf.compat.v1's does."""
    if (not is_training or exponential_avg_factor != 1.0) and (mean is None or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` "
                         "is False or `exponential_avg_factor` != 1.0. Received: `mean` "
                         f"{mean!r} and `variance` {variance!r}")
    x = ops.convert_to_tensor(x, name="input")
    scale = ops.convert_to_tensor(scale, name="scale")
    offset = ops.convert_to_tensor(offset, name="offset")
    if mean is None:
        mean = constant([])
    if variance is None:
        variance = constant([])
    outs = apply_op("FusedBatchNormV3", name=name, x=x, scale=scale, offset=offset, mean=mean,
                    variance=variance, epsilon=epsilon,
                    exponential_avg_factor=exponential_avg_factor, data_format=data_format,
                    is_training=is_training)
    y, running_mean, running_var = outs[0], outs[1], outs[2]
    return y, running_mean, running_var


def lrn(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):  # noqa: A002
    """Local response normalisation across the last dimension (LRN)."""
    return apply_op("LRN", name=name, input=input, depth_radius=depth_radius, bias=bias,
                    alpha=alpha, beta=beta)


local_response_normalization = lrn


def l2_loss(t, name=None):
    """sum(t ** 2) / 2 (L2Loss)."""
    return apply_op("L2Loss", name=name, t=t)


__all__ = [
    "conv2d", "conv2d_transpose", "conv3d", "depthwise_conv2d", "depthwise_conv2d_native",
    "max_pool", "max_pool2d", "max_pool_v2", "avg_pool", "max_pool3d", "avg_pool3d",
    "fused_batch_norm", "lrn", "local_response_normalization", "l2_loss",
]
