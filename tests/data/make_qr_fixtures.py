"""Qr and the orthogonal initializer as TensorFlow 2.21 computes them, for tests/test_qr.py.

Run with a Python that has tensorflow-cpu (a throwaway environment), from the project root:
    TF_CPP_MIN_LOG_LEVEL=3 /path/to/tf-venv/bin/python tests/data/make_qr_fixtures.py
Writes tests/data/qr_cases.npz (inputs and TF's q, r per case; the orthogonal initializer's
values per case) and tests/data/qr_op_def.pb (TF's OpDef of Qr, descriptions cleared).
"""

from __future__ import annotations

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

# name -> (input shape, dtype name, full_matrices); inputs from a seeded NumPy generator
QR_CASES = {
    "tall_f32": ([5, 3], "float32", False),
    "tall_full_f32": ([5, 3], "float32", True),
    "wide_f64": ([3, 6], "float64", False),
    "wide_full_f64": ([3, 6], "float64", True),
    "batched_f32": ([2, 3, 4, 4], "float32", False),
    "half": ([4, 3], "float16", False),
    "complex64": ([4, 3], "complex64", False),
    "empty_rows": ([2, 0, 3], "float32", False),
    "empty_cols_full": ([2, 3, 0], "float64", True),
}

# name -> (graph seed, shape, gain, op seed, dtype name)
ORTHOGONAL_CASES = {
    "orthogonal_square": (1, [4, 4], 1.0, None, "float32"),
    "orthogonal_tall": (None, [8, 3], 1.0, 7, "float32"),
    "orthogonal_wide_gain": (None, [3, 8], 2.5, 11, "float64"),
    "orthogonal_conv": (5, [3, 3, 4, 6], 1.0, 2, "float32"),
}


def qr_input(name: str) -> np.ndarray:
    """The input of a Qr case (the same in TF's run and in the test)."""
    shape, dtype, _ = QR_CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def main() -> None:
    import tensorflow.compat.v1 as tf
    from tensorflow.python.framework import op_def_registry

    out = {}
    for name, (_, _, full) in QR_CASES.items():
        q, r = tf.linalg.qr(qr_input(name), full_matrices=full)
        out[name + "/q"], out[name + "/r"] = q.numpy(), r.numpy()
    for name, (graph_seed, shape, gain, seed, dtype) in ORTHOGONAL_CASES.items():
        g = tf.Graph()
        with g.as_default():
            if graph_seed is not None:
                tf.set_random_seed(graph_seed)
            init = tf.orthogonal_initializer(gain=gain, seed=seed)
            v = tf.get_variable("v", shape, dtype=getattr(tf, dtype), initializer=init)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                out[name] = sess.run(v)
    np.savez(HERE / "qr_cases.npz", **out)
    op_def = op_def_registry.get("Qr")
    for arg in list(op_def.input_arg) + list(op_def.output_arg):
        arg.description = ""
    for attr in op_def.attr:
        attr.description = ""
    op_def.summary = op_def.description = ""
    (HERE / "qr_op_def.pb").write_bytes(op_def.SerializeToString())


if __name__ == "__main__":
    main()
