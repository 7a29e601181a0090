"""CPU kernels (NumPy) for the normalisation gradients: FusedBatchNormGrad/V2/V3 and
LRNGrad, with TF 2.21's checks and messages.

Batch norm, training (reserve_space_1/2 are the batch mean and biased variance the
forward op saved):
    dx = scale / sqrt(var + eps) * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean))
         / (var + eps)),
inference (reserve_space_1/2 are the population statistics): dx = dy * scale /
sqrt(var + eps); both: dscale = sum(dy * (x - mean)) / sqrt(var + eps), doffset =
sum(dy), over every axis but the channels'. Computed channels-last as dx = dy * a +
x * b + k per channel from two sums, sum(dy) and sum(dy * x) (float64): with numba
(kernels/nn/batch_norm_grad_jit.py) one pass for the sums and one for dx, blocks shared
among threads. The reserve_space outputs are empty, as TF's CPU kernel leaves them; V3's
reserve_space_3 input is not read on CPU. half/bfloat16 compute in float32 (TF's U) and
round once.

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
from aioflow.kernels.nn import batch_norm_grad_jit, conv_kernels
from aioflow.kernels.nn.conv_kernels import (
    attr_str,
    intra_op_threads,
    invalid,
    parallel_blocks,
)

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
#: Bytes of x per block handed to a compiled loop (blocks are shared among threads).
_BLOCK_BYTES = 1 << 18


def _row_blocks(rows: int, row_bytes: int) -> list[tuple[int, int]]:
    """Blocks of about _BLOCK_BYTES, or all the rows at once when they are too few to
    share among threads (one numba call instead of several, ~5 µs each)."""
    if rows * row_bytes <= conv_kernels.PARALLEL_WORK * 4:
        return [(0, rows)]
    step = max(1, _BLOCK_BYTES // max(1, row_bytes))
    return [(r0, min(rows, r0 + step)) for r0 in range(0, rows, step)]


def _channel_sums(x2: np.ndarray, dy2: np.ndarray):
    """(sum(dy), sum(dy * x)) per channel of (rows, C) float32 arrays, float64."""
    c = x2.shape[1]
    if x2.shape[0] == 0:
        return np.zeros(c), np.zeros(c)
    if not batch_norm_grad_jit.usable():
        return (dy2.sum(axis=0, dtype=np.float64),
                np.einsum("rc,rc->c", dy2.astype(np.float64), x2))
    blocks = _row_blocks(x2.shape[0], x2[0].nbytes if x2.size else 1)
    parts = min(len(blocks), intra_op_threads()) if x2.size > 1 << 16 else 1
    accs = [(np.zeros(c), np.zeros(c)) for _ in range(parts)]

    def run(i):
        for r0, r1 in blocks[i::parts]:
            batch_norm_grad_jit.sums(x2, dy2, r0, r1, *accs[i])

    parallel_blocks(list(range(parts)), run, x2.size if parts > 1 else 0, parts)
    return sum(a for a, _ in accs), sum(b for _, b in accs)


def _affine(x2, dy2, a, b, k) -> np.ndarray:
    """dy * a + x * b + k per channel of (rows, C) float32 arrays."""
    a, b, k = (v.astype(np.float32) for v in (a, b, k))
    if not batch_norm_grad_jit.usable():
        dx = dy2 * a
        if b.any():
            dx += x2 * b
        if k.any():
            dx += k
        return dx
    dx = np.empty_like(dy2)
    parallel_blocks(_row_blocks(x2.shape[0], x2[0].nbytes if x2.size else 1),
                    lambda blk: batch_norm_grad_jit.apply(x2, dy2, dx, a, b, k, *blk),
                    x2.size, intra_op_threads())
    return dx


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
        xf = x.astype(np.float32, copy=False)
        dyf = dy.astype(np.float32, copy=False)
        dx, dscale, doffset = self.gradients(xf, dyf, scale, mean, var, axis)
        u = self._u_type
        empty = np.zeros(0, u)
        return [np.ascontiguousarray(dx.astype(self._np_type, copy=False)),
                dscale.astype(u), doffset.astype(u), empty, empty]

    def gradients(self, x, dy, scale, mean, var, axis: int):
        """(dx, dscale, doffset) of float32 x and dy normalised along `axis` (checked; a
        backend's kernel overrides this: aioflow/kernels/onednn/)."""
        channels = x.shape[axis]
        if self._channels_first:  # channels-last inside (TF's CPU graphs run NHWC)
            x, dy = np.moveaxis(x, 1, -1), np.moveaxis(dy, 1, -1)
        x2 = np.ascontiguousarray(x).reshape(-1, channels)
        dy2 = np.ascontiguousarray(dy).reshape(-1, channels)
        sum_dy, sum_dyx = _channel_sums(x2, dy2)
        mean_f = mean.astype(np.float64)
        inv = 1.0 / np.sqrt(var.astype(np.float32) + np.float32(self._epsilon)).astype(
            np.float64)
        dot = sum_dyx - mean_f * sum_dy  # sum(dy * (x - mean))
        coef = scale.astype(np.float64) * inv
        if self._training and x2.shape[0]:
            count = x2.shape[0]
            b = -coef * dot * inv * inv / count
            k = -coef * sum_dy / count - b * mean_f
        else:
            b = k = np.zeros(channels)
        dx = _affine(x2, dy2, coef, b, k).reshape(x.shape)
        if self._channels_first:
            dx = np.moveaxis(dx, -1, 1)
        return dx, dot * inv, sum_dy

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
