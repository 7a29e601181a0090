"""The awaitable Session and the executor: fetch/feed semantics, errors, cancellation,
timeouts, concurrency, fairness, callables, partition graphs, the sync facade."""

from __future__ import annotations

import asyncio
import collections
import threading
import time

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.runtime.direct_session import DirectSession

pytestmark = pytest.mark.usefixtures("segments_mode", "executor_type")  # segments; executors


async def test_feed_and_fetch_structures(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[2], name="x")
        y = af.add(x, 1.0, name="y")
        z = af.multiply(y, 2.0, name="z")
        noop = af.no_op(name="noop")
    Pair = collections.namedtuple("Pair", "a b")
    async with af.Session(graph=graph) as sess:
        feed = {x: [1.0, 2.0]}
        out = await sess.run([y, (z, noop), {"k": Pair(y, "z:0")}], feed_dict=feed)
        np.testing.assert_allclose(out[0], [2.0, 3.0])
        assert isinstance(out[1], tuple) and out[1][1] is None
        np.testing.assert_allclose(out[1][0], [4.0, 6.0])
        assert isinstance(out[2]["k"], Pair)
        np.testing.assert_allclose(out[2]["k"].b, [4.0, 6.0])
        # Names as feed keys and fetches; an op name fetches None.
        assert (await sess.run("noop")) is None
        np.testing.assert_allclose(await sess.run("y:0", {"x:0": [0.0, 0.0]}), [1.0, 1.0])
        assert (await sess.run("y", {"x:0": [0.0, 1.0]})) is None  # an op name is a target
        with pytest.raises(TypeError, match="Cannot interpret feed_dict key as Tensor"):
            await sess.run(y, {"x": [0.0, 1.0]})  # as in TF, a feed key names a tensor


async def test_scalar_fetch_is_numpy_scalar(graph):
    with graph.as_default():
        c = af.constant(3.0)
    async with af.Session(graph=graph) as sess:
        value = await sess.run(c)
    assert isinstance(value, np.float32) and value == 3.0


async def test_same_tensor_fetched_twice_is_computed_once(graph):
    calls = []

    def count(v):
        calls.append(1)
        return v + 1

    with graph.as_default():
        x = af.constant(1.0)
        y = af.py_func(count, [x], af.float32)
    async with af.Session(graph=graph) as sess:
        a, b, c = await sess.run([y, y, [y]])
    assert a == b == c[0] == 2.0
    assert len(calls) == 1


async def test_feeding_a_non_placeholder_cuts_its_producer(graph):
    calls = []

    def produce():
        calls.append(1)
        return np.float32(5.0)

    with graph.as_default():
        p = af.py_func(produce, [], af.float32)
        q = af.multiply(p, 2.0)
    async with af.Session(graph=graph) as sess:
        assert await sess.run(q, {p: 10.0}) == 20.0
        assert calls == []
        assert await sess.run(q) == 10.0
        assert calls == [1]


async def test_unknown_fetch_name_is_a_value_error(graph):
    with graph.as_default():
        af.constant(1.0, name="c")
    async with af.Session(graph=graph) as sess:  # TF's client: ValueError, not NotFoundError
        with pytest.raises(ValueError, match="Argument `fetch` = nope:0 cannot be interpreted"):
            await sess.run("nope:0")


async def test_unfed_placeholder(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[2], name="x")
        y = af.identity(x)
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="You must feed a value for placeholder tensor 'x'"):
            await sess.run(y)


async def test_wrong_shape_feed(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[2], name="x")
        y = af.identity(x)
    async with af.Session(graph=graph) as sess:
        with pytest.raises(ValueError,  # TF 2.21's client: a ValueError, this text
                           match=r"^Cannot feed value of shape \(3,\) for Tensor x:0, which has "
                                 r"shape \(2,\)$"):
            await sess.run(y, {x: [1.0, 2.0, 3.0]})


async def test_feed_values_are_converted_to_the_tensor_dtype(graph):
    with graph.as_default():
        x = af.placeholder(af.int32, shape=[None], name="x")
        y = af.identity(x)
    async with af.Session(graph=graph) as sess:
        out = await sess.run(y, {x: [1.0, 2.0]})
        assert out.dtype == np.int32
        with pytest.raises(TypeError, match="not compatible with Tensor type"):
            await sess.run(y, {x: 2**40})


async def test_kernel_error_names_the_node_and_where_it_was_created(graph):
    def boom(v):
        raise ValueError("bad value")

    with graph.as_default():
        x = af.constant(1.0)
        af.py_func(boom, [x], af.float32, name="exploder")
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await sess.run("exploder:0")
    message = str(info.value)
    assert "bad value" in message and "exploder" in message and "PyFunc" in message
    assert "test_session.py" in message


async def test_reshape_error_is_invalid_argument_naming_node(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, shape=None, name="x")
        r = af.reshape(x, [4], name="bad_reshape")
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="bad_reshape"):
            await sess.run(r, {x: np.zeros(6, np.float32)})


async def test_cancellation_leaves_nothing_behind(graph):
    started = asyncio.Event()
    cancelled = []

    async def forever(v):
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return v

    with graph.as_default():
        y = af.async_py_func(forever, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        before = set(asyncio.all_tasks())
        task = asyncio.ensure_future(sess.run(y))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert cancelled == [True]
        assert set(asyncio.all_tasks()) - before == set()


@pytest.mark.executor_types()  # the default executor's thread pool
async def test_cancellation_waits_for_thread_work(graph):
    release = threading.Event()
    finished = []

    def slow(v):
        release.wait(5)
        finished.append(True)
        return v

    with graph.as_default():
        y = af.py_func(slow, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        task = asyncio.ensure_future(sess.run(y))
        await asyncio.sleep(0.05)
        task.cancel()
        asyncio.get_running_loop().call_later(0.05, release.set)
        with pytest.raises(asyncio.CancelledError):
            await task
        # The run returned only after the kernel already in a thread had finished.
        assert finished == [True]


async def test_timeout_raises_deadline_exceeded(graph):
    async def slow(v):
        await asyncio.sleep(10)
        return v

    with graph.as_default():
        y = af.async_py_func(slow, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        start = time.perf_counter()
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(y, options=af.RunOptions(timeout_in_ms=50))
        assert time.perf_counter() - start < 2.0


async def test_run_after_close(graph):
    with graph.as_default():
        c = af.constant(1.0)
    sess = af.Session(graph=graph)
    assert await sess.run(c) == 1.0
    await sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(c)


async def test_concurrent_runs_get_their_own_results(graph):
    async def delay(v):
        await asyncio.sleep(0.01 * float(v.sum() % 3))
        return v * 10

    with graph.as_default():
        x = af.placeholder(af.float32, shape=[3])
        y = af.async_py_func(delay, [af.add(x, 1.0)], af.float32)
        z = af.reduce_sum(y)
    async with af.Session(graph=graph) as sess:
        inputs = [np.full(3, i, np.float32) for i in range(40)]
        outs = await asyncio.gather(*(sess.run(z, {x: v}) for v in inputs))
    assert [float(o) for o in outs] == [30.0 * (i + 1) for i in range(40)]


async def test_async_kernels_overlap_on_one_loop(graph):
    async def io(v):
        await asyncio.sleep(0.1)
        return v

    with graph.as_default():
        y = af.async_py_func(io, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        start = time.perf_counter()
        await asyncio.gather(*(sess.run(y) for _ in range(10)))
        assert time.perf_counter() - start < 0.5


@pytest.mark.executor_types()  # the default executor's thread pool
async def test_expensive_kernels_run_on_the_device_pool(graph):
    names = []

    def where(v):
        names.append(threading.current_thread().name)
        return v

    with graph.as_default():
        y = af.py_func(where, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        await sess.run(y)
    assert names[0].startswith("aioflow-CPU")
    async with af.Session(graph=graph, inline_all=True) as sess:
        await sess.run(y)
    assert names[1] == threading.current_thread().name


# Slow (a 40k-node graph to build); compiled segments are the mode that holds the loop
# longest per item. The interpreter's slices: test_long_loop_yields_to_the_loop.
@pytest.mark.segment_modes("segments")
async def test_long_run_yields_to_the_loop(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[])
        y = x
        for _ in range(20000):
            y = y + 1.0
    lags = []
    async with af.Session(graph=graph) as sess:
        await sess.run(y, {x: 0.0})
        done = False

        async def heartbeat():
            while not done:
                t = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - t - 0.001)

        hb = asyncio.ensure_future(heartbeat())
        await asyncio.sleep(0)
        outs = await asyncio.gather(*(sess.run(y, {x: 0.0}) for _ in range(16)))
        done = True
        await hb
    assert all(float(o) == 20000.0 for o in outs)
    assert len(lags) >= 5, "the heartbeat never ran while the runs were in flight"
    assert max(lags) < 0.05


async def test_make_callable(graph):
    with graph.as_default():
        a = af.placeholder(af.float32, shape=[], name="a")
        b = af.placeholder(af.float32, shape=[], name="b")
        s = af.subtract(a, b)
    async with af.Session(graph=graph) as sess:
        call = sess.make_callable([s, s], feed_list=[b, a])
        assert await call(1.0, 5.0) == [4.0, 4.0]
        with pytest.raises(TypeError):
            await call(1.0)


async def test_make_callable_checks_array_feeds_of_the_tensors_dtype(graph):
    """An array already of the fed tensor's dtype goes in as it is, its shape checked;
    others are converted (or refused) as by sess.run."""
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[None, 3], name="x")
        y = af.identity(x * 2.0, name="y")
    async with af.Session(graph=graph) as sess:
        call = sess.make_callable(y, [x])
        v = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(await call(v), v * 2)
        np.testing.assert_array_equal(await call(v.astype(np.float64)), v * 2)
        np.testing.assert_array_equal(await call(v.astype(">f4")), v * 2)  # byte order
        with pytest.raises(ValueError, match=r"^Cannot feed value of shape \(2, 2\) for "
                                             r"Tensor x:0, which has shape \(None, 3\)"):
            await call(np.zeros((2, 2), np.float32))
        with pytest.raises(ValueError, match=r"^Cannot feed value of shape \(3,\)"):
            await call(np.zeros(3, np.float32))
        with pytest.raises(ValueError, match=r"^Cannot feed value of shape \(\)"):
            await call(np.float32(1.0))


async def test_incremental_extend(graph):
    with graph.as_default():
        a = af.constant(2.0, name="a")
    async with af.Session(graph=graph) as sess:
        assert await sess.run(a) == 2.0
        with graph.as_default():
            b = af.multiply(a, 3.0, name="b")
        assert await sess.run(b) == 6.0
        assert len(sess._direct._graph_def.node) == len(graph.get_operations())


def test_extend_with_existing_name_is_an_error(graph):
    with graph.as_default():
        af.constant(2.0, name="a")
    direct = DirectSession()
    direct.extend(graph.as_graph_def())
    with pytest.raises(errors.InvalidArgumentError, match="'a'"):
        direct.extend(graph.as_graph_def())


async def test_output_partition_graphs(graph):
    with graph.as_default():
        x = af.placeholder(af.float32, shape=[], name="x")
        y = af.add(x, 1.0, name="y")
        af.constant(5.0, name="unused")
    async with af.Session(graph=graph) as sess:
        meta = af.RunMetadata()
        await sess.run(y, {x: 1.0}, options=af.RunOptions(output_partition_graphs=True),
                       run_metadata=meta)
    assert len(meta.partition_graphs) == 1
    ops_run = sorted(n.op for n in meta.partition_graphs[0].node)
    assert ops_run == ["AddV2", "Const", "_Arg", "_Retval"]
    assert all(n.device.endswith("device:CPU:0") for n in meta.partition_graphs[0].node)


async def test_fetching_an_unknown_type_is_a_type_error(graph):
    async with af.Session(graph=graph) as sess:
        with pytest.raises(TypeError):
            await sess.run(3.5)


def test_sync_session():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[])
        y = af.multiply(x, 2.0)
    with af.SyncSession(graph=g) as sess:
        assert sess.run(y, {x: 4.0}) == 8.0
        call = sess.make_callable(y, [x])
        assert call(1.5) == 3.0
    with pytest.raises(RuntimeError):
        sess.run(y, {x: 1.0})


async def test_sync_session_refuses_inside_a_loop():
    g = af.Graph()
    with g.as_default():
        c = af.constant(1.0)
    sess = af.SyncSession(graph=g)
    try:
        with pytest.raises(RuntimeError, match="inside an event loop"):
            sess.run(c)
    finally:
        sess.close()


async def test_warn_overrun_flags_a_long_inline_stretch(graph):
    def slow(v):
        time.sleep(0.02)
        return v

    with graph.as_default():
        y = af.py_func(slow, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph, inline_all=True, warn_overrun=True,
                          time_budget_ms=2) as sess:
        with pytest.warns(RuntimeWarning, match="over its 2.00 ms budget"):
            await sess.run(y)


async def test_budget_and_overrun_warning_belong_to_their_session(graph):
    """One session's options never change another session's runs on the same loop."""
    import warnings

    from aioflow.runtime.loop_runner import DEFAULT_TIME_BUDGET_S, get_runner

    def slow(v):
        time.sleep(0.02)
        return v

    with graph.as_default():
        y = af.py_func(slow, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph, inline_all=True, warn_overrun=True,
                          time_budget_ms=50) as loud, \
            af.Session(graph=graph, inline_all=True) as quiet:
        with pytest.warns(RuntimeWarning, match="over its 5.00 ms budget"):
            async with af.Session(graph=graph, inline_all=True, warn_overrun=True,
                                  time_budget_ms=5) as strict:
                await strict.run(y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            await quiet.run(y)   # no warning: the other sessions' option is not its own
            await loud.run(y)    # 20 ms is within its own 50 ms budget
    assert get_runner().budget == DEFAULT_TIME_BUDGET_S


@pytest.mark.executor_types()  # the default executor's thread pool
async def test_pool_kernels_release_their_inputs_before_the_step_ends(graph):
    import weakref

    refs = []

    def make():
        big = np.ones(100_000, np.float32)
        refs.append(weakref.ref(big))
        return big

    def check(v):
        import gc

        gc.collect()
        # The first array was consumed by the previous pool kernel: nothing holds it now.
        return np.float32(refs[0]() is None)

    with graph.as_default():
        a = af.py_func(make, [], af.float32)
        b = af.py_func(lambda v: v * 2, [a], af.float32)
        c = af.py_func(check, [b], af.float32)
    async with af.Session(graph=graph) as sess:
        assert await sess.run(c) == 1.0


async def test_nd_index_reverse_mirror_pad_and_shift_ops_run(graph):
    """GatherNd, ReverseV2, ScatterNd, MirrorPad and LeftShift through the executor; a
    kernel's error comes back from run."""
    params = np.arange(12.0).reshape(3, 4)
    with graph.as_default():
        i = af.placeholder(af.int32, [None, 1], name="i")
        rows = af.reverse(af.gather_nd(params, i), [1])
        summed = af.scatter_nd(i, rows, [3, 4])
        padded = af.pad(summed, [[0, 0], [1, 1]], mode="REFLECT")
        shifted = af.bitwise.left_shift(af.constant([1, -1], af.int8),
                                        af.constant([7, 9], af.int8))
    async with af.Session(graph=graph) as sess:
        out = await sess.run([rows, summed, padded, shifted], {i: [[2], [2]]})
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"indices\[1\] = \[3\] does not index into param shape \[3,4\]"):
            await sess.run(rows, {i: [[0], [3]]})
    expected_rows = params[[2, 2]][:, ::-1]
    np.testing.assert_array_equal(out[0], expected_rows)
    expected_sum = np.zeros((3, 4))
    expected_sum[2] = 2 * expected_rows[0]
    np.testing.assert_array_equal(out[1], expected_sum)
    np.testing.assert_array_equal(out[2], np.pad(expected_sum, [[0, 0], [1, 1]], mode="reflect"))
    np.testing.assert_array_equal(out[3], np.int8([-128, -128]))
