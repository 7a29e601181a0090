"""Gradient functions of the image resize ops (TF's image_grad.py); they emit
ResizeBilinearGrad, ResizeNearestNeighborGrad and ResizeBicubicGrad (kernels in
kernels/image/resize_grad_kernels.py)."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import NotDifferentiable, RegisterGradient
from aioflow.ops import array_ops


@RegisterGradient("ResizeNearestNeighbor")
def _resize_nearest_neighbor_grad(op, grad):
    image = op.inputs[0]
    if image.shape[1:3].is_fully_defined():
        image_shape = image.shape[1:3].as_list()
    else:
        image_shape = array_ops.shape(image)[1:3]
    grads = apply_op("ResizeNearestNeighborGrad", grads=grad, size=image_shape,
                     align_corners=op.get_attr("align_corners"),
                     half_pixel_centers=op.get_attr("half_pixel_centers"))
    return [grads, None]


@RegisterGradient("ResizeBilinear")
def _resize_bilinear_grad(op, grad):
    grad0 = apply_op("ResizeBilinearGrad", grads=grad, original_image=op.inputs[0],
                     align_corners=op.get_attr("align_corners"),
                     half_pixel_centers=op.get_attr("half_pixel_centers"))
    return [grad0, None]


NotDifferentiable("ResizeBilinearGrad")


@RegisterGradient("ResizeBicubic")
def _resize_bicubic_grad(op, grad):
    grad0 = None
    if op.inputs[0].dtype in (dtypes.float32, dtypes.float64):
        grad0 = apply_op("ResizeBicubicGrad", grads=grad, original_image=op.inputs[0],
                         align_corners=op.get_attr("align_corners"),
                         half_pixel_centers=op.get_attr("half_pixel_centers"))
    return [grad0, None]


@RegisterGradient("ScaleAndTranslate")
def _scale_and_translate_grad(op, grad):
    grad0 = apply_op("ScaleAndTranslateGrad", grads=grad, original_image=op.inputs[0],
                     scale=op.inputs[2], translation=op.inputs[3],
                     kernel_type=op.get_attr("kernel_type"),
                     antialias=op.get_attr("antialias"))
    return [grad0, None, None, None]


@RegisterGradient("CropAndResize")
def _crop_and_resize_grad(op, grad):
    image = op.inputs[0]
    if image.shape.is_fully_defined():
        image_shape = image.shape.as_list()
    else:
        image_shape = array_ops.shape(image)
    if op.inputs[0].dtype in (dtypes.float16, dtypes.float32, dtypes.float64):
        grad0 = apply_op("CropAndResizeGradImage", grads=grad, boxes=op.inputs[1],
                         box_ind=op.inputs[2], image_size=image_shape, T=op.get_attr("T"),
                         method=op.get_attr("method"))
    else:
        grad0 = None
    grad1 = apply_op("CropAndResizeGradBoxes", grads=grad, image=op.inputs[0],
                     boxes=op.inputs[1], box_ind=op.inputs[2])
    return [grad0, grad1, None, None]
