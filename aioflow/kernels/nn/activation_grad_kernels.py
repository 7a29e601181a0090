"""CPU kernels of the activation gradients (ReluGrad, Relu6Grad, EluGrad, SeluGrad,
LeakyReluGrad, SoftplusGrad, SoftsignGrad), BiasAddGrad, and the softmax cross-entropies
(SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits), which give the loss
and its gradient (softmax - labels) in one pass, as TF's kernels do."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, CwiseKernel, shape_str, via_float32

_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717


class _ActivationGrad(CwiseKernel):
    """backprops = f(gradients, features-or-outputs); the two inputs have one shape."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._fn = via_float32(self.make_fn(ctx), ctx.get_attr("T"))

    def make_fn(self, ctx):
        raise NotImplementedError

    def compute(self, ctx, inputs):
        g, x = inputs
        if np.shape(g) != np.shape(x):
            raise errors.InvalidArgumentError(
                None, None, "gradients and features must have the same shape: "
                f"{shape_str(np.shape(g))} vs. {shape_str(np.shape(x))}")
        return (np.asarray(self._fn(g, x)).astype(np.asarray(g).dtype, copy=False),)


def _register(op_type: str, fn_of_ctx, **constraints):
    cls = type(op_type + "Op", (_ActivationGrad,), {
        "make_fn": lambda self, ctx: fn_of_ctx(ctx), "__doc__": f"CPU kernel for {op_type}."})
    register_kernel(op_type, "CPU", **constraints)(cls)


def _zero_of(g):
    return np.zeros((), np.asarray(g).dtype)


_register("ReluGrad", lambda ctx: lambda g, x: np.where(x > 0, g, _zero_of(g)))
_register("Relu6Grad", lambda ctx: lambda g, x: np.where((x > 0) & (x < 6), g, _zero_of(g)))
_register("EluGrad", lambda ctx: lambda g, y: np.where(y < 0, g * (y + 1), g))
_register("SeluGrad", lambda ctx: lambda g, y: np.where(
    y < 0, g * (y + _SELU_SCALE * _SELU_ALPHA), g * _SELU_SCALE))


def _leaky_relu_grad(ctx):
    alpha = ctx.get_attr("alpha", 0.2)
    return lambda g, x: np.where(x > 0, g, g * np.asarray(alpha, np.asarray(g).dtype))


_register("LeakyReluGrad", _leaky_relu_grad)
_register("SoftplusGrad", lambda ctx: lambda g, x: g / (1 + np.exp(-x)))
_register("SoftsignGrad", lambda ctx: lambda g, x: g / np.square(1 + np.abs(x)))


@register_kernel("BiasAddGrad", "CPU")
class BiasAddGradOp(CwiseKernel):
    """The sum of out_backprop over every dimension but the channel one."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._nchw = attr_text(ctx.get_attr("data_format", b"NHWC")) == "NCHW"

    def compute(self, ctx, inputs):
        g = np.asarray(inputs[0])
        if g.ndim < 2:
            raise errors.InvalidArgumentError(
                None, None, f"Input tensor must be at least 2D: {shape_str(g.shape)}")
        channel = 1 if self._nchw else g.ndim - 1
        axes = tuple(i for i in range(g.ndim) if i != channel)
        acc = np.float32 if g.dtype in (np.float16,) or g.dtype.name == "bfloat16" else None
        return (np.sum(g, axis=axes, dtype=acc).astype(g.dtype, copy=False),)

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > BIG


def _log_softmax(x):
    shifted = x - np.maximum.reduce(x, axis=-1, keepdims=True)
    sums = np.add.reduce(np.exp(shifted), axis=-1, keepdims=True)
    shifted -= np.log(sums, out=sums)
    return shifted


def _xent(logits, labels_fn):
    """(loss, backprop) of float32/64 logits, labels given by `labels_fn(log_softmax)`."""
    log_sm = _log_softmax(logits)
    labels = labels_fn(log_sm)
    loss = -np.sum(labels * log_sm, axis=-1)
    return loss, np.exp(log_sm) - labels


def _compute_dtype(dtype):
    return np.float32 if dtype in (dtypes.float16, dtypes.bfloat16) else dtype.as_numpy_dtype


@register_kernel("SoftmaxCrossEntropyWithLogits", "CPU")
class SoftmaxCrossEntropyWithLogitsOp(OpKernel):
    """loss[i] = -sum(labels[i] * log_softmax(features[i])), backprop = softmax - labels;
    features and labels broadcast to one [batch, classes] shape."""

    def compute(self, ctx, inputs):
        features, labels = np.asarray(inputs[0]), np.asarray(inputs[1])
        out_dtype = features.dtype
        try:
            shape = np.broadcast_shapes(features.shape, labels.shape)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, "logits and labels must be broadcastable: logits_size="
                f"{shape_str(features.shape)} labels_size={shape_str(labels.shape)}") from None
        if len(shape) != 2:
            raise errors.InvalidArgumentError(
                None, None, "logits and labels must be either 2-dimensional, or "
                "broadcasted to be 2-dimensional")
        compute = _compute_dtype(dtypes.as_dtype(out_dtype))
        f = np.broadcast_to(features, shape).astype(compute, copy=False)
        lab = np.broadcast_to(labels, shape).astype(compute, copy=False)
        if f.shape[1] == 0:
            return (np.zeros(shape[0], out_dtype), np.zeros(shape, out_dtype))
        loss, backprop = _xent(f, lambda _: lab)
        return (loss.astype(out_dtype), backprop.astype(out_dtype))


@register_kernel("SparseSoftmaxCrossEntropyWithLogits", "CPU")
class SparseSoftmaxCrossEntropyWithLogitsOp(OpKernel):
    """loss[i] = -log_softmax(features[i])[labels[i]], backprop = softmax - one_hot;
    a label outside [0, classes) is InvalidArgument."""

    def compute(self, ctx, inputs):
        features, labels = np.asarray(inputs[0]), np.asarray(inputs[1])
        if features.ndim != 2:
            raise errors.InvalidArgumentError(
                None, None, f"logits must be 2-D, but got shape {shape_str(features.shape)}")
        if labels.ndim != 1:
            raise errors.InvalidArgumentError(
                None, None, f"labels must be 1-D, but got shape {shape_str(labels.shape)}")
        if features.shape[0] != labels.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, "logits and labels must have the same first dimension, got "
                f"logits shape {shape_str(features.shape)} and labels shape "
                f"{shape_str(labels.shape)}")
        classes = features.shape[1]
        if classes == 0 and features.shape[0] > 0:
            raise errors.InvalidArgumentError(
                None, None, "Must have at least one class, but got logits shape "
                f"{shape_str(features.shape)}")
        if labels.size and (labels.min() < 0 or labels.max() >= classes):
            bad = (labels < 0) | (labels >= classes)
            value = int(labels[np.argmax(bad)])
            raise errors.InvalidArgumentError(
                None, None, f"Received a label value of {value} which is outside the valid "
                f"range of [0, {classes}).  Label values: "
                + " ".join(str(int(v)) for v in labels))
        out_dtype = features.dtype
        f = features.astype(_compute_dtype(dtypes.as_dtype(out_dtype)), copy=False)
        if f.size == 0:
            return (np.zeros(f.shape[0], out_dtype), np.zeros(f.shape, out_dtype))
        # _xent's values with a one-hot row, without the one-hot: -sum(one_hot * log_sm)
        # is -log_sm[label] (the other terms are zeros), exp(log_sm) - one_hot subtracts
        # 1 at the label only; a few passes fewer (64x10: 32 -> 12 us)
        log_sm = _log_softmax(f)
        rows = np.arange(labels.shape[0])
        loss = np.negative(log_sm[rows, labels])
        backprop = np.exp(log_sm, out=log_sm)
        backprop[rows, labels] -= 1
        return (loss.astype(out_dtype, copy=False), backprop.astype(out_dtype, copy=False))
