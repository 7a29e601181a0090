"""PNG read and written here (zlib and NumPy) as TF 2.21 reads them with libpng: every
colour type, bit depths 1-16, palettes, tRNS and Adam7 interlacing, with libpng's
conversions as TF asks for them (gray <-> RGB, alpha added or stripped, 8 <-> 16 bits);
numba compiles the row unfiltering when it is installed."""

from __future__ import annotations

import struct
import zlib

import numpy as np

from aioflow.kernels import jit
from aioflow.kernels.image.image_errors import invalid as _invalid

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_ADAM7 = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
          (1, 0, 2, 1))  # (row start, column start, row step, column step) of each pass


def _unfilter_rows(raw, rows: int, row_bytes: int, bpp: int):
    """PNG's five row filters undone (raw: each row's filter byte, then its bytes)."""
    out = np.zeros((rows, row_bytes), np.uint8)
    prior = np.zeros(row_bytes, np.int32)
    for y in range(rows):
        start = y * (row_bytes + 1)
        kind = raw[start]
        line = raw[start + 1:start + 1 + row_bytes].astype(np.int32)
        cur = np.zeros(row_bytes, np.int32)
        for i in range(row_bytes):
            a = cur[i - bpp] if i >= bpp else 0
            b = prior[i]
            if kind == 0:
                v = line[i]
            elif kind == 1:
                v = line[i] + a
            elif kind == 2:
                v = line[i] + b
            elif kind == 3:
                v = line[i] + ((a + b) >> 1)
            elif kind == 4:
                c = prior[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                v = line[i] + (a if pa <= pb and pa <= pc else (b if pb <= pc else c))
            else:
                return out, y  # an unknown filter type: the row it is on
            cur[i] = v & 255
        out[y] = cur
        prior = cur
    return out, -1


_unfilter_jit = jit.njit(_unfilter_rows)


def _unfilter(raw: np.ndarray, rows: int, row_bytes: int, bpp: int, bad) -> np.ndarray:
    """The rows unfiltered (compiled when numba is there); `bad` on an unknown filter."""
    fn = _unfilter_jit if _unfilter_jit is not None else _unfilter_rows
    out, bad_row = fn(raw, rows, row_bytes, bpp)
    if bad_row >= 0:
        raise bad
    return out


def _samples(rows: np.ndarray, width: int, channels: int, depth: int) -> np.ndarray:
    """Unfiltered rows as HxWxC samples (uint8, or uint16 for 16-bit files)."""
    h = rows.shape[0]
    if depth == 16:
        return rows.view(">u2").astype(np.uint16).reshape(h, width, channels)
    if depth == 8:
        return rows.reshape(h, width, channels)
    shifts = np.arange(8 - depth, -1, -depth, dtype=np.uint8)  # (1, 2, 4 bits: 1 channel)
    unpacked = (rows[:, :, None] >> shifts) & np.uint8((1 << depth) - 1)
    return np.ascontiguousarray(unpacked.reshape(h, -1)[:, :width, None])


class _Png:
    """A PNG file's samples (before any conversion) and what says how to read them."""

    def __init__(self, data: bytes):
        bad = _invalid(f"Invalid PNG data, size {len(data)}")
        if data[:8] != _PNG_MAGIC:
            raise _invalid("Invalid PNG. Failed to initialize decoder.")
        pos, idat, header = 8, [], None
        self.palette = self.trns = None
        while pos + 8 <= len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            if len(body) != length or (header is None and kind != b"IHDR") or \
                    (kind == b"IHDR" and length != 13):
                if header is None:
                    raise _invalid("Invalid PNG. Failed to initialize decoder.")
                raise bad
            if kind == b"IHDR":
                header = struct.unpack(">IIBBBBB", body)
            elif kind == b"PLTE":
                self.palette = np.frombuffer(body, np.uint8).reshape(-1, 3)
            elif kind == b"tRNS":
                self.trns = body
            elif kind == b"IDAT":
                idat.append(body)
            elif kind == b"IEND":
                break
            pos += 12 + length
        if header is None:
            raise _invalid("Invalid PNG. Failed to initialize decoder.")
        if not idat:
            raise bad
        self.width, self.height, self.depth, self.color_type, _, _, interlace = header
        per_pixel = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(self.color_type)
        if per_pixel is None or self.depth not in (1, 2, 4, 8, 16) or \
                (self.color_type == 3 and self.palette is None):
            raise bad
        bits = per_pixel * self.depth
        passes = _ADAM7 if interlace else ((0, 0, 1, 1),)
        sizes = [(len(range(y0, self.height, dy)), len(range(x0, self.width, dx)))
                 for y0, x0, dy, dx in passes]
        expected = sum(h * ((w * bits + 7) // 8 + 1) for h, w in sizes if h and w)
        if self.width == 0 or self.height == 0 or \
                self.width * self.height * per_pixel * (2 if self.depth == 16 else 1) >= 1 << 31:
            raise bad
        try:  # (no more than the image needs: a small file cannot inflate to gigabytes)
            raw = zlib.decompressobj().decompress(b"".join(idat), expected)
        except zlib.error:
            raise bad from None
        self.samples = self._read(np.frombuffer(raw, np.uint8), per_pixel, passes, bad)

    def _read(self, raw, per_pixel: int, passes, bad) -> np.ndarray:
        bits = per_pixel * self.depth
        bpp = max(1, bits // 8)
        out = np.zeros((self.height, self.width, per_pixel),
                       np.uint16 if self.depth == 16 else np.uint8)
        pos = 0
        for y0, x0, dy, dx in passes:
            h = len(range(y0, self.height, dy))
            w = len(range(x0, self.width, dx))
            if h == 0 or w == 0:
                continue
            row_bytes = (w * bits + 7) // 8
            size = h * (row_bytes + 1)
            if pos + size > raw.size:
                raise bad
            rows = _unfilter(raw[pos:pos + size], h, row_bytes, bpp, bad)
            out[y0::dy, x0::dx] = _samples(rows, w, per_pixel, self.depth)
            pos += size
        return out


def _gray_of(rgb: np.ndarray, sixteen: bool) -> np.ndarray:
    """libpng's rgb_to_gray at TF's weights (0.299, 0.587) in 1/32768ths: 8-bit
    truncated, 16-bit rounded, as libpng computes them."""
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    total = r * 9797 + g * 19234 + b * 3737
    gray = (total + 16384 if sixteen else total) >> 15
    return gray.astype(np.uint16 if sixteen else np.uint8)[..., None]


def decode_png(data: bytes, channels: int, dtype) -> np.ndarray:
    """HxWxC as TF's png::CommonInitDecode and CommonFinishDecode convert the file."""
    png = _Png(data)
    img, kind, depth = png.samples, png.color_type, png.depth
    alpha = None
    filler = (1 << min(depth, 8)) - 1 if depth < 16 else 65535  # (libpng: the file's depth)
    if kind == 3:  # palette -> RGB, tRNS -> alpha
        index = img[..., 0]
        if index.max(initial=0) >= len(png.palette):
            raise _invalid(f"Invalid PNG data, size {len(data)}")
        img = png.palette[index]
        if png.trns is not None:
            table = np.full(len(png.palette), 255, np.uint8)
            trns = np.frombuffer(png.trns, np.uint8)[:len(table)]
            table[:len(trns)] = trns
            alpha = table[index][..., None]
        depth, filler = 8, 255
    elif depth < 8:  # gray 1, 2, 4 bits -> 8
        img = (img.astype(np.uint16) * (255 // ((1 << depth) - 1))).astype(np.uint8)
        depth = 8
    if kind in (4, 6):
        img, alpha = img[..., :-1], img[..., -1:]
    file_channels = img.shape[2] + (alpha is not None)
    want = channels or file_channels
    if want in (1, 2) and img.shape[2] == 3:
        img = _gray_of(img, depth == 16)
    elif want in (3, 4) and img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    if want in (2, 4):
        if alpha is None:
            alpha = np.full(img.shape[:2] + (1,), filler, img.dtype)
        img = np.concatenate([img, alpha.astype(img.dtype)], axis=2)
    sixteen = np.dtype(dtype) == np.uint16
    if sixteen and depth == 8:
        img = img.astype(np.uint16) * 257
    elif not sixteen and depth == 16:
        img = (img >> 8).astype(np.uint8)
    return np.ascontiguousarray(img.astype(dtype, copy=False))


# -- PNG: writing ----------------------------------------------------------------------------

def encode_png(image: np.ndarray, compression: int) -> bytes:
    """A PNG of `image` (HxWxC, C 1-4, uint8 or uint16); rows unfiltered, zlib at
    `compression` (-1: zlib's default)."""
    if image.ndim < 3:
        raise _invalid(f"images must be at least rank 3"
                       f"[{','.join(map(str, image.shape))}]")
    if image.ndim != 3:
        raise _invalid(f"image must be 3-dimensional[{','.join(map(str, image.shape))}]")
    h, w, c = image.shape
    if c not in (1, 2, 3, 4):
        raise _invalid(f"image must have 1, 2, 3, or 4 channels, got {c}")
    if not -1 <= compression <= 9:
        raise _invalid(f"compression should be in [-1,9], got {compression}")
    depth = 16 if image.dtype == np.uint16 else 8
    samples = image.astype(">u2") if depth == 16 else image.astype(np.uint8)
    rows = samples.reshape(h, -1).view(np.uint8)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1).tobytes()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(
            ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    return (_PNG_MAGIC + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type,
                                                    0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, compression)) + chunk(b"IEND", b""))
