"""OpDefs of TF's image resizing gradients (tensorflow/core/ops/image_ops.cc):
ResizeBilinearGrad, ResizeNearestNeighborGrad, ResizeBicubicGrad. Each output has the
original image's batch and channels; its height and width are the original image's
(bilinear, bicubic) or the `size` input's value (nearest neighbour)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _like_original(op):
    """[batch of grads, height and width of original_image, channels of grads]."""
    grads = op.inputs[0].shape
    orig = op.inputs[1].shape
    g = grads.as_list() if grads.rank == 4 else [None] * 4
    o = orig.as_list() if orig.rank == 4 else [None] * 4
    return [TensorShape([g[0], o[1], o[2], g[3]])]


def _nearest_grad_shape(op):
    grads = op.inputs[0].shape
    g = grads.as_list() if grads.rank == 4 else [None] * 4
    size = cs._const_ints(op.inputs[1])
    h, w = (size if size is not None and len(size) == 2 else (None, None))
    return [TensorShape([g[0], h, w, g[3]])]


def _resize_grad(name: str, types: str, grads: str, shape_fn) -> None:
    second = "original_image: T" if grads == "float" else "size: int32"
    (register_op(name).input(f"grads: {grads}").input(second).output("output: T")
        .attr(f"T: {types}").attr("align_corners: bool = false")
        .attr("half_pixel_centers: bool = false").set_shape_fn(shape_fn))


_resize_grad("ResizeBilinearGrad", "{float, bfloat16, half, double}", "float", _like_original)
_resize_grad("ResizeNearestNeighborGrad", "{uint8, int8, int32, half, float, double, bfloat16}",
             "T", _nearest_grad_shape)
_resize_grad("ResizeBicubicGrad", "{float, double}", "float", _like_original)
