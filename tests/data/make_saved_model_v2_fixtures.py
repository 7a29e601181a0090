"""Fixtures for af.saved_model.load: TF 2 SavedModels written by TensorFlow 2.21 (Keras 3's
`model.export()` and `tf.saved_model.save` of a tf.Module), with inputs and what TF's
loaded `serving_default` signature returns for them.

    TF_CPP_MIN_LOG_LEVEL=3 TF_ENABLE_ONEDNN_OPTS=0 \
        /work/peers-venv/bin/python tests/data/make_saved_model_v2_fixtures.py

Writes under tests/data/saved_model_v2/, per model NAME:
- NAME/: the SavedModel (saved_model.pb, variables/, fingerprint.pb, assets/);
- NAME.npz: `input:KEY` the inputs fed by key and `output:KEY` what TF's
  `tf.saved_model.load(NAME).signatures["serving_default"](**inputs)` returned;
and expected.json: per model its description, the signature's input and output keys,
`saved_model_cli show --all` of it, and TF's errors (class and message) calling the mlp's
and the module's signatures with bad inputs.

`make_saved_model_v2_fixtures.py NAME...` regenerates only those fixtures.

Models (small, so the committed variables stay small): mlp (Dense, Dense), conv (Conv2D,
MaxPool, Flatten, Dense), lstm and gru (Keras RNNs: While v2 with TensorList ops), cond (a
subclassed model with tf.cond in call), text (a string model whose preprocessing is
lower/regex/split/hash, no StringLookup), module (a tf.Module with a tf.function
signature over two variables and a second signature), assets (a tf.Module with an asset
file, bound by the loader's init op).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "saved_model_v2")
RNG = np.random.default_rng(12)


def mlp():
    """Dense(8, relu) -> Dense(3, softmax) over [batch, 4]."""
    inputs = keras.Input(shape=(4,), name="x")
    h = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    out = keras.layers.Dense(3, activation="softmax", name="probs")(h)
    model = keras.Model(inputs, out, name="mlp")
    return model, {"x": RNG.standard_normal((5, 4)).astype(np.float32)}


def conv():
    """Conv2D(4, 3x3, relu) -> MaxPool 2x2 -> Flatten -> Dense(2) over [batch, 8, 8, 1]."""
    inputs = keras.Input(shape=(8, 8, 1), name="image")
    h = keras.layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
    h = keras.layers.MaxPooling2D(2, name="pool")(h)
    h = keras.layers.Flatten(name="flatten")(h)
    out = keras.layers.Dense(2, name="logits")(h)
    model = keras.Model(inputs, out, name="conv")
    return model, {"image": RNG.standard_normal((3, 8, 8, 1)).astype(np.float32)}


def lstm():
    """LSTM(8) -> Dense(2) over [batch, 6 steps, 3 features] (While v2 in the export)."""
    inputs = keras.Input(shape=(6, 3), name="seq")
    h = keras.layers.LSTM(8, name="lstm")(inputs)
    out = keras.layers.Dense(2, name="head")(h)
    model = keras.Model(inputs, out, name="lstm")
    return model, {"seq": RNG.standard_normal((4, 6, 3)).astype(np.float32)}


def gru():
    """GRU(8, return_sequences) -> Dense(2) per step over [batch, 5, 3]."""
    inputs = keras.Input(shape=(5, 3), name="seq")
    h = keras.layers.GRU(8, return_sequences=True, name="gru")(inputs)
    out = keras.layers.Dense(2, name="head")(h)
    model = keras.Model(inputs, out, name="gru")
    return model, {"seq": RNG.standard_normal((2, 5, 3)).astype(np.float32)}


class CondModel(keras.Model):
    """A subclassed model whose call branches with tf.cond on the batch's mean."""

    def __init__(self):
        super().__init__(name="cond")
        self.dense = keras.layers.Dense(3, name="dense")
        self.other = keras.layers.Dense(3, name="other")

    def call(self, x):
        return tf.cond(tf.reduce_mean(x) > 0.0,
                       lambda: self.dense(x) * 2.0,
                       lambda: tf.nn.relu(self.other(x)) - 1.0)


def cond():
    model = CondModel()
    model(keras.Input(shape=(4,), name="x"))
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    x[0] += 3.0  # a positive mean: the true branch
    return model, {"x": x}


class TextModel(keras.Model):
    """Strings -> lower, strip punctuation, split on spaces, hash to 50 buckets, pad to 6
    tokens -> Embedding(50, 4) -> masked mean -> Dense(2)."""

    def __init__(self):
        super().__init__(name="text")
        self.embed = keras.layers.Embedding(50, 4, name="embed")
        self.head = keras.layers.Dense(2, name="head")

    def call(self, text):
        text = tf.strings.lower(text)
        text = tf.strings.regex_replace(text, "[^a-z0-9 ]", "")
        tokens = tf.compat.v1.strings.split(text, sep=" ")  # a SparseTensor
        dense = tf.sparse.to_dense(tokens, default_value="")
        dense = tf.pad(dense, [[0, 0], [0, 6]], constant_values="")[:, :6]
        ids = tf.strings.to_hash_bucket_fast(dense, 50)
        mask = tf.cast(tf.not_equal(dense, ""), tf.float32)[:, :, None]
        vectors = self.embed(ids) * mask
        mean = tf.reduce_sum(vectors, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
        return self.head(mean)


def text():
    model = TextModel()
    model(tf.constant(["build the weights"]))
    return model, {"text": np.array([b"Hello, World!", b"the quick brown fox jumps",
                                     b"", b"A a a.  B"], dtype=object)}


class Affine(tf.Module):
    """A tf.Module: y = x @ w + b under a tf.function signature, and a second signature
    `scale` returning two outputs."""

    def __init__(self):
        super().__init__(name="affine")
        self.w = tf.Variable(RNG.standard_normal((3, 2)).astype(np.float32), name="w")
        self.b = tf.Variable(np.array([0.5, -1.0], np.float32), name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.matmul(x, self.w) + self.b}

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32, name="factor"),
                                  tf.TensorSpec([None], tf.int32, name="ids")])
    def scale(self, factor, ids):
        return {"scaled": self.b * factor, "ids_plus": ids + 1}


def module_export(path):
    mod = Affine()
    tf.saved_model.save(mod, path, signatures={"serving_default": mod.__call__,
                                               "scale": mod.scale})
    return {"x": RNG.standard_normal((2, 3)).astype(np.float32)}


class WithAsset(tf.Module):
    """A tf.Module with an asset (vocab.txt): its signature returns the asset's path (TF's
    loader binds it to the file under assets/) and x * v."""

    def __init__(self, vocab_path):
        super().__init__(name="with_asset")
        self.vocab = tf.saved_model.Asset(vocab_path)
        self.v = tf.Variable(2.0, name="v")

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32, name="x")])
    def __call__(self, x):
        return {"path": tf.identity(self.vocab.asset_path), "y": x * self.v}


def asset_export(path):
    source = os.path.join(OUT, "vocab_source")
    os.makedirs(source, exist_ok=True)
    with open(os.path.join(source, "vocab.txt"), "w") as f:
        f.write("hello\nworld\n")
    mod = WithAsset(os.path.join(source, "vocab.txt"))
    tf.saved_model.save(mod, path, signatures={"serving_default": mod.__call__})
    shutil.rmtree(source)
    return {"x": np.float32(3.0)}


def bad_inputs(sig, good):
    """TF's errors (class, message) calling a loaded signature with bad inputs."""
    x = good["x"]
    cases = {
        "missing": {},
        "extra": {"x": x, "y": x},
        "wrong_dtype_tensor": {"x": tf.constant(x.astype(np.int32))},
        "wrong_dtype_numpy": {"x": x.astype(np.int64)},  # numpy values are cast
        "wrong_dtype_string": {"x": np.array([["a", "b", "c", "d"]])},
        "none": {"x": None},
        "wrong_shape": {"x": np.zeros((2, 5), np.float32)},
        "wrong_rank": {"x": np.zeros((4,), np.float32)},
    }
    out = {}
    for name, kwargs in cases.items():
        try:
            sig(**kwargs)
            out[name] = None
        except Exception as e:  # noqa: BLE001 - record whatever TF raises
            out[name] = {"class": type(e).__name__, "message": str(e)}
    try:
        sig(x)
        out["positional"] = None
    except Exception as e:  # noqa: BLE001
        out["positional"] = {"class": type(e).__name__, "message": str(e)}
    return out


def show_all(export_dir) -> str:
    """TF's `saved_model_cli show --all --dir export_dir` output."""
    cmd = [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--all",
           "--dir", export_dir]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def main(only=None):
    """Write every fixture (or, given names, only those, keeping the others' files and
    expected.json entries: the exports are not byte-deterministic)."""
    keras.utils.set_random_seed(12)
    expected = {"tensorflow": tf.__version__, "keras": keras.__version__, "models": {}}
    if only:
        with open(os.path.join(OUT, "expected.json")) as f:
            expected["models"] = json.load(f)["models"]
        for name in only:
            shutil.rmtree(os.path.join(OUT, name), ignore_errors=True)
    else:
        if os.path.exists(OUT):
            shutil.rmtree(OUT)
        os.makedirs(OUT)
    builders = {"mlp": mlp, "conv": conv, "lstm": lstm, "gru": gru, "cond": cond,
                "text": text}
    inputs_by_name = {}
    for name, build in builders.items():
        if only and name not in only:
            continue
        model, inputs_by_name[name] = build()
        spec = None  # subclassed models: name the input (Keras guesses args_0, float)
        if name == "text":
            spec = [tf.TensorSpec([None], tf.string, name="text")]
        if name == "cond":
            spec = [tf.TensorSpec([None, 4], tf.float32, name="x")]
        model.export(os.path.join(OUT, name), format="tf_saved_model", verbose=False,
                     input_signature=spec)
        doc = build.__doc__ or type(model).__doc__ or ""
        expected["models"][name] = {"description": " ".join(doc.split())}
    for name, export, cls in (("module", module_export, Affine),
                              ("assets", asset_export, WithAsset)):
        if only and name not in only:
            continue
        inputs_by_name[name] = export(os.path.join(OUT, name))
        expected["models"][name] = {"description": " ".join(cls.__doc__.split())}
    for name, inputs in inputs_by_name.items():
        loaded = tf.saved_model.load(os.path.join(OUT, name))
        sig = loaded.signatures["serving_default"]
        outputs = sig(**{k: tf.constant(v) for k, v in inputs.items()})
        arrays = {f"input:{k}": v for k, v in inputs.items()}
        arrays.update({f"output:{k}": v.numpy() for k, v in outputs.items()})
        if name == "assets":  # the path TF bound, with this directory as <OUT>
            arrays["output:path"] = np.array(
                outputs["path"].numpy().replace(OUT.encode(), b"<OUT>"), dtype=object)
        np.savez(os.path.join(OUT, f"{name}.npz"), **arrays)
        entry = expected["models"][name]
        entry["inputs"] = sorted(inputs)
        entry["outputs"] = sorted(outputs)
        entry["signatures"] = sorted(loaded.signatures)
        entry["show_all"] = show_all(os.path.join(OUT, name))
        if name == "module":
            scaled = loaded.signatures["scale"](factor=tf.constant(3.0),
                                                ids=tf.constant([1, 2], tf.int32))
            entry["scale"] = {"factor": 3.0, "ids": [1, 2],
                              **{k: v.numpy().tolist() for k, v in scaled.items()}}
            entry["errors"] = {}
            for case, kwargs in {"float_list_to_int": {"factor": 1.0, "ids": [1.5]},
                                 "vector_to_scalar": {"factor": [1.0, 2.0], "ids": [1]}
                                 }.items():
                try:
                    loaded.signatures["scale"](**kwargs)
                    entry["errors"][case] = None
                except TypeError as e:
                    entry["errors"][case] = {"class": type(e).__name__, "message": str(e)}
        if name == "mlp":
            entry["errors"] = bad_inputs(sig, inputs)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
