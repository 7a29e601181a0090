"""BMP read here as TF 2.21's DecodeBmp reads it: uncompressed 24- and 32-bit rows
(checked against TF's fixtures; 8-bit rows are read as gray values, unchecked),
bottom-up or top-down, BGR(A) to RGB(A)."""

from __future__ import annotations

import struct

import numpy as np

from aioflow.kernels.image.image_errors import invalid as _invalid


def decode_bmp(data: bytes, channels: int) -> np.ndarray:
    """An uncompressed 24- or 32-bit BMP as HxWxC uint8 (TF's DecodeBmpV2)."""
    if len(data) < 32:
        raise _invalid(f"Incomplete bmp content, requires at least 32 bytes to find the "
                       f"header size, width, height, and bpp, got {len(data)} bytes")
    offset, = struct.unpack_from("<I", data, 10)
    width, height = struct.unpack_from("<ii", data, 18)
    bpp, = struct.unpack_from("<H", data, 28)
    depth = bpp // 8
    if depth not in (1, 3, 4):
        raise _invalid(f"Number of channels inherent in the image must be 1, 3 or 4, "
                       f"was {depth}")
    if width <= 0 or height == 0:
        raise _invalid(f"Invalid BMP dimensions: width {width}, height {height}")
    rows = abs(height)
    row_bytes = (width * depth + 3) // 4 * 4
    if offset + row_bytes * (rows - 1) + width * depth > len(data):
        raise _invalid(f"Incomplete bmp content, requires "
                       f"{offset + row_bytes * rows} bytes, got {len(data)} bytes")
    buf = np.frombuffer(data, np.uint8, count=row_bytes * rows, offset=offset) \
        if offset + row_bytes * rows <= len(data) else np.frombuffer(
            data[offset:].ljust(row_bytes * rows, b"\0"), np.uint8)
    px = buf.reshape(rows, row_bytes)[:, :width * depth].reshape(rows, width, depth)
    if height > 0:  # bottom-up rows
        px = px[::-1]
    if depth >= 3:  # BGR(A) -> RGB(A)
        px = px[..., [2, 1, 0, 3][:depth]]
    want = channels or depth
    if want == 3 and depth == 4:
        px = px[..., :3]
    elif want == 4 and depth == 3:
        px = np.concatenate([px, np.full(px.shape[:2] + (1,), 255, np.uint8)], axis=2)
    elif want != depth:
        raise _invalid(f"channels attribute {want} does not match bits per pixel from "
                       f"file {bpp}")
    return np.ascontiguousarray(px)
