"""Steps across devices: partitioning with _Send/_Recv pairs and the per-step rendezvous."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors, op_kernel
from aioflow.framework.rendezvous_key import create_key
from aioflow.runtime.rendezvous import Rendezvous

pytestmark = pytest.mark.usefixtures("segments_mode")  # compiled segments on and off

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
TWO_CPUS = af.ConfigProto(device_count={"CPU": 2})


def _nodes(graph_def, op):
    return [n for n in graph_def.node if n.op == op]


async def test_values_cross_devices_both_ways(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3])
        with af.device("/cpu:1"):
            y = x * 2.0
            total = af.reduce_sum(y)
        z = y + 1.0
    xv = np.array([1.0, -2.0, 3.5], np.float32)
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        (zv, tv), parts = await run_with_partition_graphs(sess, [z, total], {x: xv})
    np.testing.assert_array_equal(zv, xv * 2 + 1)
    assert tv == pytest.approx(float((xv * 2).sum()))
    assert set(parts) == {CPU0, CPU1}
    for graph_def in parts.values():  # every node of a partition is on its device
        assert len({n.device for n in graph_def.node}) == 1


async def test_send_recv_pairs_carry_tf_attrs_and_names(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        with af.device("/cpu:1"):
            y = af.identity(x, name="y")
        z = af.negative(y, name="z")
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        _, parts = await run_with_partition_graphs(sess, z, {x: np.ones(2, np.float32)})
    sends = _nodes(parts[CPU0], "_Send") + _nodes(parts[CPU1], "_Send")
    recvs = _nodes(parts[CPU0], "_Recv") + _nodes(parts[CPU1], "_Recv")
    assert len(sends) == len(recvs) == 2  # the feed to CPU:1, y back to CPU:0
    by_tensor = {s.attr["tensor_name"].s: s for s in sends}
    for recv in recvs:
        send = by_tensor[recv.attr["tensor_name"].s]
        for key in ("send_device", "recv_device", "send_device_incarnation"):
            assert send.attr[key] == recv.attr[key]
        assert send.attr["T"].type == recv.attr["tensor_type"].type == af.float32.as_datatype_enum
        assert send.device == send.attr["send_device"].s.decode()
        assert recv.device == recv.attr["recv_device"].s.decode()
        assert send.attr["send_device"].s != send.attr["recv_device"].s
        assert not send.attr["client_terminated"].b
        src = send.input[0]
        assert recv.attr["tensor_name"].s.decode().startswith("edge_")
        assert recv.attr["tensor_name"].s.decode().endswith("_" + src)
        assert send.name.startswith(src + "/_") and recv.name.startswith(src + "/_")
    z_def = next(n for n in parts[CPU0].node if n.name == "z")
    assert z_def.input[0] == next(r.name for r in recvs if r.device == CPU0)


async def test_a_tensor_read_twice_on_another_device_is_sent_once(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])
        with af.device("/cpu:1"):
            a = x + 1.0
            b = x * 3.0
            c = a + b
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        cv, parts = await run_with_partition_graphs(sess, c, {x: 2.0})
    assert cv == 9.0
    assert len(_nodes(parts[CPU1], "_Recv")) == 1
    assert len(_nodes(parts[CPU0], "_Send")) == 1


async def test_control_edge_across_devices_orders_the_nodes(run_with_partition_graphs):
    order = []

    def mark(tag):
        def fn(v):
            order.append(tag)
            return v
        return fn

    g = af.Graph()
    with g.as_default():
        first = af.py_func(mark("first"), [af.constant(1.0)], af.float32)
        with af.device("/cpu:1"), af.control_dependencies([first]):
            second = af.py_func(mark("second"), [af.constant(2.0)], af.float32)
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        for _ in range(5):
            order.clear()
            (_, sv), parts = await run_with_partition_graphs(sess, [first.op, second])
            assert order == ["first", "second"] and sv == 2.0
    dummies = [n for n in _nodes(parts[CPU0], "Const")
               if n.name.startswith(first.op.name + "/ctrl/_")]
    assert len(dummies) == 1
    dummy = dummies[0]
    assert dummy.input == ["^" + first.op.name]
    assert dummy.attr["dtype"].type == af.float32.as_datatype_enum
    assert [d.size for d in dummy.attr["value"].tensor.tensor_shape.dim] == [0]
    recv = _nodes(parts[CPU1], "_Recv")[0]
    # As TF: an Identity of the _Recv stands for the source on the other device. The
    # control input landed on the first op made under control_dependencies (the
    # constant feeding `second`); it now waits for that Identity.
    identity = next(n for n in _nodes(parts[CPU1], "Identity") if n.input == [recv.name])
    assert identity.name.startswith(first.op.name + "/_")
    const_name = second.op.inputs[0].op.name
    const_def = next(n for n in parts[CPU1].node if n.name == const_name)
    assert const_def.input == ["^" + identity.name]


@pytest.mark.parametrize("pred", [True, False])
async def test_cond_branches_on_another_device_carry_deadness(pred, run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.bool, [])
        x = af.placeholder(af.float32, [])

        def true_fn():
            with af.device("/cpu:1"):
                return x * 10.0

        def false_fn():
            with af.device("/cpu:1"):
                return x - 1.0

        out = af.cond(p, true_fn, false_fn)
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        value, parts = await run_with_partition_graphs(sess, out, {p: pred, x: 4.0})
    assert value == (40.0 if pred else 3.0)
    assert _nodes(parts[CPU1], "_Recv") and _nodes(parts[CPU1], "_Send")


async def test_while_loop_on_another_device_fed_from_the_first():
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [])
        with af.device("/cpu:1"):
            _, total = af.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i),
                                     [af.constant(0), af.constant(0)])
        doubled = total * 2
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        assert await sess.run(doubled, {n: 6}) == 2 * sum(range(6))


async def test_loop_spanning_devices_runs_with_control_loops(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        def body(i):
            with af.device("/cpu:1"):
                return i + 1
        r = af.while_loop(lambda i: i < 3, body, [af.constant(0)])
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        value, parts = await run_with_partition_graphs(sess, r, {})
    assert value == 3
    # CPU:1 follows the loop through its own control loop, fed by CPU:0's LoopCond.
    assert [n.op for n in parts[CPU1].node if n.name.startswith("_cloop")] == [
        "Enter", "Merge", "Switch", "NextIteration"]
    assert len(_nodes(parts[CPU1], "_HostRecv")) == 1


async def test_error_on_one_device_aborts_the_step_waiting_on_the_other():
    def boom(v):
        raise ValueError("bad value")

    g = af.Graph()
    with g.as_default():
        with af.device("/cpu:1"):
            bad = af.py_func(boom, [af.constant(1.0)], af.float32, name="boom")
        out = bad + 1.0
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        with pytest.raises(errors.InvalidArgumentError, match="bad value") as info:
            await asyncio.wait_for(sess.run(out), 10)
        assert "boom" in info.value.message
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()


def _waits_forever_on_cpu1():
    """A graph whose CPU:1 partition awaits forever and CPU:0 waits on its _Recv; the
    event is set once the wait has begun."""
    started = asyncio.Event()

    async def forever(v):
        started.set()
        await asyncio.sleep(3600)
        return v

    g = af.Graph()
    with g.as_default():
        with af.device("/cpu:1"):
            slow = af.async_py_func(forever, [af.constant(1.0)], af.float32)
        out = slow * 2.0
    return g, out, started


async def test_cancelling_a_step_across_devices_leaves_nothing_behind():
    g, out, started = _waits_forever_on_cpu1()
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        task = asyncio.ensure_future(sess.run(out))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()


async def test_concurrent_steps_have_their_own_rendezvous():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])

        async def delayed(v):
            await asyncio.sleep(0.01 * float(v) % 0.03)
            return v

        with af.device("/cpu:1"):
            y = af.async_py_func(delayed, [x], af.float32) * 2.0
        z = y + 0.5
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        results = await asyncio.gather(*(sess.run(z, {x: float(i)}) for i in range(20)))
    assert results == [i * 2.0 + 0.5 for i in range(20)]


async def test_rendezvous_send_then_recv_and_recv_then_send():
    rv = Rendezvous()
    key = create_key(CPU0, 7, CPU1, "edge_1_x")
    assert key == f"{CPU0};0000000000000007;{CPU1};edge_1_x;0:0"
    rv.send(key, 1.5, False)
    assert await rv.recv(key) == (1.5, False)
    waiter = asyncio.ensure_future(rv.recv("k2"))
    await asyncio.sleep(0)
    rv.send("k2", None, True)
    assert await waiter == (None, True)
    assert len(rv) == 0


async def test_rendezvous_abort_wakes_receivers_and_refuses_later_use():
    rv = Rendezvous()
    waiter = asyncio.ensure_future(rv.recv("k"))
    await asyncio.sleep(0)
    err = errors.CancelledError(None, None, "step cancelled")
    rv.abort(err)
    with pytest.raises(errors.CancelledError):
        await waiter
    with pytest.raises(errors.CancelledError):
        rv.send("k", 1, False)
    with pytest.raises(errors.CancelledError):
        await rv.recv("other")
    assert len(rv) == 0


async def test_rendezvous_duplicate_send_is_an_error():
    rv = Rendezvous()
    rv.send("k", 1, False)
    with pytest.raises(errors.AbortedError, match="Duplicated send"):
        rv.send("k", 2, False)


def test_rendezvous_callbacks_without_tasks():
    rv = Rendezvous()
    rv.send("early", 3, False)
    assert rv.recv_callback("early", None) == (3, False)  # already there: no callback
    got = []
    assert rv.recv_callback("late", lambda *a: got.append(a)) is None
    rv.send("late", 4, False)
    assert got == [(4, False, None)]
    assert rv.recv_callback("never", lambda *a: got.append(a)) is None
    err = errors.CancelledError(None, None, "step cancelled")
    rv.abort(err)
    assert got[-1] == (None, False, err)
    assert len(rv) == 0


def test_rendezvous_loop_transfers_park_and_put():
    """The loop's transfers (keys (prefix, frame_id, iter)): a parked receiver gets the
    value through `arrived(token, ...)` at its send, a value put first is taken, a second
    put of a key is TF's error with TF's key text, and the step's abort reaches the parked
    receivers and refuses later parking."""
    rv = Rendezvous()
    take_waiter, take_sent = rv.takers()
    arrived = []
    key = ("dev0;0000000000000001;dev1;edge_5_x;", 77, 3)
    assert take_sent(key, None) is None
    assert rv.park(key, lambda token, *rest: arrived.append((token, *rest)), "tok")
    assert not rv.park(key, lambda *a: None, "other")  # a receiver waits already
    waiter = take_waiter(key, None)
    waiter[0](waiter[1], 5.0, False, None)
    assert arrived == [("tok", 5.0, False, None)]
    rv.put(key, 6.0, False)
    with pytest.raises(errors.AbortedError,
                       match="Duplicated send: dev0;0000000000000001;dev1;edge_5_x;77:3"):
        rv.put(key, 7.0, False)
    assert take_sent(key, None) == (6.0, False)
    later = ("dev0;0000000000000001;dev1;edge_5_x;", 77, 4)
    assert rv.park(later, lambda token, *rest: arrived.append((token, *rest)), "late")
    err = errors.CancelledError(None, None, "step cancelled")
    rv.abort(err)
    assert arrived[-1] == ("late", None, False, err)
    assert take_waiter(later, None) is None and len(rv) == 0
    assert not rv.park(later, lambda *a: None, "after")
    with pytest.raises(errors.CancelledError):
        rv.put(later, 1.0, False)


async def test_recv_waits_without_a_task_per_transfer():
    # The receiving partition starts first and waits on its _Recv: no asyncio task is
    # created for it (TF's RecvAsync), only the run's own.
    started = asyncio.Event()
    release = asyncio.Event()
    tasks_seen = []

    async def gate(v):
        started.set()
        await release.wait()
        return v

    g = af.Graph()
    with g.as_default():
        slow = af.async_py_func(gate, [af.constant(5.0)], af.float32)
        with af.device("/cpu:1"):
            out = slow * 2.0
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        task = asyncio.ensure_future(sess.run(out))
        await started.wait()
        tasks_seen = set(asyncio.all_tasks()) - before
        release.set()
        assert await task == 10.0
    # The run's task and the async_py_func's; none for the waiting _Recv.
    assert len(tasks_seen) == 2


async def test_a_partition_aborted_before_it_starts_runs_nothing():
    # The first partition fails while it is being started (inline, before the second is
    # started): the second is already aborted and must not start its kernels, whose
    # work would outlive the failed run.
    calls = []

    async def slow(v):
        calls.append("started")
        await asyncio.sleep(0.2)
        return v

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, None, name="x")
        bad = af.reshape(x, [2], name="bad")
        # A py_func between the Reshape and the add: a segment of Reshape alone would
        # otherwise sink into the add's (segments._sink), which waits for the Recv.
        checked = af.py_func(lambda v: v, [bad], af.float32, name="checked")
        with af.device("/cpu:1"):
            s = af.async_py_func(slow, [af.constant(1.0)], af.float32, name="slow")
        out = checked + s
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        with pytest.raises(errors.InvalidArgumentError, match="Input to reshape") as info:
            await sess.run(out, {x: np.ones(3, np.float32)})
        assert "bad" in info.value.message
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()
        assert calls == []


async def test_cancelled_step_across_devices_leaves_no_unretrieved_errors():
    # Cancelling a two-partition step aborts both states; their `done` futures end with
    # the abort's error, which asyncio reports as "never retrieved" unless it is seen.
    import gc

    g, out, started = _waits_forever_on_cpu1()
    loop = asyncio.get_running_loop()
    reported = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context["message"]))
    try:
        async with af.Session(graph=g, config=TWO_CPUS) as sess:
            task = asyncio.ensure_future(sess.run(out))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            del task
            gc.collect()
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert [m for m in reported if "never retrieved" in m] == []


class _RefusesToStart(op_kernel.AsyncOpKernel):
    """A task-free async kernel (start_async, as _Recv) whose start raises."""

    def start_async(self, ctx, inputs, done):
        raise ValueError("cannot start")

    async def compute_async(self, ctx, inputs):  # traced runs
        raise ValueError("cannot start")


def test_an_async_kernel_failing_to_start_fails_the_step(user_op):
    # A task-free async kernel (start_async) that raises never calls back: the step must
    # fail with its error, not wait for it forever (nor hang a cancellation), and the
    # other device's partition, waiting on its _Recv of the result, is aborted too. Its
    # own loop, so that a hung step cannot hang the test run.
    refuse = user_op("TestRefusesToStart", _RefusesToStart)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [])
        with af.device("/cpu:1"):
            y = refuse(x=x * 2.0, name="refuses")

    async def main():
        async with af.Session(graph=g, config=TWO_CPUS) as sess:
            task = asyncio.ensure_future(sess.run(y, {x: 1.0}))
            done, _ = await asyncio.wait({task}, timeout=5)
            return task.exception() if done else None

    loop = asyncio.new_event_loop()
    try:
        err = loop.run_until_complete(main())
    finally:
        loop.close()
    assert err is not None, "the step hung"
    assert isinstance(err, errors.InvalidArgumentError)
    assert "cannot start" in err.message
    assert "{{node refuses}} = TestRefusesToStart" in err.message


def test_cpu_devices_share_one_pool_and_one_blas_gate():
    from aioflow.runtime.device import DeviceMgr

    mgr = DeviceMgr.from_config(af.ConfigProto(device_count={"CPU": 3},
                                               inter_op_parallelism_threads=2))
    try:
        first, *others = mgr.devices
        assert [d.name for d in mgr.devices] == [CPU0, CPU1,
                                                 "/job:localhost/replica:0/task:0/device:CPU:2"]
        for d in others:
            assert d.pool is first.pool and d.blas_gate is first.blas_gate
        assert len({d.incarnation for d in mgr.devices}) == 3
        assert first.pool._max_workers == 2
    finally:
        mgr.shutdown()
