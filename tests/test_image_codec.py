"""The image codec ops against what TensorFlow 2.21 decoded from the same files
(tests/data/image_codec_tf.npz, written by tests/data/make_image_codec_tf.py): JPEG with
every channels/ratio/fancy_upscaling/dct_method, crops and header shapes; PNG of every
colour type and depth, palettes, tRNS, 4-bit gray, with every channels/dtype; BMP; GIF
(animations, sub-frames, transparency, interlacing, local tables); DecodeImage's
sniffing and float output; encoders byte for byte; TF's errors."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from kernel_testutil import create, run1

import aioflow as af
from aioflow.framework import errors, op_def_registry
from aioflow.proto import op_def_pb2

pytest.importorskip("simplejpeg")
pytest.importorskip("PIL")

DATA = np.load(Path(__file__).parent / "data" / "image_codec_tf.npz")
CASES = json.loads(str(DATA["cases"]))
OPDEFS = json.loads(str(DATA["opdefs"]))


def _file(name: str) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = DATA[f"files/{name}"].tobytes()
    return out


def _attrs(attrs: dict) -> dict:
    out = dict(attrs)
    for key in ("dtype", "output_type"):
        if key in out:
            out[key] = af.as_dtype(out[key])
    return out


def _run(case: str):
    entry = CASES[case]
    inputs = [_file(entry["source"])] + [np.asarray(x, np.int32) for x in entry["extra"]]
    return run1(entry["op"], inputs, **_attrs(entry["attrs"]))


# (TF's crops that reach past a chroma block's edge: see the crop test below)
DECODED = sorted(c for c, e in CASES.items() if "source" in e and "error" not in e
                 and c != "jpeg_crop/3_5_10_7")
FAILING = sorted(c for c, e in CASES.items() if "source" in e and "error" in e)


@pytest.mark.parametrize("name", sorted(OPDEFS))
def test_op_def_equals_tensorflows(name):
    assert op_def_registry.get(name) == text_format.Parse(OPDEFS[name], op_def_pb2.OpDef())


@pytest.mark.parametrize("case", DECODED)
def test_decodes_as_tensorflow(case):
    got = _run(case)
    want = DATA[f"{case}/output"]
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", FAILING)
def test_bad_input_fails_as_tensorflow(case):
    entry = CASES[case]
    error = entry["error"]
    with pytest.raises(getattr(errors, error["error"])) as info:
        _run(case)
    assert info.value.message == error["message"]


ENCODED = sorted(c for c in CASES if c.startswith("jpeg_encode/"))


@pytest.mark.parametrize("case", ENCODED)
def test_jpeg_encoding_writes_tensorflows_file(case):
    """Byte for byte: header, tables, density, XMP packet, baseline or progressive
    scans, optimized Huffman tables."""
    ours = run1("EncodeJpeg", [DATA[f"{case}/image"]], **CASES[case]["attrs"]).item()
    assert ours == DATA[f"{case}/bytes"].tobytes()
    np.testing.assert_array_equal(run1("DecodeJpeg", [np.array(ours, dtype=object)]),
                                  DATA[f"{case}/decoded"])


def test_a_crop_equals_the_whole_image_cropped():
    """DecodeAndCropJpeg crops the full decode. TF's libjpeg decodes only the crop's
    columns, and with fancy upsampling of subsampled chroma its pixels on the crop's
    edge differ from the full decode's by up to 3 levels: the one known difference."""
    whole = run1("DecodeJpeg", [_file("rgb_q90_p0_c1.jpg")], channels=3)
    for case in (c for c in CASES if c.startswith("jpeg_crop/") and "error" not in CASES[c]):
        y, x, h, w = CASES[case]["extra"][0]
        got = _run(case)
        np.testing.assert_array_equal(got, whole[y:y + h, x:x + w])
        assert np.abs(got.astype(int) - DATA[f"{case}/output"]).max() <= 3


@pytest.mark.parametrize("case", sorted(c for c in CASES if c.endswith("encode_rank")
                                        or c.startswith("jpeg_encode_bad/")
                                        or c.endswith("encode_channels")))
def test_encoding_bad_images_fails_as_tensorflow(case):
    entry = CASES[case]
    with pytest.raises(getattr(errors, entry["error"]["error"])) as info:
        run1(entry["op"], [DATA[f"{case}/image"]], **entry["attrs"])
    assert info.value.message == entry["error"]["message"]


@pytest.mark.parametrize("case", sorted(c for c in DATA.files if c.startswith("png_encode/")
                                        and c.endswith("/image")))
def test_png_encoding_round_trips_as_tensorflows(case):
    image = DATA[case]
    want = DATA[case.replace("/image", "/decoded")]
    contents = run1("EncodePng", [image])
    assert contents.item()[:8] == b"\x89PNG\r\n\x1a\n"
    got = run1("DecodePng", [contents], dtype=af.as_dtype(image.dtype))
    np.testing.assert_array_equal(got, want)


def test_encode_png_compression_levels_all_read_back():
    image = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    sizes = []
    for level in (-1, 0, 9):
        contents = run1("EncodePng", [image], compression=level)
        sizes.append(len(contents.item()))
        np.testing.assert_array_equal(run1("DecodePng", [contents]), image)
    assert sizes[1] > sizes[2]  # level 0 stores, 9 compresses


def _png(rows: bytes, width: int, height: int, depth: int, color_type: int,
         interlace: int = 0) -> bytes:
    def chunk(kind, body):
        return len(body).to_bytes(4, "big") + kind + body + (
            zlib.crc32(kind + body) & 0xFFFFFFFF).to_bytes(4, "big")
    head = (width.to_bytes(4, "big") + height.to_bytes(4, "big")
            + bytes([depth, color_type, 0, 0, interlace]))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def _filtered(image: np.ndarray, kinds: list[int]) -> bytes:
    """Rows of `image` (HxWxC uint8) filtered with PNG's filter `kinds[y]` each."""
    h, w, c = image.shape
    out, prior = [], np.zeros(w * c, np.int32)
    for y in range(h):
        cur = image[y].reshape(-1).astype(np.int32)
        left = np.concatenate([np.zeros(c, np.int32), cur[:-c]])
        up_left = np.concatenate([np.zeros(c, np.int32), prior[:-c]])
        kind = kinds[y]
        if kind == 0:
            pred = np.zeros_like(cur)
        elif kind == 1:
            pred = left
        elif kind == 2:
            pred = prior
        elif kind == 3:
            pred = (left + prior) >> 1
        else:
            p = left + prior - up_left
            pa, pb, pc = abs(p - left), abs(p - prior), abs(p - up_left)
            pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, up_left))
        out.append(bytes([kind]) + ((cur - pred) & 255).astype(np.uint8).tobytes())
        prior = cur
    return b"".join(out)


def test_every_png_row_filter_is_undone():
    """Rows filtered None, Sub, Up, Average and Paeth read back exactly."""
    rng = np.random.default_rng(3)
    image = rng.integers(0, 256, (10, 9, 3), dtype=np.uint8)
    data = _png(_filtered(image, [0, 1, 2, 3, 4, 4, 3, 2, 1, 0]), 9, 10, 8, 2)
    np.testing.assert_array_equal(run1("DecodePng", [np.array(data, dtype=object)]), image)


def test_an_interlaced_png_is_read():
    """Adam7: the seven passes' pixels land where they belong."""
    rng = np.random.default_rng(4)
    image = rng.integers(0, 256, (11, 13, 1), dtype=np.uint8)
    passes = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2),
              (0, 1, 2, 2), (1, 0, 2, 1))
    rows = b""
    for y0, x0, dy, dx in passes:
        sub = image[y0::dy, x0::dx]
        if sub.size:
            rows += _filtered(sub, [4] * sub.shape[0])
    data = _png(rows, 13, 11, 8, 0, interlace=1)
    np.testing.assert_array_equal(run1("DecodePng", [np.array(data, dtype=object)]), image)


def test_a_png_with_a_bad_filter_or_short_data_is_invalid():
    image = np.zeros((2, 2, 1), np.uint8)
    bad_filter = _png(b"\x07\x00\x00\x00\x00\x00", 2, 2, 8, 0)
    short = _png(b"\x00\x00", 2, 2, 8, 0)
    for data in (bad_filter, short):
        with pytest.raises(errors.InvalidArgumentError, match="Invalid PNG data"):
            run1("DecodePng", [np.array(data, dtype=object)])
    assert image.sum() == 0


def test_contents_must_be_a_scalar():
    contents = np.empty(2, dtype=object)
    contents[:] = [b"a", b"b"]
    with pytest.raises(errors.InvalidArgumentError, match="contents must be scalar"):
        run1("DecodeJpeg", [contents])


def test_decoding_runs_on_the_pool():
    assert create("DecodeJpeg", [_file("rgb_q90_p0_c1.jpg")]).expensive is True


async def test_a_graph_decodes_a_jpeg_to_floats():
    """The serving pattern: JPEG bytes in, a float image out, through af.io and
    af.image (convert_image_dtype multiplies by 1/255, as TF's)."""
    g = af.Graph()
    with g.as_default():
        contents = af.placeholder(af.string, shape=[])
        image = af.io.decode_jpeg(contents, channels=3)
        assert image.shape.as_list() == [None, None, 3]
        floats = af.image.convert_image_dtype(image, af.float32)
        size = af.io.extract_jpeg_shape(contents)
    async with af.Session(graph=g) as sess:
        got, got_size = await sess.run([floats, size],
                                       {contents: _file("rgb_q90_p0_c1.jpg").item()})
    want = DATA["jpeg/rgb_q90_p0_c1.jpg/c3_r1_f1_default/output"]
    np.testing.assert_array_equal(got, want.astype(np.float32) * np.float32(1.0 / 255))  # TF's
    np.testing.assert_array_equal(got_size, DATA["jpeg_shape/rgb_q90_p0_c1.jpg/output"])


def test_convert_image_dtype_and_saturate_cast_as_tensorflow():
    """tf.image.convert_image_dtype and tf.saturate_cast between 18 dtype pairs, saturating
    or not: the graph TF 2.21 builds (node for node) and the values its session computes
    (tests/data/make_convert_image_dtype_tf.py)."""
    import importlib.util

    from graph_compare import assert_same_graph

    from aioflow.proto import graph_pb2

    spec = importlib.util.spec_from_file_location(
        "make_convert_image_dtype_tf", Path(__file__).parent / "data" /
        "make_convert_image_dtype_tf.py")
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    ref = graph_pb2.GraphDef()
    ref.ParseFromString((Path(__file__).parent / "data" / "convert_image_dtype.pb").read_bytes())
    want = np.load(Path(__file__).parent / "data" / "convert_image_dtype.npz")
    g = af.Graph()
    with g.as_default():
        fetches, _ = maker.program(af)
    assert_same_graph(g.as_graph_def(), ref)
    feeds = {g.get_tensor_by_name(k[len("feed:"):]): want[k] for k in want.files
             if k.startswith("feed:")}

    async def main():
        async with af.Session(graph=g) as sess:
            return await sess.run(fetches, feeds)
    import asyncio
    got = asyncio.run(main())
    for name, value in got.items():
        expected = want[f"fetch:{name}"]
        assert value.dtype == expected.dtype, name
        np.testing.assert_array_equal(value, expected, err_msg=name)


def test_encode_jpeg_variable_quality_takes_its_quality_as_an_input():
    """Quality 20 and 95 through the input: the lower writes a smaller file that reads
    back further from the source; both decode."""
    case = "jpeg_encode/auto_c3_q95_p0_o0_c1"
    source = DATA[f"{case}/image"]
    files = [run1("EncodeJpegVariableQuality", [source, np.int32(q)]).item() for q in (20, 95)]
    errors_ = [np.abs(run1("DecodeJpeg", [np.array(f, dtype=object)]).astype(int)
                      - source).mean() for f in files]
    assert len(files[0]) < len(files[1]) and errors_[0] > errors_[1]
    with pytest.raises(errors.InvalidArgumentError, match="quality must be in"):
        run1("EncodeJpegVariableQuality", [source, np.int32(101)])


def test_a_small_file_claiming_a_huge_image_fails_without_allocating_it():
    """Headers saying 60,000 x 60,000 (gigabytes decoded) over a few bytes of data: TF's
    error class at once, no MemoryError, no inflating a zlib bomb."""
    png = bytearray(_png(zlib.compress(b"\x00" * 10), 2, 2, 8, 0))
    png[16:24] = (60000).to_bytes(4, "big") * 2
    png[29:33] = (zlib.crc32(bytes(png[12:29])) & 0xFFFFFFFF).to_bytes(4, "big")
    gif = bytearray(DATA["files/one.gif"].tobytes())
    at = gif.index(b"\x2c")
    gif[at + 5:at + 9] = (65535).to_bytes(2, "little") * 2
    jpeg = bytearray(DATA["files/rgb_q90_p0_c1.jpg"].tobytes())
    sof = jpeg.index(b"\xff\xc0")
    jpeg[sof + 5:sof + 9] = (60000).to_bytes(2, "big") * 2
    for op, data in (("DecodePng", png), ("DecodeGif", gif), ("DecodeJpeg", jpeg)):
        with pytest.raises(errors.InvalidArgumentError):
            run1(op, [np.array(bytes(data), dtype=object)])
