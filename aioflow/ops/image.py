"""The `af.image` namespace: TF's `tf.image` names for decoding and encoding images,
converting their dtype, resizing, cropping and non-max suppression (TF 2's `resize`, and
the tf.compat.v1 `resize_images`, `resize_bilinear`, `resize_nearest_neighbor`,
`resize_bicubic`, `resize_area`)."""

from aioflow.ops.image_codec_ops import (
    convert_image_dtype,
    decode_and_crop_jpeg,
    decode_bmp,
    decode_gif,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    extract_jpeg_shape,
)
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
    "non_max_suppression_with_scores", "convert_image_dtype", "decode_jpeg",
    "decode_and_crop_jpeg", "extract_jpeg_shape", "decode_png", "decode_bmp", "decode_gif",
    "decode_image", "encode_jpeg", "encode_png",
]
