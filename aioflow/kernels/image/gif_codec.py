"""GIF read here as TF 2.21's gif_io reads it with giflib: LZW in NumPy (numba-compiled
when installed), frames composed on the largest frame's canvas, each starting as the
previous one, transparent pixels keeping it (black in the first); TF's errors."""

from __future__ import annotations

import struct

import numpy as np

from aioflow.kernels import jit
from aioflow.kernels.image.image_errors import invalid as _invalid


def _lzw_decode(data, min_size: int, count: int):
    """GIF's LZW: (the first `count` colour indices, how many came, 1 if the stream was
    defective)."""
    clear = 1 << min_size
    end = clear + 1
    prefix = np.full(4096, -1, np.int32)
    suffix = np.zeros(4096, np.uint8)
    first = np.zeros(4096, np.uint8)
    for i in range(clear):
        suffix[i] = i
        first[i] = i
    out = np.zeros(count, np.uint8)
    stack = np.zeros(4096, np.uint8)
    n = 0
    size = min_size + 1
    nxt = end + 1
    prev = -1
    acc = 0  # bits read from the stream and not yet used (least significant first)
    held = 0
    pos = 0
    while n < count:
        while held < size and pos < data.shape[0]:
            acc |= int(data[pos]) << held
            held += 8
            pos += 1
        if held < size:
            break
        code = acc & ((1 << size) - 1)
        acc >>= size
        held -= size
        if code == clear:
            size = min_size + 1
            nxt = end + 1
            prev = -1
            continue
        if code == end:
            break
        if prev == -1:
            if code >= clear:
                return out, n, 1
            out[n] = code
            n += 1
            prev = code
            continue
        if code > nxt or (code == nxt and nxt >= 4096):
            return out, n, 1
        known = code < nxt
        head = first[code] if known else first[prev]
        if nxt < 4096:
            prefix[nxt] = prev
            suffix[nxt] = head
            first[nxt] = first[prev]
            nxt += 1
            if nxt == (1 << size) and size < 12:
                size += 1
        depth = 0
        walk = code
        while walk >= 0:
            stack[depth] = suffix[walk]
            depth += 1
            walk = prefix[walk]
        while depth > 0 and n < count:
            depth -= 1
            out[n] = stack[depth]
            n += 1
        prev = code
    return out, n, 0


_lzw_jit = jit.njit(_lzw_decode)


def _sub_blocks(data: bytes, pos: int):
    """The bytes of the sub-blocks from `pos` and where they end; None when cut short."""
    parts = []
    while pos < len(data):
        size = data[pos]
        if size == 0:
            return b"".join(parts), pos + 1
        if pos + 1 + size > len(data):
            return None, len(data)
        parts.append(data[pos + 1:pos + 1 + size])
        pos += 1 + size
    return None, pos


def _color_table(data: bytes, pos: int, flags: int):
    """(the table as Nx3 uint8 or None, the position after it; None if cut short)."""
    if not flags & 0x80:
        return None, pos
    n = 2 << (flags & 7)
    if pos + 3 * n > len(data):
        return False, pos
    return np.frombuffer(data, np.uint8, 3 * n, pos).reshape(n, 3), pos + 3 * n


def _gif_frames(data: bytes, fail):
    """The image records of a GIF: (indices HxW, left, top, colour table, transparent)."""
    if len(data) < 13:
        raise fail("failed to open gif file: No screen descriptor detected")
    global_table, pos = _color_table(data, 13, data[10])
    if global_table is False:
        raise fail("failed to open gif file: No screen descriptor detected")
    frames, transparent = [], None
    while pos < len(data):
        kind = data[pos]
        if kind == 0x3B:
            break
        if kind == 0x21 and pos + 1 < len(data):
            body, after = _sub_blocks(data, pos + 2)
            if body is None:
                break  # (a cut after the last whole image: the images stand, as in TF)
            if data[pos + 1] == 0xF9 and len(body) >= 4:
                transparent = body[3] if body[0] & 1 else None
            pos = after
        elif kind == 0x2C:
            if pos + 10 > len(data):
                raise fail("failed to slurp gif file: Failed to read from given file")
            left, top, w, h, flags = struct.unpack_from("<HHHHB", data, pos + 1)
            table, pos = _color_table(data, pos + 10, flags)
            if table is False or pos >= len(data):
                raise fail("failed to slurp gif file: Failed to read from given file")
            min_size = data[pos]
            body, pos = _sub_blocks(data, pos + 1)
            if body is None:
                raise fail("failed to slurp gif file: Failed to read from given file")
            if not 1 <= min_size <= 11:
                raise fail("failed to slurp gif file: Image is defective, decoding aborted")
            codes = len(body) * 8 // (min_size + 1)  # (each code adds at most one pixel
            if w * h > codes * min(codes, 4096):     # more than the one before it)
                raise fail("failed to slurp gif file: Image is defective, decoding aborted")
            fn = _lzw_jit if _lzw_jit is not None else _lzw_decode
            indices, got, defective = fn(np.frombuffer(body, np.uint8), min_size, w * h)
            if defective or got < w * h:
                raise fail("failed to slurp gif file: Image is defective, decoding aborted")
            indices = indices.reshape(h, w)
            if flags & 0x40:  # interlaced: rows stored by passes
                order = np.concatenate([np.arange(0, h, 8), np.arange(4, h, 8),
                                        np.arange(2, h, 4), np.arange(1, h, 2)])
                rows = np.empty_like(indices)
                rows[order] = indices
                indices = rows
            frames.append((indices, left, top, table if table is not None else global_table,
                           transparent))
            transparent = None
        else:
            if frames and pos >= len(data) - 1:
                break
            raise fail("failed to slurp gif file: Wrong record type detected")
    if not frames:
        raise fail("gif file does not contain any image")
    return frames


def _check_indices(used: np.ndarray, table: np.ndarray, fail) -> None:
    top = int(used.max()) if used.size else 0
    if top >= len(table):
        raise fail(f"found color index {top} outside of color map range {len(table)}")


def decode_gif(data: bytes, expand_animations: bool = True) -> np.ndarray:
    """NxHxWx3 uint8 as TF's gif::Decode: the canvas is the largest frame's size; each
    frame starts as the previous one, a frame's transparent pixels keep it (black in
    the first), nothing of the disposal methods."""
    fail = lambda message: _invalid(  # noqa: E731
        f"Invalid GIF data (size {len(data)}), {message}")
    frames = _gif_frames(data, fail)
    height = max(f[0].shape[0] for f in frames)
    width = max(f[0].shape[1] for f in frames)
    count = len(frames) if expand_animations else 1
    out = np.zeros((count, height, width, 3), np.uint8)
    for k, (indices, left, top, table, transparent) in enumerate(frames[:count]):
        if k:
            out[k] = out[k - 1]
        if table is None:
            raise fail(f"missing color map for frame {k}")
        h, w = indices.shape
        bottom, right = min(top + h, height), min(left + w, width)
        if top >= bottom or left >= right:
            continue
        region = indices[:bottom - top, :right - left]
        if transparent is None:  # (the common frame: every pixel painted)
            _check_indices(region, table, fail)
            if region.shape == out.shape[1:3]:
                np.take(table, region, axis=0, out=out[k])  # (4x a fancy index's speed)
            else:
                out[k, top:bottom, left:right] = np.take(table, region, axis=0)
            continue
        paint = region != transparent
        used = region[paint]
        _check_indices(used, table, fail)
        out[k, top:bottom, left:right][paint] = table[used]
    return out
