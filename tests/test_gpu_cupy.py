"""The GPU device on a real GPU through CuPy (`pytest -m gpu`): the same checks as the
simulated device's, on CUDA streams. Skipped cleanly where CuPy or a GPU is missing."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.kernel_context import OpKernelContext
from aioflow.gpu import cupy_gpu
from aioflow.gpu.event_manager import HostCallbackEvents, PollingEvents

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cupy_gpu.available(), reason="needs CuPy and a CUDA GPU"),
]

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.fixture
def no_simulation(monkeypatch):
    monkeypatch.delenv("AIOFLOW_SIMULATED_GPUS", raising=False)


@pytest.fixture(params=["callback", "poll"], scope="module")
def device(request):
    events = HostCallbackEvents() if request.param == "callback" else PollingEvents()
    return cupy_gpu.CupyGpu(0, events)


async def _launch(device, ctx, fn, args, host_inputs=frozenset()):
    future = asyncio.get_running_loop().create_future()
    device.launch(ctx, "node", fn, args, host_inputs, frozenset(),
                  lambda o, e: future.set_exception(e) if e else future.set_result(o))
    return await future


async def test_launches_and_copies_on_cuda_streams(device):
    ctx = OpKernelContext(1, [], 0)
    future = asyncio.get_running_loop().create_future()
    device.copy_to_device(ctx, "h2d", np.arange(6.0).reshape(2, 3),
                          lambda o, e: future.set_result(o))
    (x,) = await future
    assert device.is_device_value(x)
    (y,) = await _launch(device, ctx, lambda xp, a: (xp.tanh(a @ a.T),), [x])
    future = asyncio.get_running_loop().create_future()
    device.copy_to_host(ctx, "d2h", y, lambda o, e: future.set_result(o))
    (host,) = await future
    a = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(host, np.tanh(a @ a.T), rtol=1e-12)
    with pytest.raises(errors.InternalError, match="copy is missing"):
        device.launch(ctx, "node", lambda xp, v: (v,), [a], frozenset(), frozenset(),
                      lambda o, e: None)


async def test_graphs_on_the_gpu_give_the_cpu_values(no_simulation):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
    filters = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    results = []
    for config in (None, af.ConfigProto(device_count={"GPU": 0})):
        g = af.Graph()
        with g.as_default():
            x = af.placeholder(af.float32, [2, 9, 9, 3], name="x")
            c = af.nn.relu(af.nn.conv2d(x, filters, strides=[1, 1, 1, 1], padding="SAME"))
            p = af.nn.max_pool(c, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
            out = af.nn.softmax(af.reshape(p, [2, -1]), name="out")
        md = af.RunMetadata()
        async with af.Session(graph=g, config=config) as sess:
            results.append(await sess.run(out, {x: images}, options=af.RunOptions(
                trace_level=af.RunOptions.FULL_TRACE), run_metadata=md))
        devices = {d.device for d in md.step_stats.dev_stats}
        assert (GPU0 in devices) == (config is None)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4, atol=1e-6)


async def test_a_cancelled_run_leaves_no_stream_work(no_simulation):
    from aioflow.gpu import discovery

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [512, 512], name="x")
        y = x
        for _ in range(50):
            y = af.tanh(af.matmul(y, x) * 0.001)
        af.identity(y, name="y")
    feeds = {"x:0": np.ones((512, 512), np.float32)}
    async with af.Session(graph=g) as sess:
        await sess.run("y:0", feeds)
        runs = [asyncio.ensure_future(sess.run("y:0", feeds)) for _ in range(10)]
        await asyncio.sleep(0.005)
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        for backend in discovery.backends():
            assert backend.pending_work() == 0
