"""CPU kernels of the activation gradients (ReluGrad, Relu6Grad, EluGrad, SeluGrad,
LeakyReluGrad, SoftplusGrad, SoftsignGrad), BiasAddGrad, and the softmax cross-entropies
(SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits), which give the loss
and its gradient (softmax - labels) in one pass, as TF's kernels do."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.element_threads import for_ranges
from aioflow.kernels.math.cwise_kernels import BIG, CwiseKernel, shape_str, via_float32
from aioflow.kernels.nn import activation_grad_jit
from aioflow.kernels.nn.pass_placement import CallingThreadPass, whole_pass

_HALF = (dtypes.float16, dtypes.bfloat16)
#: Logit types the cross-entropies compute in (half and bfloat16 in float32).
_EXACT = (np.dtype(np.float32), np.dtype(np.float64))
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


def _register(op_type: str, fn_of_ctx, bases=(_ActivationGrad,), **constraints):
    cls = type(op_type + "Op", bases, {
        "make_fn": lambda self, ctx: fn_of_ctx(ctx), "__doc__": f"CPU kernel for {op_type}."})
    register_kernel(op_type, "CPU", **constraints)(cls)


#: Elements from which ReluGrad/Relu6Grad run their compiled loop (NumPy below: a numba
#: call's dispatch costs more than a small array's pass). CPU time a call, float32:
#: 1,024 elements 1.41 µs in NumPy, 0.48 compiled; 8,192 2.61 against 0.99.
COMPILED_FROM = 1 << 10


def _masked(numpy_fn, compiled_ranges):
    """g * mask(x) (TF's formula: a NaN or infinite g where the mask is 0 gives NaN):
    NumPy's `numpy_fn` for small, strided or non-float inputs, else the compiled loop
    over flat ranges: in one piece up to pass_placement.WHOLE_PASS elements, above
    shared among the intra-op threads."""
    def fn(g, x):
        if not (isinstance(g, np.ndarray) and isinstance(x, np.ndarray)) or \
                g.size < COMPILED_FROM or g.dtype != x.dtype or \
                g.dtype not in activation_grad_jit.TYPES or not activation_grad_jit.ready() \
                or not (g.flags.c_contiguous and x.flags.c_contiguous):
            return numpy_fn(g, x)
        out = np.empty(g.shape, g.dtype)
        gs, xs, ys = g.reshape(-1), x.reshape(-1), out.reshape(-1)
        if whole_pass(ys.size):
            compiled_ranges(gs, xs, ys, 0, ys.size)
            return out
        for_ranges(ys.size, lambda lo, hi: compiled_ranges(gs, xs, ys, lo, hi))
        return out
    return fn


_relu_grad = _masked(lambda g, x: g * (x > 0), activation_grad_jit.relu_grad)
_relu6_grad = _masked(lambda g, x: g * ((x > 0) & (x < 6)), activation_grad_jit.relu6_grad)
# Where they run: pass_placement.py.
_register("ReluGrad", lambda ctx: _relu_grad, (CallingThreadPass, _ActivationGrad))
_register("Relu6Grad", lambda ctx: _relu6_grad, (CallingThreadPass, _ActivationGrad))
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
        # half and bfloat16 sum in float32 and round once
        self._acc = np.float32 if ctx.get_attr("T") in _HALF else None

    def compute(self, ctx, inputs):
        g = np.asarray(inputs[0])
        if g.ndim < 2:
            raise errors.InvalidArgumentError(
                None, None, f"Input tensor must be at least 2D: {shape_str(g.shape)}")
        if g.ndim == 2 and not self._nchw:  # a dense layer's: the column sums
            return (np.add.reduce(g, axis=0, dtype=self._acc).astype(g.dtype, copy=False),)
        channel = 1 if self._nchw else g.ndim - 1
        axes = tuple(i for i in range(g.ndim) if i != channel)
        return (np.sum(g, axis=axes, dtype=self._acc).astype(g.dtype, copy=False),)

    def compiled_fn(self):
        """For float32/float64 in NHWC (an RNN cell's bias, every step of its gradient
        loop): the same sum, without compute's checks and conversions (anything else
        goes through compute)."""
        if self._nchw:
            return None
        reduce = np.add.reduce

        def bias_add_grad(g):
            if type(g) is not np.ndarray or g.dtype.kind != "f" or g.dtype.itemsize < 4 \
                    or g.ndim < 2:
                return self.compute(None, [g])[0]
            return reduce(g, axis=0 if g.ndim == 2 else tuple(range(g.ndim - 1)))
        return bias_add_grad

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > BIG


def _softmax_parts(logits):
    """(logits - max, exp of that, its sum) per row, as TF's kernels compute them."""
    shifted = logits - logits.max(axis=-1, keepdims=True)  # (methods: no NumPy wrapper)
    e = np.exp(shifted)
    return shifted, e, e.sum(axis=-1, keepdims=True)


def _xent(logits, labels):
    """(loss, backprop) of float32/64 logits and dense labels, TF's formulas: loss =
    sum(labels * (log(sum(exp(shifted))) - shifted)), backprop = exp(shifted) /
    sum(exp(shifted)) - labels, shifted = logits - max."""
    shifted, e, total = _softmax_parts(logits)
    loss = np.sum(labels * (np.log(total) - shifted), axis=-1)
    e /= total
    e -= labels
    return loss, e


def _sparse_xent(logits, labels):
    """(loss, backprop) of float32/64 logits and in-range class indices, TF's formulas:
    loss = log(sum(exp(shifted))) - shifted[label] (other classes' values never enter:
    a -inf logit elsewhere leaves the loss finite), backprop = softmax - one_hot."""
    # each row's label as a flat index into the [batch, classes] arrays
    at = np.arange(0, labels.shape[0] * logits.shape[1], logits.shape[1])
    at += labels
    shifted, e, total = _softmax_parts(logits)
    loss = np.log(total[:, 0])
    loss -= shifted.take(at)
    e /= total
    flat = e.reshape(-1)
    flat[at] -= 1
    return loss, e


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
        loss, backprop = _xent(f, lab)
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
        if classes == 0:  # TF 2.21: even for an empty batch
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
        f = features if out_dtype in _EXACT else features.astype(np.float32)
        loss, backprop = _sparse_xent(f, labels)
        return (loss.astype(out_dtype, copy=False), backprop.astype(out_dtype, copy=False))
