"""Writes logging_ops_tf.json: TF 2.21's OpDefs of Print, PrintV2 and StringFormat, what
StringFormat makes of many tensors (dtypes, ranks, empty, summarize), what Print and
tf.print write (stderr, stdout, a file), and their errors. Text is stored as latin-1 (a
code point per byte: the output need not be UTF-8).
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_logging_ops_tf.py"""

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np  # noqa: F401 - the VALUES expressions (eval) use it
from tf_error_text import error_record

# Tensors as NumPy expressions (the test evaluates the same strings).
VALUES = [
    "np.arange(10, dtype=np.float32)",
    "np.arange(10, dtype=np.float32).reshape(2, 5)",
    "np.arange(24, dtype=np.int32).reshape(2, 3, 4)",
    "np.arange(70, dtype=np.int64).reshape(7, 10)",
    "np.zeros((3, 0), np.float32)",
    "np.zeros((0,), np.int32)",
    "np.zeros((0, 2), np.float32)",
    "np.float32(3.5)",
    "np.int32(-7)",
    "np.array([True, False, True])",
    "np.array([b'a', b'b\\n', 'é'.encode(), b'\\xff'])",
    "np.array(b'scalar')",
    "np.array([1e10, 1e-5, np.nan, np.inf, -np.inf, -0.0, 0.1, 123456789.0])",
    "np.array([1.5, -2.25, 65504.0], np.float16)",
    "np.array([-3, 4], np.int8)",
    "np.array([200, 7], np.uint8)",
    "np.array([2**40, -(2**40)], np.int64)",
    "np.array([1 + 2j, -0.5j], np.complex64)",
    "np.array([[[1.0]]], np.float64)",
    "np.array(True)",
    "np.array([[True], [False]])",
    "np.zeros((0,), bool)",
    "np.array([0.1, 1 / 3, 16777216.0, 1e-8, 3.4e38, 1234567.0, 2.5e-6], np.float32)",
    "np.array([1 / 3, 2.0**60, 1e300, 5e-324, 1234567.0, 1e16, 1e15])",
    "np.array([0.1, 1 / 3, 1e-3], np.float16)",
]
SUMMARIZE = [3, 1, 2, -1, 0]


def opdef_text(name):
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(name)
    return str(op_def)


class Captured:
    """Captures what C++ writes to a file descriptor (1 or 2) while inside."""

    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(self.fd)
        os.dup2(self.file.fileno(), self.fd)
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(self.saved, self.fd)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read().decode("latin-1")  # (bytes as code points)
        self.file.close()


def outcome(fn):
    try:
        return {"value": fn()}
    except Exception as e:  # noqa: BLE001 - the error is the fixture
        return error_record(e)


def main():
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    out = {"opdefs": {n: opdef_text(n) for n in ("Print", "PrintV2", "StringFormat")},
           "values": VALUES, "summarize": SUMMARIZE}

    g = tf.Graph()
    with g.as_default():
        values = [tf.constant(eval(v)) for v in VALUES]
        formats = {}
        for s in SUMMARIZE:
            for i, t in enumerate(values):
                formats[f"{i}/{s}"] = tf.strings.format("{}", t, summarize=s)
        formats["template"] = tf.strings.format("x={} y={}!", (values[8], values[0]))
        formats["placeholder"] = tf.strings.format("a %s b %s", (values[7], values[9]),
                                                   placeholder="%s")
        formats["no_inputs"] = tf.strings.format("plain {{", ())
        with v1.Session() as sess:
            got = sess.run(formats)
    out["format"] = {k: v.decode("latin-1") for k, v in got.items()}

    def mismatch():
        with tf.Graph().as_default():
            tf.strings.format("{} {}", tf.constant(1))
    out["format_mismatch"] = outcome(mismatch)

    def raw_mismatch():
        with tf.Graph().as_default():
            op = tf.raw_ops.StringFormat(inputs=[tf.constant(1)], template="{} {}")
            with v1.Session() as sess:
                sess.run(op)
    out["raw_format_mismatch"] = outcome(raw_mismatch)

    # tf.compat.v1.Print: stderr, first_n, summarize.
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(eval(VALUES[1]))
        p = v1.Print(x, [x, tf.constant(eval(VALUES[10])), tf.constant(7),
                         tf.constant(eval(VALUES[12])), tf.constant(eval(VALUES[22]))],
                     message="msg: ", first_n=2, summarize=4)
        with v1.Session() as sess, Captured(2) as cap:
            for _ in range(3):
                passed = sess.run(p)
    out["print"] = {"stderr": cap.text, "output": passed.tolist()}

    def assertion():
        with tf.Graph().as_default():
            op = v1.Assert(False, [tf.constant(eval(VALUES[12])), tf.constant(eval(VALUES[22]))],
                           summarize=8)
            with v1.Session() as sess:
                sess.run(op)
    out["assert"] = outcome(assertion)

    # tf.print: structures, sep, end, streams, a file.
    path = tempfile.mktemp(suffix=".txt")
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(eval(VALUES[0]))
        y = tf.constant(eval(VALUES[2]))
        ops = {
            "stderr": tf.print("x:", x, {"b": y, "a": [x, 1]}, ("t", 2.5), summarize=2),
            "stdout": tf.print(x, y, sep="|", end=";", output_stream=sys.stdout),
            "file": tf.print("to file", x, output_stream="file://" + path),
            "scalar_string": tf.print(tf.constant("just a string")),
            "braces": tf.print("{} and {1}", x),
        }
        with v1.Session() as sess:
            texts = {}
            for key, op in ops.items():
                with Captured(1) as out_cap, Captured(2) as err_cap:
                    sess.run(op)
                texts[key] = {"stdout": out_cap.text, "stderr": err_cap.text}
            with open(path) as f:
                texts["file"]["file"] = f.read()
    os.remove(path)
    out["tf_print"] = texts

    def bad_stream():
        with tf.Graph().as_default():
            op = tf.raw_ops.PrintV2(input="x", output_stream="nowhere")
            with v1.Session() as sess:
                sess.run(op)
    out["bad_stream"] = outcome(bad_stream)

    def not_scalar():
        with tf.Graph().as_default():
            op = tf.raw_ops.PrintV2(input=tf.constant(["a", "b"]))
            with v1.Session() as sess:
                sess.run(op)
    out["not_scalar"] = outcome(not_scalar)

    path = Path(__file__).with_name("logging_ops_tf.json")
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
