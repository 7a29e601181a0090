"""tf.layers' core layers: Dense (MatMul, or Tensordot above rank 2, then BiasAdd and the
activation, in the layer's scope), Dropout (active only when `training`: a Python bool or
a boolean tensor, then a cond as TF's smart_cond builds it; seeded as TF's) and Flatten;
with their functional forms."""

from __future__ import annotations

import functools
import operator

from aioflow.framework import constant_value, ops
from aioflow.layers.base import Layer
from aioflow.ops import (
    array_ops,
    constant_op,
    control_flow_ops,
    init_ops,
    math_ops,
    nn_impl,
    nn_ops,
)


def smart_cond(pred, true_fn, false_fn, name=None):
    """true_fn() or false_fn() when `pred` is known at build time, else a cond."""
    if isinstance(pred, ops.Tensor):
        value = constant_value.constant_value(pred)
        if value is None:
            return control_flow_ops.cond(pred, true_fn, false_fn, name=name)
        pred = bool(value)
    return true_fn() if pred else false_fn()


def _activation(activation):
    return activation if activation is not None else None


class Dense(Layer):
    """outputs = activation(inputs @ kernel + bias)."""

    def __init__(self, units, activation=None, use_bias: bool = True,
                 kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable: bool = True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or init_ops.zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    def build(self, input_shape) -> None:
        last_dim = input_shape[-1] if input_shape.rank else None
        last_dim = getattr(last_dim, "value", last_dim)
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype,
                                      trainable=True)
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype,
                                        trainable=True)
        self.built = True

    def call(self, inputs):
        if inputs.dtype.base_dtype != self.dtype:
            inputs = math_ops.cast(inputs, self.dtype)
        rank = inputs.shape.rank
        if rank == 2 or rank is None:
            outputs = math_ops.matmul(inputs, self.kernel)
        else:
            outputs = _dot_last_axis(inputs, self.kernel, self.units)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs


def _dot_last_axis(inputs, kernel, units: int):
    """inputs (rank > 2) times kernel over the last axis: TF's tensordot, its static shape
    set as Dense sets it."""
    rank = inputs.shape.rank
    out = math_ops.tensordot(inputs, kernel, [[rank - 1], [0]])
    out.set_shape(inputs.shape.as_list()[:-1] + [units])
    return out


def dense(inputs, units, activation=None, use_bias: bool = True, kernel_initializer=None,
          bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
          activity_regularizer=None, kernel_constraint=None, bias_constraint=None,
          trainable: bool = True, name=None, reuse=None):
    """tf.compat.v1.layers.dense."""
    if bias_initializer is None:
        bias_initializer = init_ops.zeros_initializer()
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer,
                  kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                  trainable=trainable, name=name, _reuse=reuse)
    return layer(inputs)


class Dropout(Layer):
    """inputs with `rate` of them zeroed (and the rest scaled) when training."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=False):
        if isinstance(self.rate, (int, float)) and self.rate == 0:
            return array_ops.identity(inputs)

        def dropped():
            return nn_impl.dropout(inputs, noise_shape=self.noise_shape, seed=self.seed,
                                   rate=self.rate)

        return smart_cond(training, dropped, lambda: array_ops.identity(inputs))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.compat.v1.layers.dropout."""
    return Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)(inputs,
                                                                       training=training)


class Flatten(Layer):
    """inputs reshaped to [batch, -1] (channels last)."""

    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.data_format = data_format or "channels_last"

    def call(self, inputs):
        if self.data_format == "channels_first" and (inputs.shape.rank or 0) > 1:
            rank = inputs.shape.rank
            inputs = array_ops.transpose(inputs, perm=[0, *range(2, rank), 1])
        shape = inputs.shape
        if shape.rank == 1:
            return array_ops.expand_dims(inputs, axis=1)
        batch = shape.as_list()[0] if shape.rank is not None else None
        rest = shape[1:] if shape.rank is not None else None
        if rest is not None and rest.is_fully_defined():
            last = int(functools.reduce(operator.mul, rest.as_list(), 1))
            flat = constant_op.constant([-1, last])
        elif batch is not None:
            flat = constant_op.constant([int(batch), -1])
        else:
            flat = [array_ops.shape(inputs)[0], -1]
        return array_ops.reshape(inputs, flat)


def flatten(inputs, name=None, data_format="channels_last"):
    """tf.compat.v1.layers.flatten."""
    return Flatten(data_format=data_format, name=name)(inputs)
