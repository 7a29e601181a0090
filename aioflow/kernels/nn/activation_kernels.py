"""CPU kernels (NumPy) for activations, Softmax/LogSoftmax and BiasAdd.

half/bfloat16 compute in float32 and round once; constants are typed so that outputs
keep the input dtype.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import attr_text, register_kernel
from aioflow.kernels.element_threads import for_ranges
from aioflow.kernels.math.cwise_kernels import (
    BIG,
    CwiseKernel,
    UnaryKernel,
    quiet,
    shape_str,
    via_float32,
)
from aioflow.kernels.nn import activation_jit
from aioflow.kernels.nn.pass_placement import CallingThreadPass, whole_pass

_SELU_SCALE = 1.0507009873554804934193349852946
_SELU_ALPHA = 1.6732632423543772848170429916717
_NON_QUANTIZED_REAL = [
    dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
    dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16, dtypes.uint32, dtypes.uint64]


class _Activation(UnaryKernel):
    """activations = f(features)."""


def _typed(dtype, value):
    return np.array(value).astype(dtype.as_numpy_dtype)[()]


#: Elements from which Relu/Relu6 run their compiled loop (NumPy's maximum below: a
#: numba call's dispatch costs more than a small array's pass).
COMPILED_FROM = 1 << 14


def _large(numpy_ranges, compiled_ranges):
    """An activation of a large C-contiguous float32/float64 tensor: its flat ranges
    through the compiled loop (NumPy's until it is compiled), in one piece up to
    pass_placement.WHOLE_PASS elements, above shared among the intra-op threads."""
    def fn(x):
        out = np.empty(x.shape, x.dtype)
        src, dst = x.reshape(-1), out.reshape(-1)
        ranges = compiled_ranges if activation_jit.ready() else numpy_ranges
        if whole_pass(src.size):
            ranges(src, dst, 0, src.size)
            return out
        for_ranges(src.size, lambda lo, hi: ranges(src, dst, lo, hi))
        return out
    return fn


def _sized(dtype, small, numpy_ranges, compiled_ranges):
    """`small` for small or strided inputs (and types the loops do not take), the
    compiled, threaded path for large ones."""
    if np.dtype(dtype.as_numpy_dtype) not in activation_jit.TYPES:
        return small
    large = _large(numpy_ranges, compiled_ranges)

    def fn(x):
        if not isinstance(x, np.ndarray) or x.size < COMPILED_FROM or \
                not x.flags.c_contiguous:
            return small(x)
        return large(x)
    return fn


@register_kernel("Relu", "CPU", T=_NON_QUANTIZED_REAL)
class ReluOp(CallingThreadPass, _Activation):
    """max(features, 0); NaN stays NaN. Where it runs: pass_placement.py."""

    def make_fn(self, dtype):
        zero = _typed(dtype, 0)

        def numpy_ranges(x, out, lo, hi):
            np.maximum(x[lo:hi], zero, out=out[lo:hi])

        return _sized(dtype, lambda x: np.maximum(x, zero), numpy_ranges,
                      activation_jit.relu)


@register_kernel("Relu6", "CPU")
class Relu6Op(CallingThreadPass, _Activation):
    """min(max(features, 0), 6). Where it runs: pass_placement.py."""

    def make_fn(self, dtype):
        zero, six = _typed(dtype, 0), _typed(dtype, 6)

        def numpy_ranges(x, out, lo, hi):
            part = out[lo:hi]
            np.maximum(x[lo:hi], zero, out=part)
            np.minimum(part, six, out=part)

        return _sized(dtype, lambda x: np.minimum(np.maximum(x, zero), six), numpy_ranges,
                      activation_jit.relu6)


def _elu(x):
    return np.where(x < 0, np.expm1(x), x)


def _selu(x):
    return np.where(x < 0, (_SELU_SCALE * _SELU_ALPHA) * np.expm1(x), _SELU_SCALE * x)


def _softplus(x):
    return np.logaddexp(np.zeros((), x.dtype), x)


def _softsign(x):
    return x / (1 + np.abs(x))


@register_kernel("Elu", "CPU")
class EluOp(_Activation):
    """x if x >= 0 else exp(x) - 1."""

    def make_fn(self, dtype):
        return quiet(via_float32(_elu, dtype))


@register_kernel("Selu", "CPU")
class SeluOp(_Activation):
    """scale * (x if x >= 0 else alpha * (exp(x) - 1))."""

    def make_fn(self, dtype):
        return quiet(via_float32(_selu, dtype))


@register_kernel("Softplus", "CPU")
class SoftplusOp(_Activation):
    """log(1 + exp(x)), computed without overflow."""

    def make_fn(self, dtype):
        return quiet(via_float32(_softplus, dtype))


@register_kernel("Softsign", "CPU")
class SoftsignOp(_Activation):
    """x / (1 + |x|)."""

    def make_fn(self, dtype):
        return via_float32(_softsign, dtype)


@register_kernel("LeakyRelu", "CPU")
class LeakyReluOp(_Activation):
    """x if x > 0 else alpha * x."""

    def __init__(self, ctx):
        self._alpha = ctx.get_attr("alpha", 0.2)
        super().__init__(ctx)

    def make_fn(self, dtype):
        alpha = _typed(dtype, self._alpha)
        return lambda x: np.where(x > 0, x, x * alpha)


def _softmax(x):
    # the array methods, not np.max / np.sum: those add ~3 µs of dispatch a call, most
    # of a small softmax (a served model's last node)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _log_softmax(x):
    shifted = x - np.max(x, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


class _SoftmaxBase(CwiseKernel):
    """Softmax over the last dimension of logits (rank >= 1)."""

    formula = staticmethod(_softmax)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._fn = quiet(via_float32(self.formula, ctx.get_attr("T")))

    def compute(self, ctx, inputs):
        x = inputs[0]
        if x.ndim < 1:
            raise errors.InvalidArgumentError(
                None, None, f"logits must have >= 1 dimension, got {shape_str(x.shape)}")
        if x.size == 0:
            return (x,)
        return (self._fn(x),)


@register_kernel("Softmax", "CPU")
class SoftmaxOp(_SoftmaxBase):
    """exp(x) / sum(exp(x)) along the last axis."""


@register_kernel("LogSoftmax", "CPU")
class LogSoftmaxOp(_SoftmaxBase):
    """x - log(sum(exp(x))) along the last axis."""

    formula = staticmethod(_log_softmax)


_NON_QUANTIZED_NUMBERS = _NON_QUANTIZED_REAL + [dtypes.complex64, dtypes.complex128]


@register_kernel("BiasAdd", "CPU", T=_NON_QUANTIZED_NUMBERS)
class BiasAddOp(CwiseKernel):
    """value + bias along the channel dimension (last for NHWC, 1 for NCHW)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        fmt = ctx.get_attr("data_format", b"NHWC")
        self._nchw = attr_text(fmt) == "NCHW"

    def compute(self, ctx, inputs):
        x, bias = inputs
        if x.ndim < 2:
            raise errors.InvalidArgumentError(
                None, None, f"Input tensor must be at least 2D: {shape_str(x.shape)}")
        if bias.ndim != 1:
            raise errors.InvalidArgumentError(
                None, None, f"Biases must be 1D: {shape_str(bias.shape)}")
        channel = 1 if self._nchw else x.ndim - 1
        if bias.shape[0] != x.shape[channel]:
            raise errors.InvalidArgumentError(
                None, None,
                "Must provide as many biases as the last dimension of the input tensor: "
                f"{shape_str(bias.shape)} vs. {shape_str(x.shape)}")
        if self._nchw and x.ndim > 2:
            bias = bias.reshape((-1,) + (1,) * (x.ndim - 2))
        return (np.add(x, bias),)

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size > BIG
