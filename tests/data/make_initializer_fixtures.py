"""Seeded TF 1.x initializers as TensorFlow 2.21 computes them, for tests/test_initializers.py.

Run with a Python that has tensorflow-cpu (a throwaway environment), from the project root:
    TF_CPP_MIN_LOG_LEVEL=3 /path/to/tf-venv/bin/python tests/data/make_initializer_fixtures.py
Writes tests/data/initializer_cases.npz: for each case name, the initialized variable's value.
The cases are listed in CASES (the test builds the same programs in aioflow).
"""

from __future__ import annotations

import pathlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

# name -> (graph seed, shape, factory(namespace) -> initializer, dtype name); the namespace
# holds TF 1.x's initializer names (tf.* in TF; aioflow.ops.init_ops here)
CASES = {
    "default_glorot_uniform": (7, [3, 4], None, "float32"),
    "glorot_uniform_conv": (None, [3, 3, 8, 16], lambda m: m.glorot_uniform_initializer(seed=5),
                            "float32"),
    "glorot_normal": (11, [20, 30], lambda m: m.glorot_normal_initializer(seed=2), "float32"),
    "variance_scaling_fan_in_tn": (None, [64, 10], lambda m: m.variance_scaling_initializer(
        2.0, "fan_in", "truncated_normal", seed=3), "float32"),
    "variance_scaling_fan_out_uniform": (None, [5, 7], lambda m: m.variance_scaling_initializer(
        0.5, "fan_out", "uniform", seed=4), "float64"),
    "variance_scaling_untruncated": (None, [6], lambda m: m.variance_scaling_initializer(
        1.0, "fan_avg", "untruncated_normal", seed=9), "float32"),
    "random_uniform": (None, [4, 4], lambda m: m.random_uniform_initializer(-2.0, 3.0, seed=1),
                       "float32"),
    "random_normal": (None, [10], lambda m: m.random_normal_initializer(1.0, 0.5, seed=8),
                      "float64"),
    "truncated_normal": (3, [7, 3], lambda m: m.truncated_normal_initializer(0.0, 2.0),
                         "float32"),
}


def main() -> None:
    import tensorflow.compat.v1 as tf

    out = {}
    for name, (graph_seed, shape, factory, dtype) in CASES.items():
        g = tf.Graph()
        with g.as_default():
            if graph_seed is not None:
                tf.set_random_seed(graph_seed)
            init = factory(tf) if factory is not None else None
            v = tf.get_variable("v", shape, dtype=getattr(tf, dtype), initializer=init)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                out[name] = sess.run(v)
    np.savez(HERE / "initializer_cases.npz", **out)


if __name__ == "__main__":
    main()
