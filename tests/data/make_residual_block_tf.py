"""Make tests/data/residual_block.npz: TF 2.21's values of a small residual block, the
shape of ResNet50's identity block, in float32 NHWC:

    h = relu(conv(x, w0))             (3x3, SAME)
    a = relu(conv(h, w1))             (1x1)
    y = relu(bias_add(conv(a, w2), b) + h)   (3x3, SAME: the residual add)
    s = reduce_sum(h)                 (read after y: a control dependency on y)

aioflow's remapper fuses y's chain into one _FusedConv2D whose addend is h
(tests/test_onednn_residual.py compares aioflow's values with these, with h consumed by
the convolution and also fetched, or read again after it).

Run from the project root with TensorFlow's Python (never an aioflow dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_residual_block_tf.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parent / "residual_block.npz"


def main() -> None:
    rng = np.random.default_rng(29)
    arrays = {"x": rng.standard_normal((2, 9, 10, 8)),
              "w0": rng.standard_normal((3, 3, 8, 16)) / 8,
              "w1": rng.standard_normal((1, 1, 16, 16)) / 4,
              "w2": rng.standard_normal((3, 3, 16, 16)) / 12,
              "b": rng.standard_normal(16)}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 9, 10, 8])
        h = tf.nn.relu(tf.nn.conv2d(x, arrays["w0"], [1, 1, 1, 1], "SAME"))
        a = tf.nn.relu(tf.nn.conv2d(h, arrays["w1"], [1, 1, 1, 1], "SAME"))
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(a, arrays["w2"], [1, 1, 1, 1], "SAME"),
                                      arrays["b"]) + h)
        with tf.control_dependencies([y]):
            s = tf.reduce_sum(h)
    with tf.compat.v1.Session(graph=g) as sess:
        arrays["y"], arrays["h"], arrays["s"] = sess.run([y, h, s], {x: arrays["x"]})
    np.savez(OUT, **arrays)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
