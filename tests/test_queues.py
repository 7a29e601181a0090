"""TF 1's queues (af.FIFOQueue, af.PaddingFIFOQueue, af.RandomShuffleQueue, af.PriorityQueue)
against TensorFlow 2.21 (tests/data/make_queue_fixtures_tf.py wrote queues_tf.json): the
OpDefs field by field, the GraphDefs the Python API builds node for node, and the values
and errors of each program's sequence of runs, replayed on the graph aioflow builds and on
TF's GraphDef imported. Then what is aioflow's own: dequeues and enqueues that wait are
awaited on the event loop (no thread held), woken by other runs, by close(), ended by
RunOptions.timeout_in_ms and by cancelling the awaiting task, without losing elements."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import text_format
from op_def_compare import ours, without_docs

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import graph_pb2, op_def_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_queue_fixtures_tf as tf_programs  # noqa: E402
from graph_compare import assert_same_graph  # noqa: E402

FIXTURE = json.loads((DATA / "queues_tf.json").read_text())
PROGRAMS = FIXTURE["programs"]
RAW = FIXTURE["raw"]

# Where aioflow answers otherwise than TF 2.21, on purpose: (program, step) -> the values
# aioflow gives. TF's PriorityQueue dequeue_up_to on a closed queue holding fewer than n
# takes them and then fails with OutOfRangeError (they are lost: priority_queue.cc leaves
# the attempt unfinished after its one pass); aioflow returns them, as dequeue_up_to is
# documented to ("fewer than n elements are returned immediately").
DEVIATIONS = {("priority", 6): [
    {"dtype": "int64", "shape": [2], "value": [5, 9]},
    {"dtype": "string", "shape": [2], "value": ["five", "nine"]},
    {"dtype": "float32", "shape": [2, 2], "value": [5.0, 5.5, 9.0, 9.5]}]}


def _graph_def(record) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(bytes.fromhex(record["graph_def"]))
    return graph_def


def _message(text: str) -> str:
    """An error message without aioflow's node lines, and with the queue's process-wide
    unique number (TF's "_0_fifo_queue": the count of unshared queues made so far in the
    process) left out."""
    return re.sub(r"'_\d+_", "'_N_", text.split("\n\t [[")[0])


def _feed_value(record: dict) -> np.ndarray:
    if record["dtype"] == "string":
        values = [v.encode("latin-1") for v in record["value"]]
        return np.array(values, dtype=object).reshape(record["shape"])
    return np.array(record["value"], dtype=record["dtype"]).reshape(record["shape"])


def _plain(value) -> dict:
    """A fetched value as the fixture records it."""
    arr = np.asarray(value, dtype=object if isinstance(value, bytes) else None)
    flat = arr.ravel().tolist()
    if arr.dtype == object:
        return {"dtype": "string", "shape": list(arr.shape),
                "value": [v.decode("latin-1") for v in flat]}
    return {"dtype": arr.dtype.name, "shape": list(arr.shape), "value": flat}


async def _replay(program: str, record: dict, graph: af.Graph) -> None:
    """Run the recorded steps in one session and compare each with TF's result."""
    async with af.Session(graph=graph) as sess:
        for i, (step, want) in enumerate(zip(record["steps"], record["results"], strict=True)):
            fetches = [graph.as_graph_element(n) for n in step["fetch"]]
            feed = {graph.as_graph_element(k): _feed_value(v) for k, v in step["feed"].items()}
            options = (af.RunOptions(timeout_in_ms=step["timeout_ms"]) if step["timeout_ms"]
                       else None)
            where = f"{program} step {i} {step['fetch']}"
            if (program, i) in DEVIATIONS:
                assert want["error"] == "OutOfRangeError", where  # TF's, see DEVIATIONS
                got = await sess.run(fetches, feed, options=options)
                assert [_plain(v) for v in got] == DEVIATIONS[program, i], where
                continue
            if "error" in want:
                with pytest.raises(errors.OpError) as info:
                    await sess.run(fetches, feed, options=options)
                assert type(info.value).__name__ == want["error"], (where, info.value)
                assert _message(info.value.message) == _message(want["message"]), where
                continue
            got = await sess.run(fetches, feed, options=options)
            for value, expected in zip(got, want["values"], strict=True):
                if expected is None:
                    assert value is None, where
                else:
                    assert _plain(value) == expected, where


def test_every_program_has_a_fixture():
    assert sorted(PROGRAMS) == sorted(tf_programs.PROGRAMS)
    assert sorted(RAW) == sorted(tf_programs.RAW)
    assert FIXTURE["tensorflow"].startswith("2.21")


@pytest.mark.parametrize("name", sorted(FIXTURE["opdefs"]))
def test_op_defs_equal_tf(name):
    want = op_def_pb2.OpDef()
    want.ParseFromString(bytes.fromhex(FIXTURE["opdefs"][name]))
    assert ours(name) == without_docs(want), text_format.MessageToString(want)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_the_python_api_builds_tfs_graph(program):
    graph = af.Graph()
    with graph.as_default():
        tf_programs.PROGRAMS[program](af)
    assert_same_graph(graph.as_graph_def(), _graph_def(PROGRAMS[program]))


@pytest.mark.parametrize("program", sorted(PROGRAMS))
async def test_runs_match_tf_on_the_graph_af_builds(program):
    graph = af.Graph()
    with graph.as_default():
        tf_programs.PROGRAMS[program](af)
    await _replay(program, PROGRAMS[program], graph)


@pytest.mark.parametrize("program", sorted(PROGRAMS) + sorted(RAW))
async def test_runs_match_tf_on_tfs_graph_def(program):
    record = PROGRAMS.get(program) or RAW[program]
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(_graph_def(record), name="")
    await _replay(program, record, graph)


# -- asyncio: waiting on the loop --------------------------------------------------------------

def _int_queue(capacity=4, **kw):
    q = af.FIFOQueue(capacity, af.int32, shapes=[[]], **kw)
    x = af.placeholder(af.int32, [], name="x")
    return q, x, q.enqueue(x), q.dequeue(), q.size()


async def test_a_dequeue_awaits_an_enqueue_made_by_another_run():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue()
    async with af.Session(graph=g) as sess:
        order = []

        async def consumer():
            value = await sess.run(deq)
            order.append(("dequeued", int(value)))

        async def producer():
            await asyncio.sleep(0.05)
            order.append(("enqueueing", 7))
            await sess.run(enq, {x: 7})

        await asyncio.wait_for(asyncio.gather(consumer(), producer()), 10)
        assert order == [("enqueueing", 7), ("dequeued", 7)]
        assert await sess.run(size) == 0


async def test_the_loop_keeps_running_while_a_dequeue_waits():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue()
        close = q.close()
    async with af.Session(graph=g) as sess:
        ticks = 0

        async def heartbeat():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.005)

        beat = asyncio.create_task(heartbeat())
        waiting = asyncio.create_task(sess.run(deq))
        start = time.monotonic()
        await asyncio.sleep(0.2)
        assert not waiting.done()
        assert ticks >= 10  # (at 5 ms a tick; a thread-blocking dequeue would stop them)
        await sess.run(close)
        with pytest.raises(errors.OutOfRangeError, match="is closed and has insufficient "
                                                         r"elements \(requested 1, current "
                                                         r"size 0\)"):
            await asyncio.wait_for(waiting, 10)
        assert time.monotonic() - start >= 0.2
        beat.cancel()


async def _until_size(sess, size, n: int) -> None:
    """Poll the queue's size until it is `n` (a run started elsewhere got that far)."""
    for _ in range(500):
        if await sess.run(size) == n:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"the queue's size never became {n}")


async def test_close_wakes_every_waiting_dequeue_with_out_of_range():
    with af.Graph().as_default() as g:
        q = af.FIFOQueue(4, [af.int32], shapes=[[]])
        deq, many, up_to, close = q.dequeue(), q.dequeue_many(2), q.dequeue_up_to(3), q.close()
        enq = q.enqueue(5)
    async with af.Session(graph=g) as sess:
        first = asyncio.create_task(sess.run(deq))
        await asyncio.sleep(0.05)
        await sess.run(enq)
        assert await asyncio.wait_for(first, 10) == 5
        waiters = [asyncio.create_task(sess.run(t)) for t in (many, up_to, many)]
        await asyncio.sleep(0.05)
        assert not any(w.done() for w in waiters)
        await sess.run(close)
        results = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 10)
        assert [type(r) for r in results] == [errors.OutOfRangeError] * 3
        assert [re.search(r"requested (\d+)", r.message).group(1) for r in results] == [
            "2", "3", "2"]


async def test_timeout_in_ms_ends_a_waiting_dequeue_and_takes_nothing():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue()
    async with af.Session(graph=g) as sess:
        start = time.monotonic()
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(deq, options=af.RunOptions(timeout_in_ms=100))
        assert 0.09 <= time.monotonic() - start < 5
        # The timed-out dequeue left the queue's waiters: the next element stays in it.
        await sess.run(enq, {x: 3})
        assert await sess.run(size) == 1
        assert await sess.run(deq) == 3


async def test_timeout_in_ms_ends_a_waiting_enqueue_of_a_full_queue():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue(capacity=1)
    async with af.Session(graph=g) as sess:
        await sess.run(enq, {x: 1})
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(enq, {x: 2}, options=af.RunOptions(timeout_in_ms=50))
        assert await sess.run(deq) == 1
        assert await sess.run(size) == 0  # the timed-out enqueue did not go in later


@pytest.mark.parametrize("traced", [False, True])
async def test_cancelling_the_awaiting_task_leaves_the_queue_whole(traced):
    """A dequeue_many that has taken part of its batch, then is cancelled, puts those
    elements back in order; a cancelled dequeue takes nothing. Traced runs take the
    executor's task path (compute_async), the others its task-free one (start_async)."""
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue(capacity=10)
        many, two = q.dequeue_many(3), q.dequeue_many(2)
    options = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE) if traced else None
    async with af.Session(graph=g) as sess:
        await sess.run(enq, {x: 0})
        assert await sess.run(deq, options=options, run_metadata=af.RunMetadata()) == 0
        await sess.run(enq, {x: 1})
        await sess.run(enq, {x: 2})
        task = asyncio.create_task(sess.run(many, options=options,
                                            run_metadata=af.RunMetadata()))
        await _until_size(sess, size, 0)  # the waiting batch holds both
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await sess.run(size) == 2
        assert list(await sess.run(two)) == [1, 2]  # back, in their order
        waiting = asyncio.create_task(sess.run(deq, options=options,
                                               run_metadata=af.RunMetadata()))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await sess.run(enq, {x: 3})
        assert await sess.run(size) == 1  # the cancelled dequeue no longer waits for it
        assert await sess.run(deq) == 3


async def test_a_blocked_enqueue_goes_in_when_a_dequeue_makes_room():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue(capacity=2)
        many = q.dequeue_many(2)
    async with af.Session(graph=g) as sess:
        await sess.run(enq, {x: 1})
        await sess.run(enq, {x: 2})
        blocked = asyncio.create_task(sess.run(enq, {x: 3}))
        await asyncio.sleep(0.05)
        assert not blocked.done()
        assert await sess.run(deq) == 1
        await asyncio.wait_for(blocked, 10)
        assert list(await sess.run(many)) == [2, 3]


async def test_close_with_cancel_pending_enqueues_cancels_the_blocked_enqueue():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue(capacity=1)
        cancel_close = q.close(cancel_pending_enqueues=True)
    async with af.Session(graph=g) as sess:
        await sess.run(enq, {x: 1})
        blocked = asyncio.create_task(sess.run(enq, {x: 2}))
        await asyncio.sleep(0.05)
        await sess.run(cancel_close)
        with pytest.raises(errors.CancelledError, match="Enqueue operation was cancelled"):
            await asyncio.wait_for(blocked, 10)
        assert await sess.run(deq) == 1  # what was in stays dequeueable
        with pytest.raises(errors.OutOfRangeError):
            await sess.run(deq)


async def test_a_close_waits_behind_a_blocked_enqueue_as_tfs():
    """Without cancel_pending_enqueues, close is queued behind the enqueues waiting
    (TF's QueueBase::Close): it completes once they have gone in."""
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue(capacity=1)
        close, closed = q.close(), q.is_closed()
    async with af.Session(graph=g) as sess:
        await sess.run(enq, {x: 1})
        blocked = asyncio.create_task(sess.run(enq, {x: 2}))
        await asyncio.sleep(0.05)
        closing = asyncio.create_task(sess.run(close))
        await asyncio.sleep(0.05)
        assert not closing.done() and not await sess.run(closed)
        assert await sess.run(deq) == 1
        await asyncio.wait_for(asyncio.gather(blocked, closing), 10)
        assert await sess.run(closed)
        assert await sess.run(deq) == 2


async def test_one_run_enqueues_and_dequeues():
    with af.Graph().as_default() as g:
        q = af.FIFOQueue(2, af.float32, shapes=[[2]])
        with af.control_dependencies([q.enqueue([[1.0, 2.0]])]):
            out = af.identity(q.dequeue())
    async with af.Session(graph=g) as sess:
        np.testing.assert_array_equal(await sess.run(out), [1.0, 2.0])


async def test_unseeded_random_shuffle_queue_shuffles_and_keeps_min_after_dequeue():
    with af.Graph().as_default() as g:
        q = af.RandomShuffleQueue(100, 10, af.int32, shapes=[[]])
        fill = q.enqueue_many([np.arange(60, dtype=np.int32)])
        deq, size, close = q.dequeue_many(50), q.size(), q.close()
        rest = q.dequeue_up_to(100)
    async with af.Session(graph=g) as sess:
        await sess.run(fill)
        first = list(await sess.run(deq))
        assert await sess.run(size) == 10
        with pytest.raises(errors.DeadlineExceededError):  # 10 left = min_after_dequeue
            await sess.run(deq, options=af.RunOptions(timeout_in_ms=50))
        await sess.run(close)
        last = list(await sess.run(rest))
        assert sorted(first + last) == list(range(60))
        assert first != sorted(first)  # (50 in order: probability 1/50!)


async def test_queues_are_shared_by_the_sessions_runs_but_not_across_sessions():
    with af.Graph().as_default() as g:
        q, x, enq, deq, size = _int_queue()
    async with af.Session(graph=g) as one, af.Session(graph=g) as two:
        await one.run(enq, {x: 1})
        assert await one.run(size) == 1
        assert await two.run(size) == 0


def test_python_api_errors_are_tfs():
    with af.Graph().as_default():
        with pytest.raises(ValueError, match="List of names must have the same length"):
            af.FIFOQueue(2, [af.int32, af.int32], names=["a"])
        with pytest.raises(ValueError, match="All shapes must be fully defined"):
            af.FIFOQueue(2, af.int32, shapes=[[None]])
        with pytest.raises(ValueError, match="Shapes must be provided for all components"):
            af.PaddingFIFOQueue(2, [af.int32, af.int32], shapes=[[None]])
        named = af.FIFOQueue(2, [af.int32], shapes=[[]], names=["a"])
        with pytest.raises(ValueError, match="You must enqueue a dictionary"):
            named.enqueue(1)
        with pytest.raises(ValueError, match="Keys in dictionary to enqueue do not match"):
            named.enqueue({"b": 1})
        plain = af.FIFOQueue(2, [af.int32], shapes=[[2]])
        with pytest.raises(ValueError, match="Queue must have names"):
            plain.enqueue({"a": [1, 2]})
        with pytest.raises(ValueError):
            plain.enqueue([[1, 2, 3]])
        with pytest.raises(ValueError):
            plain.enqueue_many([[1, 2, 3]])
        assert af.queue.FIFOQueue is af.FIFOQueue
    from aioflow.compat import v1

    assert v1.io.PaddingFIFOQueue is af.PaddingFIFOQueue
    assert v1.queue.PriorityQueue is v1.PriorityQueue is af.PriorityQueue


# -- QueueRunner and Coordinator as asyncio tasks ----------------------------------------------

async def test_a_queue_runner_fills_a_queue_from_a_closed_source_then_closes_it():
    """An input pipeline as TF 1 wrote it: a runner moves the elements of a source queue
    (closed once filled) into a second queue; when the source runs dry its OutOfRange ends
    the runner, which closes the second queue; the consumer then gets OutOfRange too."""
    with af.Graph().as_default() as g:
        source = af.FIFOQueue(10, af.int32, shapes=[[]], name="filenames")
        fill = source.enqueue_many([np.arange(1, 8, dtype=np.int32)])
        close_source = source.close()
        out = af.FIFOQueue(2, af.int32, shapes=[[]], name="records")
        runner = af.train.QueueRunner(out, [out.enqueue(source.dequeue() * 10)])
        af.train.add_queue_runner(runner)
        take = out.dequeue()
    async with af.Session(graph=g) as sess:
        await sess.run(fill)
        await sess.run(close_source)
        coord = af.train.Coordinator()
        tasks = af.train.start_queue_runners(sess, coord)
        assert len(tasks) == 2  # the enqueue loop, and the task that cancels on stop
        got = []
        with pytest.raises(errors.OutOfRangeError):
            while True:
                got.append(int(await asyncio.wait_for(sess.run(take), 10)))
        assert got == [10, 20, 30, 40, 50, 60, 70]
        coord.request_stop()
        await asyncio.wait_for(coord.join(tasks), 10)
        assert runner.exceptions_raised == []


async def test_a_coordinator_stop_cancels_the_runners_blocked_enqueues():
    with af.Graph().as_default() as g:
        q = af.FIFOQueue(3, af.int32, shapes=[[]])
        runner = af.train.QueueRunner(q, [q.enqueue(1), q.enqueue(2)])
        take = q.dequeue_many(3)
    async with af.Session(graph=g) as sess:
        coord = af.train.Coordinator()
        tasks = runner.create_tasks(sess, coord)
        assert sorted(await asyncio.wait_for(sess.run(take), 10)) in ([1, 1, 2], [1, 2, 2],
                                                                      [1, 1, 1], [2, 2, 2],
                                                                      [1, 2, 1], [2, 1, 2])
        await asyncio.sleep(0.05)  # both enqueue loops now wait on the full queue
        coord.request_stop()
        await asyncio.wait_for(coord.join(tasks), 10)
        assert all(t.done() for t in tasks)
        assert runner.exceptions_raised == []


async def test_a_runners_error_reaches_the_coordinators_join():
    with af.Graph().as_default() as g:
        q = af.FIFOQueue(3, af.float32, shapes=[[]])
        bad = af.placeholder(af.float32, [], name="never_fed")
        runner = af.train.QueueRunner(q, [q.enqueue(bad)])
    async with af.Session(graph=g) as sess:
        coord = af.train.Coordinator()
        tasks = runner.create_tasks(sess, coord)
        with pytest.raises(errors.InvalidArgumentError, match="never_fed"):
            await asyncio.wait_for(coord.join(tasks), 10)


async def test_a_ref_handle_fetched_is_tfs_container_and_name():
    from aioflow.framework.op_def_library import apply_op

    with af.Graph().as_default():
        h = apply_op("FIFOQueue", component_types=[af.int32], shapes=[[]], shared_name="q")
        size = apply_op("QueueSize", handle=h)
        async with af.Session() as sess:
            handle, n = await sess.run([h, size])
    assert handle.tolist() == [b"localhost", b"q"]
    assert n == 0
