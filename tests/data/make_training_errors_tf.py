"""Writes tests/data/training_errors.json: the errors TF 2.21 raises in training programs
(class, message, failing node): a train op run before the optimizer's slots are
initialized, a label/logit batch mismatch in the sparse and dense softmax
cross-entropies, a NaN gradient caught by check_numerics.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_training_errors_tf.py

`PROGRAMS` take the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_training_errors.py); each returns (the op to run, its feeds by name, the ops to
run first).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def uninitialized_slot(tf):
    x = tf.constant(np.ones((2, 3), np.float32))
    w = tf.get_variable("w", [3, 1], initializer=tf.ones_initializer())
    loss = tf.reduce_sum(tf.matmul(x, w))
    train = tf.train.AdamOptimizer(0.1).minimize(loss)
    return train, {}, [w.initializer]


def sparse_xent_mismatch(tf):
    logits = tf.placeholder(tf.float32, [None, 3], name="logits")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    feeds = {"logits:0": np.zeros((4, 3), np.float32), "labels:0": np.zeros(5, np.int64)}
    return loss, feeds, []


def xent_mismatch(tf):
    logits = tf.placeholder(tf.float32, [None, 3], name="logits")
    labels = tf.placeholder(tf.float32, [None, 3], name="labels")
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    feeds = {"logits:0": np.zeros((4, 3), np.float32),
             "labels:0": np.zeros((2, 3), np.float32)}
    return loss, feeds, []


def label_out_of_range(tf):
    logits = tf.placeholder(tf.float32, [None, 3], name="logits")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
    feeds = {"logits:0": np.zeros((2, 3), np.float32), "labels:0": np.array([1, 3])}
    return loss, feeds, []


PROGRAMS = {"uninitialized_slot": uninitialized_slot,
            "sparse_xent_mismatch": sparse_xent_mismatch, "xent_mismatch": xent_mismatch,
            "label_out_of_range": label_out_of_range}


def main() -> None:
    sys.path.insert(0, str(HERE))
    import tensorflow as tf
    from tf_error_text import error_record

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    out = {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            target, feeds, first = program(v1)
            with v1.Session(graph=g) as sess:
                sess.run(first)
                try:
                    sess.run(target, {g.get_tensor_by_name(k): v for k, v in feeds.items()})
                    out[name] = None
                except tf.errors.OpError as e:
                    out[name] = {**error_record(e), "node": e.op.name if e.op else None}
    (HERE / "training_errors.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
