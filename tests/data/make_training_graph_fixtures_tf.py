"""Writes TF-written training graphs (tests/data/training_graphs.npz, training_graphs.json):
TF 2.21's tf.compat.v1 (v2 behavior off: ref variables, v1 control flow) builds small
models with their training ops (an MLP with SGD, Momentum, Adam, RMSProp and Adagrad; an
embedding with sparse updates under Adagrad and Adam, on ref and resource variables; a
CNN with batch normalization in training mode, its UPDATE_OPS run with the step), runs
the init op and 10 training steps on fixed batches, and records the GraphDef, the feeds,
the loss before each step and every global variable (weights, slots, moving statistics)
after the last one. tests/test_training_graphs.py imports the GraphDefs into aioflow and
replays the steps.

Run from the project root with TF 2.21 and tf-keras 2.21 (tf.compat.v1.layers needs the
legacy Keras; neither is a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_training_graph_fixtures_tf.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STEPS = 10


def _const_init(tf, rng, shape, scale=0.3):
    return tf.constant_initializer(rng.normal(scale=scale, size=shape).astype(np.float32))


def mlp(tf, rng, optimizer):
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = tf.layers.dense(x, 16, activation=tf.nn.relu, name="hidden",
                        kernel_initializer=_const_init(tf, rng, (8, 16)))
    logits = tf.layers.dense(h, 4, name="logits",
                             kernel_initializer=_const_init(tf, rng, (16, 4)))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), name="loss")
    gs = tf.train.get_or_create_global_step()
    train = optimizer.minimize(loss, global_step=gs, name="train")
    batches = [{"x:0": rng.normal(size=(32, 8)).astype(np.float32),
                "labels:0": rng.integers(0, 4, size=32).astype(np.int64)}
               for _ in range(STEPS)]
    return loss, train, batches


def embedding(tf, rng, optimizer, use_resource=False):
    ids = tf.placeholder(tf.int32, [None, 5], name="ids")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    with tf.variable_scope("model", use_resource=use_resource):
        table = tf.get_variable("table", [50, 8],
                                initializer=_const_init(tf, rng, (50, 8), 0.5))
        embedded = tf.nn.embedding_lookup(table, ids)
        pooled = tf.reduce_mean(embedded, axis=1)
        logits = tf.layers.dense(pooled, 3, name="out",
                                 kernel_initializer=_const_init(tf, rng, (8, 3)))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), name="loss")
    train = optimizer.minimize(loss, name="train")
    batches = [{"ids:0": rng.integers(0, 20, size=(16, 5)).astype(np.int32),
                "labels:0": rng.integers(0, 3, size=16).astype(np.int64)}
               for _ in range(STEPS)]
    return loss, train, batches


def batch_norm_cnn(tf, rng, optimizer):
    x = tf.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    training = tf.placeholder_with_default(True, [], name="training")
    conv = tf.layers.conv2d(x, 4, 3, name="conv", use_bias=False,
                            kernel_initializer=_const_init(tf, rng, (3, 3, 2, 4)))
    bn = tf.layers.batch_normalization(conv, training=training, momentum=0.9, name="bn")
    flat = tf.layers.flatten(tf.nn.relu(bn))
    logits = tf.layers.dense(flat, 3, name="logits",
                             kernel_initializer=_const_init(tf, rng, (64, 3), 0.1))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits), name="loss")
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = optimizer.minimize(loss, name="train")
    batches = [{"x:0": rng.normal(size=(8, 6, 6, 2)).astype(np.float32),
                "labels:0": rng.integers(0, 3, size=8).astype(np.int64)}
               for _ in range(STEPS)]
    return loss, train, batches


def programs(tf):
    t = tf.train
    return {
        "mlp_sgd": lambda rng: mlp(tf, rng, t.GradientDescentOptimizer(0.1)),
        "mlp_momentum": lambda rng: mlp(tf, rng, t.MomentumOptimizer(0.05, 0.9)),
        "mlp_nesterov": lambda rng: mlp(tf, rng, t.MomentumOptimizer(0.05, 0.9,
                                                                     use_nesterov=True)),
        "mlp_adam": lambda rng: mlp(tf, rng, t.AdamOptimizer(0.01)),
        "mlp_rmsprop": lambda rng: mlp(tf, rng, t.RMSPropOptimizer(0.01, momentum=0.5)),
        "mlp_adagrad": lambda rng: mlp(tf, rng, t.AdagradOptimizer(0.1)),
        "embedding_adagrad": lambda rng: embedding(tf, rng, t.AdagradOptimizer(0.5)),
        "embedding_adam": lambda rng: embedding(tf, rng, t.AdamOptimizer(0.05)),
        "embedding_adam_resource": lambda rng: embedding(tf, rng, t.AdamOptimizer(0.05),
                                                         use_resource=True),
        "embedding_sgd_resource": lambda rng: embedding(
            tf, rng, t.GradientDescentOptimizer(0.5), use_resource=True),
        "batch_norm_momentum": lambda rng: batch_norm_cnn(tf, rng,
                                                          t.MomentumOptimizer(0.05, 0.9)),
    }


def main() -> None:
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.compat.v1.layers from tf-keras
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    arrays, meta = {}, {}
    for seed, (name, build) in enumerate(programs(v1).items()):
        rng = np.random.default_rng(100 + seed)
        g = tf.Graph()
        with g.as_default():
            loss, train, batches = build(rng)
            init = v1.global_variables_initializer()
            variables = [v.op.name for v in v1.global_variables()]
            reads = {v.op.name: (v.read_value() if "Resource" in type(v).__name__ else v)
                     for v in v1.global_variables()}
            graph_def = g.as_graph_def()
            with v1.Session(graph=g) as sess:
                sess.run(init)
                losses = []
                for batch in batches:
                    losses.append(sess.run(loss, batch))
                    sess.run(train, batch)
                after = sess.run(reads)
        arrays[f"{name}/graph_def"] = np.frombuffer(
            graph_def.SerializeToString(deterministic=True), np.uint8)
        for k, batch in enumerate(batches):
            for key, value in batch.items():
                arrays[f"{name}/feed{k}/{key}"] = value
        arrays[f"{name}/losses"] = np.asarray(losses)
        for key, value in after.items():
            arrays[f"{name}/after/{key}"] = value
        meta[name] = {"init": init.name, "train": train.name, "loss": loss.name,
                      "feeds": sorted(batches[0]), "variables": variables,
                      "reads": {k: (t.name if hasattr(t, "name") else None)
                                for k, t in reads.items()},
                      "ops": sorted({n.op for n in graph_def.node})}
    np.savez_compressed(HERE / "training_graphs.npz", **arrays)
    (HERE / "training_graphs.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
