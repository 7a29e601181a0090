"""CPU kernels (NumPy) for the resizing gradients: ResizeBilinearGrad,
ResizeNearestNeighborGrad and ResizeBicubicGrad, with TF 2.21's checks and messages.

Each resize is separable: the resized image is Ry @ image @ Rx^T per image and channel,
Ry (resized height, original height) and Rx likewise holding each output pixel's
interpolation weights along one axis, the same weights the forward kernels use
(resize_kernels: bilinear_weights, nearest_indices, bicubic_weights). The gradient is
Ry^T @ grads @ Rx: two matrix products. The nearest neighbour's gradient adds each
gradient pixel into the pixel it was copied from (exact for integer types). Bilinear and
bicubic gradients are float32 products cast to the original image's type, as TF's.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.image.resize_kernels import (
    bicubic_weights,
    bilinear_weights,
    nearest_indices,
    resize_scale,
)
from aioflow.kernels.math.cwise_kernels import shape_str

_F32 = np.float32
_INT32_MAX = 2**31 - 1


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _flag(ctx, name: str) -> bool:
    return bool(ctx.get_attr(name, False))


def _matrix(rows: int, cols: int, indices, weights) -> np.ndarray:
    """(rows, cols) float32: row i holds weights[k][i] at column indices[k][i], summed."""
    m = np.zeros((rows, cols), _F32)
    r = np.arange(rows)
    for idx, w in zip(indices, weights, strict=True):
        np.add.at(m, (r, idx), w.astype(_F32))
    return m


def _apply_transposed(grads: np.ndarray, ry: np.ndarray, rx: np.ndarray) -> np.ndarray:
    """Ry^T @ grads @ Rx for each image and channel: grads (N, h, w, C) -> (N, H, W, C)."""
    t = np.einsum("ih,nijc->nhjc", ry, grads, optimize=True)
    return np.einsum("jw,nhjc->nhwc", rx, t, optimize=True)


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
        ry = self.weights(oh, h, resize_scale(oh, h, self.align_corners))
        rx = self.weights(ow, w, resize_scale(ow, w, self.align_corners))
        dx = _apply_transposed(grads.astype(_F32, copy=False), ry, rx)
        return (dx.astype(self._np_type, copy=False),)

    def weights(self, in_size: int, out_size: int, scale) -> np.ndarray:
        raise NotImplementedError


@register_kernel("ResizeBilinearGrad", "CPU",
                 T=[dtypes.float32, dtypes.bfloat16, dtypes.float16, dtypes.float64])
class ResizeBilinearGradOp(_InterpolationGrad):
    """The gradient of ResizeBilinear with respect to the image."""

    def weights(self, in_size, out_size, scale):
        lower, upper, lerp = bilinear_weights(in_size, out_size, scale, self.half_pixel)
        return _matrix(out_size, in_size, (lower, upper), (_F32(1) - lerp, lerp))


@register_kernel("ResizeBicubicGrad", "CPU", T=[dtypes.float32, dtypes.float64])
class ResizeBicubicGradOp(_InterpolationGrad):
    """The gradient of ResizeBicubic with respect to the image."""

    def weights(self, in_size, out_size, scale):
        indices, weights = bicubic_weights(in_size, out_size, scale, self.half_pixel)
        return _matrix(out_size, in_size, list(indices), list(weights))


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
        out = np.zeros((n, oh, ow, c), grads.dtype)
        if out.size == 0 or grads.size == 0:
            return (out,)
        ys = nearest_indices(oh, h, resize_scale(oh, h, self.align_corners),
                             self.align_corners, self.half_pixel)
        xs = nearest_indices(ow, w, resize_scale(ow, w, self.align_corners),
                             self.align_corners, self.half_pixel)
        np.add.at(out, (slice(None), ys[:, None], xs[None, :]), grads)
        return (out,)
