"""Writes tests/data/monitored_session.json: what TF 2.21's tf.compat.v1
MonitoredTrainingSession does with a small regression (StopAtStepHook, checkpoints every
2 steps, summaries every step, FinalOpsHook, NanTensorHook, FeedFnHook): the steps run,
the checkpoint files written, the final loss, the summary tags and steps in the event
file, where a second session resumes, and the error a NaN loss raises.

Run from the project root with TF 2.21 (never a dependency):

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_monitored_session_fixtures_tf.py

`program(tf)` and `train(tf, sess_factory, ...)` are shared with
tests/test_monitored_session.py (tf.compat.v1 here, aioflow.compat.v1 there).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
X = np.array([[1.0, 2.0], [0.5, -1.0], [2.0, 0.0], [1.0, 1.0]], np.float32)
Y = np.array([[1.0], [0.0], [2.0], [1.5]], np.float32)


def program(tf):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    loss = tf.losses.mean_squared_error(y, tf.matmul(x, w) + b)
    tf.summary.scalar("loss", loss)
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=gs)
    return x, y, loss, gs, train


def run_first(tf, directory: str) -> dict:
    x, y, loss, gs, train = program(tf)
    final = tf.train.FinalOpsHook([loss, gs], {x: X, y: Y})
    feed = tf.train.FeedFnHook(lambda: {x: X, y: Y})
    hooks = [tf.train.StopAtStepHook(last_step=5), final, feed,
             tf.train.NanTensorHook(loss)]
    steps = 0
    with tf.train.MonitoredTrainingSession(checkpoint_dir=directory, hooks=hooks,
                                           save_checkpoint_steps=2,
                                           save_summaries_steps=1,
                                           log_step_count_steps=None) as sess:
        while not sess.should_stop():
            sess.run(train)
            steps += 1
    files = sorted(f for f in os.listdir(directory) if not f.startswith("events"))
    return {"steps": steps, "files": files,
            "final": [float(final.final_ops_values[0]), int(final.final_ops_values[1])]}


def run_resume(tf, directory: str) -> dict:
    x, y, loss, gs, train = program(tf)
    final = tf.train.FinalOpsHook([loss, gs], {x: X, y: Y})
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=directory, hooks=[tf.train.StopAtStepHook(num_steps=3), final],
            save_checkpoint_secs=None, save_summaries_steps=None,
            log_step_count_steps=None) as sess:
        start = int(sess.run(gs))
        while not sess.should_stop():
            sess.run(train, {x: X, y: Y})
        try:
            sess.run(gs)
            after_stop = "no error"
        except RuntimeError as e:
            after_stop = str(e)
    return {"start": start, "end": int(final.final_ops_values[1]),
            "loss": float(final.final_ops_values[0]), "after_stop": after_stop}


def run_nan(tf) -> str:
    x, y, loss, gs, train = program(tf)
    bad = loss * float("nan")
    try:
        with tf.train.MonitoredTrainingSession(hooks=[tf.train.NanTensorHook(bad)],
                                               log_step_count_steps=None) as sess:
            sess.run(train, {x: X, y: Y})
    except RuntimeError as e:
        return f"{type(e).__name__}: {e}"
    return "no error"


def summary_steps(summary_iterator, directory: str) -> list:
    out = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("events"):
            for event in summary_iterator(os.path.join(directory, name)):
                for value in event.summary.value:
                    if value.tag == "loss":
                        out.append(int(event.step))
    return out


def main() -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    v1.disable_v2_behavior()
    out = {}
    with tempfile.TemporaryDirectory() as directory:
        with tf.Graph().as_default():
            out["first"] = run_first(v1, directory)
        out["summary_steps"] = summary_steps(v1.train.summary_iterator, directory)
        with tf.Graph().as_default():
            out["resume"] = run_resume(v1, directory)
    with tf.Graph().as_default():
        out["nan"] = run_nan(v1)
    (HERE / "monitored_session.json").write_text(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
