"""Image and detection builders with TF's Python names, and the ops TF's Python writes:
`resize` (TF 2's tf.image.resize: ResizeBilinear / ResizeNearestNeighbor / ResizeBicubic
with half_pixel_centers, ResizeArea, ScaleAndTranslate for the filtered and antialiased
methods, ExpandDims/Squeeze for a single image, the Cast/RealDiv/Round chain of
preserve_aspect_ratio), TF 1's `resize_images`, the tf.compat.v1 `resize_bilinear`,
`resize_nearest_neighbor`, `resize_bicubic`, `resize_area`, `crop_and_resize`, `non_max_suppression`
(V3), `non_max_suppression_with_scores` (V5), `top_k` (TopKV2) and `in_top_k` (InTopKV2,
TF 2's argument order)."""

from __future__ import annotations

import collections

from aioflow.framework import dtypes, ops
from aioflow.framework.constant_value import constant_value_as_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, math_ops


class ResizeMethod:
    """TF 2's resize method names."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


class ResizeMethodV1:
    """TF 1's resize methods (tf.compat.v1.image.ResizeMethod): integers."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_SCALE_AND_TRANSLATE_METHODS = (ResizeMethod.LANCZOS3, ResizeMethod.LANCZOS5,
                                ResizeMethod.GAUSSIAN, ResizeMethod.MITCHELLCUBIC)


def _image_dimensions(image, rank: int) -> list:
    """The image's dims: Python ints where static, else scalar tensors (TF's
    _ImageDimensions)."""
    if image.shape.is_fully_defined():
        return image.shape.as_list()
    static = image.shape.with_rank(rank).as_list()
    dynamic = array_ops.unstack(array_ops.shape(image), rank)
    return [s if s is not None else d for s, d in zip(static, dynamic, strict=True)]


def _dim_at(shape, index: int):
    if shape.rank is None:
        return None
    return shape.as_list()[index]


def _resize_images_common(images, resizer_fn, size, preserve_aspect_ratio: bool, name,
                          skip_resize_if_same: bool):
    with ops.name_scope(name, "resize", [images, size]):
        images = ops.convert_to_tensor(images, name="images")
        if images.shape.rank is None:
            raise ValueError("'images' contains no shape.")
        is_batch = True
        if images.shape.rank == 3:
            is_batch = False
            images = array_ops.expand_dims(images, 0)
        elif images.shape.rank != 4:
            raise ValueError("'images' must have either 3 or 4 dimensions.")
        _, height, width, _ = images.shape.as_list()
        try:
            size = ops.convert_to_tensor(size, dtypes.int32, name="size")
        except (TypeError, ValueError):
            raise ValueError("'size' must be a 1-D int32 Tensor") from None
        if not size.shape.is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        if preserve_aspect_ratio:
            _, current_height, current_width, _ = _image_dimensions(images, rank=4)
            scale_factor_height = (math_ops.cast(size[0], dtypes.float32)
                                   / math_ops.cast(current_height, dtypes.float32))
            scale_factor_width = (math_ops.cast(size[1], dtypes.float32)
                                  / math_ops.cast(current_width, dtypes.float32))
            scale_factor = math_ops.minimum(scale_factor_height, scale_factor_width)
            scaled_height = math_ops.cast(
                math_ops.round(scale_factor * math_ops.cast(current_height, dtypes.float32)),
                dtypes.int32)
            scaled_width = math_ops.cast(
                math_ops.round(scale_factor * math_ops.cast(current_width, dtypes.float32)),
                dtypes.int32)
            size = ops.convert_to_tensor([scaled_height, scaled_width], dtypes.int32,
                                         name="size")
        size_shape = constant_value_as_shape(size)
        new_height, new_width = _dim_at(size_shape, 0), _dim_at(size_shape, 1)
        if (skip_resize_if_same and None not in (new_width, width, new_height, height)
                and width == new_width and height == new_height):
            if not is_batch:
                images = array_ops.squeeze(images, axis=[0])
            return images
        images = resizer_fn(images, size)
        images.set_shape([None, new_height, new_width, None])
        if not is_batch:
            images = array_ops.squeeze(images, axis=[0])
        return images


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: str | None = None) -> ops.Tensor:
    """TF 2's tf.image.resize: `images` ([batch,] height, width, channels) resized to
    `size` = [new_height, new_width] with half-pixel centres; float32 except for
    "nearest", which keeps the images' type. "area" writes ResizeArea; lanczos3/5,
    gaussian and mitchellcubic, and bilinear / bicubic with `antialias`, write
    ScaleAndTranslate (kernel triangle / keyscubic for those two) at scale new / old."""
    method = getattr(method, "value", method)

    def scale_and_translate_fn(images_t, new_size, kernel_type):
        scale = (math_ops.cast(new_size, dtype=dtypes.float32)
                 / math_ops.cast(array_ops.shape(images_t)[1:3], dtype=dtypes.float32))
        return scale_and_translate(images_t, new_size, scale, array_ops.zeros([2]),
                                   kernel_type=kernel_type, antialias=antialias)

    def resize_fn(images_t, new_size):
        if method == ResizeMethod.BILINEAR:
            if antialias:
                return scale_and_translate_fn(images_t, new_size, "triangle")
            return resize_bilinear(images_t, new_size, half_pixel_centers=True)
        if method == ResizeMethod.NEAREST_NEIGHBOR:
            return resize_nearest_neighbor(images_t, new_size, half_pixel_centers=True)
        if method == ResizeMethod.BICUBIC:
            if antialias:
                return scale_and_translate_fn(images_t, new_size, "keyscubic")
            return resize_bicubic(images_t, new_size, half_pixel_centers=True)
        if method == ResizeMethod.AREA:
            return resize_area(images_t, new_size)
        if method in _SCALE_AND_TRANSLATE_METHODS:
            return scale_and_translate_fn(images_t, new_size, method)
        raise ValueError(f"Resize method is not implemented: {method}")

    return _resize_images_common(images, resize_fn, size,
                                 preserve_aspect_ratio=preserve_aspect_ratio, name=name,
                                 skip_resize_if_same=False)


def resize_images(images, size, method=ResizeMethodV1.BILINEAR, align_corners: bool = False,
                  preserve_aspect_ratio: bool = False, name: str | None = None) -> ops.Tensor:
    """TF 1's tf.compat.v1.image.resize_images: bilinear, nearest, bicubic or area (TF 1's
    integer methods or TF 2's names) with `align_corners` and without half-pixel centres;
    the images themselves when their static size is already `size`."""

    def resize_fn(images_t, new_size):
        if method in (ResizeMethodV1.BILINEAR, ResizeMethod.BILINEAR):
            return resize_bilinear(images_t, new_size, align_corners=align_corners)
        if method in (ResizeMethodV1.NEAREST_NEIGHBOR, ResizeMethod.NEAREST_NEIGHBOR):
            return resize_nearest_neighbor(images_t, new_size, align_corners=align_corners)
        if method in (ResizeMethodV1.BICUBIC, ResizeMethod.BICUBIC):
            return resize_bicubic(images_t, new_size, align_corners=align_corners)
        if method in (ResizeMethodV1.AREA, ResizeMethod.AREA):
            return resize_area(images_t, new_size, align_corners=align_corners)
        raise ValueError(f"Resize method is not implemented: {method}")

    return _resize_images_common(images, resize_fn, size,
                                 preserve_aspect_ratio=preserve_aspect_ratio, name=name,
                                 skip_resize_if_same=True)


def resize_bilinear(images, size, align_corners: bool = False, name: str | None = None,
                    half_pixel_centers: bool = False) -> ops.Tensor:
    """A ResizeBilinear op (tf.compat.v1.image.resize_bilinear); float32 output."""
    return apply_op("ResizeBilinear", name=name, images=images, size=size,
                    align_corners=align_corners, half_pixel_centers=half_pixel_centers)


def resize_nearest_neighbor(images, size, align_corners: bool = False,
                            name: str | None = None,
                            half_pixel_centers: bool = False) -> ops.Tensor:
    """A ResizeNearestNeighbor op (tf.compat.v1.image.resize_nearest_neighbor)."""
    return apply_op("ResizeNearestNeighbor", name=name, images=images, size=size,
                    align_corners=align_corners, half_pixel_centers=half_pixel_centers)


def resize_bicubic(images, size, align_corners: bool = False, name: str | None = None,
                   half_pixel_centers: bool = False) -> ops.Tensor:
    """A ResizeBicubic op (tf.compat.v1.image.resize_bicubic); float32 output."""
    return apply_op("ResizeBicubic", name=name, images=images, size=size,
                    align_corners=align_corners, half_pixel_centers=half_pixel_centers)


def resize_area(images, size, align_corners: bool = False,
                name: str | None = None) -> ops.Tensor:
    """A ResizeArea op (tf.compat.v1.image.resize_area): each output pixel the mean of the
    input area it covers; float32 output."""
    return apply_op("ResizeArea", name=name, images=images, size=size,
                    align_corners=align_corners)


def scale_and_translate(images, size, scale, translation, kernel_type: str = "lanczos3",
                        antialias: bool = True, name: str | None = None) -> ops.Tensor:
    """A ScaleAndTranslate op (tf.raw_ops.ScaleAndTranslate): `images` resampled to `size`
    by `kernel_type` at output = input * scale + translation per axis; float32 output."""
    return apply_op("ScaleAndTranslate", name=name, images=images, size=size, scale=scale,
                    translation=translation, kernel_type=kernel_type, antialias=antialias)


def crop_and_resize(image, boxes, box_indices=None, crop_size=None, method: str = "bilinear",
                    extrapolation_value: float = 0.0, name: str | None = None,
                    box_ind=None) -> ops.Tensor:
    """A CropAndResize op: crops of `image` at normalised `boxes` [y1, x1, y2, x2] of the
    images `box_indices`, resized to `crop_size`; float32 [num_boxes, h, w, depth]."""
    if box_indices is None:
        box_indices = box_ind
    if box_indices is None or crop_size is None:
        raise TypeError("crop_and_resize() needs box_indices and crop_size")
    return apply_op("CropAndResize", name=name, image=image, boxes=boxes, box_ind=box_indices,
                    crop_size=crop_size, method=method,
                    extrapolation_value=extrapolation_value)


def non_max_suppression(boxes, scores, max_output_size, iou_threshold=0.5,
                        score_threshold=float("-inf"), name: str | None = None) -> ops.Tensor:
    """Indices of the boxes greedy NMS keeps, best score first (NonMaxSuppressionV3)."""
    with ops.name_scope(name, "non_max_suppression"):
        iou_threshold = ops.convert_to_tensor(iou_threshold, name="iou_threshold")
        score_threshold = ops.convert_to_tensor(score_threshold, name="score_threshold")
        return apply_op("NonMaxSuppressionV3", boxes=boxes, scores=scores,
                        max_output_size=max_output_size, iou_threshold=iou_threshold,
                        score_threshold=score_threshold)


def non_max_suppression_with_scores(boxes, scores, max_output_size, iou_threshold=0.5,
                                    score_threshold=float("-inf"), soft_nms_sigma=0.0,
                                    name: str | None = None):
    """(selected_indices, selected_scores) of (soft-)NMS (NonMaxSuppressionV5)."""
    with ops.name_scope(name, "non_max_suppression_with_scores"):
        iou_threshold = ops.convert_to_tensor(iou_threshold, name="iou_threshold")
        score_threshold = ops.convert_to_tensor(score_threshold, name="score_threshold")
        soft_nms_sigma = ops.convert_to_tensor(soft_nms_sigma, name="soft_nms_sigma")
        indices, selected_scores, _ = apply_op(
            "NonMaxSuppressionV5", boxes=boxes, scores=scores, max_output_size=max_output_size,
            iou_threshold=iou_threshold, score_threshold=score_threshold,
            soft_nms_sigma=soft_nms_sigma, pad_to_max_output_size=False)
        return indices, selected_scores


TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted: bool = True, index_type=dtypes.int32,  # noqa: A002
          name: str | None = None) -> TopKV2:
    """(values, indices) of the k largest entries of the last axis (TopKV2)."""
    values, indices = apply_op("TopKV2", name=name, input=input, k=k, sorted=sorted,
                               index_type=index_type)
    return TopKV2(values, indices)


def in_top_k(targets, predictions, k, name: str | None = None) -> ops.Tensor:
    """Whether each target is among its row's k best predictions (TF 2's argument order:
    targets first; an InTopKV2 op)."""
    with ops.name_scope(name, "in_top_k"):
        return apply_op("InTopKV2", name=name, predictions=predictions, targets=targets, k=k)


def in_top_k_v1(predictions, targets, k, name: str | None = None) -> ops.Tensor:
    """tf.compat.v1.nn.in_top_k: predictions first."""
    return in_top_k(targets, predictions, k, name=name)


__all__ = [
    "ResizeMethod", "ResizeMethodV1", "resize", "resize_images", "resize_bilinear",
    "resize_nearest_neighbor", "resize_bicubic", "resize_area", "scale_and_translate",
    "crop_and_resize", "non_max_suppression", "non_max_suppression_with_scores", "top_k",
    "in_top_k", "in_top_k_v1",
]
