"""Writes parse_example_tf.json: what TF 2.21's tf.io.parse_example / parse_single_example
(ParseExampleV2) and the older ParseExample and ParseSingleExample ops make of serialized
tf.Example protos: dense (fixed, with defaults, variable length), sparse (VarLen) and
their errors. Examples and feature specs are JSON (the test rebuilds both).
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_parse_example_tf.py"""

import json
from pathlib import Path

from tf_error_text import error_record

# Examples: {key: [kind, values]} with kind "f" (float), "i" (int64), "b" (bytes, latin-1
# text), "none" (a Feature with no kind); or {"raw": latin-1 text} for bytes as they are.
EX = {
    "full": {"age": ["i", [31]], "score": ["f", [0.5, 1.5]], "tags": ["b", ["a", "b\xff"]],
             "ids": ["i", [7, 8, 9]], "seq": ["f", [1, 2, 3, 4]],
             "w": ["f", [1, 2, 3, 4]]},
    "sparse": {"score": ["f", [2.5, -1]], "seq": ["f", [5, 6]]},
    "empty_lists": {"score": ["f", [0, 0]], "tags": ["b", []], "ids": ["i", []],
                    "seq": ["f", []]},
    "no_kind": {"score": ["f", [1, 1]], "tags": ["none", []], "seq": ["none", []]},
    "missing_score": {"age": ["i", [1]]},
    "int_score": {"score": ["i", [1, 2]]},
    "bytes_ids": {"ids": ["b", ["x"]], "score": ["f", [1, 2]]},
    "three_scores": {"score": ["f", [1, 2, 3]]},
    "odd_seq": {"score": ["f", [1, 2]], "seq": ["f", [1, 2, 3]]},
    "corrupt": {"raw": "\x0a\x05garbage"},
    "nothing": {},
}
# Feature specs: name -> [kind, dtype, shape, default]; kind "fixed", "seq"
# (FixedLenSequenceFeature, allow_missing), "var" (VarLenFeature).
SPEC = {
    "age": ["fixed", "int64", [], -1],
    "score": ["fixed", "float32", [2], None],
    "tags": ["var", "string", None, None],
    "ids": ["var", "int64", None, None],
    "seq": ["seq", "float32", [2], 0.0],
    "w": ["fixed", "float32", [2, 2], [[0.0, 0.0], [0.0, 0.0]]],
}
CASES = [
    ("batch", ["full", "sparse", "empty_lists", "no_kind"], None, SPEC),
    ("one", ["sparse"], None, SPEC),
    ("empty_batch", [], None, SPEC),
    ("string_dense", ["full"], None, {"tags": ["seq", "string", [], "pad"]}),
    ("missing_required", ["full", "missing_score"], None, {"score": SPEC["score"]}),
    ("missing_required_named", ["full", "missing_score"], ["first", "second"],
     {"score": SPEC["score"]}),
    ("type_mismatch", ["int_score"], None, {"score": SPEC["score"]}),
    ("type_mismatch_sparse", ["int_score"], None, {"score": ["var", "float32", None, None]}),
    ("type_mismatch_second", ["full", "int_score"], None, {"score": SPEC["score"]}),
    ("bytes_for_int64", ["sparse", "bytes_ids"], None, {"ids": SPEC["ids"]}),
    ("wrong_count", ["three_scores"], None, {"score": SPEC["score"]}),
    ("not_a_multiple", ["odd_seq"], None, {"seq": SPEC["seq"]}),
    ("corrupt", ["full", "corrupt"], None, {"score": SPEC["score"]}),
    ("no_kind_fixed", ["no_kind"], None, {"tags": ["fixed", "string", [], "d"]}),
    ("nothing", ["nothing"], None, {"age": SPEC["age"], "ids": SPEC["ids"]}),
]


def serialize(example) -> bytes:
    from tensorflow.core.example import example_pb2

    if "raw" in example:
        return example["raw"].encode("latin-1")
    proto = example_pb2.Example()
    for key, (kind, values) in example.items():
        feature = proto.features.feature[key]
        if kind == "f":
            feature.float_list.value.extend(values)
        elif kind == "i":
            feature.int64_list.value.extend(values)
        elif kind == "b":
            feature.bytes_list.value.extend(v.encode("latin-1") for v in values)
    return proto.SerializeToString(deterministic=True)


def features_of(spec, tf):
    out = {}
    for name, (kind, dtype, shape, default) in spec.items():
        dt = tf.as_dtype(dtype)
        if kind == "fixed":
            out[name] = tf.io.FixedLenFeature(shape, dt, default_value=default)
        elif kind == "seq":
            out[name] = tf.io.FixedLenSequenceFeature(shape, dt, allow_missing=True,
                                                      default_value=default)
        else:
            out[name] = tf.io.VarLenFeature(dt)
    return out


def as_json(value):
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind in ("S", "O"):
        data = [v.decode("latin-1") for v in array.reshape(-1).tolist()]
    else:
        data = array.reshape(-1).tolist()
    return {"dtype": str(array.dtype) if array.dtype.kind not in ("S", "O") else "string",
            "shape": list(array.shape), "data": data}


def outcome(fn):
    try:
        return {"value": fn()}
    except Exception as e:  # noqa: BLE001 - the error is the fixture
        return error_record(e)


def run_case(tf, examples, names, spec, single=False):
    v1 = tf.compat.v1

    def go():
        with tf.Graph().as_default():
            features = features_of(spec, tf)
            data = [serialize(EX[e]) for e in examples]
            if single:
                parsed = tf.io.parse_single_example(data[0], features)
            else:
                parsed = tf.io.parse_example(tf.constant(data, tf.string, shape=[len(data)]),
                                             features, example_names=names)
            with v1.Session() as sess:
                got = sess.run(parsed)
        out = {}
        for key, value in got.items():
            if hasattr(value, "indices"):
                out[key] = {"indices": as_json(value.indices), "values": as_json(value.values),
                            "dense_shape": as_json(value.dense_shape)}
            else:
                out[key] = as_json(value)
        return out
    return outcome(go)


def raw_ops_cases(tf):
    """The older ops, as imported graphs have them."""
    v1 = tf.compat.v1
    data = [serialize(EX[e]) for e in ("full", "sparse")]

    def v1_op():
        with tf.Graph().as_default():
            out = tf.raw_ops.ParseExample(
                serialized=data, names=[], sparse_keys=["ids"], dense_keys=["score", "age"],
                dense_defaults=[tf.zeros([0], tf.float32), tf.constant([-1], tf.int64)],
                sparse_types=[tf.int64], dense_shapes=[[2], [1]])
            with v1.Session() as sess:
                return [as_json(v) for v in sess.run(tf.nest.flatten(out))]

    def single_op():
        with tf.Graph().as_default():
            out = tf.raw_ops.ParseSingleExample(
                serialized=data[0], dense_defaults=[tf.zeros([0], tf.float32)],
                num_sparse=1, sparse_keys=["tags"], dense_keys=["score"],
                sparse_types=[tf.string], dense_shapes=[[2]])
            with v1.Session() as sess:
                return [as_json(v) for v in sess.run(tf.nest.flatten(out))]

    return {"ParseExample": outcome(v1_op), "ParseSingleExample": outcome(single_op)}


def main():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    tf.compat.v1.disable_eager_execution()
    out = {"examples": EX, "spec": SPEC,
           "opdefs": {n: str(op_def_registry.get(n))
                      for n in ("ParseExample", "ParseExampleV2", "ParseSingleExample")},
           "serialized": {k: serialize(v).hex() for k, v in EX.items()},
           "cases": {}}
    for name, examples, names, spec in CASES:
        out["cases"][name] = {"examples": examples, "names": names, "spec": spec,
                              "result": run_case(tf, examples, names, spec)}
    out["single"] = run_case(tf, ["full"], None, SPEC, single=True)
    out["raw_ops"] = raw_ops_cases(tf)
    path = Path(__file__).with_name("parse_example_tf.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
