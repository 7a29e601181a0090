"""Writes the tf.losses fixtures (tests/data/losses.npz, losses.json): every loss of
tf.compat.v1.losses under each reduction and with scalar, per-example and per-element
weights (zeros among them), the LOSSES and REGULARIZATION_LOSSES collections,
get_total_loss and get_regularization_loss, as TF 2.21 builds (GraphDefs) and computes
them (values).

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_losses_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_losses.py) and returns its outputs by name.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
R = np.random.default_rng(7)
PRED = R.uniform(0.05, 0.95, size=(4, 3)).astype(np.float32)
LABELS = (R.uniform(size=(4, 3)) > 0.5).astype(np.float32)
LOGITS = R.normal(size=(4, 3)).astype(np.float32)
SPARSE = np.array([2, 0, 1, 1], np.int64)
W_ELEM = np.array([[1.0, 0.0, 2.0], [0.5, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 3.0]],
                  np.float32)
W_BATCH = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)

REDUCTIONS = ["NONE", "SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS"]


def _weights(tf, kind):
    return {"scalar": 2.0, "batch": tf.constant(W_BATCH, name="w_batch"),
            "elem": tf.constant(W_ELEM, name="w_elem")}[kind]


def pointwise(tf, loss_name, reduction, weights):
    p = tf.constant(PRED, name="p")
    y = tf.constant(LABELS, name="y")
    z = tf.constant(LOGITS, name="z")
    fn = getattr(tf.losses, loss_name)
    r = getattr(tf.losses.Reduction, reduction)
    w = _weights(tf, weights)
    if loss_name in ("hinge_loss",):
        out = fn(y, z, weights=w, reduction=r)
    elif loss_name == "sigmoid_cross_entropy":
        out = fn(y, z, weights=w, label_smoothing=0.1, reduction=r)
    elif loss_name == "softmax_cross_entropy":
        w = {"scalar": 2.0, "batch": tf.constant(W_BATCH[:, 0], name="w_vec"),
             "elem": 1.0}[weights]
        out = fn(y, z, weights=w, label_smoothing=0.2, reduction=r)
    elif loss_name == "cosine_distance":
        out = fn(y, p, axis=1, weights=w if weights != "elem" else 1.0, reduction=r)
    elif loss_name == "huber_loss":
        out = fn(y, z, weights=w, delta=0.5, reduction=r)
    else:
        out = fn(y, p, weights=w, reduction=r)
    return {"loss": out}


def sparse_program(tf):
    z = tf.constant(LOGITS, name="z")
    labels = tf.constant(SPARSE, name="labels")
    a = tf.losses.sparse_softmax_cross_entropy(labels, z)
    b = tf.losses.sparse_softmax_cross_entropy(tf.reshape(labels, [4, 1]), z,
                                               weights=tf.constant([1.0, 0.0, 2.0, 1.0]))
    c = tf.losses.mean_pairwise_squared_error(tf.constant(LABELS), tf.constant(PRED),
                                              weights=tf.constant(W_BATCH))
    return {"a": a, "b": b, "c": c}


def collections_program(tf):
    w = tf.Variable(np.ones((3, 2), np.float32), name="w")
    tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES,
                         tf.multiply(0.01, tf.nn.l2_loss(w), name="reg"))
    a = tf.losses.mean_squared_error(tf.constant(LABELS), tf.constant(PRED))
    b = tf.losses.absolute_difference(tf.constant(LABELS), tf.constant(PRED),
                                      loss_collection=None)
    total = tf.losses.get_total_loss()
    reg = tf.losses.get_regularization_loss()
    assert tf.losses.get_losses() == [a]
    assert b not in tf.losses.get_losses()
    return {"a": a, "b": b, "total": total, "reg": reg}


PROGRAMS = {"sparse": sparse_program, "collections": collections_program}
for _loss in ("absolute_difference", "mean_squared_error", "log_loss", "hinge_loss",
              "huber_loss", "sigmoid_cross_entropy", "softmax_cross_entropy",
              "cosine_distance"):
    for _reduction in REDUCTIONS:
        for _w in ("scalar", "batch", "elem"):
            if _reduction != "SUM_BY_NONZERO_WEIGHTS" and _w == "batch":
                continue
            PROGRAMS[f"{_loss}_{_reduction}_{_w}"] = (
                lambda tf, a=_loss, b=_reduction, c=_w: pointwise(tf, a, b, c))


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    arrays, meta = {}, {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            outputs = program(v1)
            meta[name] = {"losses": [t.name for t in v1.losses.get_losses()]}
            graph_def = g.as_graph_def()
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                values = sess.run(outputs)
        arrays[f"{name}/graph_def"] = np.frombuffer(
            graph_def.SerializeToString(deterministic=True), np.uint8)
        for key, value in values.items():
            arrays[f"{name}/{key}"] = value
    np.savez_compressed(HERE / "losses.npz", **arrays)
    (HERE / "losses.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
