"""Writes the fixtures of what surrounds TF 1's optimizers (tests/data/training_util.npz,
training_util.json): the global step (get_or_create_global_step), every learning-rate
schedule of tf.compat.v1.train at several global steps, the clipping functions
(clip_by_norm, global_norm, clip_by_global_norm with None and IndexedSlices entries,
clip_by_average_norm), and ExponentialMovingAverage (of variables with num_updates, of a
tensor with zero_debias) over a few updates: TF 2.21's GraphDef of each program and the
values its session computes.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_training_util_fixtures_tf.py

Each program takes the TF-1-like module (tf.compat.v1 here, aioflow.compat.v1 in
tests/test_training_util.py) and returns a function of a blocking session that runs it and
returns its values by name. This module does not import TensorFlow at import time.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STEPS = [0, 1, 3, 7, 10, 25, 60]


def _at_steps(tf, lr):
    """Run `lr` at each of STEPS (the global step assigned first)."""
    gs = tf.train.get_global_step()
    step = tf.placeholder(tf.int64, [], name="step")
    set_step = tf.assign(gs, step)

    def run(sess):
        sess.run(tf.global_variables_initializer())
        out = {}
        for s in STEPS:
            sess.run(set_step, {step: s})
            out[f"lr@{s}"] = sess.run(lr)
        return out
    return run


def _schedule(call):
    def program(tf):
        gs = tf.train.get_or_create_global_step()
        return _at_steps(tf, call(tf, gs))
    return program


SCHEDULES = {
    "exponential": lambda tf, gs: tf.train.exponential_decay(0.1, gs, 10, 0.5),
    "exponential_staircase": lambda tf, gs: tf.train.exponential_decay(
        0.1, gs, 10, 0.5, staircase=True, name="stairs"),
    "natural_exp": lambda tf, gs: tf.train.natural_exp_decay(0.1, gs, 10, 0.5),
    "inverse_time": lambda tf, gs: tf.train.inverse_time_decay(0.1, gs, 10, 0.5),
    "inverse_time_staircase": lambda tf, gs: tf.train.inverse_time_decay(
        0.1, gs, 10, 0.5, staircase=True),
    "polynomial": lambda tf, gs: tf.train.polynomial_decay(0.1, gs, 20, 0.01, power=2.0),
    "polynomial_cycle": lambda tf, gs: tf.train.polynomial_decay(0.1, gs, 20, 0.01,
                                                                 cycle=True),
    "piecewise": lambda tf, gs: tf.train.piecewise_constant(gs, [5, 20], [1.0, 0.5, 0.1]),
    "cosine": lambda tf, gs: tf.train.cosine_decay(0.1, gs, 30, alpha=0.1),
    "cosine_restarts": lambda tf, gs: tf.train.cosine_decay_restarts(0.1, gs, 8),
    "cosine_restarts_flat": lambda tf, gs: tf.train.cosine_decay_restarts(
        0.1, gs, 8, t_mul=1.0, m_mul=0.5),
    "linear_cosine": lambda tf, gs: tf.train.linear_cosine_decay(0.1, gs, 30),
}


def global_step_program(tf):
    gs = tf.train.get_or_create_global_step()
    assert tf.train.get_or_create_global_step() is gs
    assert tf.train.get_global_step() is gs
    inc = tf.assign_add(gs, 1, name="inc")

    def run(sess):
        sess.run(tf.global_variables_initializer())
        before = tf.train.global_step(sess, gs)
        sess.run(inc)
        sess.run(inc)
        return {"before": np.int64(before), "after": np.int64(tf.train.global_step(sess, gs))}
    return run


def clip_program(tf):
    a = tf.constant([[3.0, 4.0], [1.0, -2.0]], name="a")
    b = tf.constant([0.5, -12.0, 2.0], name="b")
    rows = tf.IndexedSlices(tf.constant([[6.0, 8.0], [0.0, 1.0]], name="rows"),
                            tf.constant([2, 0], name="rows_idx"),
                            tf.constant([4, 2], name="rows_shape"))
    by_norm = tf.clip_by_norm(a, 2.0)
    by_norm_axes = tf.clip_by_norm(a, 2.0, axes=[1], name="per_row")
    by_norm_rows = tf.clip_by_norm(rows, 3.0)
    norm = tf.global_norm([a, None, b])
    clipped, used = tf.clip_by_global_norm([a, None, b, rows], 5.0)
    clipped_loose, _ = tf.clip_by_global_norm([a, b], 100.0, name="loose")
    average = tf.clip_by_average_norm(a, 0.5)
    value = tf.clip_by_value(b, -1.0, 1.0)
    fetches = {"by_norm": by_norm, "by_norm_axes": by_norm_axes,
               "by_norm_rows": by_norm_rows.values, "norm": norm, "clipped0": clipped[0],
               "clipped2": clipped[2], "clipped3": clipped[3].values, "used": used,
               "loose0": clipped_loose[0], "average": average, "value": value}
    assert clipped[1] is None

    def run(sess):
        return sess.run(fetches)
    return run


def ema_program(tf):
    gs = tf.train.get_or_create_global_step()
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable(0.5, name="b", use_resource=True)
    new_w = tf.placeholder(tf.float32, [2], name="new_w")
    set_w = tf.assign(w, new_w)
    step_b = tf.assign_add(b, 1.0)
    inc = tf.assign_add(gs, 1)
    ema = tf.train.ExponentialMovingAverage(0.9, num_updates=gs)
    maintain = ema.apply([w, b])
    loss = tf.reduce_sum(w * 3.0, name="loss")
    ema_debias = tf.train.ExponentialMovingAverage(0.5, zero_debias=True, name="debiased")
    maintain_loss = ema_debias.apply([loss])
    names = {"w_avg": ema.average(w).op.name, "b_avg": ema.average(b).op.name,
             "loss_avg": ema_debias.average(loss).op.name,
             "w_avg_name": ema.average_name(w),
             "restore": sorted(ema.variables_to_restore())}
    reads = {"w_avg": ema.average(w), "b_avg": ema.average(b).read_value(),
             "loss_avg": ema_debias.average(loss)}

    def run(sess):
        sess.run(tf.global_variables_initializer())
        out = {}
        for k, value in enumerate(([3.0, -1.0], [0.0, 4.0], [2.0, 2.0])):
            sess.run(set_w, {new_w: value})
            sess.run([step_b, inc])
            sess.run([maintain, maintain_loss])
            for key, t in reads.items():
                out[f"{key}@{k}"] = sess.run(t)
        return out
    run.names = names
    return run


PROGRAMS = {"global_step": global_step_program, "clip": clip_program, "ema": ema_program,
            **{f"schedule_{k}": _schedule(v) for k, v in SCHEDULES.items()}}


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()  # TF 1's defaults: ref variables from get_variable
    arrays, meta = {}, {}
    for name, program in PROGRAMS.items():
        g = tf.Graph()
        with g.as_default():
            run = program(v1)
            graph_def = g.as_graph_def()
            arrays[f"{name}/graph_def"] = np.frombuffer(
                graph_def.SerializeToString(deterministic=True), np.uint8)
            with v1.Session(graph=g) as sess:
                values = run(sess)
        for key, value in values.items():
            arrays[f"{name}/{key}"] = np.asarray(value)
        meta[name] = {"values": sorted(values), "names": getattr(run, "names", {})}
    np.savez_compressed(HERE / "training_util.npz", **arrays)
    (HERE / "training_util.json").write_text(json.dumps(meta, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
