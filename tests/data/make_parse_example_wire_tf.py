"""Writes parse_example_wire_tf.json: what TF 2.21's parse_single_example and
parse_example (ParseExampleV2) make of tf.Example protos written in the wire format by
hand: the encodings a protobuf writer may choose (packed or unpacked lists, unknown
fields, a map entry's value before its key, non-canonical varints), the fields protobuf
merges or overrides (a key twice, two lists in one Feature, `features` twice), and
malformed bytes. Fixed-length features only: what aioflow's compiled wire-format scan
(aioflow/kernels/io/parsing_jit.py) reads, or hands to the slow path.
Run with TF 2.21: /work/tfvenv/bin/python tests/data/make_parse_example_wire_tf.py"""

import json
import struct
from pathlib import Path

from tf_error_text import error_record


def varint(n: int, pad: int = 0) -> bytes:
    """n as a varint (negative: two's complement, 10 bytes), `pad` bytes longer than it
    needs (a non-canonical encoding of the same value)."""
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append(n & 0x7F)
        n >>= 7
        if not n:
            break
        out[-1] |= 0x80
    if pad:
        out[-1] |= 0x80
        out += b"\x80" * (pad - 1) + b"\x00"
    return bytes(out)


def field(num: int, wire: int, payload: bytes) -> bytes:
    head = varint(num << 3 | wire)
    return head + (varint(len(payload)) + payload if wire == 2 else payload)


def floats(values, packed=True) -> bytes:  # a FloatList
    data = b"".join(struct.pack("<f", v) for v in values)
    if packed:
        return field(1, 2, data)
    return b"".join(field(1, 5, struct.pack("<f", v)) for v in values)


def ints(values, packed=True) -> bytes:  # an Int64List
    if packed:
        return field(1, 2, b"".join(varint(v) for v in values))
    return b"".join(field(1, 0, varint(v)) for v in values)


def strs(values) -> bytes:  # a BytesList
    return b"".join(field(1, 2, v) for v in values)


def feature(kind: str, body: bytes) -> bytes:
    return field({"b": 1, "f": 2, "i": 3}[kind], 2, body)


def entry(key: bytes, value: bytes | None, value_first=False, extra=b"") -> bytes:
    k = field(1, 2, key)
    v = b"" if value is None else field(2, 2, value)
    return field(1, 2, (v + k if value_first else k + v) + extra)


def example(*entries: bytes, extra=b"") -> bytes:
    return field(1, 2, b"".join(entries)) + extra


PLAIN = [entry(b"x", feature("f", floats([1.5, -2.0, 3.25]))),
         entry(b"n", feature("i", ints([-7]))),
         entry(b"s", feature("b", strs([b"ab", b"\xff"])))]
EX = {
    "plain": example(*PLAIN),
    "reordered": example(*reversed(PLAIN)),
    "unpacked": example(entry(b"x", feature("f", floats([1.5, -2.0, 3.25], packed=False))),
                        entry(b"n", feature("i", ints([-7], packed=False))), PLAIN[2]),
    "split_runs": example(entry(b"x", feature("f", floats([1.5]) + floats([-2.0, 3.25],
                                                                          packed=False))),
                          *PLAIN[1:]),
    "unknown_fields": example(
        entry(b"x", feature("f", floats([1.5, -2.0, 3.25]) + field(2, 0, varint(5)))
              + field(9, 5, b"\0\0\0\0"), extra=field(7, 1, b"\1" * 8)),
        PLAIN[1], PLAIN[2], entry(b"other", feature("i", ints([1, 2, 3]))),
        extra=field(5, 0, varint(300)) + field(6, 2, b"\xff\xfe")),
    "value_first": example(entry(b"x", feature("f", floats([1.5, -2.0, 3.25])),
                                 value_first=True), *PLAIN[1:]),
    "overlong_varints": example(  # the entry's length in two bytes where one does
        b"\x0a" + varint(len(PLAIN[0]) - 2, pad=1) + PLAIN[0][2:], *PLAIN[1:]),
    "int64_extremes": example(PLAIN[0], entry(b"n", feature("i", ints([-(1 << 63)]))),
                              PLAIN[2]),
    "missing_with_default": example(PLAIN[0], PLAIN[2]),
    "key_without_value": example(PLAIN[0], entry(b"n", None), PLAIN[2]),
    "feature_without_list": example(PLAIN[0], entry(b"n", b""), PLAIN[2]),
    "unwanted_utf8_key": example(*PLAIN, entry("é".encode(), feature("i", ints([1])))),
    "unwanted_bad_utf8_key": example(*PLAIN, entry(b"\xff", feature("i", ints([1])))),
    "key_twice": example(*PLAIN, entry(b"x", feature("f", floats([9.0, 8.0, 7.0])))),
    "two_lists": example(entry(b"x", feature("f", floats([1.5, -2.0, 3.25]))
                               + feature("i", ints([1, 2, 3]))), *PLAIN[1:]),
    "features_twice": example(PLAIN[0], extra=example(*PLAIN[1:])),
    "wrong_count": example(entry(b"x", feature("f", floats([1.5]))), *PLAIN[1:]),
    "wrong_type": example(entry(b"x", feature("i", ints([1, 2, 3]))), *PLAIN[1:]),
    "missing_required": example(*PLAIN[1:]),
    "truncated": example(*PLAIN)[:-3],
    "bad_packed_length": example(entry(b"x", feature("f", field(1, 2, b"\0" * 6))),
                                 *PLAIN[1:]),
    "unwanted_malformed": example(*PLAIN, entry(b"other", feature("f", field(1, 2, b"\0")))),
    "trailing_garbage": example(*PLAIN) + b"\xff",
    "empty": b"",
}
SPEC = {"x": ["float32", [3], None], "n": ["int64", [], 42], "s": ["string", [2], None]}


def features_of(tf):
    return {k: tf.io.FixedLenFeature(shape, tf.as_dtype(dtype), default_value=default)
            for k, (dtype, shape, default) in SPEC.items()}


def as_json(value):
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind in ("S", "O"):
        return {"dtype": "string", "shape": list(array.shape),
                "data": [v.decode("latin-1") for v in array.reshape(-1).tolist()]}
    return {"dtype": str(array.dtype), "shape": list(array.shape),
            "data": array.reshape(-1).tolist()}


def run(tf, data, single: bool) -> dict:
    v1 = tf.compat.v1
    try:
        with tf.Graph().as_default():
            if single:
                parsed = tf.io.parse_single_example(data[0], features_of(tf))
            else:
                parsed = tf.io.parse_example(tf.constant(data, tf.string, shape=[len(data)]),
                                             features_of(tf))
            with v1.Session() as sess:
                got = sess.run(parsed)
        return {"value": {k: as_json(v) for k, v in got.items()}}
    except Exception as e:  # noqa: BLE001 - the error is the fixture
        return error_record(e)


def main():
    import tensorflow as tf

    tf.compat.v1.disable_eager_execution()
    out = {"spec": SPEC, "serialized": {k: v.hex() for k, v in EX.items()}, "cases": {}}
    for name, data in EX.items():
        out["cases"][name] = {"single": run(tf, [data], True),
                              "batch": run(tf, [EX["plain"], data], False)}
    path = Path(__file__).with_name("parse_example_wire_tf.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
