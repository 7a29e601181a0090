"""Inter-op thread pools as TF's session options say (thread_pools.py): one process-wide
pool by default, the session's own with use_per_session_threads, named global pools
shared across sessions, RunOptions.inter_op_thread_pool checked as TF 2.21 checks it
(tests/data/direct_session_tf.json) and honoured per run."""

from __future__ import annotations

import json
import threading

import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel
from aioflow.proto import config_pb2
from aioflow.runtime import thread_pools
from tests.conftest import DATA

TF = json.loads((DATA / "direct_session_tf.json").read_text())

_threads: list[str] = []


class _PoolKernel(OpKernel):
    """A pool kernel that records the name of the thread it runs on."""

    expensive = True

    def compute(self, ctx, inputs):
        _threads.append(threading.current_thread().name)
        return (inputs[0],)


def _graph(user_op):
    x = af.placeholder(af.float32, [], name="x")
    return x, user_op("TestPoolThread", _PoolKernel)(x=x + 1.0)


async def _thread_of(sess, x, y, options=None) -> str:
    _threads.clear()
    assert await sess.run(y, {x: 1.0}, options=options) == 2.0
    return _threads[-1]


def _pools(*specs) -> af.ConfigProto:
    return af.ConfigProto(session_inter_op_thread_pool=[
        config_pb2.ThreadPoolOptionProto(num_threads=n, global_name=name) for n, name in specs])


async def test_default_pool_is_shared_by_sessions(graph, user_op):
    x, y = _graph(user_op)
    async with af.Session() as s1, af.Session(
            config=af.ConfigProto(inter_op_parallelism_threads=1)) as s2:
        assert s1._direct.thread_pools == s2._direct.thread_pools
        assert s1._direct.thread_pools[0] is thread_pools.global_pool(None)
        assert (await _thread_of(s1, x, y)).startswith("aioflow-CPU-pool-global")
        assert (await _thread_of(s2, x, y)).startswith("aioflow-CPU-pool-global")
    # Closing a session leaves the shared pool to the others.
    assert thread_pools.global_pool(None).executor._shutdown is False


async def test_per_session_threads(graph, user_op):
    x, y = _graph(user_op)
    config = af.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=2)
    async with af.Session(config=config) as s1, af.Session(config=config) as s2:
        p1, p2 = s1._direct.thread_pools[0], s2._direct.thread_pools[0]
        assert p1 is not p2 and p1.num_threads == 2 and p1.owned
        assert (await _thread_of(s1, x, y)).startswith("aioflow-CPU-pool-Compute")
        executor = p1.executor
    assert executor._shutdown  # the session's own pool went with it


async def test_named_global_pools_shared_across_sessions(graph, user_op):
    x, y = _graph(user_op)
    async with af.Session(config=_pools((2, "direct_a"), (0, ""))) as s1, \
            af.Session(config=_pools((3, "direct_a"))) as s2:
        a1, local = s1._direct.thread_pools
        assert s2._direct.thread_pools == [a1]
        # As TF 2.21: a name's first configuration wins (no error for the second).
        assert a1.num_threads == 2
        assert TF["global_pool_reconfigured"] == {"value": 3.0}
        assert local.owned and not a1.owned
        assert local.num_threads == thread_pools.num_inter_op_threads(s1._direct.config)
        assert (await _thread_of(s1, x, y)).startswith("aioflow-CPU-pool-direct_a")
        assert (await _thread_of(s2, x, y)).startswith("aioflow-CPU-pool-direct_a")
        # RunOptions.inter_op_thread_pool picks the run's pool.
        name = await _thread_of(s1, x, y, af.RunOptions(inter_op_thread_pool=1))
        assert name.startswith("aioflow-CPU-pool-Compute1")
        # -1: the caller's thread.
        name = await _thread_of(s1, x, y, af.RunOptions(inter_op_thread_pool=-1))
        assert name == threading.current_thread().name


@pytest.mark.parametrize("case,config,index", [
    ("pool_index_3", None, 3), ("pool_index_-2", None, -2),
    ("one_pool_index_1", (1, "direct_b"), 1)])
async def test_pool_index_out_of_range_is_tf_error(graph, user_op, case, config, index):
    x, y = _graph(user_op)
    async with af.Session(config=_pools(config) if config else None) as sess:
        with pytest.raises(errors.InvalidArgumentError) as e:
            await sess.run(y, {x: 1.0}, options=af.RunOptions(inter_op_thread_pool=index))
        assert TF[case]["error"] == "InvalidArgumentError"
        assert e.value.message == TF[case]["message"]


@pytest.mark.parametrize("case,config,index", [
    ("pool_index_-1", None, -1), ("one_pool_index_0", (1, "direct_b"), 0)])
async def test_pool_index_in_range_runs(graph, user_op, case, config, index):
    x, y = _graph(user_op)
    async with af.Session(config=_pools(config) if config else None) as sess:
        out = await sess.run(x + 2.0, {x: 1.0}, options=af.RunOptions(inter_op_thread_pool=index))
        assert out == TF[case]["value"]


async def test_close_aborts_steps_on_a_shared_pool(graph, user_op):
    """A shared pool outlives the session: its waiting steps are cancelled, not dropped."""
    import asyncio

    gate = threading.Event()

    class _Wait(OpKernel):
        expensive = True

        def compute(self, ctx, inputs):
            gate.wait(5)
            return (inputs[0],)

    x = af.placeholder(af.float32, [])
    y = user_op("TestPoolWait", _Wait)(x=x)
    sess = af.Session()
    run = asyncio.ensure_future(sess.run(y, {x: 1.0}))
    await asyncio.sleep(0.05)
    await sess.close()
    gate.set()
    with pytest.raises(errors.CancelledError):
        await asyncio.wait_for(run, 5)


async def test_negative_inter_op_threads_run_in_the_callers_thread(graph, user_op):
    x, y = _graph(user_op)
    config = af.ConfigProto(inter_op_parallelism_threads=-1)
    async with af.Session(config=config) as sess:
        assert await _thread_of(sess, x, y) == threading.current_thread().name


def test_default_pool_size_leaves_the_loop_its_core(monkeypatch):
    """inter_op_parallelism_threads 0: one pool thread per core besides the event loop's
    (the loop runs kernels too; a pool of `cores` threads let two pool jobs and the
    loop's kernel contend for two cores); an explicit count is kept, a negative one is
    one thread."""
    monkeypatch.setattr(thread_pools.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert thread_pools.num_inter_op_threads(None) == 3
    assert thread_pools.num_inter_op_threads(config_pb2.ConfigProto()) == 3
    assert thread_pools.num_inter_op_threads(
        config_pb2.ConfigProto(inter_op_parallelism_threads=4)) == 4
    assert thread_pools.num_inter_op_threads(
        config_pb2.ConfigProto(inter_op_parallelism_threads=-1)) == 1
    monkeypatch.setattr(thread_pools.os, "sched_getaffinity", lambda pid: {0})
    assert thread_pools.num_inter_op_threads(None) == 1
