"""Training sessions against TF 2.21's (tests/data/monitored_session.json, made by
tests/data/make_monitored_session_fixtures_tf.py): the same program under
MonitoredTrainingSession with StopAtStepHook, checkpoints every 2 steps, summaries,
FinalOpsHook, FeedFnHook and NanTensorHook runs the same steps, writes the same
checkpoint files and summary steps, reaches TF's loss, resumes from the latest checkpoint
where TF's does, and fails on NaN and on runs after a stop as TF's: blocking in
aioflow.compat.v1, awaitable in af.train (whose session runs on the test's loop)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
import aioflow.compat.v1 as tf
from aioflow.summary.summary_iterator import summary_iterator
from aioflow.summary.writer_cache import FileWriterCache

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_monitored_session_fixtures_tf as programs  # noqa: E402

WANT = json.loads((DATA / "monitored_session.json").read_text())


def test_blocking_training_session_as_tf(tmp_path):
    directory = str(tmp_path)
    with tf.Graph().as_default():
        first = programs.run_first(tf, directory)
    FileWriterCache.clear()
    assert first["steps"] == WANT["first"]["steps"]
    assert first["files"] == WANT["first"]["files"]
    np.testing.assert_allclose(first["final"], WANT["first"]["final"], rtol=1e-6)
    assert programs.summary_steps(summary_iterator, directory) == WANT["summary_steps"]
    with tf.Graph().as_default():
        resume = programs.run_resume(tf, directory)
    assert resume["start"] == WANT["resume"]["start"]
    assert resume["end"] == WANT["resume"]["end"]
    assert resume["after_stop"] == WANT["resume"]["after_stop"]
    np.testing.assert_allclose(resume["loss"], WANT["resume"]["loss"], rtol=1e-6)


def test_nan_loss_as_tf():
    with tf.Graph().as_default():
        assert programs.run_nan(tf) == WANT["nan"]


async def test_awaitable_training_session(tmp_path):
    """af.train's MonitoredTrainingSession: `async with`, `await sess.run`; same
    checkpoints and values as TF's blocking one, and it resumes from them."""
    directory = str(tmp_path)
    g = af.Graph()
    with g.as_default():
        x, y, loss, gs, train = programs.program(tf)
        final = af.train.FinalOpsHook([loss, gs], {x: programs.X, y: programs.Y})
        hooks = [af.train.StopAtStepHook(last_step=5), final,
                 af.train.FeedFnHook(lambda: {x: programs.X, y: programs.Y})]
        steps = 0
        async with af.train.MonitoredTrainingSession(
                checkpoint_dir=directory, hooks=hooks, save_checkpoint_steps=2,
                save_summaries_steps=1, log_step_count_steps=None) as sess:
            while not sess.should_stop():
                await sess.run(train)
                steps += 1
    FileWriterCache.clear()
    assert steps == WANT["first"]["steps"]
    files = sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("events"))
    assert files == WANT["first"]["files"]
    np.testing.assert_allclose([float(final.final_ops_values[0]),
                                int(final.final_ops_values[1])], WANT["first"]["final"],
                               rtol=1e-6)
    g = af.Graph()
    with g.as_default():
        x, y, loss, gs, train = programs.program(tf)
        async with af.train.MonitoredTrainingSession(
                checkpoint_dir=directory, hooks=[af.train.StopAtStepHook(num_steps=3)],
                save_checkpoint_secs=None, save_summaries_steps=None,
                log_step_count_steps=None) as sess:
            assert await sess.run(gs) == WANT["resume"]["start"]
            while not sess.should_stop():
                await sess.run(train, {x: programs.X, y: programs.Y})
            with pytest.raises(RuntimeError, match="Run called even after should_stop"):
                await sess.run(gs)


async def test_hooks_see_each_run_and_may_be_async():
    """before_run's fetches and feeds join the caller's; an async hook method is awaited;
    the caller's feed and a hook's feed of one tensor conflict as in TF."""
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.float32, [], name="p")
        q = af.placeholder(af.float32, [], name="q")
        total = p + q
        seen = []

        class Hook(af.train.SessionRunHook):
            def before_run(self, run_context):
                return af.train.SessionRunArgs(total, feed_dict={q: 2.0})

            async def after_run(self, run_context, run_values):
                seen.append(run_values.results)

        async with af.train.SingularMonitoredSession(hooks=[Hook()]) as sess:
            assert await sess.run(total, {p: 1.0}) == 3.0
            with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook "
                                                   "and user."):
                await sess.run(total, {p: 1.0, q: 5.0})
    assert seen == [3.0]
