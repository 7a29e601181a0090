"""CPU kernels (NumPy) for the resizing gradients: ResizeBilinearGrad,
ResizeNearestNeighborGrad and ResizeBicubicGrad, with TF 2.21's checks and messages.

Each resize is separable: along each axis an output pixel reads a few input pixels (its
taps: 1 nearest, 2 bilinear, 4 bicubic) with weights, the same the forward kernels use
(resize_kernels: bilinear_weights, nearest_indices, bicubic_weights). The gradient
reverses it one axis at a time: for each tap, the gradient rows times their weights are
summed into the input row they read. A tap's input index never decreases along the axis,
so the rows landing on one input row are a run, summed (a slab add per run; NumPy's
reduceat along an inner axis was 20x slower). The nearest neighbour's gradient is exact for integer
types; bilinear and bicubic gradients are float32 sums cast to the original image's
type, as TF's.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.image import resize_grad_jit
from aioflow.kernels.image.resize_kernels import (
    bicubic_weights,
    bilinear_weights,
    nearest_indices,
    resize_scale,
)
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.nn.conv_kernels import intra_op_threads, parallel_blocks

_F32 = np.float32
_INT32_MAX = 2**31 - 1


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _flag(ctx, name: str) -> bool:
    return bool(ctx.get_attr(name, False))


def _reverse_axis(g: np.ndarray, axis: int, size: int, taps) -> np.ndarray:
    """out (g's shape, `size` along axis): out[idx[i]] += g[i] * weight[i] along axis for
    each tap (idx, weight) (weight None: 1); each idx non-decreasing."""
    shape = list(g.shape)
    shape[axis] = size
    out = np.zeros(shape, g.dtype)
    wshape = [1] * g.ndim
    wshape[axis] = -1
    lead = (slice(None),) * axis
    for idx, weight in taps:
        part = g if weight is None else g * weight.astype(g.dtype).reshape(wshape)
        bounds = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1], True])
        for s0, s1 in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            dst = out[lead + (int(idx[s0]),)]
            for r in range(s0, s1):
                dst += part[lead + (r,)]
    return out


def _compiled(g: np.ndarray, shape, ry, rx) -> np.ndarray:
    """The gradient by the compiled loop (kernels/image/resize_grad_jit.py), an image a
    call, images shared among threads; ry, rx: [(index, weight)] per tap of each axis."""
    def stack(taps):
        return (np.ascontiguousarray(np.stack([i for i, _ in taps]), np.int64),
                np.ascontiguousarray(np.stack([w for _, w in taps]), _F32))

    (yi, yw), (xi, xw) = stack(ry), stack(rx)
    g = np.ascontiguousarray(g)
    out = np.zeros(shape, _F32)
    parallel_blocks(list(range(shape[0])),
                    lambda b: resize_grad_jit.image(g, out, b, yi, yw, xi, xw),
                    g.size * yi.shape[0] * xi.shape[0], intra_op_threads())
    return out


class _InterpolationGrad(OpKernel):
    """ResizeBilinearGrad and ResizeBicubicGrad: TF's ImageResizerGradientState checks."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.align_corners = _flag(ctx, "align_corners")
        self.half_pixel = _flag(ctx, "half_pixel_centers")
        self._np_type = ctx.get_attr("T").as_numpy_dtype

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > 1 << 16

    def compute(self, ctx, inputs):
        grads, original = inputs
        if self.half_pixel and self.align_corners:
            raise _invalid("If half_pixel_centers is True, align_corners must be False.")
        if grads.ndim != 4:
            raise _invalid(f"input_grad must be 4-dimensional{shape_str(grads.shape)}")
        if original.ndim != 4:
            raise _invalid(f"original_image must be 4-dimensional"
                           f"{shape_str(original.shape)}")
        n, h, w, c = grads.shape
        oh, ow = original.shape[1], original.shape[2]
        if h <= 0 or w <= 0:
            raise _invalid("resized dimensions must be positive")
        if oh >= _INT32_MAX or ow >= _INT32_MAX:
            raise _invalid("original sizes must be between 0 and max int32")
        out = np.zeros((n, oh, ow, c), self._np_type)
        if out.size == 0:
            return (out,)
        ry = self.taps(oh, h, resize_scale(oh, h, self.align_corners))
        rx = self.taps(ow, w, resize_scale(ow, w, self.align_corners))
        g = grads.astype(_F32, copy=False)
        if resize_grad_jit.usable():
            dx = _compiled(g, (n, oh, ow, c), ry, rx)
        else:
            dx = _reverse_axis(_reverse_axis(g, 1, oh, ry), 2, ow, rx)
        return (dx.astype(self._np_type, copy=False),)

    def taps(self, in_size: int, out_size: int, scale) -> list:
        """[(input index, weight) per output index] of each tap along one axis."""
        raise NotImplementedError


@register_kernel("ResizeBilinearGrad", "CPU",
                 T=[dtypes.float32, dtypes.bfloat16, dtypes.float16, dtypes.float64])
class ResizeBilinearGradOp(_InterpolationGrad):
    """The gradient of ResizeBilinear with respect to the image."""

    def taps(self, in_size, out_size, scale):
        lower, upper, lerp = bilinear_weights(in_size, out_size, scale, self.half_pixel)
        return [(lower, _F32(1) - lerp), (upper, lerp)]


@register_kernel("ResizeBicubicGrad", "CPU", T=[dtypes.float32, dtypes.float64])
class ResizeBicubicGradOp(_InterpolationGrad):
    """The gradient of ResizeBicubic with respect to the image."""

    def taps(self, in_size, out_size, scale):
        indices, weights = bicubic_weights(in_size, out_size, scale, self.half_pixel)
        return list(zip(indices, weights, strict=True))


@register_kernel("ResizeNearestNeighborGrad", "CPU", host_memory=("size",),
                 T=[dtypes.uint8, dtypes.int8, dtypes.int32, dtypes.float16,
                    dtypes.float32, dtypes.float64, dtypes.bfloat16])
class ResizeNearestNeighborGradOp(OpKernel):
    """The gradient of ResizeNearestNeighbor: each gradient pixel added into its source."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.align_corners = _flag(ctx, "align_corners")
        self.half_pixel = _flag(ctx, "half_pixel_centers")

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > 1 << 16

    def compute(self, ctx, inputs):
        grads, size = inputs
        if grads.ndim != 4:
            raise _invalid(f"input must be 4-dimensional{shape_str(grads.shape)}")
        if np.ndim(size) != 1:
            raise _invalid(f"shape_t must be 1-dimensional{shape_str(np.shape(size))}")
        if np.size(size) != 2:
            raise _invalid(f"shape_t must have two elements{shape_str(np.shape(size))}")
        oh, ow = int(size[0]), int(size[1])
        if oh <= 0 or ow <= 0:
            raise _invalid("shape_t's elements must be positive")
        n, h, w, c = grads.shape
        if n * oh * ow * c == 0 or grads.size == 0:
            return (np.zeros((n, oh, ow, c), grads.dtype),)
        ys = nearest_indices(oh, h, resize_scale(oh, h, self.align_corners),
                             self.align_corners, self.half_pixel)
        xs = nearest_indices(ow, w, resize_scale(ow, w, self.align_corners),
                             self.align_corners, self.half_pixel)
        if grads.dtype == _F32 and resize_grad_jit.usable():
            one = [(ys, np.ones(h, _F32))], [(xs, np.ones(w, _F32))]
            return (_compiled(grads, (n, oh, ow, c), *one),)
        rows = _reverse_axis(grads, 1, oh, [(ys, None)])
        return (_reverse_axis(rows, 2, ow, [(xs, None)]),)
