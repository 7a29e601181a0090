"""OpDefs of CropAndResize's gradients (tensorflow/core/ops/image_ops.cc):
CropAndResizeGradImage (to the image) and CropAndResizeGradBoxes (to the boxes)."""

from __future__ import annotations

from aioflow.framework.constant_value import constant_value_as_shape
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _grad_image_shape(op) -> list:
    return [constant_value_as_shape(op.inputs[3])]


def _grad_boxes_shape(op) -> list:
    return [op.inputs[2].shape.merge_with(TensorShape([None, 4]))]


(register_op("CropAndResizeGradImage").input("grads: float").input("boxes: float")
    .input("box_ind: int32").input("image_size: int32").output("output: T")
    .attr("T: {float, half, double}").attr("method: {'bilinear', 'nearest'} = 'bilinear'")
    .set_shape_fn(_grad_image_shape))
(register_op("CropAndResizeGradBoxes").input("grads: float").input("image: T")
    .input("boxes: float").input("box_ind: int32").output("output: float")
    .attr("T: {uint8, uint16, int8, int16, int32, int64, half, float, double}")
    .attr("method: {'bilinear'} = 'bilinear'").set_shape_fn(_grad_boxes_shape))
