"""TF's image codec functions (`tf.io.decode_jpeg` ..., also under `tf.image`),
`convert_image_dtype` and `saturate_cast`, over the ops of
framework/op_defs/image_codec_ops.py and math ops."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, math_ops


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


def saturate_cast(value, dtype, name=None):
    """`value` cast to `dtype`, clamped first to the range both types hold (TF's
    saturate_cast: a limit the input type rounds outwards is nudged inwards)."""
    with ops.name_scope(name, "saturate_cast", [value]) as name:
        value = ops.convert_to_tensor(value, name="value")
        dtype = dtypes.as_dtype(dtype).base_dtype
        source = value.dtype.base_dtype
        if source.min < dtype.min or source.max > dtype.max:
            kind = source.as_numpy_dtype  # (the limits: both types' common range)
            low = kind(max(source.min, dtype.min))
            high = kind(min(source.max, dtype.max))
            if low.item() < dtype.min:  # (.item(): compared exactly, not in `kind`)
                low = np.nextafter(low, kind(0))
            if high.item() > dtype.max:
                high = np.nextafter(high, kind(0))
            value = apply_op("ClipByValue", name="clamp", t=value,
                             clip_value_min=ops.convert_to_tensor(low, dtype=source),
                             clip_value_max=ops.convert_to_tensor(high, dtype=source))
        return math_ops.cast(value, dtype, name=name)


def convert_image_dtype(image, dtype, saturate=False, name=None):
    """TF's convert_image_dtype: integers span their type's range, floats [0, 1].
    int -> int: shift by the ratio of the ranges; int -> float: times 1/max; float ->
    int: times (max + 0.5), truncated (clamped first with `saturate`)."""
    image = ops.convert_to_tensor(image, name="image")
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    if not image.dtype.is_floating and not image.dtype.is_integer:
        raise AttributeError("image dtype must be either floating point or integer")
    if dtype == image.dtype:
        return array_ops.identity(image, name=name)
    with ops.name_scope(name, "convert_image", [image]) as name:
        source = image.dtype.base_dtype
        if source.is_integer and dtype.is_integer:
            if source.max > dtype.max:  # narrowing: scale, then cast
                scaled = math_ops.floordiv(image, (source.max + 1) // (dtype.max + 1))
                return (saturate_cast if saturate else math_ops.cast)(scaled, dtype, name=name)
            cast = (saturate_cast if saturate else math_ops.cast)(image, dtype)
            return math_ops.multiply(cast, (dtype.max + 1) // (source.max + 1), name=name)
        if source.is_floating and dtype.is_floating:
            return math_ops.cast(image, dtype, name=name)
        if source.is_integer:
            return math_ops.multiply(math_ops.cast(image, dtype), 1.0 / source.max, name=name)
        scaled = math_ops.multiply(image, dtype.max + 0.5)
        return (saturate_cast if saturate else math_ops.cast)(scaled, dtype, name=name)
