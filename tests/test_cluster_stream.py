"""aioflow's stream between its tasks (stream_transport.py): a step's calls across
processes go on it, not gRPC (counted per step); framing survives any split of the bytes;
a peer without a stream (a TF server, or AIOFLOW_RPC_STREAM=0) or whose stream port is
out of reach is called over gRPC; a deadline cancels the remote step; a remote error keeps
its class; a session's connections close with it; a server's home loop is uvloop's."""

from __future__ import annotations

import asyncio
import os
import struct

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import config_pb2

pytest.importorskip("grpc")

from test_cluster_grpc import _free_port, _Task  # noqa: E402

from aioflow.distributed import grpc_transport, stream_transport  # noqa: E402


def _start(stream: bool):
    spec = {"worker": [f"localhost:{_free_port()}", f"localhost:{_free_port()}"]}
    saved = os.environ.get("AIOFLOW_RPC_STREAM")
    os.environ["AIOFLOW_RPC_STREAM"] = "1" if stream else "0"
    try:
        remote = _Task(spec, "worker", 1)
    finally:
        if saved is None:
            del os.environ["AIOFLOW_RPC_STREAM"]
        else:
            os.environ["AIOFLOW_RPC_STREAM"] = saved
    return spec, af.train.Server(spec, "worker", 0), remote


@pytest.fixture(scope="module")
def cluster():
    spec, local, remote = _start(stream=True)
    yield spec, local
    local.stop()
    remote.kill()


def _tiny():
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [], name="x")
        with af.device("/job:worker/task:1"):
            y = af.add(x, 1.0, name="y")
        z = af.multiply(y, 2.0, name="z")
    return g, x, z


async def _count_steps(sess, z, x, steps: int) -> dict:
    for i in range(2):  # (registered, connections open)
        assert await sess.run(z, {x: float(i)}) == 2.0 * (i + 1)
    grpc_transport.RPC_COUNTS.clear()
    for i in range(steps):
        assert await sess.run(z, {x: float(i)}) == 2.0 * (i + 1)
    return {key: n for key, n in grpc_transport.RPC_COUNTS.items() if n}


async def test_a_tiny_step_is_two_calls_on_the_stream_and_none_over_grpc(cluster):
    spec, local = cluster
    g, x, z = _tiny()
    async with af.Session(local.target, graph=g) as sess:
        counts = await _count_steps(sess, z, x, 5)
    # x goes with task 1's RunGraph; y comes back in one RecvTensor
    assert counts == {("sent", "stream", "RunGraph"): 5, ("sent", "stream", "RecvTensor"): 5}


async def test_a_session_on_the_other_process_runs_its_steps_on_the_stream(cluster):
    spec, _ = cluster
    g, x, z = _tiny()
    async with af.Session("grpc://" + spec["worker"][1], graph=g) as sess:
        counts = await _count_steps(sess, z, x, 4)
        (_, _, link), = sess._direct.master._channels.values()
        assert not link.channel.lost
    assert counts == {("sent", "stream", "RunStep"): 4}
    await asyncio.sleep(0)  # (closed on its loop)
    assert link.channel.transport.is_closing()  # the session's connection goes with it


async def test_a_peer_without_a_stream_is_called_over_grpc():
    spec, local, remote = _start(stream=False)  # (as a TF server: StreamPort says none)
    try:
        g, x, z = _tiny()
        async with af.Session(local.target, graph=g) as sess:
            counts = await _count_steps(sess, z, x, 3)
        assert counts == {("sent", "grpc", "RunGraph"): 3, ("sent", "grpc", "RecvTensor"): 3}
    finally:
        local.stop()
        remote.kill()


async def test_a_peer_answering_unimplemented_has_no_stream():
    async def tf_server():  # TF's WorkerService knows no aioflow.WorkerExtension
        raise errors.UnimplementedError(None, None, "Method not found")

    link = grpc_transport._StreamLink("localhost:1", "/job:w/replica:0/task:0", tf_server)
    assert await link.get() is None
    assert await link.call("RunGraph", grpc_transport._WORKER_METHODS, None, None) is None


async def test_a_stream_port_out_of_reach_leaves_the_peer_on_grpc():
    async def port_nobody_listens_on():  # (as behind a firewall that rejects it)
        return str(_free_port()).encode()

    link = grpc_transport._StreamLink("localhost:1", "/job:w/replica:0/task:0",
                                      port_nobody_listens_on)
    assert await link.get() is None
    assert link.absent


async def test_a_deadline_cancels_the_step_on_the_remote_task(cluster):
    spec, local = cluster
    with af.Graph().as_default() as g:
        with af.device("/job:worker/task:1"):
            q = af.FIFOQueue(2, [af.float32], shapes=[[]], shared_name="stream_deadline_q")
            blocked = q.dequeue()
            put = q.enqueue(5.0)
        taken = af.identity(q.dequeue())
    async with af.Session(local.target, graph=g) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(blocked, options=config_pb2.RunOptions(timeout_in_ms=300))
        # the aborted dequeue took nothing: the value put next is the next one taken
        await sess.run(put)
        got = await sess.run(taken, options=config_pb2.RunOptions(timeout_in_ms=20000))
        assert got == 5.0


async def test_a_remote_error_keeps_its_class_and_node(cluster):
    spec, local = cluster
    with af.Graph().as_default() as g:
        x = af.placeholder(af.float32, [None], name="x")
        with af.device("/job:worker/task:1"):
            bad = af.reshape(x, [2], name="bad_reshape")
    async with af.Session(local.target, graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="bad_reshape"):
            await sess.run(bad, {x: np.ones(3, np.float32)})
        np.testing.assert_array_equal(await sess.run(bad, {x: [1.0, 2.0]}), [1.0, 2.0])


class _Frames(stream_transport._Framed):
    def __init__(self):
        super().__init__()
        self.got = []

    def frame(self, kind, code, call_id, payload):
        self.got.append((kind, code, call_id, bytes(payload)))


_LARGE_PAYLOAD = np.random.RandomState(0).bytes((1 << 20) + 12345)  # (a buffer of its own)
_SMALL = [(0, 1, 1, b"request"), (2, 0, 1, b""), (1, 0, 2**40, b""), (0, 5, 8, b"x" * 300)]
_ALL = _SMALL + [(2, 3, 7, _LARGE_PAYLOAD), (0, 5, 8, b"y" * 1000),
                 (2, 0, 9, _LARGE_PAYLOAD[:70_000]), (2, 0, 10, b"z")]


@pytest.mark.parametrize("frames, chunk", [(_SMALL, 1), (_ALL, 7), (_ALL, 4096),
                                           (_ALL, 300_000), (_ALL, None)])
def test_frames_survive_any_split(frames, chunk):
    data = b"".join(struct.pack("<IBBQ", len(p), k, c, i) + p for k, c, i, p in frames)
    protocol = _Frames()
    step = chunk or len(data)
    for start in range(0, len(data), step):
        protocol.data_received(data[start:start + step])
    assert protocol.got == frames


def test_a_servers_home_loop_is_uvloops_where_installed():
    uvloop = pytest.importorskip("uvloop")
    from aioflow.distributed.home_loop import HomeLoop

    home = HomeLoop("test-home")
    try:
        assert isinstance(home.loop, uvloop.Loop)
    finally:
        home.stop()
