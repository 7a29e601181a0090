"""OpDefs of TF's image resizing, detection post-processing and top-k ops
(tensorflow/core/ops/image_ops.cc, nn_ops.cc): ResizeBilinear, ResizeNearestNeighbor,
ResizeBicubic, ResizeArea, ScaleAndTranslate(Grad), CropAndResize,
NonMaxSuppressionV3/V4/V5, TopKV2, InTopKV2.

Attrs, defaults and allowed types are TF 2.21's. Shape functions give what the input
shapes (and constant inputs: the size, crop_size, k, max_output_size) determine, raising
ValueError where TF's shape function fails at graph construction; the kernels do TF's
full checks at run time.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)
_RESIZE_TYPES = "{int8, uint8, int16, uint16, int32, int64, bfloat16, half, float, double}"
_NN_TYPES = "{int8, uint8, int16, uint16, int32, int64, half, float, double, bfloat16}"
_CROP_TYPES = "{uint8, uint16, int8, int16, int32, int64, half, float, double}"
_TOPK_TYPES = ("{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
               "uint32, uint64}")


def _rank_error(op, want, have, how="") -> ValueError:
    return ValueError(f"Shape must be rank {how}{want} but is rank {have} for "
                      f"'{op.name}' (op: '{op.type}')")


def _with_rank(op, index: int, rank: int) -> list | None:
    """Input `index`'s dims (None when its rank is unknown); ValueError when its known
    rank is not `rank`."""
    shape = op.inputs[index].shape
    if shape.rank is None:
        return None
    if shape.rank != rank:
        raise _rank_error(op, rank, shape.rank)
    return shape.as_list()


def _merge(op, a, b):
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b} for "
                         f"'{op.name}' (op: '{op.type}')")
    return a if a is not None else b


def _size_dims(op, index: int, what: str = "size") -> list:
    """[height, width] from a 1-D, 2-element int input: constants where known."""
    dims = _with_rank(op, index, 1)
    if dims is not None and dims[0] is not None and dims[0] != 2:
        raise ValueError(f"Dimension must be 2 but is {dims[0]} for '{op.name}' "
                         f"(op: '{op.type}')")
    value = constant_value(op.inputs[index])
    if value is None or np.size(value) != 2:
        return [None, None]
    out = [int(v) for v in np.ravel(value)]
    for v in out:
        if v < 0:
            raise ValueError(f"{what} must be non-negative, got {v} for '{op.name}' "
                             f"(op: '{op.type}')")
    return out


def _resize_shape(op) -> list[TensorShape]:
    """[batch, size[0], size[1], channels]."""
    images = _with_rank(op, 0, 4) or [None] * 4
    h, w = _size_dims(op, 1, "Size")
    return [TensorShape([images[0], h, w, images[3]])]


def _scalar_input(op, index: int) -> None:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != 0:
        raise _rank_error(op, 0, shape.rank)


def _crop_and_resize_shape(op) -> list[TensorShape]:
    """[num_boxes, crop_height, crop_width, depth]."""
    image = _with_rank(op, 0, 4) or [None] * 4
    boxes = _with_rank(op, 1, 2) or [None, None]
    box_ind = _with_rank(op, 2, 1) or [None]
    if boxes[1] is not None and boxes[1] != 4:
        raise ValueError(f"Dimension must be 4 but is {boxes[1]} for '{op.name}' "
                         f"(op: '{op.type}')")
    n = _merge(op, boxes[0], box_ind[0])
    h, w = _size_dims(op, 3, "crop_size")
    return [TensorShape([n, h, w, image[3]])]


def _nms_checks(op, num_scalars: int) -> None:
    boxes = _with_rank(op, 0, 2) or [None, None]
    scores = _with_rank(op, 1, 1) or [None]
    if boxes[1] is not None and boxes[1] != 4:
        raise ValueError(f"Dimension must be 4 but is {boxes[1]} for '{op.name}' "
                         f"(op: '{op.type}')")
    _merge(op, boxes[0], scores[0])
    for i in range(2, 2 + num_scalars):
        _scalar_input(op, i)


def _nms_size(op) -> int | None:
    """The padded output length when pad_to_max_output_size and max_output_size is known."""
    if not op.get_attr("pad_to_max_output_size"):
        return None
    value = constant_value(op.inputs[2])
    if value is None or np.ndim(value) != 0:
        return None
    return int(value) if int(value) >= 0 else None


def _nms_v1_shape(op) -> list[TensorShape]:
    _nms_checks(op, 1)
    return [TensorShape([None])]


def _nms_v2_shape(op) -> list[TensorShape]:
    _nms_checks(op, 2)
    return [TensorShape([None])]


def _nms_v3_shape(op) -> list[TensorShape]:
    _nms_checks(op, 3)
    return [TensorShape([None])]


def _nms_v4_shape(op) -> list[TensorShape]:
    _nms_checks(op, 3)
    return [TensorShape([_nms_size(op)]), TensorShape([])]


def _nms_v5_shape(op) -> list[TensorShape]:
    _nms_checks(op, 4)
    out = TensorShape([_nms_size(op)])
    return [out, out, TensorShape([])]


def _top_k_shape(op) -> list[TensorShape]:
    """input[..., n] -> [..., k] twice (TF's TopKShapeFn)."""
    shape = op.inputs[0].shape
    _scalar_input(op, 1)
    if shape.rank is None:
        return [_UNKNOWN, _UNKNOWN]
    if shape.rank < 1:
        raise _rank_error(op, 1, shape.rank, "at least ")
    k = constant_value(op.inputs[1])
    k = int(k) if k is not None and np.ndim(k) == 0 else None
    if k is not None and k < 0:
        raise ValueError(f"Dimension size, given by scalar input 1, must be non-negative "
                         f"but is {k} for '{op.name}' (op: '{op.type}')")
    dims = shape.as_list()
    last = dims[-1]
    if last is not None and k is not None and last < k:
        raise ValueError(f"input must have last dimension >= k = {k} but is {last} for "
                         f"'{op.name}' (op: '{op.type}')")
    out = TensorShape(dims[:-1] + [k])
    return [out, out]


def _in_top_k_shape(op) -> list[TensorShape]:
    """predictions [batch, classes], targets [batch] -> [batch]."""
    predictions = _with_rank(op, 0, 2) or [None, None]
    targets = _with_rank(op, 1, 1) or [None]
    _scalar_input(op, 2)
    return [TensorShape([_merge(op, predictions[0], targets[0])])]


def _resize(name: str, types: str, output: str) -> None:
    (register_op(name).input("images: T").input("size: int32").output(f"resized_images: {output}")
        .attr(f"T: {types}").attr("align_corners: bool = false")
        .attr("half_pixel_centers: bool = false").set_shape_fn(_resize_shape))


_resize("ResizeBilinear", _RESIZE_TYPES, "float")
_resize("ResizeNearestNeighbor", _NN_TYPES, "T")
_resize("ResizeBicubic", _NN_TYPES, "float")
(register_op("ResizeArea").input("images: T").input("size: int32")
    .output("resized_images: float").attr(f"T: {_NN_TYPES}")
    .attr("align_corners: bool = false").set_shape_fn(_resize_shape))
(register_op("ScaleAndTranslate").input("images: T").input("size: int32").input("scale: float")
    .input("translation: float").output("resized_images: float").attr(f"T: {_RESIZE_TYPES}")
    .attr("kernel_type: string = 'lanczos3'").attr("antialias: bool = true")
    .set_shape_fn(_resize_shape))
(register_op("ScaleAndTranslateGrad").input("grads: T").input("original_image: T")
    .input("scale: float").input("translation: float").output("output: T")
    .attr("T: {float}").attr("kernel_type: string = 'lanczos3'")
    .attr("antialias: bool = true").set_shape_fn(lambda op: [op.inputs[1].shape]))

(register_op("CropAndResize").input("image: T").input("boxes: float").input("box_ind: int32")
    .input("crop_size: int32").output("crops: float").attr(f"T: {_CROP_TYPES}")
    .attr("method: {'bilinear', 'nearest'} = 'bilinear'")
    .attr("extrapolation_value: float = 0").set_shape_fn(_crop_and_resize_shape))

(register_op("NonMaxSuppression").input("boxes: float").input("scores: float")
    .input("max_output_size: int32").output("selected_indices: int32")
    .attr("iou_threshold: float = 0.5").set_shape_fn(_nms_v1_shape))
(register_op("NonMaxSuppressionV2").input("boxes: T").input("scores: T")
    .input("max_output_size: int32").input("iou_threshold: T_threshold")
    .output("selected_indices: int32").attr("T: {half, float} = DT_FLOAT")
    .attr("T_threshold: {half, float} = DT_FLOAT").set_shape_fn(_nms_v2_shape))
(register_op("NonMaxSuppressionV3").input("boxes: T").input("scores: T")
    .input("max_output_size: int32").input("iou_threshold: T_threshold")
    .input("score_threshold: T_threshold").output("selected_indices: int32")
    .attr("T: {half, float} = DT_FLOAT").attr("T_threshold: {half, float} = DT_FLOAT")
    .set_shape_fn(_nms_v3_shape))
(register_op("NonMaxSuppressionV4").input("boxes: T").input("scores: T")
    .input("max_output_size: int32").input("iou_threshold: T_threshold")
    .input("score_threshold: T_threshold").output("selected_indices: int32")
    .output("valid_outputs: int32")
    .attr("T: {half, float} = DT_FLOAT").attr("T_threshold: {half, float} = DT_FLOAT")
    .attr("pad_to_max_output_size: bool = false").set_shape_fn(_nms_v4_shape))
(register_op("NonMaxSuppressionV5").input("boxes: T").input("scores: T")
    .input("max_output_size: int32").input("iou_threshold: T").input("score_threshold: T")
    .input("soft_nms_sigma: T").output("selected_indices: int32").output("selected_scores: T")
    .output("valid_outputs: int32").attr("T: {half, float} = DT_FLOAT")
    .attr("pad_to_max_output_size: bool = false").set_shape_fn(_nms_v5_shape))

(register_op("TopKV2").input("input: T").input("k: Tk").output("values: T")
    .output("indices: index_type").attr("sorted: bool = true").attr(f"T: {_TOPK_TYPES}")
    .attr("Tk: {int16, int32, int64} = DT_INT32")
    .attr("index_type: {int16, int32, int64} = DT_INT32").set_shape_fn(_top_k_shape))
(register_op("InTopKV2").input("predictions: float").input("targets: T").input("k: T")
    .output("precision: bool").attr("T: {int32, int64} = DT_INT32")
    .set_shape_fn(_in_top_k_shape))
