"""TF's training checkpoints restore into aioflow-built graphs, and aioflow's hold what
TF's hold (tests/data/training_ckpt*, made by tests/data/make_training_checkpoint_tf.py):
the program's variables (tf.layers' weights, batch norm's moving statistics, Adam's slots
and beta powers, the global step) are named as TF names them; restored from TF's
checkpoint after 3 steps, 3 more steps reach TF's losses and variables; a checkpoint
aioflow saves lists the same variables."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import aioflow.compat.v1 as tf

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_training_checkpoint_tf as programs  # noqa: E402

WANT = json.loads((DATA / "training_ckpt.json").read_text())


def test_tf_checkpoint_restores_and_training_continues_as_tf(tmp_path):
    g = tf.Graph()
    with g.as_default():
        x, y, loss, train = programs.program(tf)
        saver = tf.train.Saver()
        with tf.Session(graph=g) as sess:
            saver.restore(sess, str(DATA / "training_ckpt" / "model-3"))
            losses = [float(sess.run([train, loss], {x: programs.X, y: programs.Y})[1])
                      for _ in range(3)]
            after = {v.op.name: sess.run(v) for v in tf.global_variables()}
            saver.save(sess, str(tmp_path / "model"), global_step=6)
    np.testing.assert_allclose(losses, WANT["losses"], rtol=1e-5)
    assert sorted(after) == sorted(WANT["after"])
    for name, value in after.items():
        np.testing.assert_allclose(value, WANT["after"][name], rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    saved = sorted(name for name, _ in tf.train.list_variables(str(tmp_path)))
    assert saved == WANT["checkpoint_variables"]


def test_tf_meta_graph_imports_and_trains_from_its_collections():
    """TF's meta graph of the program (train_op collection, variables, saver) imports;
    restored, its train op takes TF's 3 steps."""
    g = tf.Graph()
    with g.as_default():
        saver = tf.train.import_meta_graph(str(DATA / "training_ckpt" / "model-3.meta"))
        (train,) = tf.get_collection(tf.GraphKeys.TRAIN_OP)
        loss = g.get_tensor_by_name(WANT["loss"])
        feeds = {g.get_tensor_by_name("x:0"): programs.X,
                 g.get_tensor_by_name("y:0"): programs.Y}
        with tf.Session(graph=g) as sess:
            saver.restore(sess, str(DATA / "training_ckpt" / "model-3"))
            losses = [float(sess.run([train, loss], feeds)[1]) for _ in range(3)]
    np.testing.assert_allclose(losses, WANT["losses"], rtol=1e-5)


def test_saver_keeps_one_checkpoint_every_n_hours_as_tf(tmp_path, monkeypatch):
    """max_to_keep=2 with keep_checkpoint_every_n_hours of 1500 s, saving every 1000 s (a
    fake clock): TF 2.21's Saver, run the same way, leaves m-2, m-3, m-5, m-6, m-7 on disk
    (m-2 and m-5 kept past max_to_keep: each is the first older than the next keep time)."""
    from types import SimpleNamespace

    from aioflow.checkpoint import saver as saver_module

    clock = [0.0]
    monkeypatch.setattr(saver_module, "time", SimpleNamespace(time=lambda: clock[0]))
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable(1.0, name="v")
        saver = tf.train.Saver(max_to_keep=2, keep_checkpoint_every_n_hours=1500 / 3600)
        with tf.Session() as sess:
            sess.run(v.initializer)
            for step in range(8):
                clock[0] = step * 1000.0
                saver.save(sess, str(tmp_path / "m"), global_step=step)
    kept = sorted(p.name.split(".")[0] for p in tmp_path.glob("*.index"))
    assert kept == ["m-2", "m-3", "m-5", "m-6", "m-7"]
    assert [Path(p).name for p in saver.last_checkpoints] == ["m-6", "m-7"]
