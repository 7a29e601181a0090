"""CPU kernels of the fake-quantization gradients (FakeQuantWithMinMaxArgsGradient,
FakeQuantWithMinMaxVarsGradient, FakeQuantWithMinMaxVarsPerChannelGradient): the gradient
passes where the input lies in the nudged [min, max]; below (above) it, it goes to min
(max), summed."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.nn.fake_quant_kernels import nudge

_F = np.float32


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class _FakeQuantGrad(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_bits = int(ctx.get_attr("num_bits", 8))
        self.narrow = bool(ctx.get_attr("narrow_range", False))
        if not 2 <= self.num_bits <= 16:
            raise _invalid("num_bits must be between 2 and 16, inclusive")

    def _nudged(self, low, high):
        quant_min = 1 if self.narrow else 0
        nmin, nmax, _, _ = nudge(low, high, quant_min, (1 << self.num_bits) - 1)
        return nmin, nmax

    @staticmethod
    def _same_shape(g, x) -> None:
        if g.shape != x.shape:
            raise _invalid(f"gradients and inputs must be the same size: "
                           f"{shape_str(g.shape)} vs {shape_str(x.shape)}")


@register_kernel("FakeQuantWithMinMaxArgsGradient", "CPU")
class FakeQuantArgsGradOp(_FakeQuantGrad):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.low = float(ctx.get_attr("min", -6.0))
        self.high = float(ctx.get_attr("max", 6.0))

    def compute(self, ctx, inputs):
        g, x = np.asarray(inputs[0], _F), np.asarray(inputs[1], _F)
        self._same_shape(g, x)
        nmin, nmax = self._nudged(self.low, self.high)
        return (np.where((x >= nmin) & (x <= nmax), g, _F(0)).astype(_F),)


@register_kernel("FakeQuantWithMinMaxVarsGradient", "CPU")
class FakeQuantVarsGradOp(_FakeQuantGrad):
    def compute(self, ctx, inputs):
        g, x, low, high = (np.asarray(v, _F) for v in inputs)
        self._same_shape(g, x)
        for name, v in (("min", low), ("max", high)):
            if v.ndim != 0:
                raise _invalid(f"`{name}` must be rank 0 but is rank {v.ndim}")
        nmin, nmax = self._nudged(low, high)
        below, above = x < nmin, x > nmax
        return (np.where(~below & ~above, g, _F(0)).astype(_F),
                _F(np.sum(g[below], dtype=np.float64)), _F(np.sum(g[above], dtype=np.float64)))


@register_kernel("FakeQuantWithMinMaxVarsPerChannelGradient", "CPU")
class FakeQuantPerChannelGradOp(_FakeQuantGrad):
    def compute(self, ctx, inputs):
        g, x, low, high = (np.asarray(v, _F) for v in inputs)
        self._same_shape(g, x)
        depth = x.shape[-1] if x.ndim else None
        for name, v in (("min", low), ("max", high)):
            if v.ndim != 1 or v.shape[0] != depth:
                raise _invalid(f"{name} has incorrect size, expected {depth} was "
                               f"{shape_str(v.shape)}")
        nmin, nmax = self._nudged(low, high)
        below, above = x < nmin, x > nmax
        axes = tuple(range(x.ndim - 1))
        return (np.where(~below & ~above, g, _F(0)).astype(_F),
                np.sum(np.where(below, g, _F(0)), axis=axes).astype(_F),
                np.sum(np.where(above, g, _F(0)), axis=axes).astype(_F))
