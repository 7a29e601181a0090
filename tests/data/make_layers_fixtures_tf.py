"""Writes the tf.layers fixtures (tests/data/layers.npz, layers.json): programs of
tf.compat.v1.layers (dense, conv1d/2d/3d, separable_conv2d, conv2d_transpose, the
poolings, batch_normalization fused and not, in training by bool and by tensor, with
renorm, virtual batches and adjustment, dropout, flatten, a regularizer), built by TF 2.21
with a graph seed: their GraphDefs, variable names, the UPDATE_OPS and
REGULARIZATION_LOSSES collections, and the values of their outputs and variables (after
one run of the update ops).

Run from the project root with TF 2.21 and tf-keras 2.21 (tf.compat.v1.layers needs the
legacy Keras; neither is a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_layers_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_layers.py) and returns (outputs by name, feeds by placeholder name).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _x(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def mlp(tf):
    x = tf.placeholder(tf.float32, [None, 5], name="x")
    h = tf.layers.dense(x, 4, activation=tf.nn.relu)
    h = tf.layers.dense(h, 3, name="out", kernel_regularizer=lambda w: 0.01 * tf.nn.l2_loss(w))
    h2 = tf.layers.dense(x, 2, use_bias=False)
    return {"h": h, "h2": h2}, {"x:0": _x((4, 5), 1)}


def cnn(tf):
    x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x")
    training = tf.placeholder_with_default(True, [], name="training")
    y = tf.layers.conv2d(x, 3, 2, activation=tf.nn.relu)
    y = tf.layers.batch_normalization(y, training=training)
    y = tf.layers.max_pooling2d(y, 2, 1)
    y = tf.layers.average_pooling2d(y, 2, 1, padding="same")
    y = tf.layers.dropout(y, 0.3, training=training, seed=3)
    y = tf.layers.flatten(y)
    y = tf.layers.dense(y, 2)
    return {"y": y}, {"x:0": _x((3, 5, 5, 2), 2)}


def cnn_inference(tf):
    x = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x")
    y = tf.layers.conv2d(x, 3, 3, strides=2, padding="same", name="c")
    y = tf.layers.batch_normalization(y, training=False, momentum=0.9)
    y = tf.layers.dropout(y, 0.5, training=False)
    return {"y": y}, {"x:0": _x((2, 5, 5, 2), 3)}


def batch_norm_dense(tf):
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.layers.batch_normalization(x, training=True, momentum=0.8, name="bn")
    z = tf.layers.batch_normalization(y, training=False, center=False, name="bn2")
    return {"y": y, "z": z}, {"x:0": _x((6, 4), 4)}


def conv_family(tf):
    x1 = tf.placeholder(tf.float32, [None, 7, 2], name="x1")
    x3 = tf.placeholder(tf.float32, [None, 4, 4, 4, 1], name="x3")
    x2 = tf.placeholder(tf.float32, [None, 5, 5, 2], name="x2")
    c1 = tf.layers.conv1d(x1, 3, 2, activation=tf.nn.relu)
    p1 = tf.layers.max_pooling1d(c1, 2, 2)
    a1 = tf.layers.average_pooling1d(c1, 3, 1)
    c3 = tf.layers.conv3d(x3, 2, 2)
    p3 = tf.layers.max_pooling3d(c3, 2, 1)
    a3 = tf.layers.average_pooling3d(c3, 2, 1)
    sep = tf.layers.separable_conv2d(x2, 3, 3, depth_multiplier=2, padding="same")
    up = tf.layers.conv2d_transpose(x2, 2, 3, strides=2)
    up_same = tf.layers.conv2d_transpose(x2, 1, 2, strides=2, padding="same")
    return ({"c1": c1, "p1": p1, "a1": a1, "c3": c3, "p3": p3, "a3": a3, "sep": sep,
             "up": up, "up_same": up_same},
            {"x1:0": _x((2, 7, 2), 5), "x3:0": _x((1, 4, 4, 4, 1), 6),
             "x2:0": _x((2, 5, 5, 2), 7)})


def layer_objects(tf):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    dense = tf.layers.Dense(2, name="shared")
    a = dense(x)
    b = dense(x * 2.0)
    drop = tf.layers.Dropout(0.5, seed=7)
    c = drop(a, training=True)
    return {"a": a, "b": b, "c": c}, {"x:0": _x((3, 3), 8)}


def dense_sequences(tf):
    """Dense over rank-3 inputs (TF's tensordot: static and dynamic batch) and tf.tensordot
    itself (int axes, axes lists, a transposed contraction)."""
    x = tf.placeholder(tf.float32, [None, 5, 6], name="x")
    xs = tf.placeholder(tf.float32, [4, 5, 6], name="xs")
    h = tf.layers.dense(x, 3, activation=tf.nn.tanh)
    hs = tf.layers.dense(xs, 2)
    m = tf.constant(_x((6, 5), 9), name="m")
    t1 = tf.tensordot(xs, m, 1)
    t2 = tf.tensordot(xs, m, [[1, 2], [1, 0]])
    t3 = tf.tensordot(x, m, [[2], [0]], name="dyn")
    return {"h": h, "hs": hs, "t1": t1, "t2": t2, "t3": t3}, {
        "x:0": _x((3, 5, 6), 10), "xs:0": _x((4, 5, 6), 11)}


def batch_norm_renorm(tf):
    """Batch renormalization: training by bool (dense input, clipped r and d) and by a
    tensor (4-D, not fused), the renorm moving statistics and their updates."""
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    x4 = tf.placeholder(tf.float32, [None, 3, 3, 2], name="x4")
    training = tf.placeholder_with_default(True, [], name="training")
    y = tf.layers.batch_normalization(x, training=True, momentum=0.8, renorm=True,
                                      renorm_clipping={"rmax": 1.5, "rmin": 0.7,
                                                       "dmax": 0.2},
                                      renorm_momentum=0.9, name="bn")
    z = tf.layers.batch_normalization(x4, training=training, renorm=True, center=False,
                                      name="bn4")
    w = tf.layers.batch_normalization(x, training=False, renorm=True, name="bn_infer")
    return {"y": y, "z": z, "w": w}, {"x:0": _x((6, 4), 12), "x4:0": _x((2, 3, 3, 2), 13)}


def batch_norm_virtual(tf):
    """Ghost batches (virtual_batch_size), by bool and by tensor; an adjustment."""
    x = tf.placeholder(tf.float32, [8, 4], name="x")
    x4 = tf.placeholder(tf.float32, [None, 3, 3, 2], name="x4")
    training = tf.placeholder_with_default(True, [], name="training")
    y = tf.layers.batch_normalization(x, training=True, virtual_batch_size=2, name="vb")
    z = tf.layers.batch_normalization(x4, training=training, virtual_batch_size=2,
                                      momentum=0.9, name="vb4")

    def adjustment(shape):
        return (tf.random.uniform(shape[-1:], 0.9, 1.1, seed=1),
                tf.random.uniform(shape[-1:], -0.1, 0.1, seed=2))

    w = tf.layers.batch_normalization(x, training=training, adjustment=adjustment,
                                      name="adj")
    return {"y": y, "z": z, "w": w}, {"x:0": _x((8, 4), 14), "x4:0": _x((4, 3, 3, 2), 15)}


PROGRAMS = {"mlp": mlp, "cnn": cnn, "cnn_inference": cnn_inference,
            "batch_norm_dense": batch_norm_dense, "conv_family": conv_family,
            "layer_objects": layer_objects, "dense_sequences": dense_sequences,
            "batch_norm_renorm": batch_norm_renorm, "batch_norm_virtual": batch_norm_virtual}


def describe(tf, g) -> dict:
    return {"global_variables": [[v.op.name, v.shape.as_list()]
                                 for v in tf.global_variables()],
            "trainable_variables": [v.op.name for v in tf.trainable_variables()],
            "update_ops": [op.name for op in g.get_collection("update_ops")],
            "regularization_losses": [t.name for t in
                                      g.get_collection("regularization_losses")]}


def run(tf, sess, g, outputs, feeds) -> dict:
    sess.run(tf.global_variables_initializer())
    values = {f"out/{k}": v for k, v in sess.run(outputs, feeds).items()}
    updates = g.get_collection("update_ops")
    if updates:
        sess.run(updates, feeds)
    for var in tf.global_variables():
        values[f"var/{var.op.name}"] = sess.run(var)
    return values


def main() -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.layers from tf-keras
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    arrays, meta = {}, {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            v1.set_random_seed(25)
            outputs, feeds = program(v1)
            info = describe(v1, g)
            graph_def = g.as_graph_def()
            with v1.Session(graph=g) as sess:
                values = run(v1, sess, g, outputs, feeds)
        arrays[f"{name}/graph_def"] = np.frombuffer(
            graph_def.SerializeToString(deterministic=True), np.uint8)
        for key, value in feeds.items():
            arrays[f"{name}/feed/{key}"] = value
        for key, value in values.items():
            arrays[f"{name}/{key}"] = value
        meta[name] = info
    np.savez_compressed(HERE / "layers.npz", **arrays)
    (HERE / "layers.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
