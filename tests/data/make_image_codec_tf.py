"""Writes tests/data/image_codec_tf.npz: JPEG, PNG and BMP bytes and what TensorFlow 2.21
decodes from them (DecodeJpeg, DecodeAndCropJpeg, ExtractJpegShape, DecodePng,
DecodeBmp, DecodeImage), the OpDefs of the image codec ops, and TF's errors for bad input.

Run with TensorFlow's Python: /work/peers-venv/bin/python tests/data/make_image_codec_tf.py
The files are kept once each ("files/<name>", uint8); "cases" (JSON) gives each case's
file, extra inputs, attrs and TF's error if it raised one; "<case>/output" is what TF
returned."""

from __future__ import annotations

import itertools
import json
import os
import re
import struct
import sys
import zlib

import numpy as np
import tensorflow as tf
from google.protobuf import text_format
from tensorflow.python.framework import op_def_registry

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_error_text import error_record  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "image_codec_tf.npz")
OPS = ["DecodeJpeg", "DecodeAndCropJpeg", "ExtractJpegShape", "EncodeJpeg",
       "EncodeJpegVariableQuality", "DecodePng", "EncodePng", "DecodeBmp", "DecodeGif",
       "DecodeImage"]
rng = np.random.default_rng(7)


def picture(h: int, w: int, c: int, dtype=np.uint8) -> np.ndarray:
    """Gradients plus noise: what JPEG meets in photographs, not flat noise."""
    top = np.iinfo(dtype).max
    yy, xx = np.mgrid[0:h, 0:w]
    planes = [(xx * 2.7 + k * 40) % 256 + (yy * 3.1) % 128 for k in range(c)]
    img = np.stack(planes, -1) / 384.0 * top + rng.normal(0, top / 20, (h, w, c))
    return img.clip(0, top).astype(dtype)


def png_bytes(rows: np.ndarray, width: int, color_type: int, bit_depth: int, palette=None,
              trns: bytes | None = None) -> bytes:
    """A PNG written by hand (filter 0 on every row): for palettes and low bit depths,
    which TF's encoder does not write."""
    h, w = rows.shape[0], width
    raw = b"".join(b"\x00" + rows[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, bit_depth,
                                                            color_type, 0, 0, 0))
    if palette is not None:
        out += chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        out += chunk(b"tRNS", trns)
    return out + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def bmp_bytes(img: np.ndarray, bits: int, top_down: bool = False) -> bytes:
    """An uncompressed BMP (BITMAPINFOHEADER), rows padded to 4 bytes, BGR(A)."""
    h, w, c = img.shape
    px = img[..., ::-1] if c >= 3 else img
    if c == 4:
        px = img[..., [2, 1, 0, 3]]
    row_bytes = (w * bits // 8 + 3) // 4 * 4
    rows = px if top_down else px[::-1]
    data = b"".join(r.tobytes().ljust(row_bytes, b"\x00") for r in rows)
    header = struct.pack("<IiiHHIIiiII", 40, w, -h if top_down else h, 1, bits, 0,
                         len(data), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + 40 + len(data), 0, 0, 54) + header + data


OP_OF = {tf.io.decode_jpeg: "DecodeJpeg", tf.io.decode_and_crop_jpeg: "DecodeAndCropJpeg",
         tf.io.extract_jpeg_shape: "ExtractJpegShape", tf.io.encode_jpeg: "EncodeJpeg",
         tf.io.decode_png: "DecodePng", tf.io.encode_png: "EncodePng",
         tf.io.decode_bmp: "DecodeBmp", tf.io.decode_image: "DecodeImage",
         tf.io.decode_gif: "DecodeGif"}
fixtures: dict[str, np.ndarray] = {}
cases: dict[str, dict] = {}  # case -> {"source", "extra", "attrs", "error"?}


def tf_message(e: BaseException) -> dict:
    """TF's error as a graph run raises it: without eager's function-node prefix and
    op suffix."""
    rec = error_record(e)
    rec["message"] = re.sub(r" \[Op:\w+\]( name: .*)?$", "",
                            re.sub(r"^\{\{function_node [^}]*\}\} ", "", rec["message"]))
    return rec


def store(name: str, data: bytes) -> str:
    """Keep a file's bytes once (as uint8), under files/<name>; cases name it."""
    fixtures[f"files/{name}"] = np.frombuffer(data, np.uint8)
    return name


def record(case: str, fn, source: str, attrs: dict, *extra) -> None:
    """TF's output (or error) for fn(<the file source>, *extra, **attrs)."""
    cases[case] = entry = {
        "op": OP_OF[fn], "source": source, "extra": [np.asarray(x).tolist() for x in extra],
        "attrs": {k: v.name if isinstance(v, tf.DType) else v for k, v in attrs.items()}}
    data = fixtures[f"files/{source}"].tobytes()
    try:
        fixtures[f"{case}/output"] = fn(data, *extra, **attrs).numpy()
    except Exception as e:  # noqa: BLE001 - TF's error is the fixture
        entry["error"] = tf_message(e)


def record_encode_error(case: str, fn, image: np.ndarray, attrs: dict) -> None:
    """TF's error for encoding a bad image."""
    fixtures[f"{case}/image"] = image
    try:
        fn(image, **attrs)
        raise AssertionError(f"{case}: TF encoded it")
    except tf.errors.OpError as e:
        cases[case] = {"op": OP_OF[fn], "attrs": attrs, "error": tf_message(e)}


# -- JPEG: TF's encoder's files, and decoding with every attr -----------------------------------
jpegs = []
for fmt, q, prog, chroma in [("rgb", 90, False, True), ("rgb", 50, True, False),
                             ("grayscale", 75, False, True)]:
    src = picture(13, 19, 3 if fmt == "rgb" else 1)
    jpegs.append(store(f"{fmt}_q{q}_p{int(prog)}_c{int(chroma)}.jpg", tf.io.encode_jpeg(
        src, format=fmt, quality=q, progressive=prog, chroma_downsampling=chroma).numpy()))
for name in jpegs:
    for channels, ratio, fancy, dct in itertools.product(
            [0, 1, 3], [1, 2, 8], [True, False], ["", "INTEGER_ACCURATE"]):
        record(f"jpeg/{name}/c{channels}_r{ratio}_f{int(fancy)}_{dct or 'default'}",
               tf.io.decode_jpeg, name, dict(channels=channels, ratio=ratio,
                                             fancy_upscaling=fancy, dct_method=dct))
    record(f"jpeg_shape/{name}", tf.io.extract_jpeg_shape, name, {})
    record(f"jpeg_shape64/{name}", tf.io.extract_jpeg_shape, name, dict(output_type=tf.int64))
# CMYK (written by simplejpeg's libjpeg-turbo: TF has no CMYK encoder), with the Adobe marker
try:
    import simplejpeg
    cmyk = np.ascontiguousarray(np.concatenate([picture(13, 19, 3), picture(13, 19, 1)], -1))
    store("cmyk.jpg", simplejpeg.encode_jpeg(cmyk, quality=90, colorspace="CMYK"))
    for channels in (0, 1, 3, 4):
        record(f"jpeg/cmyk.jpg/c{channels}", tf.io.decode_jpeg, "cmyk.jpg",
               dict(channels=channels))
    record("jpeg_shape/cmyk.jpg", tf.io.extract_jpeg_shape, "cmyk.jpg", {})
except ImportError:
    sys.exit("the CMYK JPEG needs simplejpeg beside TensorFlow: pip install simplejpeg")
jpeg = jpegs[0]
for window in ([0, 0, 13, 19], [3, 5, 10, 7], [12, 18, 1, 1], [0, 9, 13, 8],
               [5, 5, 9, 10], [-1, 0, 4, 4], [0, 0, 0, 4]):
    record(f"jpeg_crop/{'_'.join(map(str, window))}", tf.io.decode_and_crop_jpeg, jpeg,
           dict(channels=3), np.array(window, np.int32))
record("jpeg_bad/not_jpeg", tf.io.decode_jpeg, store("text", b"not a jpeg at all"), {})
half = fixtures[f"files/{jpeg}"].tobytes()
record("jpeg_bad/truncated", tf.io.decode_jpeg, store("half.jpg", half[: len(half) // 2]), {})
record("jpeg_bad/channels", tf.io.decode_jpeg, jpeg, dict(channels=2))
record("jpeg_bad/channels4", tf.io.decode_jpeg, jpeg, dict(channels=4))
record("jpeg_bad/image_channels4", tf.io.decode_image, jpeg, dict(channels=4))
record("jpeg_bad/ratio", tf.io.decode_jpeg, jpeg, dict(ratio=3))
record("jpeg_bad/dct", tf.io.decode_jpeg, jpeg, dict(dct_method="FLOAT"))
record("jpeg_bad/shape_not_jpeg", tf.io.extract_jpeg_shape, store("nope", b"nope"), {})

# -- JPEG encoding: TF's file, and what TF's decoder reads back from it ----------------------
for fmt, c, q, prog, opt, chroma, extra in [
        ("", 3, 95, False, False, True, {}), ("", 1, 80, True, True, True, {}),
        ("rgb", 3, 60, False, False, False, {}), ("grayscale", 1, 90, False, False, True, {}),
        ("", 3, 0, True, False, True, dict(density_unit="cm", x_density=72, y_density=96)),
        ("", 3, 100, False, True, False, dict(xmp_metadata="<x:xmpmeta>aioflow</x:xmpmeta>"))]:
    src = picture(13, 19, c)
    attrs = dict(format=fmt, quality=q, progressive=prog, optimize_size=opt,
                 chroma_downsampling=chroma, **extra)
    enc = tf.io.encode_jpeg(src, **attrs).numpy()
    case = (f"jpeg_encode/{fmt or 'auto'}_c{c}_q{q}_p{int(prog)}_o{int(opt)}_c{int(chroma)}"
            f"{'_' + '_'.join(map(str, extra.values())) if extra else ''}")
    fixtures[f"{case}/image"] = src
    cases[case] = {"op": "EncodeJpeg", "attrs": attrs}
    fixtures[f"{case}/bytes"] = np.frombuffer(enc, np.uint8)
    fixtures[f"{case}/decoded"] = tf.io.decode_jpeg(enc).numpy()
record_encode_error("jpeg_encode_bad/rank", tf.io.encode_jpeg, picture(4, 4, 3)[0], {})
record_encode_error("jpeg_encode_bad/channels", tf.io.encode_jpeg, picture(4, 4, 2), {})
record_encode_error("jpeg_encode_bad/format", tf.io.encode_jpeg, picture(4, 4, 3),
                    dict(format="grayscale"))

# -- PNG: TF's encoder's files and hand-written ones (palette, tRNS, low bit depths) -----------
pngs = []
for c, dtype in itertools.product([1, 2, 3, 4], [np.uint8, np.uint16]):
    pngs.append(store(f"c{c}_{np.dtype(dtype).name}.png",
                      tf.io.encode_png(picture(5, 7, c, dtype)).numpy()))
palette = rng.integers(0, 256, (7, 3))
idx = rng.integers(0, 7, (5, 7)).astype(np.uint8)
pngs.append(store("palette.png", png_bytes(idx, 7, 3, 8, palette)))
pngs.append(store("palette_trns.png", png_bytes(idx, 7, 3, 8, palette,
                                                trns=bytes([0, 128, 255, 40]))))
g4 = rng.integers(0, 16, (5, 8)).astype(np.uint8)
pngs.append(store("gray4.png", png_bytes((g4[:, 0::2] << 4 | g4[:, 1::2]).astype(np.uint8),
                                         8, 0, 4)))
pngs.append(store("gray8_trns.png", png_bytes(picture(5, 7, 1)[..., 0], 7, 0, 8,
                                              trns=b"\x00\x7f")))
for name in pngs:
    for channels, dtype in itertools.product([0, 1, 3, 4], [tf.uint8, tf.uint16]):
        record(f"png/{name}/c{channels}_{dtype.name}", tf.io.decode_png, name,
               dict(channels=channels, dtype=dtype))
record("png_bad/not_png", tf.io.decode_png, store("broken.png", b"\x89PNG\r\n\x1a\nbroken"),
       {})
record("png_bad/channels", tf.io.decode_png, "c3_uint8.png", dict(channels=5))
record_encode_error("png_bad/encode_rank", tf.io.encode_png, picture(4, 4, 3)[0], {})
record_encode_error("png_bad/encode_channels", tf.io.encode_png, np.zeros((2, 2, 5), np.uint8),
                    {})
for c, dtype in itertools.product([1, 2, 3, 4], [np.uint8, np.uint16]):  # encode, read back
    src = picture(6, 5, c, dtype)
    case = f"png_encode/c{c}_{np.dtype(dtype).name}"
    fixtures[f"{case}/image"] = src
    fixtures[f"{case}/decoded"] = tf.io.decode_png(tf.io.encode_png(src),
                                                   dtype=tf.as_dtype(dtype)).numpy()

# -- BMP ---------------------------------------------------------------------------------------
bmps = [store("rgb24.bmp", bmp_bytes(picture(5, 7, 3), 24)),
        store("rgba32.bmp", bmp_bytes(picture(5, 6, 4), 32)),
        store("rgb24_top_down.bmp", bmp_bytes(picture(4, 3, 3), 24, top_down=True))]
for name in bmps:
    for channels in (0, 3, 4):
        record(f"bmp/{name}/c{channels}", tf.io.decode_bmp, name, dict(channels=channels))
record("bmp_bad/not_bmp", tf.io.decode_bmp, store("bmxx", b"BMxx"), {})

# -- GIF (written here: TF has no GIF encoder) ------------------------------------------------
def lzw(indices: np.ndarray, min_size: int) -> bytes:
    """GIF's LZW of the colour indices, in 255-byte sub-blocks."""
    clear, end = 1 << min_size, (1 << min_size) + 1
    table = {bytes([i]): i for i in range(clear)}
    size, nxt, out, acc, nbits = min_size + 1, end + 1, bytearray(), 0, 0

    def emit(code):
        nonlocal acc, nbits
        acc |= code << nbits
        nbits += size
        while nbits >= 8:
            out.append(acc & 255)
            acc >>= 8
            nbits -= 8
    emit(clear)
    run = b""
    for v in indices.reshape(-1).tolist():
        grown = run + bytes([v])
        if grown in table:
            run = grown
            continue
        emit(table[run])
        if nxt < 4096:
            table[grown] = nxt
            nxt += 1
            if nxt > (1 << size) and size < 12:
                size += 1
        else:
            emit(clear)
            table = {bytes([i]): i for i in range(clear)}
            size, nxt = min_size + 1, end + 1
        run = bytes([v])
    emit(table[run])
    emit(end)
    if nbits:
        out.append(acc & 255)
    blocks = b"".join(bytes([len(out[i:i + 255])]) + bytes(out[i:i + 255])
                      for i in range(0, len(out), 255))
    return bytes([min_size]) + blocks + b"\x00"


def gif_bytes(screen: tuple[int, int], palette: np.ndarray, frames: list) -> bytes:
    """A GIF89a: frames are (indices HxW, left, top, transparent or None, local palette
    or None, interlaced)."""
    bits = max(1, int(np.ceil(np.log2(len(palette)))))
    out = b"GIF89a" + struct.pack("<HHBBB", screen[1], screen[0], 0x80 | (bits - 1), 0, 0)
    out += palette.astype(np.uint8).tobytes().ljust(3 << bits, b"\x00")
    for idx, left, top, transparent, local, interlaced in frames:
        flags = 1 if transparent is not None else 0
        out += b"\x21\xf9\x04" + struct.pack("<BHB", flags, 10, transparent or 0) + b"\x00"
        packed = 0x40 if interlaced else 0
        rows = idx
        if interlaced:
            order = [*range(0, idx.shape[0], 8), *range(4, idx.shape[0], 8),
                     *range(2, idx.shape[0], 4), *range(1, idx.shape[0], 2)]
            rows = idx[order]
        local_bytes = b""
        if local is not None:
            lbits = max(1, int(np.ceil(np.log2(len(local)))))
            packed |= 0x80 | (lbits - 1)
            local_bytes = local.astype(np.uint8).tobytes().ljust(3 << lbits, b"\x00")
        out += b"\x2c" + struct.pack("<HHHHB", left, top, idx.shape[1], idx.shape[0], packed)
        out += local_bytes + lzw(rows, max(2, bits))
    return out + b"\x3b"


gif_palette = rng.integers(0, 256, (16, 3))
big = rng.integers(0, 16, (9, 11)).astype(np.uint8)
gifs = [store("one.gif", gif_bytes((9, 11), gif_palette, [(big, 0, 0, None, None, False)])),
        store("anim.gif", gif_bytes((9, 11), gif_palette, [
            (big, 0, 0, None, None, False),
            (rng.integers(0, 16, (4, 5)).astype(np.uint8), 3, 2, 7, None, False),
            (rng.integers(0, 4, (9, 11)).astype(np.uint8), 0, 0, 2,
             rng.integers(0, 256, (4, 3)), False)])),
        store("interlaced.gif", gif_bytes((13, 6), gif_palette, [
            (rng.integers(0, 16, (13, 6)).astype(np.uint8), 0, 0, None, None, True)])),
        store("small_first.gif", gif_bytes((9, 11), gif_palette, [
            (rng.integers(0, 16, (5, 6)).astype(np.uint8), 2, 1, 3, None, False)])),
        store("long_lzw.gif", gif_bytes((64, 80), gif_palette, [
            (rng.integers(0, 16, (64, 80)).astype(np.uint8), 0, 0, None, None, False)]))]
for name in gifs:
    record(f"gif/{name}", tf.io.decode_gif, name, {})
    for channels, expand in itertools.product([0, 3, 1], [True, False]):
        record(f"image/{name}/c{channels}_e{int(expand)}", tf.io.decode_image, name,
               dict(channels=channels, expand_animations=expand))
bad_index = gif_bytes((3, 3), gif_palette[:2], [(np.full((3, 3), 3, np.uint8), 0, 0, None,
                                                  None, False)])
record("gif_bad/index", tf.io.decode_gif, store("bad_index.gif", bad_index), {})
record("gif_bad/truncated", tf.io.decode_gif,
       store("truncated.gif", fixtures["files/one.gif"].tobytes()[:40]), {})
record("gif_bad/png", tf.io.decode_gif, "c3_uint8.png", {})
record("gif_bad/png_gray", tf.io.decode_gif, "c1_uint8.png", {})
record("gif_bad/jpeg", tf.io.decode_gif, jpeg, {})
one = fixtures["files/one.gif"].tobytes()
record("gif_bad/cut_in_data", tf.io.decode_gif, store("cut.gif", one[:len(one) - 12]), {})
record("gif_bad/no_trailer", tf.io.decode_gif, store("no_trailer.gif", one[:-1]), {})
for dtype in (tf.uint16, tf.float32):
    record(f"image/anim.gif/c0_{dtype.name}", tf.io.decode_image, "anim.gif",
           dict(dtype=dtype))

# -- DecodeImage: the format sniffed, dtype float32 scaled as convert_image_dtype -------------
for name in (jpeg, "c4_uint16.png", "c3_uint8.png", "rgb24.bmp"):
    for channels, dtype in itertools.product([0, 3], [tf.uint8, tf.uint16, tf.float32]):
        record(f"image/{name}/c{channels}_{dtype.name}", tf.io.decode_image, name,
               dict(channels=channels, dtype=dtype, expand_animations=True))
record("image_bad/gif_like", tf.io.decode_image, store("gif_like", b"GIF87 is not this"), {})
record("image_bad/text", tf.io.decode_image, "text", {})

fixtures["cases"] = np.array(json.dumps(cases))
fixtures["opdefs"] = np.array(json.dumps({
    name: text_format.MessageToString(op_def_registry.get(name)) for name in OPS}))
np.savez_compressed(OUT, **fixtures)
print(f"{len(fixtures)} arrays, {os.path.getsize(OUT)} bytes -> {OUT}")
