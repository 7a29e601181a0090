"""Image codec kernels: DecodeJpeg, DecodeAndCropJpeg, ExtractJpegShape, EncodeJpeg,
EncodeJpegVariableQuality, DecodePng, EncodePng, DecodeBmp, DecodeGif, DecodeImage, to
TF 2.21's values (tests/test_image_codec.py against tests/data/image_codec_tf.npz).

The formats are read and written in jpeg_codec.py (libjpeg-turbo), png_codec.py,
gif_codec.py and bmp_codec.py. As TF's DecodeImageV2, every decode op sniffs the format
and decodes what it finds (DecodeJpeg reads a PNG too).
Known differences: a truncated JPEG fails whatever try_recover_truncated says (TF's
default); DecodeAndCropJpeg crops the whole decode (TF's decodes the crop's columns only:
with fancy upsampling its crop's edge pixels differ by up to 3 levels).
Decoding and encoding run on the pool (`expensive`): a photo takes milliseconds."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.image.bmp_codec import decode_bmp
from aioflow.kernels.image.gif_codec import decode_gif
from aioflow.kernels.image.image_errors import invalid as _invalid
from aioflow.kernels.image.jpeg_codec import decode_jpeg, encode_jpeg, jpeg_shape
from aioflow.kernels.image.png_codec import decode_png, encode_png

_UNKNOWN_FORMAT = ("Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP "
                   "required.")


def _sniff(data: bytes) -> str | None:
    """The format TF's DecodeImageV2 sees in the first bytes."""
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:3] == b"\x89PN":
        return "png"
    if data[:3] == b"GIF":
        return "gif"
    if data[:2] == b"BM":
        return "bmp"
    return None


def _scalar_bytes(value, what: str = "contents") -> bytes:
    if np.ndim(value) != 0:
        raise _invalid(f"{what} must be scalar, got shape "
                       f"[{','.join(str(d) for d in np.shape(value))}]")
    item = np.asarray(value, dtype=object).item()
    return item if isinstance(item, bytes) else str(item).encode("utf-8")


# -- kernels -----------------------------------------------------------------------------------

class _Decode(OpKernel):
    """The decode ops: check the attrs as TF's constructor does, sniff, decode."""

    expensive = True
    allowed_channels = (0, 1, 3, 4)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.op = ctx.op_type
        self.channels = int(ctx.get_attr("channels", 0))
        if self.channels not in self.allowed_channels:
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"`channels` must be 0, 1, 3 or 4 but got "
                                    f"{self.channels}")
        self.ratio = int(ctx.get_attr("ratio", 1))
        if self.ratio not in (1, 2, 4, 8):
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"ratio must be 1, 2, 4, or 8, got {self.ratio}")
        self.fancy = bool(ctx.get_attr("fancy_upscaling", True))
        dct = ctx.get_attr("dct_method", b"")
        self.dct = attr_text(dct)
        if self.dct not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
            raise errors.InvalidArgumentError(
                ctx.node_def, None, "dct_method must be one of {'', 'INTEGER_FAST', "
                                    "'INTEGER_ACCURATE'}")
        self.dtype = np.dtype(dtypes.as_dtype(ctx.get_attr("dtype")).as_numpy_dtype) \
            if ctx.has_attr("dtype") else np.dtype(np.uint8)
        # A GIF's frames (4-D) for DecodeGif, and DecodeImage unless expand_animations is
        # off; its first frame (3-D) for the other ops.
        self.expand = bool(ctx.get_attr("expand_animations", False))

    def decode(self, data: bytes, crop=None) -> np.ndarray:
        kind = _sniff(data)
        if crop is not None and kind != "jpeg":
            raise _invalid(f"DecodeAndCropJpeg operation can run on JPEG only, but "
                           f"detected {(kind or 'unknown').upper()}.")
        if kind == "jpeg":
            image = decode_jpeg(data, self.channels, self.ratio, self.fancy, self.dct, crop)
        elif kind == "png":
            image = decode_png(data, self.channels,
                               np.uint8 if self.dtype == np.uint8 else np.uint16)
        elif kind == "bmp":
            image = decode_bmp(data, self.channels)
        elif kind == "gif":
            if self.channels not in (0, 3):
                raise _invalid(f"channels must be 0 or 3 for GIF, got {self.channels}")
            image = decode_gif(data, self.expand)
            if not self.expand:
                image = image[0]
        else:
            raise _invalid(_UNKNOWN_FORMAT)
        return _as_dtype(image, self.dtype)

    def compute(self, ctx, inputs):
        return (self.decode(_scalar_bytes(inputs[0])),)


def _as_dtype(image: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A JPEG's or BMP's uint8 as convert_image_dtype makes it: uint16 by x256, float32
    in [0, 1] by the integer type's maximum (a PNG comes as uint16 already: x257)."""
    if image.dtype == dtype:
        return image
    if dtype == np.uint16:
        return image.astype(np.uint16) << np.uint16(8)
    return image.astype(np.float32) * np.float32(1.0 / np.iinfo(image.dtype).max)


@register_kernel("DecodeJpeg", "CPU")
class DecodeJpegOp(_Decode):
    """A JPEG (or PNG, BMP: the format is sniffed, as TF's) as HxWxC uint8."""


@register_kernel("DecodePng", "CPU")
class DecodePngOp(_Decode):
    """A PNG (or JPEG, BMP) as HxWxC uint8 or uint16."""


@register_kernel("DecodeImage", "CPU")
class DecodeImageOp(_Decode):
    """Any of the formats as HxWxC uint8, uint16 or float32 in [0, 1]."""


@register_kernel("DecodeBmp", "CPU")
class DecodeBmpOp(_Decode):
    """A BMP (or JPEG, PNG) as HxWxC uint8."""


@register_kernel("DecodeGif", "CPU")
class DecodeGifOp(_Decode):
    """A GIF's frames as NxHxWx3 uint8 (a JPEG, PNG or BMP: one frame of 3 channels)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.channels, self.expand = 3, True

    def decode(self, data: bytes, crop=None) -> np.ndarray:
        image = super().decode(data)
        return image if _sniff(data) == "gif" else image[None]


@register_kernel("DecodeAndCropJpeg", "CPU")
class DecodeAndCropJpegOp(_Decode):
    """A JPEG's crop window [y, x, height, width] as HxWxC uint8."""

    def compute(self, ctx, inputs):
        window = np.asarray(inputs[1])
        if window.shape != (4,):
            raise _invalid(f"crop_window must be shape [4], got "
                           f"[{','.join(map(str, window.shape))}]")
        return (self.decode(_scalar_bytes(inputs[0]), crop=window),)


@register_kernel("ExtractJpegShape", "CPU")
class ExtractJpegShapeOp(OpKernel):
    """[height, width, channels] of a JPEG, from its header alone."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.out = dtypes.as_dtype(ctx.get_attr("output_type", dtypes.int32)).as_numpy_dtype

    def compute(self, ctx, inputs):
        return (np.array(jpeg_shape(_scalar_bytes(inputs[0])), self.out),)


@register_kernel("EncodeJpeg", "CPU")
class EncodeJpegOp(OpKernel):
    """HxWxC uint8 (C 1 or 3) as a JPEG file's bytes."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        fmt = ctx.get_attr("format", b"")
        self.format = attr_text(fmt)
        self.quality = int(ctx.get_attr("quality", 95))
        self.progressive = bool(ctx.get_attr("progressive", False))
        self.optimize = bool(ctx.get_attr("optimize_size", False))
        self.chroma = bool(ctx.get_attr("chroma_downsampling", True))
        unit = ctx.get_attr("density_unit", b"in")
        self.density = (2 if unit in (b"cm", "cm") else 1, int(ctx.get_attr("x_density", 300)),
                        int(ctx.get_attr("y_density", 300)))
        xmp = ctx.get_attr("xmp_metadata", b"")
        self.xmp = xmp if isinstance(xmp, bytes) else str(xmp).encode("utf-8")
        if not 0 <= self.quality <= 100:
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"quality must be in [0,100], got {self.quality}")

    def compute(self, ctx, inputs):
        return (_bytes_scalar(encode_jpeg(np.asarray(inputs[0]), self.format, self.quality,
                                          self.progressive, self.optimize, self.chroma,
                                          self.density, self.xmp)),)


@register_kernel("EncodeJpegVariableQuality", "CPU")
class EncodeJpegVariableQualityOp(OpKernel):
    """EncodeJpeg with the quality an input (TF's defaults for the rest)."""

    expensive = True

    def compute(self, ctx, inputs):
        quality = np.asarray(inputs[1])
        if quality.ndim != 0:
            raise _invalid(f"quality must be a scalar: "
                           f"[{','.join(map(str, quality.shape))}]")
        return (_bytes_scalar(encode_jpeg(np.asarray(inputs[0]), "", int(quality))),)


@register_kernel("EncodePng", "CPU")
class EncodePngOp(OpKernel):
    """HxWxC uint8 or uint16 (C 1-4) as a PNG file's bytes."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.compression = int(ctx.get_attr("compression", -1))

    def compute(self, ctx, inputs):
        return (_bytes_scalar(encode_png(np.asarray(inputs[0]), self.compression)),)


def _bytes_scalar(data: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = data
    return out
