"""Adversarial tests of the runtime: deadness and frames at their edges (dead loops,
ControlTrigger, Merge with control inputs), feeds and fetches that overlap, errors that
are not plain kernel errors, cancellation, deadlines and close with work in flight,
session life-cycle, and graphs that grow, get finalized or get very deep."""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors, op_kernel
from aioflow.ops import control_flow_ops as cf
from aioflow.proto import config_pb2, graph_pb2, types_pb2
from aioflow.runtime import loop_runner
from aioflow.runtime.direct_session import DirectSession

pytestmark = pytest.mark.usefixtures("segments_mode", "executor_type")  # segments; executors

Pair = collections.namedtuple("Pair", "first second")


# -- deadness: dead loops, ControlTrigger, Merge with control inputs -----------------------


@pytest.mark.parametrize("pi", [1, 2, 10])
async def test_loop_on_an_untaken_cond_branch_inside_a_throttled_loop(graph, pi):
    """A while loop whose Enter is dead (its cond branch is not taken) must finish at
    once (TF: a dead Enter makes its Merge dead), or the enclosing iteration never ends
    and a loop throttled by parallel_iterations stalls."""
    with graph.as_default():
        def body(j, acc):
            v = af.cond(af.equal(j % 2, 0),
                        lambda: af.while_loop(lambda i: i < j, lambda i: i + 1,
                                              [af.constant(0)]),
                        lambda: af.constant(100))
            return j + 1, acc + v

        out = af.while_loop(lambda j, acc: j < 25, body, [af.constant(0), af.constant(0)],
                            parallel_iterations=pi)
    async with af.Session(graph=graph) as sess:
        j, acc = await asyncio.wait_for(sess.run(out), 10)
    assert (int(j), int(acc)) == (25, sum(j if j % 2 == 0 else 100 for j in range(25)))


async def test_dead_loop_releases_its_exits_to_a_control_trigger(graph):
    """The exits of a loop that never ran (dead Enter) are released dead when its frame
    ends; a ControlTrigger waiting on them then runs (it runs on dead inputs)."""
    with graph.as_default():
        p = af.placeholder(af.bool, [])
        untaken, taken = cf.switch(af.constant(2.0), p)
        w = af.while_loop(lambda i: i < 5.0, lambda i: i + 1.0, [taken])
        merged, _ = cf.merge([w * 10.0, untaken])
        with af.control_dependencies([w]):
            trigger = cf.control_trigger()
        with af.control_dependencies([trigger]):
            after = af.constant(1.0)
    async with af.Session(graph=graph) as sess:
        assert await sess.run([merged, after], {p: False}) == [2.0, 1.0]
        assert await sess.run([merged, after], {p: True}) == [50.0, 1.0]
        with pytest.raises(errors.InvalidArgumentError, match="does not have value"):
            await sess.run(w, {p: False})


async def test_control_trigger_runs_when_its_inputs_are_dead(graph):
    with graph.as_default():
        p = af.placeholder(af.bool, [])
        _, taken = cf.switch(af.constant(1.0), p)
        a = af.identity(taken)
        with af.control_dependencies([a.op]):
            trigger = cf.control_trigger()
        with af.control_dependencies([trigger]):
            after_trigger = af.constant(7.0)
        with af.control_dependencies([a.op]):
            after_dead = af.constant(8.0)
    async with af.Session(graph=graph) as sess:
        assert await sess.run(after_trigger, {p: True}) == 7.0
        assert await sess.run(after_trigger, {p: False}) == 7.0
        # A plain control dependency on a dead node is dead (TF).
        with pytest.raises(errors.InvalidArgumentError, match="Retval"):
            await sess.run(after_dead, {p: False})


async def test_merge_with_control_inputs_and_dead_data_inputs(graph):
    with graph.as_default():
        p = af.placeholder(af.bool, [])
        untaken, taken = cf.switch(af.constant(1.0), p)
        ctrl = af.py_func(lambda: np.float32(0), [], af.float32)
        with af.control_dependencies([ctrl.op]):
            m, index = cf.merge([af.identity(taken), af.identity(taken) * 2])
        m2, index2 = cf.merge([taken, untaken * 3])
    async with af.Session(graph=graph) as sess:
        assert await sess.run([m, index], {p: True}) == [1.0, 0]
        # All data inputs dead: the Merge waits for its control input, then is dead.
        with pytest.raises(errors.InvalidArgumentError, match="does not have value"):
            await sess.run(m, {p: False})
        assert await sess.run([m2, index2], {p: False}) == [3.0, 1]
        assert await sess.run([m2, index2], {p: True}) == [1.0, 0]


@pytest.mark.parametrize("pred", [True, False])
async def test_cond_inside_while_inside_cond(graph, pred):
    with graph.as_default():
        p = af.placeholder(af.bool, [])

        def true_fn():
            def body(i, acc):
                return i + 1, af.cond(af.equal(i % 3, 0), lambda: acc + 10, lambda: acc - 1)

            return af.while_loop(lambda i, a: i < 7, body, [af.constant(0), af.constant(0)])[1]

        out = af.cond(p, true_fn, lambda: af.constant(-5))
    async with af.Session(graph=graph) as sess:
        for _ in range(2):
            expected = sum(10 if i % 3 == 0 else -1 for i in range(7)) if pred else -5
            assert await sess.run(out, {p: pred}) == expected


async def test_fetching_the_untaken_branch_is_an_error(graph):
    with graph.as_default():
        p = af.placeholder(af.bool, [])
        inside = []

        def true_fn():
            inside.append(af.constant(3.0) * 2)
            return inside[0]

        out = af.cond(p, true_fn, lambda: af.constant(0.0))
    async with af.Session(graph=graph) as sess:
        assert await sess.run([out, inside[0]], {p: True}) == [6.0, 6.0]
        with pytest.raises(errors.InvalidArgumentError, match="Retval.*does not have value"):
            await sess.run([out, inside[0]], {p: False})


# -- loops -----------------------------------------------------------------------------------


async def test_loop_of_zero_iterations_yields_its_initial_values(graph):
    with graph.as_default():
        n = af.placeholder(af.int32, [])
        out = af.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 2),
                            [af.constant(0), af.constant([1.0, 2.0])])
        never = af.while_loop(lambda i: i < 0, lambda i: i + 1, [af.constant(5)])
    async with af.Session(graph=graph) as sess:
        i, a = await sess.run(out, {n: 0})
        assert int(i) == 0 and a.tolist() == [1.0, 2.0]
        assert await sess.run(never) == 5


async def test_nested_loops_whose_inner_count_depends_on_the_outer_iteration(graph):
    with graph.as_default():
        def outer_body(j, acc):
            inner = af.while_loop(lambda k, a: k < j, lambda k, a: (k + 1, a + k),
                                  [af.constant(0), af.constant(0)])
            return j + 1, acc + inner[1]

        out = af.while_loop(lambda j, acc: j < 8, outer_body, [af.constant(0), af.constant(0)])
        zero_inner = af.while_loop(
            lambda j: j < 4, lambda j: af.while_loop(lambda k: k < 0, lambda k: k + 1, [j]) + 1,
            [af.constant(0)], parallel_iterations=1)
    async with af.Session(graph=graph) as sess:
        j, acc = await sess.run(out)
        assert (int(j), int(acc)) == (8, sum(j * (j - 1) // 2 for j in range(8)))
        assert await sess.run(zero_inner) == 4


async def test_parallel_iterations_one_runs_async_bodies_one_at_a_time(graph):
    events = []

    async def step(i):
        events.append(("start", int(i)))
        await asyncio.sleep(0.001)
        events.append(("end", int(i)))
        return i

    with graph.as_default():
        def body(i, acc):
            v = af.async_py_func(step, [i], af.int32)
            v.set_shape([])
            return i + 1, acc + v

        out = af.while_loop(lambda i, a: i < 5, body, [af.constant(0), af.constant(0)],
                            parallel_iterations=1)
    async with af.Session(graph=graph) as sess:
        i, acc = await sess.run(out)
    assert (int(i), int(acc)) == (5, 10)
    assert events == [(kind, i) for i in range(5) for kind in ("start", "end")]


@pytest.mark.parametrize("n, expected", [(0, []), (3, [0.0, 2.0, 4.0]),
                                         (9, [0.0, 2.0, 4.0, 6.0, 8.0])])
async def test_tensor_array_written_in_a_loop_with_maximum_iterations(graph, n, expected):
    with graph.as_default():
        limit = af.placeholder(af.int32, [])
        ta = af.TensorArray(af.float32, size=0, dynamic_size=True)
        i, ta = af.while_loop(lambda i, ta: i < limit,
                              lambda i, ta: (i + 1, ta.write(i, af.cast(i, af.float32) * 2)),
                              (af.constant(0), ta), maximum_iterations=5)
        stacked = ta.stack()
    async with af.Session(graph=graph) as sess:
        count, values = await sess.run([i, stacked], {limit: n})
    assert int(count) == min(n, 5)
    assert values.tolist() == expected


async def test_async_error_inside_a_loop_names_the_frame_and_iteration(graph):
    async def fail_at_three(i):
        await asyncio.sleep(0)
        if i == 3:
            raise KeyError("missing")
        return i

    with graph.as_default():
        def body(i):
            v = af.async_py_func(fail_at_three, [i], af.int32, name="lookup")
            v.set_shape([])
            return v + 1

        out = af.while_loop(lambda i: i < 5, body, [af.constant(0)])
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.UnknownError,
                           match=r"(?s)KeyError.*lookup.*iteration 3"):
            await sess.run(out)


async def test_fetching_a_tensor_inside_a_loop_is_rejected(graph):
    """It has one value per iteration: TF's client refuses it (ValueError, the graph marks
    loop ops unfetchable), and for an imported graph, which carries no loop contexts, the
    runtime refuses it (TF's fails when its _Retval is set twice); it must never return
    whichever iteration came last."""
    inside = []
    with graph.as_default():
        def outer_body(j):
            def body(i):
                inside.append(i + 1)
                return inside[-1]

            return af.while_loop(lambda i: i < 3, body, [j]) + 1

        out = af.while_loop(lambda j: j < 10, outer_body, [af.constant(0)])
        inner_identity = inside[0].op.inputs[0]  # the inner body's input
    async with af.Session(graph=graph) as sess:
        with pytest.raises(ValueError, match="marked as not fetchable"):
            await sess.run(inside[0])
        with pytest.raises(ValueError, match="marked as not fetchable"):
            await sess.run([out, inner_identity])
        assert await sess.run(out) == 10
    imported = af.Graph()
    with imported.as_default():
        af.import_graph_def(graph.as_graph_def(), name="")
    async with af.Session(graph=imported) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="Cannot fetch .*inside the while loop frame"):
            await sess.run(inside[0].name)
        with pytest.raises(errors.InvalidArgumentError, match="Cannot fetch"):
            await sess.run([out.name, inner_identity.name])
        assert await sess.run(out.name) == 10


async def test_feeding_a_tensor_inside_a_loop_is_rejected(graph):
    inside = []
    with graph.as_default():
        def body(i):
            inside.append(i + 1)
            return inside[0]

        out = af.while_loop(lambda i: i < 5, body, [af.constant(0)])
    async with af.Session(graph=graph) as sess:
        with pytest.raises(ValueError, match=f"Tensor {inside[0].name} may not be fed"):
            await sess.run(out, {inside[0]: 3})
        assert await sess.run(out) == 5
    imported = af.Graph()
    with imported.as_default():
        af.import_graph_def(graph.as_graph_def(), name="")
    async with af.Session(graph=imported) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="different frames"):
            await sess.run(out.name, {inside[0].name: 3})
        assert await sess.run(out.name) == 5


# -- feeds and fetches -------------------------------------------------------------------


async def test_a_fed_fetch_returns_the_fed_value(graph):
    """As TF's client: a tensor both fed and fetched is not sent to the runtime, its fed
    value is returned (the Placeholder itself must not run)."""
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
        y = x + 1
        z = y * 2
    async with af.Session(graph=graph) as sess:
        assert await sess.run([x, y], {x: 2.0}) == [2.0, 3.0]
        assert await sess.run(x, {x: 4.0}) == 4.0
        assert await sess.run({"y": y, "z": z}, {y: 5.0}) == {"y": 5.0, "z": 10.0}
        assert await sess.run(Pair(y, [y]), {x: 1.0, y: 7.0}) == Pair(7.0, [7.0])


async def test_the_runtime_rejects_a_tensor_both_fed_and_fetched(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="x:0 is both fed and fetched"):
            sess.make_callable(x, [x])
    direct = DirectSession()
    direct.extend(graph.as_graph_def())
    with pytest.raises(errors.InvalidArgumentError, match="both fed and fetched"):
        direct.get_executors(("x",), ("x:0",), ())
    with pytest.raises(errors.InvalidArgumentError, match="Duplicate feed"):
        direct.get_executors(("x", "x:0"), (), ("x",))
    direct.close()


async def test_a_control_dependency_on_a_fed_placeholder(graph):
    """TF moves a fed Placeholder's control edges to its feed: the Placeholder (which
    has no value) is not run."""
    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
        with af.control_dependencies([x]):
            z = af.constant(3.0)
    async with af.Session(graph=graph) as sess:
        assert await sess.run(z, {x: 1.0}) == 3.0
        with pytest.raises(errors.InvalidArgumentError, match="must feed a value"):
            await sess.run(z)


async def test_fetch_structures_with_duplicates_and_mappings(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        y = x * 2
        op = af.group(y)
    async with af.Session(graph=graph) as sess:
        out = await sess.run({"a": [y, (y, Pair(y, x))], "b": Pair(y.name, [op, {"z": y}]),
                              "c": op}, {x: [1.0, 2.0]})
        assert out["a"][0].tolist() == [2.0, 4.0]
        assert isinstance(out["a"][1], tuple) and isinstance(out["a"][1][1], Pair)
        assert out["a"][1][1].second.tolist() == [1.0, 2.0]
        assert out["b"].second[0] is None and out["c"] is None
        assert out["b"].second[1]["z"].tolist() == [2.0, 4.0]
        ordered = await sess.run(collections.OrderedDict(b=y, a=op), {x: [1.0, 1.0]})
        assert type(ordered) is collections.OrderedDict and list(ordered) == ["b", "a"]
        default = await sess.run(collections.defaultdict(list, {"y": y}), {x: [0.0, 1.0]})
        assert type(default) is collections.defaultdict
        assert default.default_factory is list and default["missing"] == []
        assert await sess.run([]) == [] and await sess.run({}) == {}
        assert await sess.run(()) == ()


async def test_a_run_of_targets_only(graph):
    calls = []
    with graph.as_default():
        v = af.py_func(lambda: calls.append(1) or np.int32(1), [], af.int32)
        grouped = af.group(v)
    async with af.Session(graph=graph) as sess:
        assert await sess.run(grouped) is None
        assert await sess.run(grouped.name) is None
        assert await sess.run([grouped, v.op]) == [None, None]
    assert calls == [1, 1, 1]


async def test_feeds_of_the_wrong_kind(graph):
    with graph.as_default():
        s = af.placeholder(af.string, [], name="s")
        b = af.placeholder(af.bool, [None], name="b")
        f = af.placeholder(af.float32, [], name="f")
        i = af.placeholder(af.int8, [], name="i")
    async with af.Session(graph=graph) as sess:
        assert await sess.run(af.identity(s), {s: "abc"}) == b"abc"
        with pytest.raises(errors.InternalError, match="Unsupported object type int"):  # TF's
            await sess.run(af.identity(s), {s: 3})
        assert (await sess.run(af.identity(b), {b: [1, 0, 2]})).tolist() == [True, False, True]
        with pytest.raises(ValueError, match="could not convert"):  # NumPy's, as TF's client
            await sess.run(af.identity(f), {f: "abc"})
        with pytest.raises(TypeError, match="not compatible with Tensor type"):
            await sess.run(af.identity(i), {i: 300})
        with pytest.raises(TypeError, match="cannot be a af.Tensor"):
            await sess.run(af.identity(f), {f: af.constant(1.0)})


# -- errors ----------------------------------------------------------------------------------


async def test_async_kernel_cancelled_before_it_started_does_not_hang_the_run(graph):
    """An async kernel dispatched in the same drain as a failing node is cancelled
    before its task's first step: its coroutine never runs, yet the run must end."""
    async def slow(v):
        await asyncio.sleep(0.01)
        return v

    with graph.as_default():
        a = af.async_py_func(slow, [af.constant(1.0)], af.float32)
        shape_unknown = af.placeholder_with_default(af.constant([1, 2]), [None])
        bad = af.reshape(shape_unknown, [3], name="bad_reshape")
    async with af.Session(graph=graph) as sess:
        before = set(asyncio.all_tasks())
        with pytest.raises(errors.InvalidArgumentError, match="bad_reshape"):
            await asyncio.wait_for(sess.run([a, bad]), 5)
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()
        assert await sess.run(a) == 1.0


async def test_python_exceptions_in_kernels_map_to_tf_classes_naming_the_node(graph):
    def key_error(v):
        raise KeyError("nope")

    def runtime_error(v):
        raise RuntimeError("bad")

    async def async_runtime_error(v):
        raise RuntimeError("abad")

    with graph.as_default():
        one = af.constant(1)
        k = af.py_func(key_error, [one], af.int32, name="key_op")
        r = af.py_func(runtime_error, [one], af.int32, name="runtime_op")
        ar = af.async_py_func(async_runtime_error, [one], af.int32, name="async_op")
    async with af.Session(graph=graph) as sess:
        # TF's py_func: ValueError/TypeError -> InvalidArgument, StopIteration -> OutOfRange,
        # MemoryError -> ResourceExhausted, NotImplementedError -> Unimplemented, else Unknown.
        with pytest.raises(errors.UnknownError, match=r"(?s)KeyError: 'nope'.*key_op"):
            await sess.run(k)
        with pytest.raises(errors.UnknownError, match=r"(?s)RuntimeError: bad.*runtime_op"):
            await sess.run(r)
        with pytest.raises(errors.UnknownError, match=r"(?s)RuntimeError: abad.*async_op"):
            await sess.run(ar)


async def test_py_func_exception_mapping_follows_tf(graph):
    def raiser(exc):
        def fn(v):
            raise exc
        return fn

    cases = [(ValueError("v"), errors.InvalidArgumentError),
             (TypeError("t"), errors.InvalidArgumentError),
             (StopIteration(), errors.OutOfRangeError),
             (NotImplementedError("n"), errors.UnimplementedError),
             (MemoryError("m"), errors.ResourceExhaustedError),
             (IndexError("i"), errors.UnknownError)]
    with graph.as_default():
        ops_ = [af.py_func(raiser(exc), [af.constant(1)], af.int32) for exc, _ in cases]
    async with af.Session(graph=graph) as sess:
        for op, (_, cls) in zip(ops_, cases, strict=True):
            with pytest.raises(cls) as info:
                await sess.run(op)
            assert type(info.value) is cls


class _UserError(errors.InvalidArgumentError):
    def __init__(self, message):
        super().__init__(None, None, message)


async def test_a_kernel_raising_a_user_op_error_subclass(graph):
    """An OpError subclass with its own constructor, or an OpError made with an explicit
    code, reaches the caller as itself (naming the node); it must not break the loop's
    completion callback and leave the run hanging."""
    def user_error(v):
        raise _UserError("custom failure")

    def coded_error(v):
        raise errors.OpError(None, None, "coded failure", errors.ABORTED)

    with graph.as_default():
        one = af.constant(1)
        u = af.py_func(user_error, [one], af.int32, name="user_op")
        c = af.py_func(coded_error, [one], af.int32, name="coded_op")
    async with af.Session(graph=graph) as sess:
        with pytest.raises(_UserError, match=r"(?s)custom failure.*user_op") as info:
            await asyncio.wait_for(sess.run(u), 5)
        assert info.value.error_code == errors.INVALID_ARGUMENT
        assert info.value.node_def.name == "user_op"
        with pytest.raises(errors.OpError, match="coded failure") as info:
            await asyncio.wait_for(sess.run(c), 5)
        assert info.value.error_code == errors.ABORTED


class _DropsItsOutput(op_kernel.OpKernel):
    """An inline kernel that returns no value for its node's one output."""

    def compute(self, ctx, inputs):
        return ()


async def test_a_propagation_failure_fails_its_run_only(graph, user_op):
    """A kernel returning fewer outputs than its node has breaks propagation, not the
    kernel call: the run fails (InternalError) instead of hanging, and other runs on the
    loop go on."""
    drops = user_op("TestDropsItsOutput", _DropsItsOutput)

    async def slow(v):
        await asyncio.sleep(0.02)
        return v

    with graph.as_default():
        x = af.placeholder(af.float32, None)
        inline = drops(x=x) + 1.0
        after_async = drops(x=af.async_py_func(slow, [x], af.float32)) + 1.0
        other = af.async_py_func(slow, [af.constant(2.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        pending = asyncio.ensure_future(sess.run(other))
        for fetch in (inline, after_async):
            with pytest.raises(errors.InternalError, match="IndexError"):
                await asyncio.wait_for(sess.run(fetch, {x: np.zeros(3)}), 5)
        assert await asyncio.wait_for(pending, 5) == 2.0


# -- cancellation, deadlines, close ----------------------------------------------------------


def _pool_loop(graph, started, n=200, delay=0.05):
    def slow(i):
        started.append(int(i))
        time.sleep(delay)
        return i

    with graph.as_default():
        def body(i, acc):
            v = af.py_func(slow, [i], af.int32)
            v.set_shape([])
            return i + 1, acc + v

        return af.while_loop(lambda i, a: i < n, body, [af.constant(0), af.constant(0)],
                             parallel_iterations=50)


POOL4 = config_pb2.ConfigProto(inter_op_parallelism_threads=4)


async def test_cancelling_a_loop_with_pool_work_in_flight_leaves_nothing_behind(graph):
    from aioflow.runtime.executor import observe_steps

    states = []
    started = []
    out = _pool_loop(graph, started)
    with observe_steps(states.extend):
        sess = af.Session(graph=graph, config=POOL4)
        try:
            before = set(asyncio.all_tasks())
            task = asyncio.ensure_future(sess.run(out))
            await asyncio.sleep(0.08)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            count = len(started)
            await asyncio.sleep(0.2)
            assert len(started) == count  # no queued job started after the cancellation
            assert count < 50
            assert set(asyncio.all_tasks()) - before == set()
        finally:
            await sess.close()
    assert len(states) == 1
    for state in states:
        assert state.in_flight == 0 and not state.jobs and not state.tasks


async def test_deadline_during_pool_work_in_a_loop(graph):
    started = []
    out = _pool_loop(graph, started)
    async with af.Session(graph=graph, config=POOL4) as sess:
        begin = time.perf_counter()
        with pytest.raises(errors.DeadlineExceededError,
                           match="^Timed out waiting for notification"):
            await sess.run(out, options=af.RunOptions(timeout_in_ms=100))
        assert time.perf_counter() - begin < 1.0
        count = len(started)
        await asyncio.sleep(0.2)
        assert len(started) == count
        started.clear()
        with graph.as_default():
            quick = af.constant(3) + 1
        assert await sess.run(quick, options=af.RunOptions(timeout_in_ms=1000)) == 4


async def test_close_cancels_a_run_waiting_on_queued_pool_work(graph):
    """Closing the session shuts its pool down; a run still in flight is cancelled
    (TF's Close) instead of waiting forever for jobs the pool dropped."""
    started = []
    out = _pool_loop(graph, started)
    sess = af.Session(graph=graph, config=POOL4)
    task = asyncio.ensure_future(sess.run(out))
    await asyncio.sleep(0.08)
    await sess.close()
    with pytest.raises(errors.CancelledError, match="Session has been closed"):
        await asyncio.wait_for(task, 5)
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(out)


def test_sync_session_close_reuse_and_exit():
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.int32, [])
        q = p * 2
    sess = af.SyncSession(graph=g)
    assert sess.run(q, {p: 2}) == 4
    call = sess.make_callable(q, [p])
    assert call(5) == 10
    sess.close()
    sess.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(q, {p: 2})
    with pytest.raises(RuntimeError, match="closed Session"):
        call(1)
    with af.SyncSession(graph=g) as sess2:
        assert sess2.run(q, {p: 3}) == 6


def test_sync_session_left_open_does_not_hang_interpreter_exit():
    """At interpreter exit the private loop's daemon thread no longer runs; a
    SyncSession collected then must not wait for it."""
    script = ("import aioflow as af\n"
              "g = af.Graph()\n"
              "with g.as_default():\n"
              "    q = af.constant(2) * 3\n"
              "sess = af.SyncSession(graph=g)\n"
              "print(sess.run(q))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6"


# -- sessions, signatures, placement ---------------------------------------------------------


async def test_two_sessions_and_many_signatures_concurrently(graph):
    with graph.as_default():
        p = af.placeholder(af.int32, [])
        loop = af.while_loop(lambda i, a: i < p, lambda i, a: (i + 1, a + i),
                             [af.constant(0), af.constant(0)])
        doubled = p * 2
    s1, s2 = af.Session(graph=graph), af.Session(graph=graph)
    try:
        results = await asyncio.gather(*[(s1 if k % 2 else s2).run(loop if k % 3 else doubled,
                                                                    {p: k})
                                         for k in range(40)])
        for k, value in enumerate(results):
            if k % 3:
                assert tuple(map(int, value)) == (k, k * (k - 1) // 2)
            else:
                assert int(value) == 2 * k
        # First runs of five signatures at once, each building its executors.
        s3 = af.Session(graph=graph)
        got = await asyncio.gather(s3.run(loop, {p: 3}), s3.run(doubled, {p: 4}),
                                   s3.run([doubled, loop], {p: 5}), s3.run(loop[0], {p: 6}),
                                   s3.run({"x": doubled}, {p: 7}))
        await s3.close()
        assert got[1] == 8 and got[3] == 6 and got[4] == {"x": 14}
        assert tuple(map(int, got[0])) == (3, 3)
        assert int(got[2][0]) == 10 and tuple(map(int, got[2][1])) == (5, 10)
        await s1.close()
        assert await s2.run(doubled, {p: 1}) == 2  # the other session is unaffected
    finally:
        await s1.close()
        await s2.close()


async def test_a_node_asking_for_a_gpu(graph):
    with graph.as_default():
        with af.device("/device:GPU:0"):
            c = af.constant(1.0) + 1
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="Cannot assign a device"):
            await sess.run(c)
    soft = config_pb2.ConfigProto(allow_soft_placement=True)
    async with af.Session(graph=graph, config=soft) as sess:
        assert await sess.run(c) == 2.0


# -- graphs that grow, get finalized, get deep ------------------------------------------------


async def test_run_and_make_callable_after_finalize(graph):
    with graph.as_default():
        a = af.constant(2.0)
        b = a * 3
    graph.finalize()
    async with af.Session(graph=graph) as sess:
        assert await sess.run(b) == 6.0
        assert await sess.make_callable(b)() == 6.0


async def test_the_graph_grows_between_runs(graph):
    with graph.as_default():
        a = af.placeholder(af.float32, [], name="a")
        b = a * 3
    async with af.Session(graph=graph) as sess:
        assert await sess.run(b, {a: 1.0}) == 3.0
        old_call = sess.make_callable(b, [a])
        with graph.as_default():
            c = b + 1
            d = af.while_loop(lambda i: i < c, lambda i: i + 1, [af.constant(0.0)])
        assert await sess.run([c, d], {a: 1.0}) == [4.0, 4.0]
        assert await old_call(2.0) == 6.0
        new_call = sess.make_callable([c, d], [a])
        assert await new_call(2.0) == [7.0, 7.0]
        with graph.as_default():
            e = d * 2
        assert await new_call(3.0) == [10.0, 10.0]
        assert await sess.run(e, {a: 1.0}) == 8.0


# Slow; the segments mode also runs segment discovery and compilation over the chain.
@pytest.mark.segment_modes("segments")
async def test_a_chain_of_a_hundred_thousand_nodes():
    """Construction, pruning, frame analysis and the executor are iterative: no
    recursion limit on a 100k-node chain."""
    graph_def = graph_pb2.GraphDef()
    node = graph_def.node.add(name="x", op="Placeholder")
    node.attr["dtype"].type = types_pb2.DT_FLOAT
    prev = "x"
    for i in range(100_000):
        node = graph_def.node.add(name=f"n{i}", op="Identity", input=[prev])
        node.attr["T"].type = types_pb2.DT_FLOAT
        prev = node.name
    direct = DirectSession()
    try:
        direct.extend(graph_def)
        eak = direct.get_executors(("x:0",), (f"{prev}:0",), ())
        assert await direct.run_executors(eak, [np.float32(3.0)]) == [3.0]
    finally:
        direct.close()


class _RecordsItsThread(op_kernel.OpKernel):
    """An inline kernel (runs where its inputs are propagated) recording its thread."""

    threads: list[int] = []

    def compute(self, ctx, inputs):
        self.threads.append(threading.get_ident())
        return (inputs[0],)


@pytest.mark.executor_types()  # the default executor's thread pool
async def test_pool_completions_come_back_on_the_loop_thread(graph, user_op):
    """Kernels run in pool threads; their results are propagated on the loop thread
    (executor state is touched only there): the inline kernel each pool kernel feeds
    runs on the loop thread."""
    record = user_op("TestRecordsItsThread", _RecordsItsThread)
    _RecordsItsThread.threads.clear()
    loop_thread = threading.get_ident()
    seen = []

    def work(v):
        seen.append(threading.get_ident())
        return v + 1

    with graph.as_default():
        out = af.while_loop(
            lambda i: i < 20,
            lambda i: af.reshape(record(x=af.py_func(work, [i], af.int32)), []),
            [af.constant(0)])
    async with af.Session(graph=graph) as sess:
        assert await asyncio.wait_for(sess.run(out), 10) == 20
    assert len(seen) == 20 and loop_thread not in seen
    assert len(_RecordsItsThread.threads) == 20
    assert set(_RecordsItsThread.threads) == {loop_thread}


# -- call-frame and transfer ops written into a user graph by hand (fuzz findings) --------

_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _user_graph(text: str) -> af.Graph:
    from google.protobuf import text_format
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(text_format.Parse(text, graph_pb2.GraphDef()), name="")
    return g


def _transfer(name: str, op: str, tensor_name: str, extra: str) -> str:
    return (f'node {{ name: "{name}" op: "{op}" {extra} '
            f'attr {{ key: "tensor_name" value {{ s: "{tensor_name}" }} }} '
            f'attr {{ key: "send_device" value {{ s: "{_CPU0}" }} }} '
            f'attr {{ key: "recv_device" value {{ s: "{_CPU0}" }} }} '
            f'attr {{ key: "send_device_incarnation" value {{ i: 1 }} }} }}')


_FLOAT_CONST = ('node { name: "c" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } '
                'attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} '
                'float_val: 3 } } } }')


async def test_arg_and_retval_out_of_range_are_tfs_errors():
    # As TF 2.21 (checked): "GetArg 3 is not within [0, 0)" / "SetRetval 5 is not within
    # [0, 0)", InvalidArgumentError naming the node (was IndexError wrapped).
    g = _user_graph(
        'node { name: "a" op: "_Arg" attr { key: "T" value { type: DT_FLOAT } } '
        'attr { key: "index" value { i: 3 } } } '
        'node { name: "y" op: "Identity" input: "a" attr { key: "T" value { type: DT_FLOAT } } } '
        + _FLOAT_CONST +
        'node { name: "r" op: "_Retval" input: "c" attr { key: "T" value { type: DT_FLOAT } } '
        'attr { key: "index" value { i: 5 } } }')
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"GetArg 3 is not within \[0, 0\)"):
            await sess.run("y:0")
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"SetRetval 5 is not within \[0, 0\)") as info:
            await sess.run("r")
        assert info.value.node_def.name == "r"


async def test_send_and_recv_in_a_one_device_user_graph_meet_in_the_step_rendezvous():
    # TF gives every step a rendezvous; a hand-written _Send/_Recv pair on one device
    # meets there, and a _Recv whose _Send is not run waits for the deadline (was an
    # AttributeError: no rendezvous in a one-partition step).
    g = _user_graph(
        _FLOAT_CONST
        + _transfer("s", "_Send", "t", 'input: "c" attr { key: "T" value { type: DT_FLOAT } }')
        + _transfer("r", "_Recv", "t", 'attr { key: "tensor_type" value { type: DT_FLOAT } }')
        + _transfer("r2", "_Recv", "t2", 'attr { key: "tensor_type" value { type: DT_FLOAT } }'))
    options = config_pb2.RunOptions(timeout_in_ms=200)
    async with af.Session(graph=g) as sess:
        value, _ = await sess.run(["r:0", "s"], options=options)
        assert value == np.float32(3)
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run("r2:0", options=options)


async def test_host_send_and_recv_in_a_one_device_user_graph_meet_in_the_step_rendezvous():
    # The same for the host-memory forms (found by the fuzzer: an AttributeError when a
    # one-device step with only _HostRecv got no rendezvous).
    g = _user_graph(
        _FLOAT_CONST
        + _transfer("s", "_HostSend", "t", 'input: "c" attr { key: "T" value { type: DT_FLOAT } }')
        + _transfer("r", "_HostRecv", "t",
                    'attr { key: "tensor_type" value { type: DT_FLOAT } }')
        + _transfer("r2", "_HostRecv", "t2",
                    'attr { key: "tensor_type" value { type: DT_FLOAT } }'))
    options = config_pb2.RunOptions(timeout_in_ms=200)
    async with af.Session(graph=g) as sess:
        value, _ = await sess.run(["r:0", "s"], options=options)
        assert value == np.float32(3)
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run("r2:0", options=options)


async def test_thousands_of_concurrent_runs_mixing_faults_each_get_their_own_outcome(graph):
    """2,000 runs gathered on one loop: results, kernel errors (inline and on the pool),
    deadlines of awaited kernels, and cancellations, interleaved. Each run ends with its
    own outcome, and nothing is left behind: no task, no pool job, no queued state."""
    def pool_work(v):
        if v < 0:
            raise ValueError("negative")
        return v * 2.0

    async def slow(v):
        await asyncio.sleep(1.0)
        return v

    with graph.as_default():
        x = af.placeholder(af.float32, [], name="x")
        doubled = af.py_func(pool_work, [x], af.float32, name="pool_work")
        checked = af.check_numerics(x, "bad x")
        inline_sum = checked + 1.0
        slept = af.async_py_func(slow, [x], af.float32, name="slow")
    timeout = af.RunOptions(timeout_in_ms=50)
    kinds = ["ok_pool", "ok_inline", "pool_error", "inline_error", "deadline", "cancel"]
    async with af.Session(graph=graph) as sess:
        async def one(i):
            kind = kinds[i % len(kinds)]
            v = float(i)
            if kind == "ok_pool":
                return kind, await sess.run(doubled, {x: v})
            if kind == "ok_inline":
                return kind, await sess.run(inline_sum, {x: v})
            if kind == "pool_error":
                return kind, await sess.run(doubled, {x: -1.0 - v})
            if kind == "inline_error":
                return kind, await sess.run(inline_sum, {x: float("nan")})
            if kind == "deadline":
                return kind, await sess.run(slept, {x: v}, options=timeout)
            task = asyncio.ensure_future(sess.run(slept, {x: v}))
            await asyncio.sleep(0.01)
            task.cancel()
            return kind, await task

        before = set(asyncio.all_tasks())
        outcomes = await asyncio.gather(*(one(i) for i in range(2000)), return_exceptions=True)
        for i, outcome in enumerate(outcomes):
            kind = kinds[i % len(kinds)]
            if kind == "ok_pool":
                assert outcome == (kind, 2.0 * i)
            elif kind == "ok_inline":
                assert outcome == (kind, i + 1.0)
            elif kind == "pool_error":
                assert isinstance(outcome, errors.InvalidArgumentError), outcome
                assert "pool_work" in str(outcome) and "negative" in str(outcome)
            elif kind == "inline_error":
                assert isinstance(outcome, errors.InvalidArgumentError), outcome
                assert "bad x" in str(outcome)
            elif kind == "deadline":
                assert isinstance(outcome, errors.DeadlineExceededError), outcome
            else:
                assert isinstance(outcome, asyncio.CancelledError), outcome
        await asyncio.sleep(0.05)  # cancelled async kernels finish unwinding
        assert set(asyncio.all_tasks()) - before == set()
        runner = loop_runner.get_runner()
        assert not runner.queue and not runner.draining
        # the session still works after all that
        assert await sess.run(doubled, {x: 4.0}) == 8.0
