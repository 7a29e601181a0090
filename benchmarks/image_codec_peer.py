#!/usr/bin/env python
"""The image codec kernels beside TensorFlow 2.21's, on the same files, one call at a time.

Workloads (photo-like pictures: gradients plus noise; files written by aioflow's encoders,
which write TF's bytes for JPEG):
  jpeg_224         DecodeJpeg 224x224 RGB, quality 90, 4:2:0 (TF's default flags)
  jpeg_640         DecodeJpeg 640x480 RGB
  jpeg_224_ratio2  DecodeJpeg 224x224, ratio 2
  png_224          DecodePng 224x224 RGB (aioflow's file: rows unfiltered)
  png_224_paeth    DecodePng 224x224 RGB, every row Paeth-filtered
  gif_128          DecodeGif 128x128, one frame, 16 colours (Pillow's file)
  encode_jpeg_224  EncodeJpeg 224x224 RGB, quality 95
  encode_png_224   EncodePng 224x224 RGB
aioflow's kernel is called directly (its compute, as the executor's pool thread would);
TF's runs as tf.raw_ops eagerly with one intra-op thread in a child process of
`--tf-python`. The peers alternate (ABAB), `--reps` rounds of `--runs` calls per
workload; each figure is the median ms per call. Prints one JSON object.

Usage: python benchmarks/image_codec_peer.py --tf-python /path/to/tf-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import tempfile
import zlib

import numpy as np
from peer_timing import measure, summarize


def picture(h: int, w: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:h, 0:w]
    planes = [(xx * 1.7 + k * 50) % 256 * 0.6 + (yy * 1.3) % 256 * 0.4 for k in range(3)]
    return (np.stack(planes, -1) + rng.normal(0, 8, (h, w, 3))).clip(0, 255).astype(np.uint8)


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(
        ">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def paeth_png(image: np.ndarray) -> bytes:
    """A PNG whose rows are all Paeth-filtered (the filter that costs a decoder most)."""
    h, w, c = image.shape
    cur = image.reshape(h, w * c).astype(np.int32)
    prior = np.vstack([np.zeros((1, w * c), np.int32), cur[:-1]])
    left = np.hstack([np.zeros((h, c), np.int32), cur[:, :-c]])
    up_left = np.hstack([np.zeros((h, c), np.int32), prior[:, :-c]])
    p = left + prior - up_left
    pa, pb, pc = np.abs(p - left), np.abs(p - prior), np.abs(p - up_left)
    pred = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, up_left))
    rows = np.hstack([np.full((h, 1), 4, np.uint8), ((cur - pred) & 255).astype(np.uint8)])
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(rows.tobytes())) + _chunk(b"IEND", b""))


def gif_file(h: int, w: int) -> bytes:
    """A one-frame GIF of 16 colours (written by Pillow)."""
    import io

    from PIL import Image

    rng = np.random.default_rng(1)
    indices = (np.add.outer(np.arange(h) // 9, np.arange(w) // 7) + rng.integers(0, 2, (h, w))
               ) % 16
    image = Image.fromarray(indices.astype(np.uint8), "P")
    image.putpalette(rng.integers(0, 256, 48).astype(np.uint8).tobytes())
    out = io.BytesIO()
    image.save(out, "GIF")
    return out.getvalue()


class _Construction:
    """What a kernel reads while it is built: its attrs (defaults where absent)."""

    def __init__(self, op: str, attrs: dict):
        self.attrs, self.name, self.op_type, self.node_def = attrs, "bench", op, None

    def has_attr(self, name) -> bool:
        return name in self.attrs

    def get_attr(self, name, default=None):
        return self.attrs.get(name, default)


def files() -> dict:
    """The inputs: encoded by aioflow's kernels (JPEG: TF's bytes)."""
    from aioflow.kernels.image.jpeg_codec import encode_jpeg
    from aioflow.kernels.image.png_codec import encode_png

    small, large = picture(224, 224), picture(480, 640)
    jpeg = encode_jpeg(small, "", 90)
    return {
        "jpeg_224": ("DecodeJpeg", jpeg, {}),
        "jpeg_640": ("DecodeJpeg", encode_jpeg(large, "", 90), {}),
        "jpeg_224_ratio2": ("DecodeJpeg", jpeg, {"ratio": 2}),
        "png_224": ("DecodePng", encode_png(small, -1), {}),
        "png_224_paeth": ("DecodePng", paeth_png(small), {}),
        "gif_128": ("DecodeGif", gif_file(128, 128), {}),
        "encode_jpeg_224": ("EncodeJpeg", small, {"quality": 95}),
        "encode_png_224": ("EncodePng", small, {}),
    }


def child_tf(path: str, runs: int) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    with np.load(path, allow_pickle=False) as data:
        spec = json.loads(str(data["spec"]))
        fns = {}
        for name, (op, attrs) in spec.items():
            value = data[name]
            value = tf.constant(value.tobytes()) if op.startswith("Decode") else \
                tf.constant(value)
            raw = getattr(tf.raw_ops, op)
            arg = "contents" if op.startswith("Decode") else "image"
            fns[name] = lambda f=raw, a={arg: value}, k=attrs: f(**a, **k).numpy()
    return measure(fns, runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tf-python", required=False)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_tf(args.child, args.runs)))
        return
    from aioflow.kernels.image import image_codec_kernels as k
    classes = {"DecodeJpeg": k.DecodeJpegOp, "DecodePng": k.DecodePngOp,
               "DecodeGif": k.DecodeGifOp, "EncodeJpeg": k.EncodeJpegOp,
               "EncodePng": k.EncodePngOp}
    fns, arrays, spec = {}, {}, {}
    for name, (op, value, attrs) in files().items():
        kernel = classes[op](_Construction(op, attrs))
        if isinstance(value, bytes):
            scalar = np.empty((), dtype=object)
            scalar[()] = value
            arrays[name] = np.frombuffer(value, np.uint8)
        else:
            scalar = arrays[name] = value
        fns[name] = lambda kern=kernel, x=scalar: kern.compute(None, [x])
        spec[name] = (op, attrs)
    times = {name: {"aioflow": [], "tf": []} for name in fns}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "files.npz")
        np.savez(path, spec=np.array(json.dumps(spec)), **arrays)
        for _ in range(args.reps):
            for name, t in measure(fns, args.runs).items():
                times[name]["aioflow"] += t
            if args.tf_python:
                out = subprocess.run([args.tf_python, __file__, "--child", path,
                                      "--runs", str(args.runs)],
                                     capture_output=True, text=True, check=True)
                for name, t in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    times[name]["tf"] += t
    result = summarize(times)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
