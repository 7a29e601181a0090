"""tf.layers.BatchNormalization / batch_normalization as TF 1's: gamma, beta,
moving_mean and moving_variance (the last two not trainable); in training (a Python bool,
or a boolean tensor: then a cond), the batch's statistics normalize and the moving ones
are updated by ops put in UPDATE_OPS (run them with the train op, as TF 1 asks). A 4-D
input uses FusedBatchNormV3 as TF's fused path; other ranks, moments and
batch_normalization."""

from __future__ import annotations

from aioflow.framework import constant_value, dtypes, ops
from aioflow.layers.base import Layer
from aioflow.layers.core import smart_cond
from aioflow.ops import array_ops, init_ops, math_ops, nn_conv_ops, nn_impl, state_ops


class BatchNormalization(Layer):
    """Batch normalization (Ioffe & Szegedy) over `axis`."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center: bool = True,
                 scale: bool = True, beta_initializer=None, gamma_initializer=None,
                 moving_mean_initializer=None, moving_variance_initializer=None,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm: bool = False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable: bool = True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("batch normalization's renorm, virtual_batch_size and "
                                      "adjustment are not supported by aioflow")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.axis = axis
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self.beta_initializer = beta_initializer or init_ops.zeros_initializer()
        self.gamma_initializer = gamma_initializer or init_ops.ones_initializer()
        self.moving_mean_initializer = moving_mean_initializer or init_ops.zeros_initializer()
        self.moving_variance_initializer = (moving_variance_initializer
                                            or init_ops.ones_initializer())
        self.beta_regularizer = beta_regularizer
        self.gamma_regularizer = gamma_regularizer
        self.beta_constraint = beta_constraint
        self.gamma_constraint = gamma_constraint
        self.fused = fused

    def build(self, input_shape) -> None:
        rank = input_shape.rank
        if rank is None:
            raise ValueError(f"Input has undefined rank. Received: input_shape={input_shape}.")
        axis = self.axis[0] if isinstance(self.axis, (list, tuple)) else self.axis
        self._axis = axis % rank
        if self.fused is None:
            self.fused = rank == 4 and self._axis in (1, 3)
        elif self.fused and not (rank == 4 and self._axis in (1, 3)):
            raise ValueError("fused batch normalization needs a 4-D input normalized over "
                             "its channels (axis 1 or 3)")
        self._data_format = "NCHW" if self._axis == 1 and rank == 4 else "NHWC"
        dim = input_shape.as_list()[self._axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined "
                             f"dimension but the layer received an input with shape "
                             f"{input_shape}.")
        shape = [dim]
        self.gamma = self.add_weight(
            "gamma", shape=shape, initializer=self.gamma_initializer,
            regularizer=self.gamma_regularizer, constraint=self.gamma_constraint,
            dtype=dtypes.float32, trainable=True) if self.scale else None
        self.beta = self.add_weight(
            "beta", shape=shape, initializer=self.beta_initializer,
            regularizer=self.beta_regularizer, constraint=self.beta_constraint,
            dtype=dtypes.float32, trainable=True) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", shape=shape, dtype=dtypes.float32,
                                           initializer=self.moving_mean_initializer,
                                           trainable=False)
        self.moving_variance = self.add_weight(
            "moving_variance", shape=shape, dtype=dtypes.float32,
            initializer=self.moving_variance_initializer, trainable=False)
        self.built = True

    def call(self, inputs, training=False):
        if self.fused:
            return self._fused(inputs, training)
        return self._plain(inputs, training)

    def _assign_moving_average(self, variable, value, momentum):
        with ops.name_scope("AssignMovingAvg") as scope:
            with ops.colocate_with(variable.op):
                decay = ops.convert_to_tensor(1.0 - momentum, name="decay")
                if decay.dtype != variable.dtype.base_dtype:
                    decay = math_ops.cast(decay, variable.dtype.base_dtype)
                delta = (variable - math_ops.cast(value, variable.dtype.base_dtype)) * decay
                return state_ops.assign_sub(variable, delta, name=scope)

    def _training_value(self, training):
        if isinstance(training, ops.Tensor):
            value = constant_value.constant_value(training)
            return None if value is None else bool(value)
        return bool(training)

    def _fused(self, inputs, training):
        beta = self.beta if self.center else array_ops.constant(
            0.0, dtype=dtypes.float32, shape=self.moving_mean.shape)
        gamma = self.gamma if self.scale else array_ops.constant(
            1.0, dtype=dtypes.float32, shape=self.moving_mean.shape)

        def train():
            return nn_conv_ops.fused_batch_norm(
                inputs, gamma, beta, mean=self.moving_mean, variance=self.moving_variance,
                epsilon=self.epsilon, is_training=True, data_format=self._data_format)

        def infer():
            return nn_conv_ops.fused_batch_norm(
                inputs, gamma, beta, mean=self.moving_mean, variance=self.moving_variance,
                epsilon=self.epsilon, is_training=False, data_format=self._data_format)

        output, mean, variance = smart_cond(training, train, infer)
        value = self._training_value(training)
        if value or value is None:
            if value is None:
                momentum = smart_cond(training, lambda: self.momentum, lambda: 1.0)
            else:
                momentum = ops.convert_to_tensor(self.momentum)
            self.add_update(self._assign_moving_average(self.moving_mean, mean, momentum))
            self.add_update(self._assign_moving_average(self.moving_variance, variance,
                                                        momentum))
        return output

    def _plain(self, inputs, training):
        rank = inputs.shape.rank
        axes = [i for i in range(rank) if i != self._axis]
        value = self._training_value(training)
        broadcast = [1] * rank
        broadcast[self._axis] = self.moving_mean.shape.as_list()[0]

        def shaped(t):
            return t if rank == 2 and self._axis == 1 else array_ops.reshape(t, broadcast)

        if value is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            batch_mean, batch_variance = nn_impl.moments(
                math_ops.cast(inputs, dtypes.float32), axes)
            mean = smart_cond(training, lambda: batch_mean,
                              lambda: ops.convert_to_tensor(self.moving_mean))
            variance = smart_cond(training, lambda: batch_variance,
                                  lambda: ops.convert_to_tensor(self.moving_variance))

            def update(var, new):
                return smart_cond(training,
                                  lambda: self._assign_moving_average(var, new,
                                                                      self.momentum),
                                  lambda: ops.convert_to_tensor(var))

            self.add_update(update(self.moving_mean, mean))
            self.add_update(update(self.moving_variance, variance))
        mean = math_ops.cast(mean, inputs.dtype)
        variance = math_ops.cast(variance, inputs.dtype)
        offset = math_ops.cast(self.beta, inputs.dtype) if self.beta is not None else None
        scale = math_ops.cast(self.gamma, inputs.dtype) if self.gamma is not None else None
        return nn_impl.batch_normalization(
            inputs, shaped(mean), shaped(variance),
            shaped(offset) if offset is not None else None,
            shaped(scale) if scale is not None else None, self.epsilon)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center: bool = True,
                        scale: bool = True, beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable: bool = True,
                        name=None, reuse=None, renorm: bool = False, renorm_clipping=None,
                        renorm_momentum=0.99, fused=None, virtual_batch_size=None,
                        adjustment=None):
    """tf.compat.v1.layers.batch_normalization."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _reuse=reuse)
    return layer(inputs, training=training)


BatchNorm = BatchNormalization
