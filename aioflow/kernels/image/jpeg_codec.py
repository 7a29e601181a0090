"""JPEG through libjpeg-turbo with TF 2.21's settings
(aioflow/kernels/image/image_codec_kernels.py's
DecodeJpeg, DecodeAndCropJpeg, ExtractJpegShape, EncodeJpeg): decoding with the
`simplejpeg` package (dct_method '' and INTEGER_FAST are libjpeg's fast integer DCT,
INTEGER_ACCURATE its accurate one, fancy_upscaling off its fast upsampling, `ratio` its
1/ratio scaling: pixels equal TF's), CMYK converted as TF does; encoding with Pillow's
libjpeg (files equal TF's byte for byte). Both are the `image` extra."""

from __future__ import annotations

import io
import struct

import numpy as np

from aioflow.framework import errors
from aioflow.kernels.image.image_errors import invalid as _invalid

_JPEG_FAILED = "jpeg::Uncompress failed. Invalid JPEG data or crop window."


def _simplejpeg(op: str):
    try:
        import simplejpeg
    except ImportError:
        raise errors.UnimplementedError(
            None, None, f"{op} needs libjpeg-turbo through the simplejpeg package: "
                        f"pip install 'aioflow[image]'") from None
    return simplejpeg


def _pillow(op: str):
    try:
        from PIL import Image
    except ImportError:
        raise errors.UnimplementedError(
            None, None, f"{op} needs libjpeg through Pillow: pip install 'aioflow[image]'"
        ) from None
    return Image


def decode_jpeg(data: bytes, channels: int, ratio: int = 1, fancy: bool = True,
                dct_method: str = "", crop=None) -> np.ndarray:
    """HxWxC uint8 as TF's jpeg::Uncompress: C is `channels`, or the file's (1 or 3; a
    CMYK file is converted to RGB as TF does)."""
    if channels == 4:
        raise _invalid("JPEG does not support 4 channels")
    sj = _simplejpeg("DecodeJpeg")
    try:
        height, width, colorspace, _ = sj.decode_jpeg_header(data)
    except ValueError:
        raise _invalid(_JPEG_FAILED) from None
    cmyk = colorspace in ("CMYK", "YCCK")
    depth = channels or (1 if colorspace == "Gray" else 3)
    if height * width * depth >= 1 << 29:  # (TF's limit: "Image too large")
        raise _invalid(_JPEG_FAILED)
    if cmyk and depth == 1:  # (libjpeg has no CMYK -> gray conversion)
        raise _invalid(_JPEG_FAILED)
    try:
        image = sj.decode_jpeg(
            data, colorspace="CMYK" if cmyk else "GRAY" if depth == 1 else "RGB",
            fastdct=dct_method != "INTEGER_ACCURATE", fastupsample=not fancy,
            min_height=-(-height // ratio), min_width=-(-width // ratio))
    except ValueError:
        raise _invalid(_JPEG_FAILED) from None
    image = image.reshape(image.shape[0], image.shape[1], -1)
    if cmyk:
        image = _cmyk_to_rgb(image, _has_adobe_marker(data))
    if crop is not None:
        y, x, h, w = (int(v) for v in crop)
        if y < 0 or x < 0 or h <= 0 or w <= 0 or y + h > image.shape[0] or \
                x + w > image.shape[1]:
            raise _invalid(_JPEG_FAILED)
        image = image[y:y + h, x:x + w]
    return np.ascontiguousarray(image)


def _has_adobe_marker(data: bytes) -> bool:
    """Whether an APP14 "Adobe" segment comes before the scan (libjpeg's
    saw_Adobe_marker: its CMYK is stored inverted)."""
    i = 2
    while i + 4 <= len(data) and data[i] == 0xFF and data[i + 1] != 0xDA:
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if data[i + 1] == 0xEE and data[i + 4:i + 9] == b"Adobe":
            return True
        i += 2 + length
    return False


def _cmyk_to_rgb(cmyk: np.ndarray, adobe: bool) -> np.ndarray:
    """TF's CMYK -> RGB: k*c/255 (Adobe's inverted CMYK), else (255-k)*(255-c)/255."""
    c = cmyk.astype(np.int32)
    k = c[..., 3:]
    rgb = k * c[..., :3] // 255 if adobe else (255 - k) * (255 - c[..., :3]) // 255
    return rgb.astype(np.uint8)


def jpeg_shape(data: bytes) -> list[int]:
    """[height, width, components] from the frame header (TF's GetImageInfo)."""
    sj = _simplejpeg("ExtractJpegShape")
    try:
        height, width, colorspace, _ = sj.decode_jpeg_header(data)
    except ValueError:
        raise _invalid(f"Invalid JPEG data, size {len(data)}") from None
    return [height, width, {"Gray": 1, "CMYK": 4, "YCCK": 4}.get(colorspace, 3)]


def encode_jpeg(image: np.ndarray, fmt: str, quality: int, progressive: bool = False,
                optimize_size: bool = False, chroma_downsampling: bool = True,
                density: tuple[int, int, int] = (1, 300, 300), xmp: bytes = b"") -> bytes:
    """TF's EncodeJpeg, byte for byte: libjpeg (through Pillow) with jpeg_set_defaults,
    the quality's tables, 4:2:0 unless chroma_downsampling is off, TF's JFIF density
    (unit 1: inch, 2: cm) and its XMP packet in an APP1 segment."""
    if image.ndim != 3:
        raise _invalid(f"image must be 3-dimensional[{','.join(map(str, image.shape))}]")
    depth = image.shape[2]
    wanted = {"grayscale": 1, "rgb": 3}.get(fmt)
    if wanted is not None and depth != wanted:
        raise _invalid(f"format {fmt} expects {wanted} channels, got "
                       f"[{','.join(map(str, image.shape))}]")
    if depth not in (1, 3):
        raise _invalid(f"image must have 1 or 3 channels, got "
                       f"[{','.join(map(str, image.shape))}]")
    if not 0 <= quality <= 100:
        raise _invalid(f"quality must be in [0,100], got {quality}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise _invalid(f"Invalid image size: {image.shape[1]} x {image.shape[0]}")
    pil = _pillow("EncodeJpeg")
    pixels = np.ascontiguousarray(image[..., 0] if depth == 1 else image, np.uint8)
    out = io.BytesIO()
    pil.fromarray(pixels).save(
        out, "JPEG", quality=max(quality, 1), progressive=progressive, optimize=optimize_size,
        subsampling=2 if chroma_downsampling and depth == 3 else 0,
        dpi=(density[1], density[2]))
    data = out.getvalue()
    if data[6:11] == b"JFIF\0":  # the APP0 segment's unit and density, as TF writes them
        data = data[:13] + struct.pack(">BHH", *density) + data[18:]
    if xmp:
        packet = b"http://ns.adobe.com/xap/1.0/\0" + xmp
        app0_end = 4 + struct.unpack(">H", data[4:6])[0]
        data = (data[:app0_end] + b"\xff\xe1" + struct.pack(">H", len(packet) + 2) + packet
                + data[app0_end:])
    return data
