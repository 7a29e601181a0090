"""Record what TF 2.21's Python client (tf.compat.v1.Session.run) raises for each misuse
of fetches and feeds, into tf_client_errors.json (class name and message per case).

Run with TensorFlow installed: /work/peers-venv/bin/python tests/data/capture_tf_client_errors.py
tests/test_client_errors_tf.py builds the same graph in aioflow and runs the same cases.
"""

import json
import pathlib

import numpy as np
import tensorflow as tf

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def build(ns):
    """The graph every case runs against (ns: tf.compat.v1 or aioflow.compat.v1)."""
    x = ns.placeholder(ns.float32, [None, 64], name="x")
    y = ns.identity(x * 2.0, name="y")
    z = ns.identity(y, name="z")
    i = ns.placeholder(ns.int32, [], name="i")
    s = ns.placeholder(ns.string, [None], name="s")
    w = ns.identity(s, name="w")
    return {"x": x, "y": y, "z": z, "i": i, "s": s, "w": w}


def cases(t):
    """Label -> (fetches, feed_dict) for tensors `t` of build()."""
    x, y, z, i, w = t["x"], t["y"], t["z"], t["i"], t["w"]
    ok = np.zeros((1, 64), np.float32)
    return {
        "fetch_missing_tensor": ("nope:0", None),
        "fetch_missing_op": ("nope", None),
        "fetch_bad_output_index": ("y:5", None),
        "fetch_malformed_name": ("y:0:1", None),
        "fetch_none": (None, None),
        "fetch_none_in_list": ([y, None], {x: ok}),
        "fetch_int": (3, None),
        "fetch_not_fetchable": (z, {x: ok}),
        "feed_missing_tensor": (y, {"nope:0": 1.0}),
        "feed_op_name": (y, {"x": ok}),
        "feed_int_key": (y, {3: 1.0}),
        "feed_not_feedable": (y, {y: ok}),
        "feed_bad_shape": (y, {x: np.zeros((2, 3))}),
        "feed_none": (y, {x: None}),
        "feed_str_to_float": (y, {x: "abc"}),
        "feed_str_array_to_float": (y, {x: np.full((1000, 64), "a")}),
        "feed_str_list_to_float": (y, {x: [["a"] * 64] * 1000}),
        "feed_object_to_float": (y, {x: object()}),
        "feed_dict_to_float": (y, {x: {"a": 1}}),
        "feed_int_overflow": (i, {i: 2 ** 40}),
        "feed_float_to_string": (w, {t["s"]: [1.5, 2.5]}),
        "feed_tensor_value": (y, {x: y}),
        "missing_placeholder": (y, None),
    }


def _message(error):
    """The message; for a runtime error (OpError), its first line that says what is wrong
    (TF wraps it in "Graph execution error:" and where the node was defined, with paths)."""
    if not isinstance(error, tf.errors.OpError):
        return str(error)
    for line in error.message.splitlines():
        if line and not line[0].isspace() and not line.startswith(
                ("Graph execution error", "Detected at", "Node:")):
            return line
    return error.message


def main():
    graph = tf1.Graph()
    with graph.as_default():
        tensors = build(tf1)
        graph.prevent_feeding(tensors["y"])
        graph.prevent_fetching(tensors["z"].op)
    out = {}
    with tf1.Session(graph=graph) as sess:
        for label, (fetches, feeds) in cases(tensors).items():
            try:
                sess.run(fetches, feeds)
            except Exception as e:  # noqa: BLE001 - recording what TF raises
                out[label] = {"class": type(e).__name__,
                              "bases": [c.__name__ for c in type(e).__mro__[1:-2]],
                              "message": _message(e)}
            else:
                out[label] = {"class": None, "message": ""}
    path = pathlib.Path(__file__).with_name("tf_client_errors.json")
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(out)} cases to {path}")


if __name__ == "__main__":
    main()
