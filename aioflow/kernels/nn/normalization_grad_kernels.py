"""CPU kernels (NumPy) for the normalisation gradients: FusedBatchNormGrad/V2/V3 and
LRNGrad, with TF 2.21's checks and messages.

Batch norm, training (reserve_space_1/2 are the batch mean and biased variance the
forward op saved):
    dx = scale / sqrt(var + eps) * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean))
         / (var + eps)),
inference (reserve_space_1/2 are the population statistics): dx = dy * scale /
sqrt(var + eps); both: dscale = sum(dy * (x - mean)) / sqrt(var + eps), doffset =
sum(dy), over every axis but the channels'. The reserve_space outputs are empty, as TF's
CPU kernel leaves them; V3's reserve_space_3 input is not read on CPU. half/bfloat16
compute in float32 (TF's U) and round once.

LRN: with norm_j = bias + alpha * (sum of x^2 over channels j-r..j+r), TF's kernel
gives each input channel k
    dx_k = g_k * norm_k^-beta - 2 * alpha * beta * x_k * sum_j g_j * out_j / norm_j
over the channels j whose window holds k (out is LRN's output as given): one windowed
sum (a cumulative sum along the channels) for the norms and one for the second term.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str
from aioflow.kernels.nn.conv_kernels import attr_str, invalid

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)


class _FusedBatchNormGradBase(OpKernel):
    expensive = None
    pool_above = BIG
    compilable = True
    version = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._np_type = dtype.as_numpy_dtype
        self._u_type = (ctx.get_attr("U").as_numpy_dtype if ctx.has_attr("U")
                        else self._np_type)
        self._epsilon = float(ctx.get_attr("epsilon", 0.0001))
        self._training = bool(ctx.get_attr("is_training", True))
        fmt = attr_str(ctx, "data_format", "NHWC")
        formats = ("NHWC", "NCHW", "NDHWC", "NCDHW") if self.version == 3 else ("NHWC",
                                                                                "NCHW")
        if fmt not in formats:
            raise invalid("Invalid data format")
        self._format = fmt
        self._channels_first = fmt.startswith("NC")

    def compute(self, ctx, inputs):
        dy, x, scale, mean, var = inputs[:5]
        for t in (dy, x):
            if t.ndim not in (4, 5):
                raise invalid(f"input must be 4 or 5-dimensional{shape_str(t.shape)}")
        for name, t in (("scale", scale), ("saved mean", mean), ("saved variance", var)):
            if t.ndim != 1:
                raise invalid(f"{name} must be 1-dimensional{shape_str(t.shape)}")
        if x.shape != dy.shape:
            raise invalid(f"x and y_backprop must have same shape, but x has shape "
                          f"{shape_str(x.shape)} and y_backprop has shape "
                          f"{shape_str(dy.shape)}")
        axis = 1 if self._channels_first else x.ndim - 1
        channels = x.shape[axis]
        for name, t in (("scale", scale), ("reserve_space_1", mean),
                        ("reserve_space_2", var)):
            if t.shape[0] != channels:
                raise invalid(f"{name} must have the same number of elements as the channels "
                              f"of x, got {t.shape[0]} and {channels}")
        if not self._training and self._format == "NCDHW":
            raise invalid("The implementation of FusedBatchNormGrad with is_training=False "
                          "only support NHWC tensor format for now.")
        shape = [1] * x.ndim
        shape[axis] = channels
        axes = tuple(i for i in range(x.ndim) if i != axis)
        xf = x.astype(np.float32, copy=False)
        dyf = dy.astype(np.float32, copy=False)
        mean_f = mean.astype(np.float32).reshape(shape)
        inv = (np.float32(1) / np.sqrt(var.astype(np.float32) + np.float32(self._epsilon)))
        centered = xf - mean_f
        offset_bp = dyf.sum(axis=axes, dtype=np.float64).astype(np.float32)
        dot = (dyf * centered).sum(axis=axes, dtype=np.float64).astype(np.float32)
        scale_bp = dot * inv
        coef = scale.astype(np.float32) * inv
        if self._training and x.size:
            count = np.float32(x.size // channels)
            dx = dyf - (offset_bp / count).reshape(shape)
            dx -= centered * (dot / count * inv * inv).reshape(shape)
            dx *= coef.reshape(shape)
        else:
            dx = dyf * coef.reshape(shape)
        u = self._u_type
        empty = np.zeros(0, u)
        return [dx.astype(self._np_type, copy=False), scale_bp.astype(u),
                offset_bp.astype(u), empty, empty]

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[1]) > 1 << 16


@register_kernel("FusedBatchNormGrad", "CPU", T=dtypes.float32)
class FusedBatchNormGradOp(_FusedBatchNormGradBase):
    """The gradients of FusedBatchNorm with respect to x, scale and offset."""


@register_kernel("FusedBatchNormGradV2", "CPU",
                 T=[dtypes.float16, dtypes.bfloat16, dtypes.float32], U=dtypes.float32)
class FusedBatchNormGradV2Op(_FusedBatchNormGradBase):
    """FusedBatchNormGrad with float statistics for half/bfloat16 x."""

    version = 2


@register_kernel("FusedBatchNormGradV3", "CPU",
                 T=[dtypes.float16, dtypes.bfloat16, dtypes.float32], U=dtypes.float32)
class FusedBatchNormGradV3Op(_FusedBatchNormGradBase):
    """FusedBatchNormGradV2 with a reserve_space_3 input and 5-D formats."""

    version = 3


def _window_sum(v: np.ndarray, radius: int) -> np.ndarray:
    """Sum of v over channels [j - radius, j + radius] (clipped) for each channel j."""
    depth = v.shape[-1]
    csum = np.zeros(v.shape[:-1] + (depth + 1,), np.float32)
    np.cumsum(v, axis=-1, out=csum[..., 1:])
    hi = np.minimum(np.arange(depth) + radius + 1, depth)
    lo = np.maximum(np.arange(depth) - radius, 0)
    return csum[..., hi] - csum[..., lo]


@register_kernel("LRNGrad", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32])
class LRNGradOp(OpKernel):
    """The gradient of LRN with respect to its input."""

    expensive = None
    pool_above = BIG
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        radius = int(ctx.get_attr("depth_radius", 5))
        if radius > 2**31 - 1 or radius < -(2**31):
            raise invalid(f"depth_radius = {radius} larger than int max")
        self._radius = radius
        self._bias = np.float32(ctx.get_attr("bias", 1.0))
        self._alpha = np.float32(ctx.get_attr("alpha", 1.0))
        self._beta = np.float32(ctx.get_attr("beta", 0.5))
        self._np_type = ctx.get_attr("T").as_numpy_dtype

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > 1 << 16

    def compute(self, ctx, inputs):
        g, x, y = inputs
        if g.ndim != 4 or x.ndim != 4:
            raise invalid("inputs must be 4-dimensional")
        if x.shape != g.shape or y.shape != g.shape:
            raise invalid("input_grads, input_image, and out_image should have the same "
                          "shape")
        gf, xf, yf = (t.astype(np.float32, copy=False) for t in (g, x, y))
        r = max(0, self._radius)
        norm = self._bias + self._alpha * _window_sum(np.square(xf), r)
        dx = gf * np.power(norm, -self._beta)
        dx -= (np.float32(2) * self._alpha * self._beta) * xf * _window_sum(gf * yf / norm, r)
        return (dx.astype(self._np_type, copy=False),)
