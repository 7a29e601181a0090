"""Fixtures for issue 30 (13): Keras 3 SavedModels written by `tf.saved_model.save` with
TensorFlow 2.21, holding what the loader refused: `tf.TrackableConstant` objects (Keras 3
layers' constants, e.g. Normalization's mean and variance) and a lookup table created by
a function at load time (StringLookup's `tf.StaticHashTable`, made by its
`_create_resource` and filled by `_initialize`).

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_keras3_fixtures_tf.py

Writes under tests/data/saved_model_keras3/, per model NAME (norm, lookup):
- NAME/: the SavedModel;
- NAME.npz: `input:KEY` the inputs (Keras 3 names a functional model's signature input
  "inputs") and `output:KEY` what TF's
  `tf.saved_model.load(NAME).signatures["serving_default"](**inputs)` returned.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved_model_keras3")


def norm():
    """Normalization (constant mean and variance), Rescaling, Dense."""
    inp = keras.Input((2,), name="x")
    x = keras.layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0])(inp)
    x = keras.layers.Rescaling(0.5)(x)
    out = keras.layers.Dense(3, kernel_initializer=keras.initializers.RandomNormal(seed=1))(x)
    return keras.Model(inp, out), {"inputs": np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)}


def lookup():
    """StringLookup over a three-word vocabulary (an OOV index for the rest)."""
    inp = keras.Input((None,), dtype="string", name="words")
    out = keras.layers.StringLookup(vocabulary=["a", "b", "c"])(inp)
    return keras.Model(inp, out), {
        "inputs": np.array([[b"a", b"c", b"zz"], [b"b", b"b", b""]], dtype=object)}


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    for name, make in (("norm", norm), ("lookup", lookup)):
        model, inputs = make()
        path = os.path.join(OUT, name)
        shutil.rmtree(path, ignore_errors=True)
        tf.saved_model.save(model, path)
        fn = tf.saved_model.load(path).signatures["serving_default"]
        outputs = fn(**{k: tf.constant(v) for k, v in inputs.items()})
        np.savez(os.path.join(OUT, f"{name}.npz"),
                 **{f"input:{k}": v for k, v in inputs.items()},
                 **{f"output:{k}": v.numpy() for k, v in outputs.items()})
        print(name, {k: v.numpy().tolist() for k, v in outputs.items()})


if __name__ == "__main__":
    main()
