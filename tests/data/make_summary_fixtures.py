"""Writes tests/data/summary_cases.json and tests/data/summary_op_defs.pb: what TensorFlow
2.21's summary kernels (ScalarSummary, HistogramSummary, TensorSummaryV2, MergeSummary)
output, as serialized Summary bytes, or the error they raise, case by case; TF's OpDefs of
those ops (an OpList); the GraphDefs `tf.compat.v1.summary`'s builders write for the
programs in `BUILDERS` (their bytes, hex, and the summaries collection); and what TF's
FileWriter writes (the events of one file, without wall times, and the file name).

Each kernel case runs in a v1 graph and session (inputs fed through placeholders, so
nothing is folded; the summary node is named "summ"); an error's message is TF's without
the graph-execution preamble and the "[[{{node summ}}]]" suffix. Inputs are stored as
JSON (strings as hex).

Run from the project root with a TensorFlow 2.21 environment (see tests/data/README.md):

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_summary_fixtures.py

This module does not import TensorFlow at import time: the tests import `BUILDERS`.
"""

from __future__ import annotations

import glob
import json
import os
import re
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OP_NAMES = ["ScalarSummary", "HistogramSummary", "TensorSummaryV2", "MergeSummary"]


def _summary_bytes(values) -> bytes:
    """A serialized Summary of (tag, simple_value) pairs, written by hand (no proto needed)."""
    out = b""
    for tag, v in values:
        body = b"\x0a" + bytes([len(tag)]) + tag.encode() + b"\x15" + np.float32(v).tobytes()
        out += b"\x0a" + bytes([len(body)]) + body
    return out


_RNG = np.random.default_rng(15)
_NORMAL = (_RNG.standard_normal(1000) * 3).astype(np.float32)
_EDGES = np.array([0.0, 1e-12, -1e-12, 1.0, -1.0, 1.1, 1e20, -1e20, 2e20, 5e-13, 1e-300],
                  np.float64)
_TEXT_META = b"\x0a\x06\x0a\x04text"  # SummaryMetadata{plugin_data{plugin_name: "text"}}
_CUSTOM_META = b"\x0a\x0b\x0a\x03pl1\x12\x04\x01\x02\x03\x04\x12\x04disp"

# (id, op, [(input value, dtype)], attrs)
CASES = [
    ("scalar_f32", "ScalarSummary", [("loss", "string"), (1.5, "float32")], {}),
    ("scalar_f64_vector", "ScalarSummary",
     [(["a", "b", "c", "d"], "string"), ([1e-40, -2.5, 1e300, 0.1], "float64")], {}),
    ("scalar_i32_matrix", "ScalarSummary",
     [([["a", "b"], ["c", "d"]], "string"), ([[1, -2], [2**31 - 1, 0]], "int32")], {}),
    ("scalar_f32_subnormal", "ScalarSummary",
     [(["s", "t"], "string"), ([1e-40, -1e-45], "float32")], {}),
    ("scalar_f16", "ScalarSummary", [(["h"], "string"), ([0.333], "float16")], {}),
    ("scalar_u8", "ScalarSummary", [(["u"], "string"), ([255], "uint8")], {}),
    ("scalar_i64", "ScalarSummary", [("big", "string"), (2**53 + 1, "int64")], {}),
    ("scalar_empty", "ScalarSummary", [([], "string"), ([], "float32")], {}),
    ("scalar_nan_inf", "ScalarSummary",
     [(["n", "i"], "string"), ([float("nan"), float("-inf")], "float32")], {}),
    ("scalar_shape_mismatch", "ScalarSummary",
     [(["a", "b"], "string"), ([1.0], "float32")], {}),
    ("scalar_shape_mismatch_one_tag", "ScalarSummary",
     [("x", "string"), ([1.0, 2.0], "float32")], {}),
    ("histogram_normal_f32", "HistogramSummary",
     [("w", "string"), (_NORMAL.tolist(), "float32")], {}),
    ("histogram_ints", "HistogramSummary",
     [("ints", "string"), ([-3, -2, -1, 0, 0, 1, 2, 3, 1000000], "int32")], {}),
    ("histogram_edges_f64", "HistogramSummary", [("edges", "string"),
                                                 (_EDGES.tolist(), "float64")], {}),
    ("histogram_subnormal_f64", "HistogramSummary",
     [("sub", "string"), ([1e-310, 0.0, -4e-320], "float64")], {}),
    ("histogram_subnormal_f32", "HistogramSummary",
     [("sub32", "string"), ([1e-40, 2.0], "float32")], {}),
    ("histogram_subnormal_f16", "HistogramSummary",
     [("sub16", "string"), ([6e-8, -3e-5, 1.0], "float16")], {}),
    ("histogram_bf16", "HistogramSummary",
     [("bf", "string"), ([1e-39, -2.5, 3.0e38], "bfloat16")], {}),
    ("histogram_bf16_subnormal", "HistogramSummary", [("bfs", "string"), ([1e-39], "bfloat16")],
     {}),
    ("histogram_f16_subnormal", "HistogramSummary", [("hs", "string"), ([6e-8], "float16")],
     {}),
    ("histogram_f32_subnormal", "HistogramSummary", [("fs", "string"), ([-1e-40], "float32")],
     {}),
    ("scalar_bf16", "ScalarSummary", [(["a", "b"], "string"), ([1e-39, 7.5], "bfloat16")], {}),
    ("histogram_scalar", "HistogramSummary", [("one", "string"), (3.0, "float32")], {}),
    ("histogram_empty", "HistogramSummary", [("none", "string"), ([], "float32")], {}),
    ("histogram_zeros", "HistogramSummary", [("z", "string"), ([0.0, 0.0, -0.0], "float64")],
     {}),
    ("histogram_f16", "HistogramSummary", [("h", "string"), ([0.1, 65504.0, -7.0], "float16")],
     {}),
    ("histogram_u8_matrix", "HistogramSummary",
     [("u", "string"), ([[0, 1, 255], [7, 7, 7]], "uint8")], {}),
    ("histogram_nan", "HistogramSummary",
     [("n", "string"), ([1.0, float("nan")], "float32")], {}),
    ("histogram_inf", "HistogramSummary",
     [("i", "string"), ([float("-inf"), 1.0], "float64")], {}),
    ("histogram_tag_vector", "HistogramSummary", [(["a"], "string"), ([1.0], "float32")], {}),
    ("tensor_f32", "TensorSummaryV2",
     [("t", "string"), ([[1.5, -2.0, 0.0], [3.0, 4.0, 5.0]], "float32"),
      (_CUSTOM_META.hex(), "bytes")], {}),
    ("tensor_i64_scalar", "TensorSummaryV2",
     [("step", "string"), (7, "int64"), ("", "bytes")], {}),
    ("tensor_bool", "TensorSummaryV2",
     [("b", "string"), ([True, False], "bool"), ("", "bytes")], {}),
    ("tensor_f16", "TensorSummaryV2",
     [("h", "string"), ([0.5, -1.0], "float16"), ("", "bytes")], {}),
    ("tensor_text", "TensorSummaryV2",
     [("notes", "string"), (["hello", "w\u00f6rld", ""], "string"), (_TEXT_META.hex(), "bytes")],
     {}),
    ("tensor_text_scalar", "TensorSummaryV2",
     [("note", "string"), ("# Title\n*x*", "string"), (_TEXT_META.hex(), "bytes")], {}),
    ("tensor_empty", "TensorSummaryV2",
     [("e", "string"), (np.zeros((0, 3), np.float32).tolist(), "float32"), ("", "bytes")], {}),
    ("tensor_tag_vector", "TensorSummaryV2",
     [(["t"], "string"), (1.0, "float32"), ("", "bytes")], {}),
    ("tensor_metadata_vector", "TensorSummaryV2",
     [("t", "string"), (1.0, "float32"), ([""], "bytes")], {}),
    ("tensor_bad_metadata", "TensorSummaryV2",
     [("t", "string"), (1.0, "float32"), ("ffff", "bytes")], {}),
    ("merge_two", "MergeSummary",
     [(_summary_bytes([("a", 1.0), ("b", 2.0)]).hex(), "bytes"),
      ([_summary_bytes([("c", 3.0)]).hex(), _summary_bytes([]).hex(),
        _summary_bytes([("d", -4.5)]).hex()], "bytes")], {}),
    ("merge_one", "MergeSummary", [(_summary_bytes([("x", 0.25)]).hex(), "bytes")], {}),
    ("merge_empty_tags_repeat", "MergeSummary",
     [(_summary_bytes([("", 1.0)]).hex(), "bytes"), (_summary_bytes([("", 2.0)]).hex(), "bytes")],
     {}),
    ("merge_duplicate", "MergeSummary",
     [(_summary_bytes([("a", 1.0)]).hex(), "bytes"),
      (_summary_bytes([("a", 2.0)]).hex(), "bytes")], {}),
    ("merge_unparseable", "MergeSummary",
     [(_summary_bytes([("a", 1.0)]).hex(), "bytes"), ("0affff", "bytes")], {}),
]


def build_summaries(tf, summary):
    """Summary ops as a TF 1.x program writes them: names, families, scopes, merges."""
    x = tf.placeholder(tf.float32, [], name="x")
    w = tf.placeholder(tf.float32, [None, 3], name="w")
    summary.scalar("loss", x)
    summary.scalar("loss", x * 2.0)
    summary.scalar("bad name!", x)
    summary.scalar("acc", x, family="train")
    with tf.name_scope("layer1"):
        summary.histogram("weights", w)
        summary.scalar("mean", tf.reduce_mean(w))
    summary.histogram("w", w, collections=["custom"])
    summary.text("notes", tf.constant(["hello", "world"]))
    summary.scalar("not_collected", x, collections=[])
    merged = summary.merge_all()
    custom = summary.merge_all(key="custom", name="custom_merge")
    summary.merge([merged, custom], name="everything")


BUILDERS = [build_summaries]


def _np_value(value, dtype):
    import ml_dtypes  # noqa: F401  (numpy knows "bfloat16" by name once it is imported)

    if dtype == "string":
        return np.array(value, dtype=object) if not isinstance(value, str) else value.encode()
    if dtype == "bytes":
        if isinstance(value, list):
            return np.array([bytes.fromhex(v) for v in value], dtype=object)
        return bytes.fromhex(value)
    return np.array(value, dtype=dtype)


def kernel_cases(tf) -> list[dict]:
    out = []
    for case_id, op, inputs, _attrs in CASES:
        g = tf.Graph()
        with g.as_default():
            feeds, phs = {}, []
            for i, (value, dtype) in enumerate(inputs):
                v = _np_value(value, dtype)
                tf_dtype = tf.string if dtype in ("string", "bytes") else tf.as_dtype(dtype)
                ph = tf.placeholder(tf_dtype, np.shape(v), name=f"in{i}")
                feeds[ph] = v
                phs.append(ph)
            if op == "MergeSummary":
                node = tf.raw_ops.MergeSummary(inputs=phs, name="summ")
            elif op == "ScalarSummary":
                node = tf.raw_ops.ScalarSummary(tags=phs[0], values=phs[1], name="summ")
            elif op == "HistogramSummary":
                node = tf.raw_ops.HistogramSummary(tag=phs[0], values=phs[1], name="summ")
            else:
                node = tf.raw_ops.TensorSummaryV2(tag=phs[0], tensor=phs[1],
                                                  serialized_summary_metadata=phs[2],
                                                  name="summ")
        case = {"id": case_id, "op": op,
                "inputs": [{"value": v, "dtype": d} for v, d in inputs]}
        with tf.Session(graph=g) as sess:
            try:
                case["output"] = sess.run(node, feeds).hex()
                case["outcome"] = "ok"
            except tf.errors.OpError as e:
                case["outcome"] = "error"
                case["error_class"] = type(e).__name__
                message = e.message.split("Node: 'summ'\n")[-1]
                case["message"] = re.sub(r"\n\t \[\[\{\{node summ\}\}\]\]$", "", message)
        out.append(case)
    return out


def builder_graphs(tf) -> dict:
    out = {}
    for build in BUILDERS:
        g = tf.Graph()
        with g.as_default():
            build(tf, tf.summary)
        out[build.__name__] = {
            "graph_def": g.as_graph_def().SerializeToString(deterministic=True).hex(),
            "collections": {k: [t.name for t in g.get_collection(k)]
                            for k in ("summaries", "custom")},
        }
    return out


def file_writer_events(tf) -> dict:
    """The events TF's FileWriter writes for a graph, two summaries and run metadata."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        tf.summary.scalar("loss", x)
        merged = tf.summary.merge_all()
    logdir = tempfile.mkdtemp()
    writer = tf.summary.FileWriter(logdir, graph=g)
    with tf.Session(graph=g) as sess:
        meta = tf.RunMetadata()
        out = sess.run(merged, {x: 2.0}, options=tf.RunOptions(trace_level=3),
                       run_metadata=meta)
    writer.add_summary(out, 3)
    writer.add_summary(out)
    writer.add_run_metadata(meta, "step3", 3)
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 5)
    writer.close()
    (path,) = glob.glob(os.path.join(logdir, "*"))
    events = []
    for e in tf.train.summary_iterator(path):
        kind = e.WhichOneof("what")
        item = {"what": kind, "step": e.step,
                "integral_wall_time": float(e.wall_time).is_integer(),
                "source_writer": e.source_metadata.writer}
        if kind == "file_version":
            item["file_version"] = e.file_version
        elif kind == "summary":
            item["summary"] = e.summary.SerializeToString().hex()
        elif kind == "graph_def":
            item["graph_def"] = e.graph_def.hex()
        elif kind == "tagged_run_metadata":
            item["tag"] = e.tagged_run_metadata.tag
        elif kind == "session_log":
            item["session_log"] = e.session_log.SerializeToString().hex()
        events.append(item)
    name = os.path.basename(path)
    return {"file_name_pattern": re.sub(r"\d{10}", "<10 digit seconds>", name).replace(
        os.uname().nodename, "<hostname>"), "events": events}


def main() -> None:
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    import tensorflow as tf_mod
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry

    tf = tf_mod.compat.v1
    tf.disable_eager_execution()
    ops = op_def_pb2.OpList()
    for name in OP_NAMES:
        ops.op.add().CopyFrom(op_def_registry.get(name))
    with open(os.path.join(HERE, "summary_op_defs.pb"), "wb") as f:
        f.write(ops.SerializeToString(deterministic=True))
    doc = {"tensorflow": tf_mod.__version__, "cases": kernel_cases(tf),
           "builders": builder_graphs(tf), "file_writer": file_writer_events(tf)}
    with open(os.path.join(HERE, "summary_cases.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
