"""The simulated GPU's streams and events: launches resolve as futures on the loop
(host callbacks or polled events), a host value read by a device kernel is an error,
a cancelled run leaves no stream work behind, and the loop stays responsive with 200
GPU runs in flight."""

from __future__ import annotations

import asyncio
import os
import threading
import time

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.kernel_context import OpKernelContext
from aioflow.gpu import discovery
from aioflow.gpu.event_manager import HostCallbackEvents, PollingEvents
from aioflow.gpu.simulated import DeviceArray, SimulatedGpu


@pytest.fixture(params=["callback", "poll"])
def device(request):
    events = HostCallbackEvents() if request.param == "callback" else PollingEvents()
    return SimulatedGpu(0, events)


def _launch(device, ctx, fn, args, host_inputs=frozenset(), host_outputs=frozenset()):
    future = asyncio.get_running_loop().create_future()

    def done(outs, error):
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(outs)

    device.launch(ctx, "node", fn, args, host_inputs, host_outputs, done)
    return future


async def test_launch_resolves_on_the_loop_in_stream_order(device):
    ctx = OpKernelContext(1, [], 0)
    x = device.upload(np.arange(4.0))
    order = []

    def work(tag):
        def fn(xp, a):
            order.append(tag)
            return (a * tag,)
        return fn

    futures = [_launch(device, ctx, work(i), [x]) for i in range(1, 6)]
    outs = await asyncio.gather(*futures)
    assert order == [1, 2, 3, 4, 5]
    for i, (out,) in enumerate(outs, 1):
        assert isinstance(out, DeviceArray)
        np.testing.assert_array_equal(device.download(out), np.arange(4.0) * i)
    assert device.pending_work() == 0


async def test_a_host_value_read_as_device_memory_is_an_error(device):
    ctx = OpKernelContext(1, [], 0)
    with pytest.raises(errors.InternalError, match="is in host memory.*copy is missing"):
        device.launch(ctx, "node", lambda xp, a: (a,), [np.ones(2)], frozenset(), frozenset(),
                      lambda outs, error: None)
    dev = device.upload(np.ones(2))
    with pytest.raises(errors.InternalError, match="reads it from host memory"):
        device.launch(ctx, "node", lambda xp, a: (a,), [dev], frozenset((0,)), frozenset(),
                      lambda outs, error: None)
    with pytest.raises(TypeError, match="without a device-to-host copy"):
        np.asarray(dev)
    with pytest.raises(ValueError):
        device.unwrap(dev)[0] = 5.0  # device values are never written in place
    out = await _launch(device, ctx, lambda xp, a, n: (a.reshape(int(n), 1),),
                        [dev, np.int32(2)], host_inputs=frozenset((1,)))
    assert out[0].shape == (2, 1)


async def test_copies_run_on_their_streams(device):
    ctx = OpKernelContext(1, [], 0)
    future = asyncio.get_running_loop().create_future()
    device.copy_to_device(ctx, "h2d", np.arange(3.0), lambda o, e: future.set_result(o))
    (dev,) = await future
    assert device.is_device_value(dev)
    future = asyncio.get_running_loop().create_future()
    device.copy_to_host(ctx, "d2h", dev, lambda o, e: future.set_result(o))
    (host,) = await future
    assert type(host) is np.ndarray
    np.testing.assert_array_equal(host, [0.0, 1.0, 2.0])
    with pytest.raises(errors.InternalError, match="must reside on the device"):
        device.copy_to_host(ctx, "d2h", host, lambda o, e: None)


async def test_cancelled_work_is_dropped_from_the_stream(device):
    ctx = OpKernelContext(1, [], 0)
    started, gate = threading.Event(), threading.Event()
    ran = []
    blocker = _launch(device, ctx, lambda xp: (started.set(), gate.wait(), ())[2], [])
    later = [_launch(device, ctx, lambda xp, i=i: (ran.append(i), ())[1], []) for i in range(5)]
    await asyncio.to_thread(started.wait)  # the blocker runs: the rest waits behind it
    ctx.cancellation.start_cancel()
    gate.set()
    await blocker
    for f in later:
        with pytest.raises(errors.CancelledError):
            await f
    assert ran == []
    assert device.pending_work() == 0
    device.synchronize()
    assert device.pending_stream_items() == 0


def _heavy_graph():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [64, 64], name="x")
        y = x
        for _ in range(30):
            y = af.tanh(af.matmul(y, x) * 0.01)
        af.identity(y, name="y")
    return g


async def test_a_cancelled_run_leaves_no_stream_work_behind(monkeypatch):
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    feeds = {"x:0": np.ones((64, 64), np.float32)}
    async with af.Session(graph=_heavy_graph()) as sess:
        await sess.run("y:0", feeds)
        runs = [asyncio.ensure_future(sess.run("y:0", feeds)) for _ in range(20)]
        await asyncio.sleep(0.01)
        for run in runs:
            run.cancel()
        results = await asyncio.gather(*runs, return_exceptions=True)
        assert any(isinstance(r, asyncio.CancelledError) for r in results)
        for backend in discovery.backends():
            if isinstance(backend, SimulatedGpu):
                assert backend.pending_work() == 0
                backend.synchronize()
                assert backend.pending_stream_items() == 0
        # the session still runs
        out = await sess.run("y:0", feeds)
        assert out.shape == (64, 64)


async def test_heartbeat_with_200_gpu_runs_in_flight(monkeypatch):
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [32, 32], name="x")
        y = x
        for _ in range(8):
            y = af.nn.relu(af.matmul(y, x) * 0.05)
        af.identity(y, name="y")
    feeds = {"x:0": np.full((32, 32), 0.5, np.float32)}
    # The machine's own scheduling noise, measured first (reported when the tail is not
    # asserted).
    idle = []
    for _ in range(300):
        t = time.perf_counter()
        await asyncio.sleep(0.001)
        idle.append(time.perf_counter() - t - 0.001)
    lags = []
    async with af.Session(graph=g) as sess:
        want = await sess.run("y:0", feeds)
        done = False

        async def heartbeat():
            while not done:
                t = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - t - 0.001)

        hb = asyncio.ensure_future(heartbeat())
        outs = await asyncio.gather(*(sess.run("y:0", feeds) for _ in range(200)))
        done = True
        await hb
    for out in outs:
        np.testing.assert_array_equal(out, want)
    assert len(lags) >= 10
    p50, p99, idle_p99 = (np.percentile(lags, 50), np.percentile(lags, 99),
                          np.percentile(idle, 99))
    # The loop is not held: half its wake-ups are on time (a stream thread holding the
    # GIL for the interpreter's 5 ms switch interval would make the median 5 ms).
    assert p50 < 0.001, p50
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > cores:  # no free core: the OS, not the loop, decides the tail
        pytest.skip(f"p99 {p99 * 1e3:.1f} ms not asserted: load {load:.1f} on {cores} cores "
                    f"(an idle loop's p99 is {idle_p99 * 1e3:.1f} ms here)")
    assert p99 < 0.005, (p99, idle_p99)  # the bound (0.2-0.9 ms measured at load 3)


async def test_copies_stage_through_gpu_compatible_host_memory(device):
    ctx = OpKernelContext(1, [], 0)
    before = dict(device.host_bytes)
    future = asyncio.get_running_loop().create_future()
    device.copy_to_device(ctx, "h2d", np.zeros(10, np.float32), lambda o, e: future.set_result(o))
    (dev,) = await future
    future = asyncio.get_running_loop().create_future()
    device.copy_to_host(ctx, "d2h", dev, lambda o, e: future.set_result(o))
    await future
    assert device.host_bytes["gpu_compatible"] - before["gpu_compatible"] == 80
    assert device.host_bytes["pageable"] == before["pageable"]
