"""Partial runs (partial_run_setup / partial_run) against TF 2.21: its documented
example, its errors (tests/data/direct_session_tf.json, written by
tests/data/make_direct_session_tf.py), the step's lifetime (alive across calls,
cancelled and released on close or when its handle is dropped) and the client-terminated
_Recv/_Send rewrite."""

from __future__ import annotations

import asyncio
import gc
import json

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_kernel import AsyncOpKernel
from aioflow.runtime.executor import observe_steps
from tests.conftest import DATA

TF = json.loads((DATA / "direct_session_tf.json").read_text())


def _example():
    a = af.placeholder(af.float32, shape=[], name="a")
    b = af.placeholder(af.float32, shape=[], name="b")
    c = af.placeholder(af.float32, shape=[], name="c")
    r1 = af.add(a, b, name="r1")
    r2 = af.multiply(r1, c, name="r2")
    return a, b, c, r1, r2


async def _raises(case: str, coro):
    expected = TF[case]
    with pytest.raises(getattr(errors, expected["error"])) as e:
        await coro
    assert e.value.message == expected["message"]


async def test_tf_documented_example(graph):
    a, b, c, r1, r2 = _example()
    async with af.Session() as sess:
        h = await sess.partial_run_setup([r1, r2], [a, b, c])
        assert h == TF["handle"]
        res = await sess.partial_run(h, r1, feed_dict={a: 1, b: 2})
        assert res == TF["example_r1"]["value"]
        res = await sess.partial_run(h, r2, feed_dict={c: res})
        assert res == TF["example_r1"]["value"] * 3 == TF["example_r2"]["value"]
        await _raises("after_done", sess.partial_run(h, r2, feed_dict={c: 3}))
        assert sess._direct.num_partial_runs == 0


async def test_tf_errors_in_tf_order(graph):
    a, b, c, r1, r2 = _example()
    async with af.Session() as sess:
        h = await sess.partial_run_setup([r1, r2], [a, b, c])
        assert await sess.partial_run(h, r1, feed_dict={a: 1, b: 2}) == 3.0
        await _raises("feed_twice", sess.partial_run(h, r2, feed_dict={a: 5, c: 3}))
        # A failed check feeds nothing: c may still be fed.
        await _raises("fetch_twice", sess.partial_run(h, r1, feed_dict={c: 3}))
        assert await sess.partial_run(h, r2, feed_dict={c: 3}) == TF["example_r2"]["value"]
        h = await sess.partial_run_setup([r1], [a, b])
        await _raises("undeclared_feed", sess.partial_run(h, r1, feed_dict={a: 1, c: 2}))
        await _raises("undeclared_fetch", sess.partial_run(h, r2, feed_dict={a: 1, b: 2}))
        h = await sess.partial_run_setup([r1, r2], [a, b, c])
        await _raises("not_fed_r2", sess.partial_run(h, r2, feed_dict={a: 1, b: 2}))
        h = await sess.partial_run_setup([r1, r2], [a, b, c])
        await _raises("not_fed_r1", sess.partial_run(h, r1, feed_dict={a: 1}))
        await _raises("unknown_handle", sess.partial_run("foo;1", r1, feed_dict={a: 1, b: 2}))
    with pytest.raises(RuntimeError, match=TF["after_close"]["message"]):
        await sess.partial_run(h, r1, feed_dict={a: 1, b: 2})


async def test_step_stays_alive_across_calls(graph):
    """One step: a stateful op runs once however many calls feed it, and a value
    computed early is still there for a later fetch."""
    x = af.placeholder(af.float32, [None], name="x")
    y = af.placeholder(af.float32, [None], name="y")
    counter = af.Variable(0.0, name="counter")
    bump = af.assign_add(counter, 1.0)
    with af.control_dependencies([bump]):
        sx = af.reduce_sum(x) + 0.0
    out = sx * af.reduce_sum(y)
    seen = []
    async with af.Session() as sess:
        await sess.run(counter.initializer)
        with observe_steps(seen.append):
            h = await sess.partial_run_setup([sx, out], [x, y])
            assert await sess.partial_run(h, sx, {x: [1.0, 2.0]}) == 3.0
            await asyncio.sleep(0)
            assert len(seen) == 1 and not any(s.done.done() for s in seen[0])
            assert await sess.partial_run(h, out, {y: np.arange(4, dtype=np.float32)}) == 18.0
        assert len(seen) == 1 and all(s.done.done() for s in seen[0])
        assert await sess.run(counter) == 1.0


async def test_fetch_structure_fed_fetch_and_targets(graph):
    a, b, c, r1, r2 = _example()
    v = af.Variable(0.0)
    set_v = af.assign(v, 7.0)
    async with af.Session() as sess:
        await sess.run(v.initializer)
        h = await sess.partial_run_setup([r1, r2, set_v.op], [a, b, c])
        got = await sess.partial_run(h, {"r1": r1, "pair": (r1, a)}, {a: 1.0, b: 2.0})
        assert got == {"r1": 3.0, "pair": (3.0, 1.0)}
        assert await sess.partial_run(h, [r2], {c: 2.0}) == [6.0]
        assert await sess.run(v) == 7.0  # the target ran in the step
        h = await sess.partial_run_setup([r1], [a, b], targets=[set_v.op])
        assert await sess.partial_run(h, r1, {a: 2.0, b: 2.0}) == 4.0


async def test_uses_client_terminated_recv_and_send(graph):
    a, b, c, r1, r2 = _example()
    async with af.Session() as sess:
        h = await sess.partial_run_setup([r1, r2], [a, b, c])
        eak = sess._direct._partial_runs[h].eak
        nodes = {n.name: n for g in eak.partition_graphs for n in g.op_nodes()}
        assert {"_recv_a_0", "_recv_b_0", "_recv_c_0", "_send_r1_0", "_send_r2_0"} <= set(nodes)
        assert not any(n.type_string in ("_Arg", "_Retval") for n in nodes.values())
        recv = nodes["_recv_a_0"].def_
        assert recv.op == "_Recv" and recv.attr["client_terminated"].b
        assert recv.attr["tensor_name"].s == b"a:0"
        send = nodes["_send_r2_0"].def_
        assert send.op == "_Send" and send.attr["client_terminated"].b
        assert send.attr["send_device"].s == send.attr["recv_device"].s
        await sess.partial_run(h, r2, {a: 1.0, b: 1.0, c: 1.0})


async def test_kernel_error_fails_the_call_and_forgets_the_run(graph):
    a = af.placeholder(af.int32, [], name="a")
    b = af.placeholder(af.int32, [], name="b")
    q = af.math.floordiv(a, b, name="q")
    async with af.Session() as sess:
        h = await sess.partial_run_setup([q], [a, b])
        with pytest.raises(errors.InvalidArgumentError, match="q"):
            await sess.partial_run(h, q, {a: 1, b: 0})
        assert sess._direct.num_partial_runs == 0
        assert not sess._direct._active_steps


async def _steps_of(sess, h_maker):
    seen = []
    with observe_steps(seen.append):
        h = await h_maker()
        await asyncio.sleep(0)  # the step starts in its task
    return h, seen[0]


async def test_dropped_handle_cancels_and_releases_the_step(graph):
    a, b, c, r1, r2 = _example()
    async with af.Session() as sess:
        direct = sess._direct
        h, states = await _steps_of(sess, lambda: sess.partial_run_setup([r1, r2], [a, b, c]))
        assert await sess.partial_run(h, r1, {a: 1.0, b: 2.0}) == 3.0
        ctx = direct._partial_runs[h].ctx
        del h
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
        assert direct.num_partial_runs == 0
        assert not direct._active_steps
        assert all(s.done.done() and not s.in_flight and not s.tasks for s in states)
        assert len(ctx.rendezvous) == 0
        assert isinstance(ctx.first_error, errors.CancelledError)


async def test_close_cancels_open_partial_runs(graph):
    a, b, c, r1, r2 = _example()
    sess = af.Session()
    h, states = await _steps_of(sess, lambda: sess.partial_run_setup([r1, r2], [a, b, c]))
    await sess.close()
    for _ in range(5):
        await asyncio.sleep(0)
    assert all(s.done.done() and not s.in_flight for s in states)
    assert sess._direct.num_partial_runs == 0 and not sess._direct._active_steps
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.partial_run(h, r1, {a: 1.0, b: 2.0})


class _Never(AsyncOpKernel):
    """An async kernel that waits until it is cancelled."""

    async def compute_async(self, ctx, inputs):
        await asyncio.Event().wait()


async def test_cancelled_call_cancels_the_step(graph, user_op):
    a, b, c, r1, r2 = _example()
    never = user_op("TestPartialRunNever", _Never)(x=r1)
    async with af.Session() as sess:
        h, states = await _steps_of(
            sess, lambda: sess.partial_run_setup([r1, r2, never], [a, b, c]))
        # `never` never comes: cancel the waiting call.
        call = asyncio.ensure_future(sess.partial_run(h, never, {a: 1.0, b: 2.0}))
        await asyncio.sleep(0.01)
        assert not call.done()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        for _ in range(5):
            await asyncio.sleep(0)
        assert all(s.done.done() and not s.in_flight for s in states)
        assert sess._direct.num_partial_runs == 0


def test_sync_session(graph):
    a, b, c, r1, r2 = _example()
    with af.SyncSession() as sess:
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        assert sess.partial_run(h, r1, {a: 1, b: 2}) == 3.0
        assert sess.partial_run(h, r2, {c: 3}) == 9.0
        h = sess.partial_run_setup([r1, r2], [a, b, c])
        direct = sess._session._direct
        assert direct.num_partial_runs == 1
        del h
        gc.collect()
        sess.run(r1, {a: 1, b: 2})  # a turn of the loop: the drop is handled there
        assert direct.num_partial_runs == 0


async def test_across_devices_and_a_while_loop(graph):
    """Feeds and fetches stay on the client device; the step's other partition and a
    while loop between them run as in a plain run."""
    a = af.placeholder(af.float32, [], name="a")
    n = af.placeholder(af.int32, [], name="n")
    with af.device("/device:CPU:1"):
        doubled = a * 2.0
    _, total = af.while_loop(lambda i, acc: i < n, lambda i, acc: (i + 1, acc + doubled),
                             [af.constant(0), af.constant(0.0)])
    config = af.ConfigProto(device_count={"CPU": 2})
    async with af.Session(config=config) as sess:
        h = await sess.partial_run_setup([doubled, total], [a, n])
        assert await sess.partial_run(h, doubled, {a: 1.5}) == 3.0
        assert await sess.partial_run(h, total, {n: 4}) == 12.0
        eak = sess._direct._executors[((("a:0", "n:0"), tuple(sorted(
            [doubled.name, total.name])), (), True))]
        assert len(eak.partition_graphs) == 2
