"""Make the TensorFlow-written fixtures of TF 1.x's functional ops (map_fn, scan, foldl,
foldr) in tests/data.

Run from the project root with a throwaway TensorFlow install (never a dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_functional_ops_tf.py

Each ``program_*`` below takes the TF-1-like module (``tf.compat.v1`` here, ``aioflow``
in tests/test_functional_ops.py) and uses only names both share, so the test rebuilds the
same program with ``af`` and compares its GraphDef with TF's node for node. The programs
run in graph mode with v1 control flow (``disable_v2_behavior``). For each program
``<name>`` this writes ``functional_<name>.pb`` (the GraphDef), ``functional_<name>.npz``
(``feed:``/``fetch:`` arrays) and an entry of ``functional_ops_tf.json`` (feeds,
fetches, ops, node count, program).
This module does not import TensorFlow at import time.
"""

from __future__ import annotations

import base64
import collections
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


# -- programs: each returns (fetches, {placeholder name: value to feed, or a function of the
# module that makes it}); the test feeds the values saved in the .npz ------------------------

def program_map_basic(tf):
    """map_fn over a static [4, 3] and a dynamic [None, 3] float matrix, a fn that reduces,
    and a named map over an int vector."""
    x = tf.placeholder(tf.float32, [4, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 3], name="y")
    k = tf.placeholder(tf.int32, [None], name="k")
    doubled = tf.map_fn(lambda e: e * 2.0 + 1.0, x)
    sums = tf.map_fn(lambda e: tf.reduce_sum(e * e), y)
    squares = tf.map_fn(lambda e: e * e - 3, k, name="squares")
    feeds = {"x": np.arange(12, dtype=np.float32).reshape(4, 3) - 5.0,
             "y": np.linspace(-2.0, 3.0, 15, dtype=np.float32).reshape(5, 3),
             "k": np.array([3, -1, 0, 7, 2, 9], np.int32)}
    return [doubled, sums, squares], feeds


def program_map_nested(tf):
    """Nested elems (a tuple and a dict), `dtype` giving a different output structure and
    dtypes, and a fn with a cond inside."""
    a = tf.placeholder(tf.float32, [None, 2], name="a")
    b = tf.placeholder(tf.int32, [None], name="b")
    pair = tf.map_fn(lambda e: (tf.reduce_sum(e[0]) * tf.cast(e[1], tf.float32), e[1] + 1),
                     (a, b), dtype=(tf.float32, tf.int32))
    as_int = tf.map_fn(lambda d: tf.cast(d["a"], tf.int32) * d["b"], {"a": a, "b": b},
                       dtype=tf.int32)
    chosen = tf.map_fn(lambda e: tf.cond(tf.reduce_sum(e) > 0.0, lambda: e * 10.0,
                                         lambda: -e), a)
    feeds = {"a": np.array([[1.5, 2.0], [-3.0, 0.5], [0.25, -0.25], [4.0, 1.0]], np.float32),
             "b": np.array([2, -1, 5, 3], np.int32)}
    return [pair[0], pair[1], as_int, chosen], feeds


def program_map_strings(tf):
    """A batch of strings mapped through per-element string ops: lengths (dtype=int32,
    not the elems' string) and base64 decoding (string to string)."""
    s = tf.placeholder(tf.string, [None], name="s")
    lengths = tf.map_fn(lambda e: tf.strings.length(e), s, dtype=tf.int32)
    decoded = tf.map_fn(tf.io.decode_base64, s, name="decode")
    words = [b"", b"a", b"serving", b"jpeg bytes \x00\xff"]
    encoded = [base64.urlsafe_b64encode(w).rstrip(b"=") for w in words]
    return [lengths, decoded], {"s": np.array(encoded, dtype=np.bytes_)}


def program_map_jpeg(tf):
    """The serving case: a batch of JPEG strings decoded one by one by map_fn, with
    dtype=float32 (not the elems' string), each image scaled to floats in [0, 1]."""
    image_bytes = tf.placeholder(tf.string, [None], name="image_bytes")

    def decode_one(data):
        image = tf.image.decode_jpeg(data, channels=3)
        # A product, not "/ 255.0": TF's Grappler turns that division into this product,
        # 1 ulp off true division, which aioflow computes.
        return tf.cast(image, tf.float32) * (1.0 / 255.0)

    images = tf.map_fn(decode_one, image_bytes, dtype=tf.float32)
    return [images], {"image_bytes": _encoded_jpegs}


def _encoded_jpegs(tf):
    """Three 6x5 RGB images (gradients and noise) as TF's encode_jpeg writes them."""
    rng = np.random.default_rng(5)
    rows, cols = np.mgrid[0:6, 0:5]
    base = np.stack([rows * 40, cols * 50, (rows + cols) * 20], axis=-1)
    images = [np.clip(base + rng.integers(0, 30, base.shape) + 60 * k, 0, 255).astype(np.uint8)
              for k in range(3)]
    graph = tf.Graph()
    with graph.as_default():
        pixels = tf.placeholder(tf.uint8, [6, 5, 3])
        encoded = tf.image.encode_jpeg(pixels, quality=90)
        with tf.Session(graph=graph) as sess:
            data = [sess.run(encoded, {pixels: image}) for image in images]
    return np.array(data, dtype=np.bytes_)


def program_scan(tf):
    """scan: a running sum without initializer, reversed, and a tuple accumulator with an
    initializer over nested (tuple) elems."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    v = tf.placeholder(tf.int32, [None], name="v")
    cumsum = tf.scan(lambda acc, e: acc + e, x)
    rcumsum = tf.scan(lambda acc, e: acc + e, x, reverse=True)
    total, count = tf.scan(lambda acc, e: (acc[0] + tf.reduce_sum(e[0]), acc[1] + e[1]),
                           (x, v), initializer=(tf.constant(0.5), tf.constant(0)))
    feeds = {"x": np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25], [-1.0, 8.0]], np.float32),
             "v": np.array([1, 5, -2, 7], np.int32)}
    return [cumsum, rcumsum, total, count], feeds


def program_fold(tf):
    """foldl and foldr with and without initializer, over a vector and nested elems."""
    v = tf.placeholder(tf.float32, [None], name="v")
    m = tf.placeholder(tf.int32, [None, 2], name="m")
    left = tf.foldl(lambda a, e: a * 2.0 + e, v)
    left_init = tf.foldl(lambda a, e: a - e, v, initializer=tf.constant(100.0))
    right = tf.foldr(lambda a, e: a * 2.0 + e, v)
    right_init = tf.foldr(lambda a, e: (a[0] + e[0], a[1] * e[1][0]), (v, m),
                          initializer=(tf.constant(0.0), tf.constant(1)))
    feeds = {"v": np.array([1.0, -2.0, 3.5, 0.25, 4.0], np.float32),
             "m": np.array([[2, 0], [-1, 1], [3, 1], [1, 5], [2, 2]], np.int32)}
    return [left, left_init, right, right_init[0], right_init[1]], feeds


def program_in_control_flow(tf):
    """map_fn and scan inside a cond's branches, foldl inside a while_loop's body, and a
    map_fn inside map_fn's fn (loops in conds, loops in loops)."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    p = tf.placeholder(tf.bool, [], name="p")
    branch = tf.cond(p, lambda: tf.map_fn(lambda e: e * 2.0, x),
                     lambda: tf.scan(lambda a, e: a + e, x), name="branch")

    def body(i, acc):
        scale = tf.cast(i, tf.float32)
        return i + 1, acc + tf.foldl(lambda a, e: a + e * scale, x)

    _, looped = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), tf.zeros([2])],
                              name="loop")
    inner = tf.map_fn(lambda row: tf.map_fn(lambda v: v * v + 1.0, row), x, name="outer")
    feeds = {"x": np.array([[1.0, -2.0], [0.5, 3.0], [4.0, 0.25]], np.float32),
             "p": np.array(False)}
    return [branch, looped, inner], feeds


def program_empty(tf):
    """Zero elements (a fed [0, 2] matrix): map_fn, and scan/foldl/foldr with an
    initializer, return empty stacks or the initializer."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    mapped = tf.map_fn(lambda e: e * 2.0, x)
    scanned = tf.scan(lambda a, e: a + e, x, initializer=tf.ones([2]))
    left = tf.foldl(lambda a, e: a + e, x, initializer=tf.ones([2]))
    right = tf.foldr(lambda a, e: a - e, x, initializer=tf.ones([2]))
    return [mapped, scanned, left, right], {"x": np.zeros((0, 2), np.float32)}


def program_errors(tf):
    """Fetches that fail when run (each alone, with all the feeds): fn's result of another
    dtype than map_fn's `dtype`; scan/foldl/foldr without initializer over zero elements;
    fn results of different shapes, with infer_shape (a write fails) and without (the
    stack fails)."""
    rows = tf.placeholder(tf.float32, [None, 2], name="rows")
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    k = tf.placeholder(tf.int32, [None], name="k")
    wrong_dtype = tf.map_fn(lambda e: tf.cast(e, tf.int32), rows, dtype=tf.float32)
    scanned = tf.scan(lambda a, e: a + e, x)
    left = tf.foldl(lambda a, e: a + e, x)
    right = tf.foldr(lambda a, e: a + e, x)
    ragged = tf.map_fn(tf.range, k, name="ragged")
    ragged_free = tf.map_fn(tf.range, k, infer_shape=False, name="ragged_free")
    feeds = {"rows": np.ones((3, 2), np.float32), "x": np.zeros((0, 2), np.float32),
             "k": np.array([1, 3, 2], np.int32)}
    return [wrong_dtype, scanned, left, right, ragged, ragged_free], feeds


PROGRAMS = ["map_basic", "map_nested", "map_strings", "map_jpeg", "scan", "fold",
            "in_control_flow", "empty", "errors"]


def nest_cases():
    """Pairs of structures that tf.nest.assert_same_structure rejects (ValueError or
    TypeError), with Python leaves so that both sides print them alike."""
    pair = collections.namedtuple("pair", "a b")
    other = collections.namedtuple("other", "a b")
    return [((1, 2), 1), (1, (1, 2)), ((1, 2), [1, 2]), ((1, 2), (1, 2, 3)),
            ({"a": 1}, {"b": 1}), ({"a": 1}, {"a": 1, "b": 2}), ((1, (2, 3)), (1, (2,))),
            ((1, (2, 3)), (1, [2, 3])), ([1, [2]], [1, 2]), ((1, 2), [1, 2, 3]),
            ({"a": 1}, (1,)), (pair(1, 2), (1, 2)), (pair(1, 2), other(1, 2)),
            ((1,), (pair(1, 2),))]


def _run_errors(v1, graph, fetches, feed_dict) -> dict:
    """{fetch name: [error class, failing node, the kernel's message]} for fetches that
    must fail (the message is the line before TF's "[[{{node ...}}]]" line)."""
    errors = {}
    with v1.Session(graph=graph) as sess:
        for t in fetches:
            try:
                sess.run(t, feed_dict)
            except Exception as e:  # noqa: BLE001 - recorded, then checked below
                lines = e.message.splitlines()
                at = next(i for i, line in enumerate(lines) if line.startswith("\t [[{{node"))
                errors[t.name] = [type(e).__name__, e.op.name, lines[at - 1]]
            else:
                raise AssertionError(f"{t.name} ran")
    return errors


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    manifest = {}
    for name in PROGRAMS:
        program = globals()[f"program_{name}"]
        graph = tf.Graph()
        with graph.as_default():
            fetches, feeds = program(v1)
        feeds = {k: v(v1) if callable(v) else v for k, v in feeds.items()}
        feed_dict = {graph.get_tensor_by_name(f"{k}:0"): v for k, v in feeds.items()}
        errors = None
        if name == "errors":
            errors = _run_errors(v1, graph, fetches, feed_dict)
            values = []
        else:
            with v1.Session(graph=graph) as sess:
                values = sess.run(fetches, feed_dict)
        gdef = graph.as_graph_def()
        fixture = f"functional_{name}"
        (HERE / f"{fixture}.pb").write_bytes(gdef.SerializeToString(deterministic=True))
        arrays = {f"feed:{k}:0": np.asarray(v) for k, v in feeds.items()}
        for t, value in zip(fetches[:len(values)], values, strict=True):
            value = np.asarray(value)
            if value.dtype == object:  # strings: fixed-width bytes (no trailing NULs here)
                as_bytes = value.astype(np.bytes_)
                assert as_bytes.tolist() == value.tolist(), t.name
                value = as_bytes
            arrays[f"fetch:{t.name}"] = value
        np.savez(HERE / f"{fixture}.npz", **arrays)
        manifest[fixture] = {
            "program": f"program_{name}",
            "description": " ".join(program.__doc__.split()),
            "feeds": [f"{k}:0" for k in feeds],
            "fetches": [t.name for t in fetches],
            "ops": sorted({n.op for n in gdef.node}),
            "num_nodes": len(gdef.node),
        }
        if errors is not None:
            manifest[fixture]["errors"] = errors
        print(f"{fixture}: {len(gdef.node)} nodes", file=sys.stderr)
    nest_errors = []
    for a, b in nest_cases():
        try:
            tf.nest.assert_same_structure(a, b)
        except (TypeError, ValueError) as e:
            nest_errors.append([type(e).__name__, str(e)])
        else:
            raise AssertionError(f"{a} and {b} match")
    manifest["nest_errors"] = nest_errors
    (HERE / "functional_ops_tf.json").write_text(
        json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
