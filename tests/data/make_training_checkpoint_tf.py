"""Writes tests/data/training_ckpt/ and training_ckpt.json: TF 2.21 trains a tf.layers
model (dense, batch norm, dense; Adam, a global step) for 3 steps and saves a checkpoint
(weights, moving statistics, Adam's slots and beta powers) with its meta graph, then
trains 3 more steps and records the losses and every variable.
tests/test_training_checkpoint.py builds the same program with aioflow.compat.v1 (and
imports the meta graph), restores TF's checkpoint, trains the same 3 steps and compares.

Run from the project root with TF 2.21 and tf-keras 2.21:

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_training_checkpoint_tf.py
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
R = np.random.default_rng(31)
X = R.normal(size=(16, 6)).astype(np.float32)
Y = R.integers(0, 3, 16).astype(np.int64)


def program(tf):
    tf.set_random_seed(31)
    x = tf.placeholder(tf.float32, [None, 6], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    h = tf.layers.dense(x, 8, activation=tf.nn.relu)
    h = tf.layers.batch_normalization(h, training=True)
    logits = tf.layers.dense(h, 3)
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    step = tf.train.get_or_create_global_step()
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=step)
    return x, y, loss, train


def main() -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    directory = HERE / "training_ckpt"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    g = tf.Graph()
    with g.as_default():
        x, y, loss, train = program(v1)
        saver = v1.train.Saver()
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(3):
                sess.run(train, {x: X, y: Y})
            saver.save(sess, str(directory / "model"), global_step=3, write_meta_graph=True)
            losses = []
            for _ in range(3):
                losses.append(float(sess.run([train, loss], {x: X, y: Y})[1]))
            after = {v.op.name: sess.run(v).tolist() for v in v1.global_variables()}
    (directory / "checkpoint").unlink()  # (an absolute path; the test names the prefix)
    out = {"losses": losses, "after": after, "loss": loss.name,
           "checkpoint_variables": sorted(name for name, _ in
                                          v1.train.list_variables(str(directory / "model-3")))}
    (HERE / "training_ckpt.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
