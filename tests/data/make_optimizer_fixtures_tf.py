"""Writes the tf.train optimizer fixtures (tests/data/optimizers.npz, optimizers.json):
for each optimizer of TF 1's tf.train (GradientDescent, Momentum, Adam, Adagrad,
AdagradDA, RMSProp, Adadelta, Ftrl, ProximalGradientDescent, ProximalAdagrad, in their
variants), on ref and on resource variables, the GraphDef TF 2.21's tf.compat.v1 builds for
`apply_gradients` of fixed gradients (two dense variables and an embedding with an
IndexedSlices gradient naming a row twice, with a global step), the slots' names, the
optimizer's variables, and every global variable after each of 3 steps; and for a few,
`minimize` of a small regression loss (its gradients from tf.gradients), values only.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_optimizer_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_optimizers.py) and uses only names both share. This module does not import
TensorFlow at import time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STEPS = 3

W0 = np.array([[0.5, -1.0], [1.5, 2.0], [-0.3, 0.7]], np.float32)
B0 = np.array([0.1, -0.2], np.float32)
E0 = np.arange(10, dtype=np.float32).reshape(5, 2) / 10 - 0.3
GW = np.array([[0.1, -0.2], [0.3, 0.05], [-0.4, 0.6]], np.float32)
GB = np.array([0.2, -0.1], np.float32)
GE = np.array([[0.5, -0.5], [0.25, 0.1], [-0.3, 0.2]], np.float32)
GE_ROWS = [1, 3, 1]

# name -> (class name, positional args, keyword args; "GS" stands for the global step)
OPTIMIZERS = {
    "sgd": ("GradientDescentOptimizer", [0.1], {}),
    "momentum": ("MomentumOptimizer", [0.1, 0.9], {}),
    "nesterov": ("MomentumOptimizer", [0.1, 0.9], {"use_nesterov": True}),
    "adam": ("AdamOptimizer", [0.01], {}),
    "adagrad": ("AdagradOptimizer", [0.1], {"initial_accumulator_value": 0.2}),
    "adagrad_da": ("AdagradDAOptimizer", [0.1, "GS"],
                   {"l1_regularization_strength": 0.01, "l2_regularization_strength": 0.02}),
    "rmsprop": ("RMSPropOptimizer", [0.01], {"decay": 0.9, "momentum": 0.5,
                                             "epsilon": 1e-10}),
    "rmsprop_centered": ("RMSPropOptimizer", [0.01], {"momentum": 0.2, "centered": True}),
    "adadelta": ("AdadeltaOptimizer", [1.0], {"rho": 0.95, "epsilon": 1e-6}),
    "ftrl": ("FtrlOptimizer", [0.1], {"l1_regularization_strength": 0.01,
                                      "l2_regularization_strength": 0.02}),
    "ftrl_shrinkage": ("FtrlOptimizer", [0.1], {
        "learning_rate_power": -0.7, "l2_shrinkage_regularization_strength": 0.01,
        "initial_accumulator_value": 0.3}),
    "proximal_sgd": ("ProximalGradientDescentOptimizer", [0.1], {
        "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.02}),
    "proximal_adagrad": ("ProximalAdagradOptimizer", [0.1], {
        "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.02}),
}


def make_optimizer(tf, name: str, global_step):
    cls, args, kwargs = OPTIMIZERS[name]
    args = [global_step if a == "GS" else a for a in args]
    return getattr(tf.train, cls)(*args, **kwargs)


def apply_program(tf, name: str, use_resource: bool) -> dict:
    """apply_gradients of fixed gradients: w and b dense, emb by IndexedSlices."""
    w = tf.Variable(W0, name="w", use_resource=use_resource)
    b = tf.Variable(B0, name="b", use_resource=use_resource)
    emb = tf.Variable(E0, name="emb", use_resource=use_resource)
    global_step = tf.Variable(0, name="global_step", trainable=False, dtype=tf.int64,
                              use_resource=use_resource)
    grads = [tf.constant(GW, name="gw"), tf.constant(GB, name="gb"),
             tf.IndexedSlices(tf.constant(GE, name="ge"),
                              tf.constant(GE_ROWS, name="ge_rows"),
                              tf.constant([5, 2], name="ge_shape"))]
    opt = make_optimizer(tf, name, global_step)
    train = opt.apply_gradients(list(zip(grads, [w, b, emb], strict=True)),
                                global_step=global_step)
    tf.global_variables_initializer()
    return {"optimizer": opt, "train": train, "variables": [w, b, emb]}


def minimize_program(tf, name: str, use_resource: bool) -> dict:
    """minimize of a least-squares loss of a linear model."""
    x = tf.constant([[1.0, 2.0, 0.5], [0.0, -1.0, 2.0], [1.5, 0.5, -1.0], [2.0, 1.0, 1.0]],
                    name="x")
    y = tf.constant([[1.0, 0.0], [0.5, 1.0], [-1.0, 2.0], [0.0, 0.5]], name="y")
    w = tf.Variable(W0, name="w", use_resource=use_resource)
    b = tf.Variable(B0, name="b", use_resource=use_resource)
    global_step = tf.Variable(0, name="global_step", trainable=False, dtype=tf.int64,
                              use_resource=use_resource)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
    opt = make_optimizer(tf, name, global_step)
    train = opt.minimize(loss, global_step=global_step)
    tf.global_variables_initializer()
    return {"optimizer": opt, "train": train, "variables": [w, b], "loss": loss}


def cases() -> list[tuple[str, str, str, bool]]:
    """(case name, program, optimizer, use_resource)."""
    out = []
    for name in OPTIMIZERS:
        for res in (False, True):
            kind = "resource" if res else "ref"
            out.append((f"apply_{name}_{kind}", "apply", name, res))
    for name in ("sgd", "momentum", "adam", "rmsprop", "adagrad"):
        for res in (False, True):
            kind = "resource" if res else "ref"
            out.append((f"minimize_{name}_{kind}", "minimize", name, res))
    return out


PROGRAMS = {"apply": apply_program, "minimize": minimize_program}


def describe(things: dict) -> dict:
    """What a program's optimizer says of itself: slot names, slots, its variables."""
    opt = things["optimizer"]
    slots = {}
    for var in things["variables"]:
        slots[var.op.name] = {s: opt.get_slot(var, s).op.name for s in opt.get_slot_names()
                              if opt.get_slot(var, s) is not None}
    return {"slot_names": list(opt.get_slot_names()), "slots": slots,
            "optimizer_variables": [v.op.name for v in opt.variables()],
            "train": things["train"].name}


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    arrays, meta = {}, {}
    for case, program, name, res in cases():
        g = tf.Graph()
        with g.as_default():
            things = PROGRAMS[program](v1, name, res)
            info = describe(things)
            info["global_variables"] = [v.op.name for v in v1.global_variables()]
            info["train_op_collection"] = [op.name for op in g.get_collection("train_op")]
            graph_def = g.as_graph_def()
            arrays[f"{case}/graph_def"] = np.frombuffer(
                graph_def.SerializeToString(deterministic=True), np.uint8)
            with v1.Session(graph=g) as sess:
                sess.run(v1.global_variables_initializer())
                for k in range(STEPS):
                    if "loss" in things:
                        arrays[f"{case}/step{k}/loss"] = sess.run(things["loss"])
                    sess.run(things["train"])
                    for var in v1.global_variables():
                        arrays[f"{case}/step{k}/{var.op.name}"] = sess.run(var.read_value())
        meta[case] = info
    np.savez_compressed(HERE / "optimizers.npz", **arrays)
    (HERE / "optimizers.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
