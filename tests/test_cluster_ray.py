"""Ray as the cluster engine (`aioflow[ray]`): a graph across 3 tasks hosted by Ray
actors on one local Ray cluster (ray.init(num_cpus=2): conftest's session-wide
`ray_address`, shared by every Ray test) gives what one process gives; an actor
killed mid-step fails the step with UnavailableError, Ray restarts the actor, the
watcher serves the task again and the session recovers.
Skipped cleanly without Ray."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import config_pb2

pytest.importorskip("ray")
pytest.importorskip("grpc")
pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def cluster(ray_address):
    hosted = af.distributed.ray_cluster(jobs={"ps": 1, "worker": 2})
    yield hosted
    hosted.shutdown()


def _graph(pinned: bool = True):
    """The graph; `pinned`: over the cluster's tasks (else for one process)."""
    def on(device):
        return af.device(device if pinned else None)

    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [4], name="x")
        with on("/job:ps/task:0"):
            a = af.multiply(x, 3.0, name="a")
        with on("/job:worker/task:1"):
            b = af.reduce_sum(af.square(a), name="b")
            q = af.FIFOQueue(1, [af.float32], shapes=[[]], name="never_fed")
            blocked = q.dequeue() + b
        c = af.add(b, af.reduce_max(x), name="c")
    return g, x, c, blocked


async def test_three_tasks_on_actors_match_one_process(cluster):
    assert cluster.cluster_spec.jobs == ["ps", "worker"]
    assert cluster.target == "grpc://" + cluster.cluster_spec.task_address("worker", 0)
    g1, x1, c1, _ = _graph(pinned=False)
    values = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    async with af.Session(graph=g1) as local:
        expected = await local.run(c1, {x1: values})
    g, x, c, _ = _graph()
    feed = {x: values}
    async with af.Session(cluster.target, graph=g) as sess:
        assert await sess.run(c, feed) == expected
        devices = {d.name for d in sess.list_devices()}
        assert "/job:ps/replica:0/task:0/device:CPU:0" in devices and len(devices) == 3


async def test_actor_killed_mid_step_then_the_session_recovers(cluster):
    g, x, c, blocked = _graph()
    feed = {x: np.ones(4, np.float32)}
    async with af.Session(cluster.target, graph=g) as sess:
        assert await sess.run(c, feed) == 37.0
        run = asyncio.ensure_future(sess.run(
            blocked, feed, options=config_pb2.RunOptions(timeout_in_ms=60000)))
        await asyncio.sleep(0.5)  # waiting in task 1's dequeue
        assert not run.done()
        restarts = cluster.restarts[("worker", 1)]
        cluster.kill("worker", 1)
        with pytest.raises(errors.UnavailableError):
            await asyncio.wait_for(run, 30)
        for _ in range(300):
            if cluster.restarts[("worker", 1)] > restarts:
                break
            await asyncio.sleep(0.1)
        assert cluster.restarts[("worker", 1)] == restarts + 1
        assert await sess.run(c, feed) == 37.0
