"""Clusters across OS processes over gRPC on loopback (a step's calls on the tasks'
stream: test_cluster_stream.py): a task in another process (its server from TF_CONFIG)
runs part of each step; killing it mid-step fails the step with
UnavailableError well within the step's deadline, nothing hangs, and once the task is
back (a new process on the same port) the next step succeeds: the master registers its
graphs there again. (The classic ps/worker script: tests/test_examples.py runs
examples/cluster_ps_worker.py, three processes.)"""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import aioflow as af
from aioflow.distributed import shm_transfer
from aioflow.framework import errors
from aioflow.proto import config_pb2

pytest.importorskip("grpc")

_TASK = """
import aioflow as af
resolver = af.distributed.TFConfigClusterResolver()
server = af.train.Server(resolver.cluster_spec(), resolver.task_type, resolver.task_id)
print("serving", server.target, flush=True)
server.join()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


class _Task:
    """A task of the cluster in a process of its own, configured by TF_CONFIG."""

    def __init__(self, cluster: dict, job: str, index: int):
        env = dict(os.environ, TF_CONFIG=json.dumps(
            {"cluster": cluster, "task": {"type": job, "index": index}}))
        self.proc = subprocess.Popen([sys.executable, "-c", _TASK], env=env,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("serving grpc://"), line

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def cluster():
    spec = {"worker": [f"localhost:{_free_port()}", f"localhost:{_free_port()}"]}
    remote = _Task(spec, "worker", 1)
    local = af.train.Server(spec, "worker", 0)  # gRPC too: task 1 pulls tensors from it
    yield spec, local, remote
    local.stop()
    remote.kill()


def _graph():
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [3], name="x")
        with af.device("/job:worker/task:1"):
            y = af.reduce_sum(x * 2.0, name="y")
            q = af.FIFOQueue(1, [af.float32], shapes=[[]], name="never_fed")
            blocked = q.dequeue() + y
        z = af.add(y, 1.0, name="z")
    return g, x, z, blocked


async def test_step_across_processes(cluster):
    spec, local, _ = cluster
    g, x, z, _ = _graph()
    async with af.Session(local.target, graph=g) as sess:
        for i in range(3):
            assert await sess.run(z, {x: [1.0, 2.0, float(i)]}) == 7.0 + 2 * i
        big = np.arange(1 << 18, dtype=np.float32)  # 1 MB each way: in shared memory
        small = np.arange(1000, dtype=np.float32)  # inline in the message
        with g.as_default():
            v = af.placeholder(af.float32, [None])
            with af.device("/job:worker/task:1"):
                doubled = v * 2.0
        for value in (big, small, big):
            np.testing.assert_array_equal(await sess.run(doubled, {v: value}), value * 2.0)
        # every new shared-memory file was taken into its receiver's pool (renamed)
        assert not glob.glob(f"/dev/shm/aioflow-{os.getpid()}-*")
        assert not glob.glob(f"/dev/shm/aioflow-{cluster[2].proc.pid}-*")
        # ... and written into again: five more transfers each way, no new buffer (at
        # most one more, were an array still referenced when the next step began)
        pools = [f"/dev/shm/aioflow-pool-{pid}-*" for pid in (os.getpid(),
                                                              cluster[2].proc.pid)]
        for _ in range(5):
            np.testing.assert_array_equal(await sess.run(doubled, {v: big}), big * 2.0)
        assert all(1 <= len(glob.glob(p)) <= 2 for p in pools)
        # arrays the client keeps are never written into (their buffers are not offered)
        kept = [await sess.run(doubled, {v: big + i}) for i in range(6)]
        for i, value in enumerate(kept):
            np.testing.assert_array_equal(value, (big + i) * 2.0)
        assert all(len(glob.glob(p)) <= shm_transfer.POOL_SIZE for p in pools)


async def test_buffers_are_unlinked_when_the_server_stops():
    spec = {"worker": [f"localhost:{_free_port()}", f"localhost:{_free_port()}"]}
    remote = _Task(spec, "worker", 1)
    local = af.train.Server(spec, "worker", 0)
    mine = f"/dev/shm/aioflow-pool-{os.getpid()}-*"
    before = set(glob.glob(mine))  # (the module's cluster has buffers too)
    try:
        with af.Graph().as_default() as g:
            v = af.placeholder(af.float32, [None])
            with af.device("/job:worker/task:1"):
                doubled = v * 2.0
        big = np.ones(1 << 18, np.float32)
        async with af.Session(local.target, graph=g) as sess:
            for _ in range(2):
                np.testing.assert_array_equal(await sess.run(doubled, {v: big}), 2.0)
        created = set(glob.glob(mine)) - before
        assert 1 <= len(created) <= 2  # (a second one if the first was still in use)
    finally:
        local.stop()
        remote.kill()
    assert not created & set(glob.glob(mine))


async def test_killed_task_fails_the_step_then_recovers(cluster):
    spec, local, remote = cluster
    g, x, z, blocked = _graph()
    feed = {x: [1.0, 1.0, 1.0]}
    async with af.Session(local.target, graph=g) as sess:
        assert await sess.run(z, feed) == 7.0
        options = config_pb2.RunOptions(timeout_in_ms=30000)
        import asyncio

        run = asyncio.ensure_future(sess.run(blocked, feed, options=options))
        await asyncio.sleep(0.5)  # the step waits in task 1's dequeue
        assert not run.done()
        started = time.perf_counter()
        remote.kill()
        with pytest.raises(errors.UnavailableError):
            await run
        assert time.perf_counter() - started < 10.0  # well within the 30 s deadline
        with pytest.raises(errors.UnavailableError):  # the task is still away
            await sess.run(z, feed, options=config_pb2.RunOptions(timeout_in_ms=5000))
        back = _Task(spec, "worker", 1)  # the task is back, on its port
        cluster_tasks = cluster[2]
        cluster_tasks.proc = back.proc
        assert await sess.run(z, feed) == 7.0
        assert await sess.run(z, {x: [2.0, 2.0, 2.0]}) == 13.0


async def test_a_target_nobody_serves_is_unavailable_not_a_hang():
    with af.Graph().as_default() as g:
        out = af.constant(1.0) + 1.0
    config = config_pb2.ConfigProto(operation_timeout_in_ms=300)
    started = time.perf_counter()
    async with af.Session(f"grpc://localhost:{_free_port()}", graph=g, config=config) as sess:
        with pytest.raises(errors.UnavailableError):
            await sess.run(out)
    assert time.perf_counter() - started < 5.0
    with pytest.raises(errors.UnavailableError):
        af.Session.reset(f"grpc://localhost:{_free_port()}")


async def test_several_tensors_from_one_task_in_one_turn(cluster):
    """Task 1 receives a and b from task 0 in the same turn (one RecvTensors call), but
    b needs c, which task 1 makes from a: the call answers a alone first (it never waits
    for every key), then b."""
    spec, local, _ = cluster
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [None], name="x")
        a = af.multiply(x, 2.0, name="a")
        with af.device("/job:worker/task:1"):
            c = af.add(a, 1.0, name="c")
        b = af.multiply(c, 3.0, name="b")
        with af.device("/job:worker/task:1"):
            out = af.add(a, b, name="out")
    async with af.Session(local.target, graph=g) as sess:
        for i in range(3):
            value = np.arange(4, dtype=np.float32) + i
            got = await sess.run(out, {x: value},
                                 options=config_pb2.RunOptions(timeout_in_ms=20000))
            np.testing.assert_array_equal(got, 2 * value + (2 * value + 1) * 3)


def test_recv_tensors_messages_round_trip():
    from aioflow.distributed import wire

    request = (2**62 + 5, ["k;0;d;a;0:0", "k;0;d;b;1:2"], True)
    assert wire.decode_recv_tensors_request(wire.encode_recv_tensors_request(request)) == \
        request
    items = [("a", (np.arange(6, dtype=np.int64).reshape(2, 3), False)),
             ("b", (None, True)), ("c", (np.array(b"xy", dtype=object), False))]
    got = wire.decode_recv_tensors_response(wire.encode_recv_tensors_response(items))
    assert [key for key, _ in got] == ["a", "b", "c"]
    np.testing.assert_array_equal(got[0][1][0], items[0][1][0])
    assert got[1][1] == (None, True)
    assert got[2][1][0] == b"xy"


async def test_closing_a_session_closes_its_grpc_channels(cluster):
    spec, _, _ = cluster
    g, x, z, _ = _graph()
    sess = af.Session("grpc://" + spec["worker"][1], graph=g)  # a master in another process
    assert await sess.run(z, {x: [1.0, 2.0, 3.0]}) == 13.0
    client = sess._direct.master
    (channel, _, _), = client._channels.values()
    await sess.close()
    assert client._channels == {} and client._blocking is None
    with pytest.raises(Exception, match="closed"):  # grpc.aio refuses a closed channel's calls
        await channel.unary_unary("/x/y")(b"")
