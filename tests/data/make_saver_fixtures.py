"""Fixtures for af.train.Saver and meta graphs, written by TensorFlow 2.21's
tf.compat.v1.train.Saver (graph mode, ref variables unless use_resource).

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_saver_fixtures.py

Writes under tests/data/:
- saver_tf/: `model.ckpt-7` (.index, .data, .meta) and the `checkpoint` state file of a
  Saver over a ref float variable `a`, a resource variable `sc/b`, an int64 `step` and a
  string `s` (the values of VALUES, assigned after initialization);
- saver_dict/: `model` saved by a Saver with var_list {"other/a": a, "renamed_b": b};
- saver_fixtures.json: the values, each graph's Saver nodes (name, op, inputs, device,
  attrs) and SaverDef (also of a sharded Saver over the same variables), and TF's errors
  restoring with a missing key, a shape or dtype mismatch, or no checkpoint.

tests/test_saver.py builds the same graphs in aioflow (build_graph below, with `af` for
`tf1`) and compares.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

VALUES = {
    "a": [[1.5, -2.0, 3.25], [0.0, 7.0, -1.0]],
    "sc/b": [10.0, 20.0, 30.0],
    "step": 123456789012,
    "s": ["hello", "w\u00f6rld"],
}


def build_graph(tf1):
    """The variables (ref a, resource sc/b, ref int64 step, ref string s) and assigns of
    VALUES; returns ({name: variable}, assign op)."""
    a = tf1.Variable(tf1.zeros([2, 3]), name="a")
    with tf1.variable_scope("sc"):
        b = tf1.get_variable("b", [3], initializer=tf1.zeros_initializer(),
                             use_resource=True)
    step = tf1.Variable(np.int64(0), name="step")
    s = tf1.Variable(["", ""], name="s")
    assign = tf1.group(a.assign(VALUES["a"]), b.assign(VALUES["sc/b"], read_value=False),
                       step.assign(np.int64(VALUES["step"])), s.assign(VALUES["s"]),
                       name="assign_values")
    return {"a": a, "sc/b": b, "step": step, "s": s}, assign


def saver_nodes(graph_def, scope: str) -> list[dict]:
    """The nodes under `scope/`: name, op, inputs, device, attrs (text protos; TF 2's
    _has_manual_control_dependencies marker left out)."""
    out = []
    for node in graph_def.node:
        if not node.name.startswith(scope + "/"):
            continue
        attrs = {k: str(v) for k, v in sorted(node.attr.items())
                 if k != "_has_manual_control_dependencies"}
        out.append({"name": node.name, "op": node.op, "input": list(node.input),
                    "device": node.device, "attr": attrs})
    return out


def _error(fn) -> dict:
    """TF's error: class and message; for a wrapped run error, the wrapping text up to
    "Original error:", the failing node and the node's own message (TF's Python frames
    in between, which depend on the machine, left out)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (recording TF's error)
        message = str(e).replace(HERE, "<data>")
        out = {"class": type(e).__name__, "message": message}
        if "Original error:" in message:
            wrapped, _, rest = message.partition("Original error:\n\n")
            node_line = rest[rest.rindex("\nNode: '") + 1:]
            node, _, original = node_line.partition("\n")
            out = {"class": type(e).__name__, "wrapped": wrapped + "Original error:\n\n",
                   "node": node[len("Node: '"):-1],
                   "original": original.partition("\n\nOriginal stack trace")[0]}
        return out
    return {"class": None}


def main() -> None:
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    tf1.disable_resource_variables()
    report = {"tf_version": tf.__version__, "values": VALUES}

    tf_dir = os.path.join(HERE, "saver_tf")
    dict_dir = os.path.join(HERE, "saver_dict")
    for d in (tf_dir, dict_dir):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)

    g = tf.Graph()
    with g.as_default():
        vs, assign = build_graph(tf1)
        saver = tf1.train.Saver()
        dict_saver = tf1.train.Saver({"other/a": vs["a"], "renamed_b": vs["sc/b"]},
                                     name="dict_saver")
        with tf1.Session(graph=g) as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(assign)
            prefix = saver.save(sess, os.path.join(tf_dir, "model.ckpt"), global_step=7)
            dict_saver.save(sess, os.path.join(dict_dir, "model"), write_meta_graph=False,
                            write_state=False)
        gd = g.as_graph_def()
        report["saver_nodes"] = saver_nodes(gd, "save")
        report["dict_saver_nodes"] = saver_nodes(gd, "dict_saver")
        report["saver_def"] = str(saver.as_saver_def())
        report["dict_saver_def"] = str(dict_saver.as_saver_def())
        report["prefix"] = os.path.relpath(prefix, HERE)
    g = tf.Graph()
    with g.as_default():
        build_graph(tf1)
        sharded = tf1.train.Saver(sharded=True)
        report["sharded_saver_nodes"] = saver_nodes(g.as_graph_def(), "save")
        report["sharded_saver_def"] = str(sharded.as_saver_def())
    report["errors"] = record_errors(tf, tf1, tf_dir)
    with open(os.path.join(HERE, "saver_fixtures.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    _relativize_state(tf_dir)


def record_errors(tf, tf1, tf_dir) -> dict:
    """TF's errors restoring saver_tf into graphs that do not match it."""
    prefix = os.path.join(tf_dir, "model.ckpt-7")
    errors = {}
    g = tf.Graph()
    with g.as_default():
        tf1.Variable(tf1.zeros([2, 3]), name="a")
        tf1.Variable(tf1.zeros([2]), name="missing")
        saver = tf1.train.Saver()
        with tf1.Session(graph=g) as sess:
            errors["missing_key"] = _error(lambda: saver.restore(sess, prefix))
            errors["no_checkpoint"] = _error(
                lambda: saver.restore(sess, os.path.join(tf_dir, "nothing")))
    g = tf.Graph()
    with g.as_default():
        tf1.Variable(tf1.zeros([4]), name="a")
        saver = tf1.train.Saver()
        with tf1.Session(graph=g) as sess:
            errors["shape_mismatch"] = _error(lambda: saver.restore(sess, prefix))
    g = tf.Graph()
    with g.as_default():
        tf1.Variable(tf1.zeros([2, 3], dtype=tf.float64), name="a")
        saver = tf1.train.Saver()
        with tf1.Session(graph=g) as sess:
            errors["dtype_mismatch"] = _error(lambda: saver.restore(sess, prefix))
    return errors


def _relativize_state(tf_dir: str) -> None:
    """The state file with paths relative to its directory (TF wrote absolute ones)."""
    path = os.path.join(tf_dir, "checkpoint")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text.replace(tf_dir + os.sep, ""))


if __name__ == "__main__":
    sys.exit(main())
