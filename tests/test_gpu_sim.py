"""The GPU device on the simulated GPU (AIOFLOW_SIMULATED_GPUS=1): graphs on /gpu:0 give
the CPU's values; step stats show each kernel on its device and every host/device
copy; HostMemory inputs stay on the host; the placer prefers GPU kernels; a TF-written
conv net runs on the GPU to TF's values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.compat import v1
from aioflow.framework import errors
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture
def sim_gpu(monkeypatch):
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")


def _traced():
    return af.RunOptions(trace_level=af.RunOptions.FULL_TRACE, output_partition_graphs=True)


async def _run_both(build, fetch_names, feeds=None, monkeypatch=None, runs=1, config=None):
    """The fetches' values on a session with a simulated GPU and on a CPU-only one."""
    results = []
    for gpus in ("1", ""):
        monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", gpus)
        g = af.Graph()
        with g.as_default():
            build()
        async with af.Session(graph=g, config=config) as sess:
            for _ in range(runs):
                out = await sess.run(fetch_names, feeds or {})
        results.append(out)
    return results


def _by_device(md) -> dict[str, list[str]]:
    return {d.device: [n.node_name for n in d.node_stats] for d in md.step_stats.dev_stats}


def _ops(md, device: str) -> list[str]:
    return [n.op for g in md.partition_graphs for n in g.node if n.device == device]


async def test_session_lists_the_simulated_gpu(sim_gpu):
    async with af.Session(graph=af.Graph()) as sess:
        devices = sess.list_devices()
    names = [d.name for d in devices]
    assert names == [CPU0, GPU0]
    assert devices[1].device_type == "GPU"


async def test_device_count_and_visible_device_list(monkeypatch):
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "2")
    config = af.ConfigProto(device_count={"GPU": 1})
    async with af.Session(graph=af.Graph(), config=config) as sess:
        assert [d.name for d in sess.list_devices()] == [CPU0, GPU0]
    config = af.ConfigProto(gpu_options=af.GPUOptions(visible_device_list="1,0"))
    async with af.Session(graph=af.Graph(), config=config) as sess:
        names = [d.name for d in sess.list_devices()]
    assert names == [CPU0, GPU0, GPU0.replace("GPU:0", "GPU:1")]
    with pytest.raises(errors.InvalidArgumentError, match="invalid Device id '5'"):
        af.Session(graph=af.Graph(), config=af.ConfigProto(
            gpu_options=af.GPUOptions(visible_device_list="5")))


async def test_math_on_gpu_gives_cpu_values_with_copies_in_step_stats(monkeypatch):
    x_value = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def build():
        x = af.placeholder(af.float32, [3, 4], name="x")
        w = af.constant(np.arange(20, dtype=np.float32).reshape(4, 5) / 10, name="w")
        h = af.nn.relu(af.matmul(x, w) - 1.0)
        y = af.nn.softmax(af.tanh(h) * af.exp(-h), name="y")
        af.reduce_mean(af.sigmoid(y) + af.square(y), axis=0, name="m")

    gpu, cpu = await _run_both(build, ["y:0", "m:0"], {"x:0": x_value}, monkeypatch)
    for a, b in zip(gpu, cpu, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)

    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default():
        build()
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        await sess.run(["y:0"], {"x:0": x_value}, options=_traced(), run_metadata=md)
    gpu_ops = _ops(md, GPU0)
    for op in ("MatMul", "Relu", "Softmax", "Tanh", "Exp", "Sub", "Mul"):
        assert op in gpu_ops
    # the feed is copied to the device, the fetch back to the host, each once
    assert gpu_ops.count("_CopyFromHostToGpu") == 1
    assert gpu_ops.count("_CopyFromGpuToHost") == 1
    nodes = _by_device(md)
    assert "MatMul" in nodes[GPU0] and "y" in nodes[GPU0]
    copies = [n for n in nodes[GPU0] if n.startswith("x/") or n.startswith("y/")]
    assert len(copies) >= 2


async def test_conv_net_on_gpu(monkeypatch):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((2, 9, 9, 3)).astype(np.float32)
    filters = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    depthwise = rng.standard_normal((3, 3, 4, 2)).astype(np.float32)

    def build():
        x = af.placeholder(af.float32, [2, 9, 9, 3], name="x")
        c = af.nn.conv2d(x, filters, strides=[1, 2, 2, 1], padding="SAME")
        c = af.nn.bias_add(c, np.arange(4, dtype=np.float32))
        c = af.nn.relu6(c)
        d = af.nn.depthwise_conv2d(c, depthwise, strides=[1, 1, 1, 1], padding="VALID")
        p = af.nn.max_pool(d, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME")
        a = af.nn.avg_pool(d, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        af.identity(p, name="p")
        af.identity(a, name="a")
        v = af.nn.conv2d(x, filters, strides=[1, 1, 1, 1], padding="VALID", dilations=[1, 2, 2, 1])
        af.identity(v, name="v")

    gpu, cpu = await _run_both(build, ["p:0", "a:0", "v:0"], {"x:0": images}, monkeypatch)
    for a, b in zip(gpu, cpu, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


async def test_while_loop_predicate_stays_in_host_memory(monkeypatch):
    def build():
        x = af.placeholder(af.float32, [4], name="x")
        i0 = af.constant(0, name="i0")
        _, out = af.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 1.5 + 1.0),
                               [i0, x])
        af.identity(out, name="out")

    feeds = {"x:0": np.arange(4, dtype=np.float32)}
    gpu, cpu = await _run_both(build, ["out:0"], feeds, monkeypatch)
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-6)

    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default():
        build()
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        await sess.run(["out:0"], feeds, options=_traced(), run_metadata=md)
    (gpu_part,) = [p for p in md.partition_graphs if any(n.device == GPU0 for n in p.node)]
    by_name = {n.name: n for n in gpu_part.node}
    ops = [n.op for n in gpu_part.node]
    assert "LoopCond" in ops and "Less" in ops and "Switch" in ops
    # the whole loop is on the GPU: its predicate and counter never cross a copy
    for n in gpu_part.node:
        if n.op in ("LoopCond", "Switch", "Less"):
            for name in n.input:
                src = by_name[name.lstrip("^").split(":")[0]]
                assert not src.op.startswith("_Copy"), (n.name, src.name)
    assert all(n.device == GPU0 for n in gpu_part.node)
    assert ops.count("_CopyFromHostToGpu") == 1 and ops.count("_CopyFromGpuToHost") == 1


async def test_host_memory_inputs_are_never_copied(sim_gpu):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2, 6], name="x")
        r = af.reshape(af.exp(x), [3, 4], name="r")
        s = af.reduce_sum(r, axis=[1], name="s")
        t = af.transpose(af.reshape(s, [3, 1]), [1, 0], name="t")
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        got = await sess.run(t, {x: np.ones((2, 6), np.float32)}, options=_traced(),
                             run_metadata=md)
    np.testing.assert_allclose(got, np.full((1, 3), 4 * np.e, np.float32), rtol=1e-6)
    (gpu_part,) = [p for p in md.partition_graphs if any(n.device == GPU0 for n in p.node)]
    by_name = {n.name: n for n in gpu_part.node}
    for n in gpu_part.node:
        if n.op in ("Reshape", "Sum", "Transpose"):
            host_arg = by_name[n.input[1].split(":")[0]]
            assert host_arg.op == "Const", (n.name, host_arg.op)
    assert [n.op for n in gpu_part.node].count("_CopyFromHostToGpu") == 1


async def test_variables_updated_on_the_device(monkeypatch):
    def build():
        v = v1.Variable(np.ones(3, np.float32), name="v", use_resource=False)
        r = v1.Variable(np.full(3, 2.0, np.float32), name="r", use_resource=True)
        step = af.group(v1.assign_add(v, [1.0, 2.0, 3.0]),
                        r.assign_sub(np.full(3, 0.5, np.float32)), name="step")
        af.identity(v.read_value() if hasattr(v, "read_value") else v, name="v_read")
        af.identity(r.read_value(), name="r_read")
        v1.global_variables_initializer().name  # noqa: B018
        return step

    results = []
    for gpus in ("1", ""):
        monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", gpus)
        g = af.Graph()
        with g.as_default():
            step = build()
            init = v1.global_variables_initializer()
        md = af.RunMetadata()
        async with af.Session(graph=g) as sess:
            await sess.run(init)
            for _ in range(3):
                await sess.run(step, options=_traced(), run_metadata=md)
            results.append(await sess.run(["v_read:0", "r_read:0"]))
        if gpus:
            gpu_ops = _ops(md, GPU0)
            assert "AssignAdd" in gpu_ops and "AssignSubVariableOp" in gpu_ops
    np.testing.assert_array_equal(results[0][0], [4.0, 7.0, 10.0])
    np.testing.assert_array_equal(results[0][1], [0.5, 0.5, 0.5])
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)


async def test_partitioned_cpu_gpu_step(monkeypatch):
    def build():
        x = af.placeholder(af.float32, [3, 3], name="x")
        with af.device("/gpu:0"):
            a = af.matmul(x, x)
        with af.device("/cpu:0"):
            b = af.nn.relu(a - 2.0)
        with af.device("/gpu:0"):
            c = af.concat([a, b], axis=1)
            af.identity(af.cast(c, af.float64) * 2.0, name="out")

    feeds = {"x:0": np.arange(9, dtype=np.float32).reshape(3, 3) / 4}
    gpu, cpu = await _run_both(build, ["out:0"], feeds, monkeypatch,
                               config=af.ConfigProto(allow_soft_placement=True))
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-12)
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default():
        build()
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        await sess.run("out:0", feeds, options=_traced(), run_metadata=md)
    gpu_ops, cpu_ops = _ops(md, GPU0), _ops(md, CPU0)
    assert {"MatMul", "ConcatV2", "Cast"} <= set(gpu_ops) and "Relu" in cpu_ops
    # x in, a out to the CPU, b back in, the result out: two copies each way
    assert gpu_ops.count("_CopyFromHostToGpu") == 2
    assert gpu_ops.count("_CopyFromGpuToHost") == 2


async def test_soft_placement_for_an_op_without_a_gpu_kernel(sim_gpu):
    g = af.Graph()
    with g.as_default():
        words = af.placeholder(af.string, [2], name="words")
        with af.device("/gpu:0"):
            s = af.strings.length(words, name="len")
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="no supported kernel for GPU devices is available"):
            await sess.run(s, {words: [b"ab", b"abc"]})
    config = af.ConfigProto(allow_soft_placement=True)
    md = af.RunMetadata()
    async with af.Session(graph=g, config=config) as sess:
        got = await sess.run(s, {words: [b"ab", b"abc"]}, options=_traced(), run_metadata=md)
    np.testing.assert_array_equal(got, [2, 3])
    assert "len" in _by_device(md)[CPU0]


async def test_log_device_placement(sim_gpu, capsys):
    g = af.Graph()
    with g.as_default():
        af.exp(af.constant(1.0), name="e")
    async with af.Session(graph=g, config=af.ConfigProto(log_device_placement=True)) as sess:
        await sess.run("e:0")
    assert f"e: (Exp): {GPU0}" in capsys.readouterr().out


def _tf_graph(name: str):
    g = graph_pb2.GraphDef()
    g.ParseFromString((DATA / f"models_{name}.pb").read_bytes())
    return g


async def test_tf_conv_net_without_devices_places_compute_on_the_gpu(sim_gpu):
    """A TF-written frozen conv net: TF's placer with a GPU puts every op that has a GPU
    kernel there, every convolution among them; the values are TF's."""
    entry = next(e for e in map(json.loads, (DATA / "models_manifest.jsonl").read_text()
                                .splitlines()) if e["name"] == "tf1_convnet")
    graph_def = _tf_graph("tf1_convnet")
    assert not any(n.device for n in graph_def.node)
    values = np.load(DATA / "models_tf1_convnet.npz")
    feeds = {k[5:]: values[k] for k in values.files if k.startswith("feed:")}
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        got = await sess.run(entry["fetches"], feeds, options=_traced(), run_metadata=md)
    for fetch, value in zip(entry["fetches"], got, strict=True):
        want = values[f"fetch:{fetch}"]
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    placed = {n.name: n.device for p in md.partition_graphs for n in p.node}
    convs = [n.name for n in graph_def.node if n.op in (
        "Conv2D", "DepthwiseConv2dNative", "Conv2DBackpropInput")]
    assert convs and all(placed[c] == GPU0 for c in convs)
    on_gpu = {n.op for n in graph_def.node if placed.get(n.name) == GPU0}
    assert {"FusedBatchNormV3", "MatMul", "Softmax", "MaxPool", "AvgPool", "Mean",
            "ResizeBilinear", "ConcatV2"} <= on_gpu
    stats = _by_device(md)
    assert all(c in stats[GPU0] for c in convs)


async def test_while_loop_split_between_cpu_and_gpu(monkeypatch):
    """A loop whose body crosses devices every iteration: the copies run inside the
    frame, once per iteration, next to the transfers."""
    w = np.array([[0.5, -0.25], [0.125, 0.75]], np.float32)

    def build():
        x = af.placeholder(af.float32, [2, 2], name="x")

        def body(i, v):
            with af.device("/gpu:0"):
                v = af.matmul(v, w) + 1.0
            with af.device("/cpu:0"):
                v = af.nn.relu(v - 1.5)
            return i + 1, v

        _, out = af.while_loop(lambda i, v: i < 4, body, [af.constant(0), x])
        af.identity(out, name="out")

    feeds = {"x:0": np.arange(4, dtype=np.float32).reshape(2, 2)}
    gpu, cpu = await _run_both(build, ["out:0"], feeds, monkeypatch,
                               config=af.ConfigProto(allow_soft_placement=True))
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-6)
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default():
        build()
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        await sess.run("out:0", feeds, options=_traced(), run_metadata=md)
    gpu_ops = _ops(md, GPU0)
    assert "MatMul" in gpu_ops and "Relu" in _ops(md, CPU0)
    (gpu_part,) = [p for p in md.partition_graphs if any(n.device == GPU0 for n in p.node)]
    copy_names = {n.name: n.op for n in gpu_part.node if n.op.startswith("_Copy")}
    ran = [copy_names[n.node_name] for d in md.step_stats.dev_stats if d.device == GPU0
           for n in d.node_stats if n.node_name in copy_names]
    # per iteration: the loop value to the GPU and the matmul's result back (4 times),
    # and once each the loop's input and the result crossing the loop's boundary
    assert ran.count("_CopyFromHostToGpu") >= 4 and ran.count("_CopyFromGpuToHost") >= 4
