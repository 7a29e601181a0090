"""tf.layers' convolution layers: Conv1D, Conv2D, Conv3D (Conv2D/Conv3D ops; 1-D as a
2-D convolution over an added dimension), SeparableConv1D/2D (depthwise then pointwise)
and Conv2DTranspose (Conv2DBackpropInput of the computed output shape); kernel and bias
named as TF's (kernel, bias; depthwise_kernel, pointwise_kernel)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.layers.base import Layer
from aioflow.ops import array_ops, constant_op, init_ops, nn_conv_ops, nn_ops


def _tuple(value, n: int) -> tuple:
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) \
        else (int(value),) * n


class _Conv(Layer):
    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None,
                 use_bias: bool = True, kernel_initializer=None, bias_initializer=None,
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable: bool = True,
                 name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.filters = int(filters)
        self.kernel_size = _tuple(kernel_size, self.rank)
        self.strides = _tuple(strides, self.rank)
        self.padding = padding.upper()
        self.channels_last = data_format in (None, "channels_last")
        self.dilation_rate = _tuple(dilation_rate, self.rank)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or init_ops.zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    def _in_channels(self, input_shape) -> int:
        dims = input_shape.as_list()
        value = dims[-1] if self.channels_last else dims[1]
        if value is None:
            raise ValueError("The channel dimension of the inputs should be defined. The "
                             "input_shape received is " + str(input_shape) + ", where axis "
                             f"{-1 if self.channels_last else 1} (0-based) is the channel "
                             "dimension, which found to be `None`.")
        return value

    def build(self, input_shape) -> None:
        self.kernel = self.add_weight(
            "kernel", shape=[*self.kernel_size, self._in_channels(input_shape), self.filters],
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint, dtype=self.dtype, trainable=True)
        self._add_bias()
        self.built = True

    def _add_bias(self) -> None:
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.filters],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype,
                                        trainable=True)

    def _fmt(self) -> str:
        return {1: "NWC", 2: "NHWC", 3: "NDHWC"}[self.rank] if self.channels_last \
            else {1: "NCW", 2: "NCHW", 3: "NCDHW"}[self.rank]

    def call(self, inputs):
        outputs = self._convolve(inputs)
        if self.use_bias:
            fmt = "NHWC" if self.channels_last else "NCHW"
            outputs = nn_ops.bias_add(outputs, self.bias, data_format=fmt) \
                if self.rank == 2 or self.channels_last else \
                outputs + array_ops.reshape(self.bias, [1, self.filters] + [1] * self.rank)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def _full(self, values) -> list:
        return [1, *values, 1] if self.channels_last else [1, 1, *values]

    def _convolve(self, inputs):
        name = type(self).__name__
        if self.rank == 2:
            return nn_conv_ops.conv2d(inputs, self.kernel, self._full(self.strides),
                                      self.padding, data_format=self._fmt(),
                                      dilations=self._full(self.dilation_rate), name=name)
        if self.rank == 3:
            return nn_conv_ops.conv3d(inputs, self.kernel, self._full(self.strides),
                                      self.padding, data_format=self._fmt(),
                                      dilations=self._full(self.dilation_rate), name=name)
        with ops.name_scope(name) as scope:  # 1-D: a 2-D convolution over an added axis
            axis = -3 if self.channels_last else -2
            x = array_ops.expand_dims(inputs, axis)
            kernel = array_ops.expand_dims(self.kernel, 0)
            strides = (1, self.strides[0])
            dilations = (1, self.dilation_rate[0])
            out = nn_conv_ops.conv2d(
                x, kernel, [1, *strides, 1] if self.channels_last else [1, 1, *strides],
                self.padding, data_format="NHWC" if self.channels_last else "NCHW",
                dilations=[1, *dilations, 1] if self.channels_last else [1, 1, *dilations],
                name=scope)
            return array_ops.squeeze(out, [axis])


class Conv1D(_Conv):
    rank = 1


class Conv2D(_Conv):
    rank = 2


class Conv3D(_Conv):
    rank = 3


class _SeparableConv(_Conv):
    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1,
                 activation=None, use_bias: bool = True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=None,
                 depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None,
                 bias_constraint=None, trainable: bool = True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, None, bias_initializer, None,
                         bias_regularizer, activity_regularizer, None, bias_constraint,
                         trainable, name, **kwargs)
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = depthwise_initializer
        self.pointwise_initializer = pointwise_initializer
        self.depthwise_regularizer = depthwise_regularizer
        self.pointwise_regularizer = pointwise_regularizer
        self.depthwise_constraint = depthwise_constraint
        self.pointwise_constraint = pointwise_constraint

    def build(self, input_shape) -> None:
        channels = self._in_channels(input_shape)
        size = self.kernel_size if self.rank == 2 else (1, *self.kernel_size)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", shape=[*size, channels, self.depth_multiplier],
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint, dtype=self.dtype, trainable=True)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", shape=[1] * 2 + [channels * self.depth_multiplier,
                                               self.filters],
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, dtype=self.dtype, trainable=True)
        self._add_bias()
        self.built = True

    def _convolve(self, inputs):
        x = inputs
        if self.rank == 1:
            axis = 1 if self.channels_last else 2
            x = array_ops.expand_dims(x, axis)
        strides = self.strides if self.rank == 2 else (1, self.strides[0])
        dilations = self.dilation_rate if self.rank == 2 else (1, self.dilation_rate[0])
        fmt = "NHWC" if self.channels_last else "NCHW"
        full = [1, *strides, 1] if self.channels_last else [1, 1, *strides]
        # TF's nn.separable_conv2d: the filter's Shape and the rate, the depthwise conv
        # "depthwise", the pointwise Conv2D named as the scope
        with ops.name_scope(None, "separable_conv2d", [x]) as name:
            array_ops.shape(self.depthwise_kernel)
            constant_op.constant(list(dilations), name="dilation_rate")
            depthwise = nn_conv_ops.depthwise_conv2d_native(
                x, self.depthwise_kernel, full, self.padding, data_format=fmt,
                dilations=[1, *dilations, 1] if self.channels_last else [1, 1, *dilations],
                name="depthwise")
            out = nn_conv_ops.conv2d(depthwise, self.pointwise_kernel, [1, 1, 1, 1], "VALID",
                                     data_format=fmt, name=name)
        if self.rank == 1:
            out = array_ops.squeeze(out, [axis])
        return out


class SeparableConv1D(_SeparableConv):
    rank = 1


class SeparableConv2D(_SeparableConv):
    rank = 2


class Conv2DTranspose(_Conv):
    """The transpose of a 2-D convolution (Conv2DBackpropInput)."""

    rank = 2

    def build(self, input_shape) -> None:
        self.kernel = self.add_weight(
            "kernel", shape=[*self.kernel_size, self.filters, self._in_channels(input_shape)],
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint, dtype=self.dtype, trainable=True)
        self._add_bias()
        self.built = True

    def _convolve(self, inputs):
        shape = array_ops.shape(inputs)
        batch = shape[0]
        h_axis, w_axis = (1, 2) if self.channels_last else (2, 3)
        static = inputs.shape.as_list() if inputs.shape.rank is not None else None
        height = static[h_axis] if static and static[h_axis] is not None else shape[h_axis]
        width = static[w_axis] if static and static[w_axis] is not None else shape[w_axis]
        out_h = _deconv_length(height, self.strides[0], self.kernel_size[0], self.padding,
                               self.dilation_rate[0])
        out_w = _deconv_length(width, self.strides[1], self.kernel_size[1], self.padding,
                               self.dilation_rate[1])
        dims = (batch, out_h, out_w, self.filters) if self.channels_last \
            else (batch, self.filters, out_h, out_w)
        output_shape = array_ops.stack(dims)
        output_shape[0]  # noqa: B018  (Keras' backend reads it: TF's graph has the slice)
        out = nn_conv_ops.conv2d_transpose(inputs, self.kernel, output_shape,
                                           self._full(self.strides), padding=self.padding,
                                           data_format=self._fmt(),
                                           dilations=self._full(self.dilation_rate))
        if static:
            def length(n, i):
                return None if n is None else _deconv_length(n, self.strides[i],
                                                             self.kernel_size[i],
                                                             self.padding,
                                                             self.dilation_rate[i])
            h, w = length(static[h_axis], 0), length(static[w_axis], 1)
            out.set_shape([static[0], h, w, self.filters] if self.channels_last
                          else [static[0], self.filters, h, w])
        return out


def _deconv_length(n, stride, kernel, padding, dilation):
    kernel = kernel + (kernel - 1) * (dilation - 1)
    if padding == "VALID":
        return n * stride + max(kernel - stride, 0)
    return n * stride


def _functional(cls):
    def layer_fn(inputs, filters, kernel_size, *args, name=None, reuse=None, **kwargs):
        return cls(filters, kernel_size, *args, name=name, _reuse=reuse, **kwargs)(inputs)

    layer_fn.__name__ = layer_fn.__qualname__ = {
        "Conv1D": "conv1d", "Conv2D": "conv2d", "Conv3D": "conv3d",
        "SeparableConv1D": "separable_conv1d", "SeparableConv2D": "separable_conv2d",
        "Conv2DTranspose": "conv2d_transpose"}[cls.__name__]
    layer_fn.__doc__ = f"tf.compat.v1.layers.{layer_fn.__name__}."
    return layer_fn


conv1d = _functional(Conv1D)
conv2d = _functional(Conv2D)
conv3d = _functional(Conv3D)
separable_conv1d = _functional(SeparableConv1D)
separable_conv2d = _functional(SeparableConv2D)
conv2d_transpose = _functional(Conv2DTranspose)
Convolution1D, Convolution2D, Convolution3D = Conv1D, Conv2D, Conv3D
SeparableConvolution2D, Convolution2DTranspose = SeparableConv2D, Conv2DTranspose
