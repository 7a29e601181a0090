"""Conditional accumulators and SyncReplicasOptimizer against TF 2.21
(tests/data/sync_replicas_tf.json, written by tests/data/make_sync_replicas_tf.py): the
accumulator ops' OpDefs field by field; the accumulators' graph, values and errors; the
nodes SyncReplicasOptimizer builds on a ps/worker cluster; a 2-worker schedule (both
replicas' gradients averaged, a stale round dropped, workers waiting for tokens) over
in-process servers to TF's values; and chief and non-chief MonitoredTrainingSessions
(master=server.target, the optimizer's hook, StopAtStepHook) training together, ending on
TF's trajectory."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from op_def_compare import ours, without_docs
from test_cluster_fixtures import InProcessCluster, _close

import aioflow as af
from aioflow.compat import v1 as tf
from aioflow.framework import errors
from aioflow.proto import config_pb2, op_def_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_sync_replicas_tf as programs  # noqa: E402

EXPECTED = json.loads((DATA / "sync_replicas_tf.json").read_text())


def test_fixture_is_tf_221():
    assert EXPECTED["tensorflow"].startswith("2.21")


@pytest.mark.parametrize("name", programs.OPS)
def test_op_defs_equal_tf(name):
    want = op_def_pb2.OpDef()
    want.ParseFromString(bytes.fromhex(EXPECTED["opdefs"][name]))
    assert ours(name) == without_docs(want), text_format.MessageToString(want)


def test_accumulators_match_tf():
    actual = json.loads(json.dumps(programs.program_accumulators(tf)))
    _close(actual, EXPECTED["accumulators"], "accumulators")


@pytest.fixture
def cluster():
    hosted = InProcessCluster(programs.JOBS)
    yield hosted
    hosted.stop()


def test_two_workers_schedule_matches_tf(cluster):
    actual = json.loads(json.dumps(programs.program_two_workers(tf, cluster)))
    _close(actual, EXPECTED["two_workers"], "two_workers")


def test_optimizer_builds_tfs_nodes(cluster):
    actual = json.loads(json.dumps(programs.program_graph(tf, cluster)))
    assert actual == EXPECTED["graph"]


def test_chief_and_worker_monitored_sessions_train_to_tfs_values(cluster):
    got = programs.run_monitored(tf, cluster)
    assert got["step"] >= programs.MTS_STEPS
    want = EXPECTED["trajectory"][got["step"]]
    _close(json.loads(json.dumps(got["weights"])), want, "weights")
    assert EXPECTED["monitored_tf"]["step"] >= programs.MTS_STEPS


async def test_a_waiting_take_ends_with_its_deadline_and_leaves_the_accumulator():
    with af.Graph().as_default() as g:
        acc = af.ConditionalAccumulator(af.float32, shape=[2], shared_name="wait")
        apply = acc.apply_grad([1.0, 3.0], local_step=0)
        take = acc.take_grad(1)
        count = acc.num_accumulated()
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(take, options=config_pb2.RunOptions(timeout_in_ms=50))
        waiting = asyncio.ensure_future(sess.run(take))
        await asyncio.sleep(0)
        assert not waiting.done()
        await sess.run(apply)  # the one take still waiting gets it
        np.testing.assert_array_equal(await waiting, [1.0, 3.0])
        assert await sess.run(count) == 0


def test_init_tokens_and_hook_need_apply_gradients():
    with af.Graph().as_default():
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 3)
        with pytest.raises(ValueError, match="after apply_gradients"):
            opt.get_init_tokens_op()
        with pytest.raises(ValueError, match="should be called before using the hook"):
            opt.make_session_run_hook(True).begin()
        v = tf.Variable(1.0)
        step = tf.train.get_or_create_global_step()
        with pytest.raises(ValueError, match="Global step is required"):
            opt.apply_gradients([(tf.constant(1.0), v)])
        opt.apply_gradients([(tf.constant(1.0), v)], global_step=step)
        with pytest.raises(ValueError, match=r"Too few tokens to finish the first step: -2 "
                                             r"\(given\) vs -1 \(needed\)"):
            opt.get_init_tokens_op(num_tokens=-2)
        assert opt.get_init_tokens_op(num_tokens=0).name == "no_init_tokens"


class ProcessCluster:
    """The ps and worker 1 in processes of their own (gRPC on loopback, TF_CONFIG),
    worker 0 in this one: the schedule's tensors cross processes (RecvTensors)."""

    def __init__(self, jobs: dict):
        from test_cluster_grpc import _free_port, _Task

        spec = {job: [f"localhost:{_free_port()}" for _ in range(n)]
                for job, n in jobs.items()}
        self.spec = tf.train.ClusterSpec(spec)
        self.tasks = [_Task(spec, "ps", 0), _Task(spec, "worker", 1)]
        self.local = tf.train.Server(self.spec, job_name="worker", task_index=0)
        self.addresses = spec

    def target(self, job: str, task: int) -> str:
        return self.local.target if (job, task) == ("worker", 0) else \
            "grpc://" + self.addresses[job][task]

    def stop(self) -> None:
        self.local.stop()
        for task in self.tasks:
            task.kill()


def test_two_workers_schedule_across_processes_matches_tf():
    pytest.importorskip("grpc")
    cluster = ProcessCluster(programs.JOBS)
    try:
        actual = json.loads(json.dumps(programs.program_two_workers(tf, cluster)))
    finally:
        cluster.stop()
    _close(actual, EXPECTED["two_workers"], "two_workers")
