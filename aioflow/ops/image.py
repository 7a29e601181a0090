"""The `af.image` namespace: TF's `tf.image` names for resizing, cropping and non-max
suppression (TF 2's `resize`, and the tf.compat.v1 `resize_images`, `resize_bilinear`,
`resize_nearest_neighbor`, `resize_bicubic`, `resize_area`)."""

from aioflow.ops.image_ops import (
    ResizeMethod,
    crop_and_resize,
    non_max_suppression,
    non_max_suppression_with_scores,
    resize,
    resize_area,
    resize_bicubic,
    resize_bilinear,
    resize_images,
    resize_nearest_neighbor,
)

__all__ = [
    "ResizeMethod", "resize", "resize_images", "resize_bilinear", "resize_nearest_neighbor",
    "resize_bicubic", "resize_area", "crop_and_resize", "non_max_suppression",
    "non_max_suppression_with_scores",
]
