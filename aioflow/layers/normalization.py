"""tf.layers.BatchNormalization / batch_normalization as TF 1's: gamma, beta,
moving_mean and moving_variance (the last two not trainable); in training (a Python bool,
or a boolean tensor: then a cond), the batch's statistics normalize and the moving ones
are updated by ops put in UPDATE_OPS (run them with the train op, as TF 1 asks). A 4-D
input uses FusedBatchNormV3 as TF's fused path; other ranks, moments and
batch_normalization. With renorm (batch renormalization, never fused), TF's moving_stddev,
renorm_mean and renorm_stddev variables and the corrections r and d (clipped by
renorm_clipping) scale and shift the normalized batch."""

from __future__ import annotations

from aioflow.framework import constant_value, dtypes, ops
from aioflow.layers.base import Layer
from aioflow.layers.core import smart_cond
from aioflow.ops import (
    array_ops,
    init_ops,
    math_ops,
    nn_conv_ops,
    nn_impl,
    nn_ops,
    state_ops,
)


class BatchNormalization(Layer):
    """Batch normalization (Ioffe & Szegedy) over `axis`."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center: bool = True,
                 scale: bool = True, beta_initializer=None, gamma_initializer=None,
                 moving_mean_initializer=None, moving_variance_initializer=None,
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm: bool = False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable: bool = True,
                 virtual_batch_size=None, adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.virtual_batch_size = virtual_batch_size
        self.adjustment = adjustment
        if fused and virtual_batch_size is not None:
            raise ValueError("Passing `fused=True` is not supported when "
                             "`virtual_batch_size` is specified.")
        if fused and adjustment is not None:
            raise ValueError("Passing `fused=True` is not supported when `adjustment` is "
                             "specified.")
        self.renorm = renorm
        if renorm:
            renorm_clipping = renorm_clipping or {}
            keys = ["rmax", "rmin", "dmax"]
            if set(renorm_clipping) - set(keys):
                raise ValueError(f"Received invalid keys for `renorm_clipping` argument: "
                                 f"{renorm_clipping}. Supported values: {keys}.")
            self.renorm_clipping = renorm_clipping
            self.renorm_momentum = renorm_momentum
            if fused:
                raise ValueError("Passing both `fused=True` and `renorm=True` is not "
                                 "supported")
            fused = False  # fused batch norm has no renorm
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
        if self.virtual_batch_size is not None:
            if self.virtual_batch_size <= 0:
                raise ValueError(f"`virtual_batch_size` must be a positive integer that "
                                 f"divides the true batch size of the input tensor. "
                                 f"Received: virtual_batch_size={self.virtual_batch_size}")
            if self._axis == 0:
                raise ValueError(f"When using `virtual_batch_size`, the batch dimension "
                                 f"must be 0 and thus axis cannot include 0. Received "
                                 f"axis={[self._axis]}")
            if self.adjustment is not None:
                raise ValueError("When using `virtual_batch_size`, adjustment cannot be "
                                 "specified")
        if self.fused is None:
            self.fused = rank == 4 and self._axis in (1, 3) and \
                self.virtual_batch_size is None and self.adjustment is None
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
        if self.virtual_batch_size is not None:
            # the parameters broadcast over [virtual batch, batches, ...]: an extra dim 1
            shape = [dim if i == self._axis else 1 for i in range(rank)]
            shape.insert(1, 1)
            self._axis += 1
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
        if self.renorm:
            self._build_renorm(shape)
        self.built = True

    def _build_renorm(self, shape) -> None:
        """Batch renormalization's variables (TF's names and colocation): moving_stddev
        (tracked for inference instead of the variance), renorm_mean and renorm_stddev
        (the training-time averages r and d are computed against)."""
        def moving_stddev_initializer(*args, **kwargs):
            return math_ops.sqrt(self.moving_variance_initializer(*args, **kwargs))

        def renorm_variable(name, initializer):
            return self.add_weight(name, shape=shape, dtype=dtypes.float32,
                                   initializer=initializer, trainable=False)

        with ops.colocate_with(self.moving_variance.op):
            self.moving_stddev = renorm_variable("moving_stddev", moving_stddev_initializer)
        with ops.colocate_with(self.moving_mean.op):
            self.renorm_mean = renorm_variable("renorm_mean", self.moving_mean_initializer)
        with ops.colocate_with(self.moving_stddev.op):
            self.renorm_stddev = renorm_variable("renorm_stddev", moving_stddev_initializer)

    def call(self, inputs, training=False):
        if self.fused:
            return self._fused(inputs, training)
        if self.virtual_batch_size is None:
            return self._plain(inputs, training)
        # ghost batches: [virtual batch, batch / virtual batch, ...], normalized per
        # virtual batch, reshaped back (TF 1's shape: [virtual_batch_size, -1, ...])
        original_shape = array_ops.shape(inputs)
        original_shape = array_ops.concat([array_ops.constant([-1]), original_shape[1:]],
                                          axis=0)
        expanded_shape = array_ops.concat(
            [array_ops.constant([self.virtual_batch_size, -1]), original_shape[1:]], axis=0)
        outputs = self._plain(array_ops.reshape(inputs, expanded_shape), training)
        return array_ops.reshape(outputs, original_shape)

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
        """TF's non-fused path: moments, the moving averages' updates (in UPDATE_OPS) and
        nn.batch_normalization; with renorm, the corrections r and d fold into the scale
        and offset."""
        rank = inputs.shape.rank
        reduction_axes = [i for i in range(rank) if i != self._axis]
        virtual = self.virtual_batch_size is not None
        if virtual:
            del reduction_axes[1]  # not over the virtual batches
        broadcast_shape = [1] * rank
        broadcast_shape[self._axis] = inputs.shape.as_list()[self._axis]

        def _broadcast(v):
            if v is not None and len(v.shape) != rank and \
                    reduction_axes != list(range(rank - 1)):
                return array_ops.reshape(v, broadcast_shape)
            return v

        scale, offset = _broadcast(self.gamma), _broadcast(self.beta)
        value = self._training_value(training)
        if value is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            if self.adjustment:
                scale, offset = self._adjust(inputs, training, scale, offset)
            batch_mean, batch_variance = nn_impl.moments(
                math_ops.cast(inputs, dtypes.float32), reduction_axes, keep_dims=virtual)
            mean = smart_cond(training, lambda: batch_mean,
                              lambda: ops.convert_to_tensor(self.moving_mean))
            variance = smart_cond(training, lambda: batch_variance,
                                  lambda: ops.convert_to_tensor(self.moving_variance))
            if virtual:
                new_mean = math_ops.reduce_mean(mean, axis=1, keepdims=True)
                new_variance = math_ops.reduce_mean(variance, axis=1, keepdims=True)
            else:
                new_mean, new_variance = mean, variance
            if self.renorm:
                r, d, new_mean, new_variance = self._renorm_correction_and_moments(
                    new_mean, new_variance, training)
                r = _broadcast(array_ops.stop_gradient(r, name="renorm_r"))
                d = _broadcast(array_ops.stop_gradient(d, name="renorm_d"))
                scale, offset = _compose_transforms(r, d, scale, offset)
            self.add_update(smart_cond(
                training,
                lambda: self._assign_moving_average(self.moving_mean, new_mean,
                                                    self.momentum),
                lambda: ops.convert_to_tensor(self.moving_mean)))
            self.add_update(smart_cond(
                training, lambda: self._variance_update(new_variance),
                lambda: ops.convert_to_tensor(self.moving_variance)))
        mean = math_ops.cast(mean, inputs.dtype)
        variance = math_ops.cast(variance, inputs.dtype)
        if offset is not None:
            offset = math_ops.cast(offset, inputs.dtype)
        if scale is not None:
            scale = math_ops.cast(scale, inputs.dtype)
        outputs = nn_impl.batch_normalization(inputs, _broadcast(mean), _broadcast(variance),
                                              offset, scale, self.epsilon)
        outputs.set_shape(inputs.shape)
        return outputs

    def _adjust(self, inputs, training, scale, offset):
        """The user's adjustment (a scale and a bias from the input's dynamic shape)
        composed in while training."""
        adj_scale, adj_bias = self.adjustment(array_ops.shape(inputs))
        adj_scale = smart_cond(training, lambda: adj_scale,
                               lambda: array_ops.ones_like_v2(adj_scale))
        adj_bias = smart_cond(training, lambda: adj_bias,
                              lambda: array_ops.zeros_like(adj_bias))
        return _compose_transforms(adj_scale, adj_bias, scale, offset)

    def _variance_update(self, new_variance):
        if not self.renorm:
            return self._assign_moving_average(self.moving_variance, new_variance,
                                               self.momentum)
        # renorm: the moving stddev (epsilon inside, as in training), then the variance
        moving_stddev = self._assign_moving_average(
            self.moving_stddev, math_ops.sqrt(new_variance + self.epsilon), self.momentum)
        return self._assign_new_value(
            self.moving_variance,
            nn_ops.relu(moving_stddev * moving_stddev - self.epsilon))

    def _assign_new_value(self, variable, value):
        with ops.name_scope("AssignNewValue") as scope, ops.colocate_with(variable.op):
            return state_ops.assign(variable, value, name=scope)

    def _renorm_correction_and_moments(self, mean, variance, training):
        """r, d and the mean and variance to update the moving averages with, after the
        renorm averages are updated (TF's _renorm_correction_and_moments)."""
        stddev = math_ops.sqrt(variance + self.epsilon)
        renorm_mean = self.renorm_mean
        renorm_stddev = math_ops.maximum(self.renorm_stddev, math_ops.sqrt(self.epsilon))
        r = stddev / renorm_stddev
        d = (mean - renorm_mean) / renorm_stddev
        with ops.control_dependencies([r, d]):
            mean = array_ops.identity(mean)
            stddev = array_ops.identity(stddev)
        rmin, rmax, dmax = (self.renorm_clipping.get(k) for k in ("rmin", "rmax", "dmax"))
        if rmin is not None:
            r = math_ops.maximum(r, rmin)
        if rmax is not None:
            r = math_ops.minimum(r, rmax)
        if dmax is not None:
            d = math_ops.maximum(d, -dmax)
            d = math_ops.minimum(d, dmax)
        r = smart_cond(training, lambda: r, lambda: array_ops.ones_like_v2(r))
        d = smart_cond(training, lambda: d, lambda: array_ops.zeros_like(d))

        def update(var, value):
            value = array_ops.identity(value)
            return smart_cond(
                training,
                lambda: self._assign_moving_average(var, value, self.renorm_momentum),
                lambda: array_ops.identity(var))

        update_new_mean = update(self.renorm_mean, mean)
        update_new_stddev = update(self.renorm_stddev, stddev)
        with ops.control_dependencies([update_new_mean, update_new_stddev]):
            out_mean = array_ops.identity(mean)
            out_variance = array_ops.identity(variance)
        return r, d, out_mean, out_variance


def _compose_transforms(scale, offset, then_scale, then_offset):
    """(scale, offset) of x -> (x * scale + offset) * then_scale + then_offset."""
    if then_scale is not None:
        scale *= then_scale
        offset *= then_scale
    if then_offset is not None:
        offset += then_offset
    return scale, offset


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
