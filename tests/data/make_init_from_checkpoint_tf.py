"""Writes the tf.train.init_from_checkpoint fixtures (tests/data/init_from_ckpt/): a TF
2.21 checkpoint of a small model (`old/dense/kernel`, `old/dense/bias`, `emb`, `step`),
and programs that map it onto new variables (scope to scope, one name to another, a
variable object, the checkpoint's root into a scope; ref and resource variables), with
their GraphDefs and the values global_variables_initializer gives them.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_init_from_checkpoint_tf.py

Each program takes the TF-1-like module and the checkpoint prefix and returns its
variables by name.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "init_from_ckpt"
R = np.random.default_rng(3)
KERNEL = R.normal(size=(4, 3)).astype(np.float32)
BIAS = R.normal(size=(3,)).astype(np.float32)
EMB = R.normal(size=(6, 2)).astype(np.float32)


def scope_to_scope(tf, ckpt):
    with tf.variable_scope("new"):
        k = tf.get_variable("dense/kernel", [4, 3])
        b = tf.get_variable("dense/bias", [3], initializer=tf.ones_initializer())
    other = tf.get_variable("other", [2], initializer=tf.ones_initializer())
    tf.train.init_from_checkpoint(ckpt, {"old/": "new/"})
    return {"k": k, "b": b, "other": other}


def names_and_objects(tf, ckpt):
    emb = tf.get_variable("embedding", [6, 2])
    bias = tf.get_variable("bias_copy", [3], use_resource=True)
    step = tf.get_variable("global_step", [], tf.int64, initializer=tf.zeros_initializer())
    tf.train.init_from_checkpoint(ckpt, {"emb": "embedding", "old/dense/bias": bias,
                                         "step": step})
    return {"emb": emb, "bias": bias, "step": step}


def root_into_scope(tf, ckpt):
    with tf.variable_scope("model"):
        k = tf.get_variable("old/dense/kernel", [4, 3])
        e = tf.get_variable("emb", [6, 2])
        s = tf.get_variable("step", [], tf.int64)
    tf.train.init_from_checkpoint(ckpt, {"/": "model/"})
    return {"k": k, "e": e, "s": s}


PROGRAMS = {"scope_to_scope": scope_to_scope, "names_and_objects": names_and_objects,
            "root_into_scope": root_into_scope}


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    if HERE.exists():
        shutil.rmtree(HERE)
    HERE.mkdir()
    g = tf.Graph()
    with g.as_default():
        with v1.variable_scope("old"):
            v1.get_variable("dense/kernel", initializer=KERNEL)
            v1.get_variable("dense/bias", initializer=BIAS)
        v1.get_variable("emb", initializer=EMB)
        v1.get_variable("step", initializer=np.int64(7))
        saver = v1.train.Saver()
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            saver.save(sess, str(HERE / "model"), write_meta_graph=False)
    (HERE / "checkpoint").unlink()  # it holds this machine's path; the prefix is enough
    arrays = {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            out = program(v1, str(HERE / "model"))
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                for key, value in sess.run(out).items():
                    arrays[f"{name}/{key}"] = value
            graph_def = g.as_graph_def()  # its prefix Consts hold this machine's path
        arrays[f"{name}/graph_def"] = np.frombuffer(
            graph_def.SerializeToString(deterministic=True), np.uint8)
    np.savez_compressed(HERE / "fixtures.npz", **arrays)


if __name__ == "__main__":
    main()
