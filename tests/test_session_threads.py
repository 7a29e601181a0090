"""One Session shared by threads (each with its own event loop, or through SyncSession):
extending the graph and running at once works as TF's thread-safe Session does, every
later run still works, and a signature is built once however many ask for it.

The Python Graph is not safe for concurrent op creation (ops.Graph has no lock): the
tests serialize adding ops with their own lock, and leave extending, building and
running to race, which is what the Session must survive."""

from __future__ import annotations

import asyncio
import threading

import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import graph_pb2
from aioflow.runtime import direct_session as ds_mod
from aioflow.runtime import executor_factory
from aioflow.runtime.direct_session import DirectSession

THREADS = 4
STEPS = 25


def _run_threads(target, n: int = THREADS) -> list:
    """Run `target(i)` on n threads started together; the exceptions they raised."""
    failures = []
    barrier = threading.Barrier(n)

    def body(i):
        try:
            barrier.wait(5)
            target(i)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            failures.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return failures


def test_threads_extending_and_running_one_session():
    graph = af.Graph()
    graph_lock = threading.Lock()
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
    sess = af.Session(graph=graph)

    def worker(i):
        async def steps():
            for step in range(STEPS):
                with graph_lock, graph.as_default():
                    y = af.add(x, float(i * 1000 + step), name=f"t{i}_s{step}")
                assert await sess.run(y, {x: 1.0}) == 1.0 + i * 1000 + step
                if step % 5 == 0:  # an older signature again, while others extend
                    assert await sess.run(y, {x: 2.0}) == 2.0 + i * 1000 + step

        asyncio.run(steps())

    assert _run_threads(worker) == []
    with graph.as_default():
        z = af.add(x, 0.5, name="after")

    async def later():
        assert await sess.run(z, {x: 1.0}) == 1.5
        await sess.close()

    asyncio.run(later())
    names = [n.name for n in sess._direct.graph_def.node]
    assert sorted(names) == sorted(op.name for op in graph.get_operations())


def test_threads_sharing_a_sync_session():
    graph = af.Graph()
    graph_lock = threading.Lock()
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
    with af.SyncSession(graph=graph) as sess:

        def worker(i):
            for step in range(STEPS):
                with graph_lock, graph.as_default():
                    y = af.multiply(x, float(i + 1), name=f"t{i}_s{step}")
                assert sess.run(y, {x: float(step)}) == float(step * (i + 1))
            call = sess.make_callable(y, [x])
            assert call(3.0) == 3.0 * (i + 1)

        assert _run_threads(worker) == []
        with graph.as_default():
            z = af.identity(x, name="after")
        assert sess.run(z, {x: 7.0}) == 7.0


def test_threads_asking_for_one_new_signature_build_it_once(monkeypatch):
    built = []
    real = executor_factory.ExecutorImpl  # the executor factories build them

    def counting(*args, **kwargs):
        built.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(executor_factory, "ExecutorImpl", counting)
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
        y = x
        for _ in range(200):  # a build long enough for the threads to overlap
            y = y + 1.0
    sess = af.Session(graph=graph)

    def worker(i):
        async def run():
            assert await sess.run(y, {x: float(i)}) == float(i) + 200.0

        asyncio.run(run())

    assert _run_threads(worker) == []
    assert len(built) == 1
    asyncio.run(sess.close())


def test_a_failed_build_on_one_thread_leaves_the_others_working(monkeypatch):
    real = ds_mod.optimize_graph
    failed = []

    def failing_once(*args, **kwargs):
        if not failed:
            failed.append(threading.current_thread().name)
            raise errors.InternalError(None, None, "injected build failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(ds_mod, "optimize_graph", failing_once)
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
        y = x * 2.0
    sess = af.Session(graph=graph)
    outcomes = []

    def worker(i):
        async def run():
            try:
                outcomes.append(await sess.run(y, {x: 1.0}))
            except errors.InternalError:
                outcomes.append("failed")
            assert await sess.run(y, {x: 2.0}) == 4.0  # retried: nothing poisoned

        asyncio.run(run())

    assert _run_threads(worker) == []
    assert "failed" in outcomes and set(outcomes) <= {"failed", 2.0}
    asyncio.run(sess.close())


def test_concurrent_direct_extends_keep_every_node_once():
    """DirectSession.extend from threads at once: every node arrives once, a name sent
    twice is refused without harm, and the graph stays whole."""
    direct = DirectSession()

    def const(name: str) -> graph_pb2.NodeDef:
        node = graph_pb2.GraphDef().node.add(name=name, op="Const")
        node.attr["dtype"].type = af.float32.as_datatype_enum
        node.attr["value"].tensor.dtype = af.float32.as_datatype_enum
        node.attr["value"].tensor.float_val.append(1.0)
        node.attr["value"].tensor.tensor_shape.SetInParent()
        return node

    def worker(i):
        for step in range(50):
            gd = graph_pb2.GraphDef()
            gd.node.add().CopyFrom(const(f"c{i}_{step}"))
            direct.extend(gd)
            dup = graph_pb2.GraphDef()
            dup.node.add().CopyFrom(const("shared"))
            try:
                direct.extend(dup)
            except errors.InvalidArgumentError as e:
                assert "created by a previous call" in str(e)

    assert _run_threads(worker) == []
    names = [n.name for n in direct.graph_def.node]
    assert len(names) == len(set(names)) == THREADS * 50 + 1
    fetches = tuple(sorted(f"c{i}_49:0" for i in range(THREADS)))
    eak = direct.get_executors((), fetches, ())
    assert len(eak.fetches) == THREADS
    direct.close()


@pytest.mark.parametrize("threads", [2, 8])
def test_runs_of_cached_signatures_from_many_loops(threads):
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
        y = x * x
    sess = af.Session(graph=graph)
    asyncio.run(sess.run(y, {x: 1.0}))

    def worker(i):
        async def run():
            out = await asyncio.gather(*(sess.run(y, {x: float(k)}) for k in range(100)))
            assert out == [float(k * k) for k in range(100)]

        asyncio.run(run())

    assert _run_threads(worker, threads) == []
    asyncio.run(sess.close())


def test_a_finished_event_loop_is_freed_with_its_runner():
    """Runners are per loop and held weakly: once a loop's runs are done and the loop is
    dropped (asyncio.run in a thread, say), neither the loop nor its runner stays alive
    (the runner held its loop strongly, keeping every loop a process ever ran on)."""
    import gc
    import weakref

    from aioflow.runtime import loop_runner

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])
        y = x + 1.0
    refs = []

    async def run_once():
        async with af.Session(graph=g) as sess:
            assert await sess.run(y, {x: 1.0}) == 2.0
        refs.append(weakref.ref(asyncio.get_running_loop()))
        refs.append(weakref.ref(loop_runner.get_runner()))

    for _ in range(3):
        asyncio.run(run_once())
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def test_a_blocking_run_cancelled_on_the_loop_raises_cancelled_error():
    """A SyncSession run whose task is cancelled on the session's loop (not by the
    caller's Ctrl-C) raises concurrent.futures.CancelledError to the blocked caller, as
    run_coroutine_threadsafe's future did; the session keeps working."""
    import concurrent.futures

    g = af.Graph()
    with g.as_default():
        q = af.FIFOQueue(1, [af.float32])
        blocked = q.dequeue()  # the queue stays empty: the run waits
        x = af.placeholder(af.float32, [])
        y = x * 2.0
    sess = af.SyncSession(graph=g)
    try:
        outcome = []
        started = threading.Event()

        def caller():
            started.set()
            try:
                sess.run(blocked)
            except BaseException as e:  # noqa: BLE001 - checked below
                outcome.append(e)

        thread = threading.Thread(target=caller)
        thread.start()
        started.wait(5)
        loop = sess._loop

        async def cancel_the_run() -> int:
            me = asyncio.current_task()
            while True:  # (until the caller's task is on the loop)
                tasks = [t for t in asyncio.all_tasks() if t is not me]
                if tasks:
                    for t in tasks:
                        t.cancel()
                    return len(tasks)
                await asyncio.sleep(0.001)

        assert asyncio.run_coroutine_threadsafe(cancel_the_run(), loop).result(5) == 1
        thread.join(5)
        assert not thread.is_alive()
        assert len(outcome) == 1 and type(outcome[0]) is concurrent.futures.CancelledError
        assert sess.run(y, {x: 3.0}) == 6.0
    finally:
        sess.close()
