"""TF's image codec functions (`tf.io.decode_jpeg` ..., also under `tf.image`) and
`convert_image_dtype`, over the ops of framework/op_defs/image_codec_ops.py."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import math_ops
from aioflow.ops.constant_op import constant


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True,
                try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                name=None):
    """A JPEG's bytes as an HxWxC uint8 image."""
    return apply_op("DecodeJpeg", name=name, contents=contents, channels=channels,
                    ratio=ratio, fancy_upscaling=fancy_upscaling,
                    try_recover_truncated=try_recover_truncated,
                    acceptable_fraction=acceptable_fraction, dct_method=dct_method)


def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="",
                         name=None):
    """The crop [y, x, height, width] of a JPEG."""
    return apply_op("DecodeAndCropJpeg", name=name, contents=contents,
                    crop_window=crop_window, channels=channels, ratio=ratio,
                    fancy_upscaling=fancy_upscaling,
                    try_recover_truncated=try_recover_truncated,
                    acceptable_fraction=acceptable_fraction, dct_method=dct_method)


def extract_jpeg_shape(contents, output_type=dtypes.int32, name=None):
    """[height, width, channels] from a JPEG's header."""
    return apply_op("ExtractJpegShape", name=name, contents=contents,
                    output_type=output_type)


def decode_png(contents, channels=0, dtype=dtypes.uint8, name=None):
    """A PNG's bytes as an HxWxC uint8 or uint16 image."""
    return apply_op("DecodePng", name=name, contents=contents, channels=channels,
                    dtype=dtype)


def decode_bmp(contents, channels=0, name=None):
    """A BMP's bytes as an HxWxC uint8 image."""
    return apply_op("DecodeBmp", name=name, contents=contents, channels=channels)


def decode_gif(contents, name=None):
    """A GIF's frames as an NxHxWx3 uint8 tensor."""
    return apply_op("DecodeGif", name=name, contents=contents)


def decode_image(contents, channels=None, dtype=dtypes.uint8, name=None,
                 expand_animations=True):
    """Any of JPEG, PNG, GIF, BMP (sniffed) as an image of `dtype` (TF 2's decode_image:
    another dtype than uint8, uint16 or float32 is converted from uint8)."""
    dtype = dtypes.as_dtype(dtype)
    direct = dtype in (dtypes.uint8, dtypes.uint16, dtypes.float32)
    with ops.name_scope(name, "decode_image"):
        image = apply_op("DecodeImage", contents=contents, channels=channels or 0,
                         dtype=dtype if direct else dtypes.uint8,
                         expand_animations=expand_animations)
        return image if direct else convert_image_dtype(image, dtype)


def encode_jpeg(image, format="", quality=95, progressive=False, optimize_size=False,
                chroma_downsampling=True, density_unit="in", x_density=300,
                y_density=300, xmp_metadata="", name=None):
    """An HxWxC uint8 image (C 1 or 3) as a JPEG file's bytes."""
    return apply_op("EncodeJpeg", name=name, image=image, format=format, quality=quality,
                    progressive=progressive, optimize_size=optimize_size,
                    chroma_downsampling=chroma_downsampling, density_unit=density_unit,
                    x_density=x_density, y_density=y_density, xmp_metadata=xmp_metadata)


def encode_png(image, compression=-1, name=None):
    """An HxWxC uint8 or uint16 image (C 1-4) as a PNG file's bytes."""
    return apply_op("EncodePng", name=name, image=image, compression=compression)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """TF's convert_image_dtype: integers are scaled to their type's range, floats are
    in [0, 1]; int -> int shifts, int -> float divides by the maximum, float -> int
    multiplies by (maximum + 0.5) and truncates."""
    image = ops.convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    src = image.dtype.base_dtype
    if src == dtype:
        return image
    with ops.name_scope(name, "convert_image", [image]):
        if src.is_integer and dtype.is_integer:
            if src.max > dtype.max:
                scale = (src.max + 1) // (dtype.max + 1)
                return math_ops.cast(math_ops.floordiv(image, scale), dtype)
            scale = (dtype.max + 1) // (src.max + 1)
            return math_ops.multiply(math_ops.cast(image, dtype), scale)
        if src.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype)
        if src.is_integer:
            scale = constant(1.0 / src.max, dtype=dtype)
            return math_ops.multiply(math_ops.cast(image, dtype), scale)
        scale = constant(dtype.max + 0.5, dtype=src)
        scaled = math_ops.multiply(image, scale)
        if saturate:
            scaled = math_ops.minimum(math_ops.maximum(scaled, 0.0), float(dtype.max))
        return math_ops.cast(scaled, dtype)
