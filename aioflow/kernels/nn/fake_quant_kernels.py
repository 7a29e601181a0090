"""Kernels of FakeQuantWithMinMaxArgs / Vars / VarsPerChannel: values clamped to a range
nudged so that zero is exactly representable, then rounded to one of 2**num_bits levels
(from 1 with narrow_range), computed in float32 step by step as TF's functor does (so
the results are TF's to the bit)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str

_F = np.float32


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def nudge(low, high, quant_min: int, quant_max: int):
    """(nudged min, nudged max, scale, 1/scale) in float32, elementwise (TF's Nudge: the
    zero point rounded half away from zero, as std::round)."""
    low, high = _F(low), _F(high)
    qmin, qmax = _F(quant_min), _F(quant_max)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        scale = (high - low) / (qmax - qmin)
        inv_scale = (qmax - qmin) / (high - low)
        zero_from_min = qmin - low / scale
        rounded = np.floor(np.asarray(zero_from_min, np.float64) + 0.5).astype(_F)
        zero = np.where(zero_from_min < qmin, qmin,
                        np.where(zero_from_min > qmax, qmax, rounded)).astype(_F)
        return (qmin - zero) * scale, (qmax - zero) * scale, scale, inv_scale


def fake_quant(x: np.ndarray, low, high, num_bits: int, narrow: bool,
               divide: bool = False) -> np.ndarray:
    """TF's functor: clamp to the nudged range, round to a level, scale back; `divide`
    divides by the scale where the Vars kernel does (instead of multiplying by 1/scale).
    A channel whose min and max are both 0 is all zeros."""
    quant_min = 1 if narrow else 0
    quant_max = (1 << num_bits) - 1
    nmin, nmax, scale, inv_scale = nudge(low, high, quant_min, quant_max)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        quant_zero = np.floor(-nmin * inv_scale + _F(0.5))
        shifted = np.maximum(np.minimum(x.astype(_F), nmax), nmin) - nmin
        levels = shifted / scale if divide else shifted * inv_scale
        out = (np.floor(levels - quant_zero + _F(0.5)) * scale).astype(_F)
    both_zero = (np.asarray(low) == 0) & (np.asarray(high) == 0)
    return np.where(both_zero, _F(0), out).astype(_F) if np.any(both_zero) else out


class _FakeQuant(OpKernel):
    expensive = None
    pool_above = BIG

    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_bits = int(ctx.get_attr("num_bits", 8))
        self.narrow = bool(ctx.get_attr("narrow_range", False))
        if not 2 <= self.num_bits <= 16:
            raise _invalid("num_bits must be between 2 and 16, inclusive")


@register_kernel("FakeQuantWithMinMaxArgs", "CPU")
class FakeQuantArgsOp(_FakeQuant):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.low = float(ctx.get_attr("min", -6.0))
        self.high = float(ctx.get_attr("max", 6.0))
        if self.low >= self.high:
            raise _invalid(f"min has to be smaller than max, was: {self.low:g} >= "
                           f"{self.high:g}")
        if self.low > 0 or self.high < 0:
            raise _invalid(f"min <= 0 <= max must hold, was: min: {self.low:g}, "
                           f"max: {self.high:g}")

    def compute(self, ctx, inputs):
        return (fake_quant(np.asarray(inputs[0]), self.low, self.high, self.num_bits,
                           self.narrow),)


@register_kernel("FakeQuantWithMinMaxVars", "CPU")
class FakeQuantVarsOp(_FakeQuant):
    def compute(self, ctx, inputs):
        low, high = np.asarray(inputs[1]), np.asarray(inputs[2])
        for name, v in (("min", low), ("max", high)):
            if v.ndim != 0:
                raise _invalid(f"`{name}` must be rank 0 but is rank {v.ndim}")
        return (fake_quant(np.asarray(inputs[0]), low, high, self.num_bits, self.narrow,
                           divide=True),)


@register_kernel("FakeQuantWithMinMaxVarsPerChannel", "CPU")
class FakeQuantPerChannelOp(_FakeQuant):
    def compute(self, ctx, inputs):
        x, low, high = (np.asarray(v) for v in inputs)
        depth = x.shape[-1] if x.ndim else None
        for name, v in (("min", low), ("max", high)):
            if v.ndim != 1 or v.shape[0] != depth:
                raise _invalid(f"{name} has incorrect size, expected {depth} was "
                               f"{shape_str(v.shape)}")
        return (fake_quant(x, low, high, self.num_bits, self.narrow),)
