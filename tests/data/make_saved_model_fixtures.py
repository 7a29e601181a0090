"""Fixtures for af.saved_model.loader, v1 SavedModels written by TensorFlow 2.21's
tf.compat.v1.saved_model.Builder (graph mode).

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_saved_model_fixtures.py

Writes under tests/data/saved_model_v1/:
- main_op/: tags {"serve"}; a ref variable `w` [2, 2] and a resource variable `b` [2]
  (saved with values W and B), the signature `serving_default` (x -> y = x @ w + b),
  an asset `vocab.txt` bound to the tensor `asset_path`, and a main_op initializing the
  local variables `counter` (int32 7) and `asset_copy` (the asset path fed by the loader);
- legacy/: the same graph under tags {"serve", "gpu"} saved with strip_default_attrs=True
  and the local variables initialized by a legacy_init_op instead of a main_op; a second
  meta graph with tags {"train"} (no signature);
- tf2/: a SavedModel written by TF 2's tf.saved_model.save (a function multiplying its
  input by a variable), which the v1 loader loads too, as TF's does;
- expected.json: X, the signature's y for X, what TF's loader leaves in the local
  variables (`asset_copy` with the fixture directory as <OUT>) and TF's loader errors
  (wrong tags, missing export dir), and `saved_model_cli show --all` of each model.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "saved_model_v1")
W = [[1.0, 2.0], [3.0, -4.0]]
B = [0.5, -1.5]
X = [[1.0, 1.0], [2.0, -0.5]]


def build(tf1):
    """The graph: returns (x, y, asset tensor, local-variable initializer)."""
    x = tf1.placeholder(tf1.float32, [None, 2], name="x")
    w = tf1.Variable(tf1.zeros([2, 2]), name="w", use_resource=False)
    b = tf1.Variable(tf1.zeros([2]), name="b", use_resource=True)
    y = tf1.add(tf1.matmul(x, w), b, name="y")
    asset = tf1.constant("original/vocab.txt", name="asset_path")
    tf1.add_to_collection(tf1.GraphKeys.ASSET_FILEPATHS, asset)
    tf1.Variable(7, name="counter", collections=[tf1.GraphKeys.LOCAL_VARIABLES],
                 use_resource=False)
    tf1.Variable(asset, name="asset_copy", collections=[tf1.GraphKeys.LOCAL_VARIABLES],
                 use_resource=False)
    assign = tf1.group(w.assign(W), b.assign(B))
    return x, y, asset, assign


def save(tf, export_dir, tags, legacy):
    """Write one SavedModel (a second `train` meta graph when legacy)."""
    tf1 = tf.compat.v1
    with tf.Graph().as_default() as g, tf1.Session(graph=g) as sess:
        x, y, asset, assign = build(tf1)
        sess.run(tf1.global_variables_initializer())
        sess.run(assign)
        sig = tf1.saved_model.signature_def_utils.predict_signature_def({"x": x}, {"y": y})
        builder = tf1.saved_model.Builder(export_dir)
        init = tf1.local_variables_initializer()
        kwargs = {"legacy_init_op": init} if legacy else {"main_op": init}
        builder.add_meta_graph_and_variables(
            sess, tags, signature_def_map={"serving_default": sig},
            assets_collection=tf1.get_collection(tf1.GraphKeys.ASSET_FILEPATHS),
            strip_default_attrs=legacy, **kwargs)
        if legacy:
            builder.add_meta_graph(["train"], strip_default_attrs=True)
        builder.save()
        return sess.run(y, {x: X}).tolist()


def loader_errors(tf, export_dir):
    """TF's errors loading with wrong tags and from a missing directory."""
    tf1 = tf.compat.v1
    out = {}
    cases = {"wrong_tags": (export_dir, ["nope"]),
             "missing_dir": (os.path.join(export_dir, "absent"), ["serve"])}
    for key, (path, tags) in cases.items():
        with tf.Graph().as_default(), tf1.Session() as sess:
            try:
                tf1.saved_model.loader.load(sess, tags, path)
            except Exception as e:  # noqa: BLE001 - recorded
                out[key] = {"type": type(e).__name__,
                            "message": str(e).replace(OUT, "<OUT>")}
    return out


def loaded_locals(tf, export_dir, tags):
    """counter and asset_copy after TF's loader ran the main_op."""
    tf1 = tf.compat.v1
    with tf.Graph().as_default() as g, tf1.Session(graph=g) as sess:
        tf1.saved_model.loader.load(sess, tags, export_dir)
        counter, path = sess.run(["counter:0", "asset_copy:0"])
        return {"counter": np.asarray(counter).tolist(),
                "asset_copy": path.decode().replace(OUT, "<OUT>")}


def save_tf2(tf, export_dir):
    """A TF 2 SavedModel: the signature calls a function (StatefulPartitionedCall)."""
    module = tf.Module()
    module.v = tf.Variable([1.0, 2.0])
    fn = tf.function(lambda x: {"y": x * module.v},
                     input_signature=[tf.TensorSpec([2], tf.float32, name="x")])
    module.f = fn
    tf.saved_model.save(module, export_dir,
                        signatures={"serving_default": fn.get_concrete_function()})


def show_all(export_dir) -> str:
    """TF's `saved_model_cli show --all --dir export_dir` output."""
    cmd = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--all",
           "--dir", export_dir]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def main():
    """Write the fixtures."""
    import tensorflow as tf

    shutil.rmtree(OUT, ignore_errors=True)
    save_tf2(tf, os.path.join(OUT, "tf2"))
    tf.compat.v1.disable_eager_execution()
    os.makedirs(os.path.join(OUT, "original"))
    with open(os.path.join(OUT, "original", "vocab.txt"), "w") as f:
        f.write("a\nb\nc\n")
    cwd = os.getcwd()
    os.chdir(OUT)  # the asset constant is a path relative to OUT
    try:
        y = save(tf, os.path.join(OUT, "main_op"), ["serve"], False)
        save(tf, os.path.join(OUT, "legacy"), ["serve", "gpu"], True)
    finally:
        os.chdir(cwd)
    shutil.rmtree(os.path.join(OUT, "original"))
    expected = {"W": W, "B": B, "X": X, "y": y,
                "errors": loader_errors(tf, os.path.join(OUT, "main_op")),
                "main_op": loaded_locals(tf, os.path.join(OUT, "main_op"), ["serve"]),
                "legacy": loaded_locals(tf, os.path.join(OUT, "legacy"), ["gpu", "serve"]),
                "show_all": {d: show_all(os.path.join(OUT, d)) for d in ("main_op", "legacy")}}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
