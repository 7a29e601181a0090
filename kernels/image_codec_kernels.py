"""Image codec kernels: DecodeJpeg, DecodeAndCropJpeg, ExtractJpegShape, EncodeJpeg,
EncodeJpegVariableQuality, DecodePng, EncodePng, DecodeBmp, DecodeGif, DecodeImage, to TF 2.21's
values (tests/test_image_codec.py against tests/data/image_codec_tf.npz).

- JPEG goes through libjpeg-turbo (the `image` extra). Decoding uses the `simplejpeg`
  package with TF's flags: dct_method '' and INTEGER_FAST are libjpeg's fast integer
  DCT, INTEGER_ACCURATE its accurate one; fancy_upscaling off is libjpeg's fast
  upsampling; `ratio` is libjpeg's 1/ratio scaling. Pixels equal TF's bit for bit.
  Encoding uses Pillow's libjpeg with TF's settings: files equal TF's byte for byte.
- PNG and BMP are read here (zlib and NumPy): every PNG colour type, bit depths 1-16,
  palettes, tRNS and Adam7 interlacing, with libpng's conversions as TF asks for them
  (gray <-> RGB, alpha added or stripped, 8 <-> 16 bits); numba compiles the row
  unfiltering when it is installed.
- As TF's DecodeImageV2, every decode op sniffs the format and decodes what it finds
  (DecodeJpeg reads a PNG too); GIFs are read here too (LZW in NumPy, numba-compiled
  when installed), frames composed as TF's gif_io does.
- Known differences: a truncated JPEG fails whatever try_recover_truncated says (TF's
  default); DecodeAndCropJpeg crops the whole decode (TF's decodes the crop's columns
  only: with fancy upsampling its crop's edge pixels differ by up to 3 levels).
Decoding and encoding run on the pool (`expensive`): a photo takes milliseconds."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel

from . import jit

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_UNKNOWN_FORMAT = ("Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP "
                   "required.")
_JPEG_FAILED = "jpeg::Uncompress failed. Invalid JPEG data or crop window."


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


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


# -- JPEG ----------------------------------------------------------------------------------------

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


# -- PNG: reading ----------------------------------------------------------------------------

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


# -- BMP ---------------------------------------------------------------------------------------

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


# -- GIF -------------------------------------------------------------------------------------

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
        self.dct = dct.decode() if isinstance(dct, bytes) else str(dct)
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
        self.format = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
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
