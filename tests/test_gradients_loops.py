"""While-loop gradients at run time: the stack kernels (TF's errors), a 1,000-iteration
loop's gradient (its forward values on stacks, freed when the step ends), and a cancelled
step's stacks freed with it."""

from __future__ import annotations

import asyncio
import gc
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import aioflow as af
import aioflow.compat.v1 as tf
from aioflow.framework.op_def_library import apply_op
from aioflow.kernels.data_flow.stack_kernels import Stack
from aioflow.runtime import loop_segments

_OLDER = weakref.WeakSet()


def _live_stacks() -> int:
    """Stacks alive now that were not alive when the test began (another test's session
    may still be letting go of its own)."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Stack) and o not in _OLDER)


@pytest.fixture(autouse=True)
def _note_older_stacks():
    gc.collect()
    _OLDER.clear()
    for o in gc.get_objects():
        if isinstance(o, Stack):
            _OLDER.add(o)


def test_stack_push_pop_close():
    with tf.Graph().as_default():
        h = apply_op("StackV2", max_size=-1, elem_type=tf.float32, stack_name="s")
        push = apply_op("StackPushV2", handle=h, elem=tf.constant([1.0, 2.0]))
        with tf.control_dependencies([push]):
            pop = apply_op("StackPopV2", handle=h, elem_type=tf.float32)
        with tf.control_dependencies([pop]):
            pop_again = apply_op("StackPopV2", handle=h, elem_type=tf.float32)
        with tf.Session() as sess:
            np.testing.assert_allclose(sess.run(pop), [1.0, 2.0])
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"Stack\[s_\d+\] is empty."):
                sess.run(pop_again)


def test_stack_overflow_and_closed():
    with tf.Graph().as_default():
        h = apply_op("StackV2", max_size=1, elem_type=tf.float32, stack_name="t")
        p1 = apply_op("StackPushV2", handle=h, elem=tf.constant(1.0))
        with tf.control_dependencies([p1]):
            p2 = apply_op("StackPushV2", handle=h, elem=tf.constant(2.0))
        with tf.control_dependencies([p1]):
            close = apply_op("StackCloseV2", handle=h)
        with tf.control_dependencies([close]):
            p3 = apply_op("StackPushV2", handle=h, elem=tf.constant(3.0))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"Stack\[t_\d+\] overflowed its max_size \(1\)"):
                sess.run(p2)
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"Stack\[t_\d+\] has already been closed."):
                sess.run(p3)


def test_a_stack_checkpoint_restores_what_pushes_and_pops_changed():
    """A compiled loop's checkpoint (loop_segments.py): pushes and pops after it, below
    and above its length, are undone by `restore`; `release` forgets it."""
    s = Stack("s", tf.float32, -1)
    for v in "abc":
        s.push(v)
    token = s.checkpoint()
    assert s.pop() == "c"
    s.push("d")
    assert [s.pop(), s.pop()] == ["d", "b"]
    s.push("e")
    s.restore(token)
    assert s.values == ["a", "b", "c"] and not s._checkpoints
    token = s.checkpoint()
    s.push("f")
    s.close()
    s.restore(token)  # a close is undone too
    assert s.values == ["a", "b", "c"] and not s.closed
    token = s.checkpoint()
    assert s.pop() == "c"
    s.release(token)  # the loop finished: nothing is kept for it any more
    assert s.values == ["a", "b"] and not s._checkpoints
    assert s.pop() == "b" and s.values == ["a"]


def test_a_stack_checkpoint_keeps_only_the_values_popped_below_it():
    """A checkpoint copies nothing: it keeps the popped values that were below its
    length (a gradient loop entered once per outer iteration pays for its own pops)."""
    s = Stack("s", tf.float32, -1)
    for v in range(100):
        s.push(v)
    token = s.checkpoint()
    s.push(100)
    assert s.pop() == 100 and token.popped == []
    assert [s.pop() for _ in range(3)] == [99, 98, 97]
    assert token.popped == [99, 98, 97] and token.floor == 97
    s.restore(token)
    assert s.values == list(range(100))


def _long_loop_gradient(n: int, width: int):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [width], name="x")
        _, y = af.while_loop(lambda i, v: i < n,
                             lambda i, v: (i + 1, af.tanh(v) * 1.0001),
                             [af.constant(0), x], parallel_iterations=10)
        (dx,) = af.gradients(af.reduce_sum(y), [x])
    return g, x, y, dx


def _join_background_compiles() -> None:
    """Wait for the kernels' numba compiles that earlier tests started on daemon threads
    (kernels/background_jit.py, epilogue_jit.py: "aioflow-...-jit"): tracemalloc counts
    every thread's allocations, and a compile's (numba's imports) would be counted as the
    step's."""
    for thread in threading.enumerate():
        if thread.name.startswith("aioflow-") and thread.name.endswith("-jit"):
            thread.join()


async def test_thousand_iteration_loop_gradient_frees_its_stacks():
    width = 1000  # 4 kB a pushed value, 4 MB over the loop
    g, x, y, dx = _long_loop_gradient(1000, width)
    value = np.linspace(-1, 1, width).astype(np.float32)
    async with af.Session(graph=g) as sess:
        await sess.run(dx, {x: value})  # warm
        assert _live_stacks() == 0
        _join_background_compiles()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        got = await sess.run(dx, {x: value})
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # The step held every iteration's tanh output on a stack (4 kB each)...
    assert peak - before > 1000 * width * 4
    # ...and let them go at its end.
    assert current - before < 512 * 1024
    assert _live_stacks() == 0
    # d/dx of 1000 x (tanh(v) * 1.0001): the chain of local derivatives.
    v = value.astype(np.float64)
    grad = np.ones_like(v)
    for _ in range(1000):
        t = np.tanh(v)
        grad *= (1 - t * t) * 1.0001
        v = t * 1.0001
    np.testing.assert_allclose(got, grad, rtol=1e-3, atol=1e-6)


async def test_cancelled_step_frees_its_stacks():
    release = asyncio.Event()
    started = asyncio.Event()

    async def gate(i):
        if int(i) == 500:
            started.set()
            await release.wait()
        return i

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [100], name="x")

        def body(i, v):
            j = af.async_py_func(gate, [i], af.int32)
            j.set_shape([])
            return j + 1, af.tanh(v) * 1.0001

        _, y = af.while_loop(lambda i, v: i < 1000, body, [af.constant(0), x])
        (dx,) = af.gradients(af.reduce_sum(y), [x])
    async with af.Session(graph=g) as sess:
        task = asyncio.ensure_future(sess.run(dx, {x: np.ones(100, np.float32)}))
        await asyncio.wait_for(started.wait(), 30)
        assert _live_stacks() > 0  # the forward loop is pushing
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()
        await asyncio.sleep(0)
    assert _live_stacks() == 0


async def test_cancelling_a_step_in_a_compiled_loop_frees_its_stacks(monkeypatch):
    """The forward loop runs compiled (pushing, checkpointed), yielding to the event loop
    between slices: a step cancelled there closes the loop's generator (its checkpoint
    restored, nothing kept) and lets go of its stacks."""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    yielded = asyncio.Event()
    real_init = loop_segments.Suspended.__init__

    def suspended(self, gen):  # a compiled loop used its slice
        yielded.set()
        real_init(self, gen)

    monkeypatch.setattr(loop_segments.Suspended, "__init__", suspended)
    g, x, _, dx = _long_loop_gradient(300_000, 4)
    async with af.Session(graph=g) as sess:
        task = asyncio.ensure_future(sess.run(dx, {x: np.ones(4, np.float32)}))
        await asyncio.wait_for(yielded.wait(), 30)
        gc.collect()
        assert [len(o.values) > 0 and len(o._checkpoints) for o in gc.get_objects()
                if isinstance(o, Stack) and o not in _OLDER] == [1]  # pushing, checkpointed
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task  # (its CancelledError's traceback holds the run's frames)
        for _ in range(6):  # the runner drops the aborted state at its next slice, after
            await asyncio.sleep(0)  # its hops between slices (loop_runner.py): loop turns
    assert _live_stacks() == 0


async def test_failed_step_frees_its_stacks():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [10], name="x")
        limit = af.placeholder(af.int32, [], name="limit")

        def body(i, v):
            # NaN from iteration `limit` on: CheckNumerics fails the step mid-loop
            bad = af.where_v2(af.greater_equal(i, limit), np.float32(np.nan), np.float32(0.0))
            v = af.check_numerics(af.tanh(v) + bad, "loop value")
            return i + 1, v

        _, y = af.while_loop(lambda i, v: i < 1000, body, [af.constant(0), x])
        (dx,) = af.gradients(af.reduce_sum(y), [x])
    async with af.Session(graph=g) as sess:
        got = await sess.run(dx, {x: np.ones(10, np.float32), limit: 1000})  # no NaN: runs
        assert np.all(np.isfinite(got))
        with pytest.raises(af.errors.InvalidArgumentError, match="loop value"):
            await sess.run(dx, {x: np.ones(10, np.float32), limit: 500})
        # The run raises at the first error; the failed step's executor task lets go of
        # its state (and the stacks) on the loop's next turn.
        await asyncio.sleep(0)
    assert _live_stacks() == 0
