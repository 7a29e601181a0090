"""Each GPU kernel on the simulated device gives the CPU kernel's value: one graph of
many ops, placed on /gpu:0, run with a simulated GPU and without one."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow as af
from aioflow.compat import v1
from aioflow.framework.op_def_library import apply_op

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"

_rng = np.random.default_rng(7)
A = _rng.standard_normal((3, 4)).astype(np.float32)
B = _rng.standard_normal((3, 4)).astype(np.float32)
P = np.abs(A) + 0.5
M = _rng.standard_normal((2, 3, 4)).astype(np.float32)
N = _rng.standard_normal((2, 4, 5)).astype(np.float32)
IMG = _rng.standard_normal((2, 8, 8, 4)).astype(np.float32)


def _ops():
    x = af.placeholder(af.float32, [None, 4], name="x")  # fed zeros: nothing folds
    a, b, p = af.constant(A) + x, af.constant(B), af.constant(P) + x
    ops = {
        "add": a + b, "sub": a - b, "mul": a * b, "div": a / p, "maximum": af.maximum(a, b),
        "minimum": af.minimum(a, b), "pow": af.pow(p, b),
        "sqdiff": af.math.squared_difference(a, b),
        "floordiv": af.math.floordiv(a, p), "floormod": af.math.floormod(a, p),
        "neg": -a, "abs": af.abs(a), "square": af.square(a), "sqrt": af.sqrt(p),
        "rsqrt": af.math.rsqrt(p), "reciprocal": af.math.reciprocal(p), "exp": af.exp(a),
        "expm1": af.math.expm1(a), "log": af.math.log(p), "log1p": af.math.log1p(p),
        "sin": af.sin(a), "cos": af.cos(a), "tanh": af.tanh(a), "sigmoid": af.sigmoid(a),
        "floor": af.floor(a), "ceil": af.math.ceil(a), "round": af.round(a * 3),
        "sign": af.sign(a), "relu": af.nn.relu(a), "relu6": af.nn.relu6(a * 5),
        "elu": af.nn.elu(a), "selu": af.nn.selu(a), "softplus": af.nn.softplus(a),
        "softsign": af.nn.softsign(a), "leaky": af.nn.leaky_relu(a, 0.3),
        "less": af.cast(a < b, af.float32), "equal": af.cast(af.equal(a, a), af.float32),
        "logical": af.cast(af.logical_and(a > 0, af.logical_not(b > 0)), af.float32),
        "addn": af.add_n([a, b, p]),
        "sum": af.reduce_sum(a, axis=1), "mean": af.reduce_mean(a, axis=[0, 1]),
        "max": af.reduce_max(a, axis=0, keepdims=True), "min": af.reduce_min(a, axis=1),
        "prod": af.reduce_prod(p, axis=1),
        "matmul": af.matmul(a, b, transpose_b=True), "matmul_ta": af.matmul(a, b, transpose_a=True),
        "bmm": af.matmul(af.constant(M) + af.reduce_sum(x), af.constant(N)),
        "softmax": af.nn.softmax(a), "log_softmax": af.nn.log_softmax(a),
        "cast": af.cast(a * 10, af.int64), "transpose": af.transpose(a),
        "concat": af.concat([a, b], axis=0), "stack": af.stack([a, b], axis=1),
        "split": af.split(a, 2, axis=1)[1], "splitv": af.split(a, [1, 3], axis=1)[1],
        "slice": af.slice(a, [1, 1], [2, -1]), "gather": af.gather(a, [2, 0, 2], axis=0),
        "reshape": af.reshape(a, [2, 6]), "expand": af.expand_dims(a, 1),
        "squeeze": af.squeeze(af.reshape(a, [1, 3, 4])),
        "fill": af.fill([2, 3], af.reduce_sum(x) + 1.5),
        "zeros_like": af.zeros_like(a), "ones_like": af.ones_like(x),
        "broadcast": af.broadcast_to(af.reduce_sum(a, axis=0), [2, 4]),
        "where": af.where(a > b, a, b), "pad": af.pad(a, [[1, 0], [0, 2]], constant_values=2.0),
        "tile": af.tile(a, [2, 1]), "unstack": af.unstack(a, axis=1)[2],
        "argmax": af.cast(af.argmax(a, axis=1), af.float32), "l2loss": af.nn.l2_loss(a),
        "one_hot": af.one_hot(af.argmax(a, axis=1), 5),
        "strided": a[::2, 1:], "cumsum": af.cumsum(a, axis=1),
        "mirror_pad": af.pad(a, [[1, 1], [1, 1]], mode="REFLECT"),
        "top_k": af.nn.top_k(a, 2)[0],
    }
    img = af.constant(IMG) + af.reduce_sum(x) * 0
    ops["bias_add"] = af.nn.bias_add(img, af.constant(np.arange(4, dtype=np.float32)))
    ops["conv_same_s2"] = af.nn.conv2d(img, af.constant(IMG[0, :3, :3, :, None].repeat(2, 3)),
                                      strides=[1, 2, 2, 1], padding="SAME")
    ops["depthwise"] = af.nn.depthwise_conv2d(img, af.constant(IMG[0, :3, :3, :, None]),
                                              strides=[1, 1, 1, 1], padding="SAME")
    ops["max_pool"] = af.nn.max_pool(img, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    ops["avg_pool"] = af.nn.avg_pool(img, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    scale = af.constant(np.linspace(0.5, 1.5, 4, dtype=np.float32))
    offset = af.constant(np.linspace(-1, 1, 4, dtype=np.float32))
    ops["bn_infer"] = v1.nn.fused_batch_norm(img, scale, offset, mean=offset, variance=scale,
                                             is_training=False)[0]
    y, mean, var = v1.nn.fused_batch_norm(img, scale, offset, is_training=True)
    ops["bn_train"], ops["bn_mean"], ops["bn_var"] = y, mean, var
    ops["resize"] = af.image.resize_bilinear(img, [5, 11]) if hasattr(af.image, "resize_bilinear") \
        else v1.image.resize_bilinear(img, [5, 11])
    return ops


@pytest.fixture(scope="module")
def results():
    import asyncio
    import os

    async def run(gpus: str):
        os.environ["AIOFLOW_SIMULATED_GPUS"] = gpus
        g = af.Graph()
        with g.as_default(), af.device("/gpu:0" if gpus else "/cpu:0"):
            ops = _ops()
        md = af.RunMetadata()
        async with af.Session(graph=g) as sess:
            out = await sess.run(ops, {"x:0": np.zeros((3, 4), np.float32)},
                                 options=af.RunOptions(output_partition_graphs=True),
                                 run_metadata=md)
        return ops, out, md

    saved = os.environ.get("AIOFLOW_SIMULATED_GPUS")
    try:
        gpu_ops, gpu, md = asyncio.run(run("1"))
        _, cpu, _ = asyncio.run(run(""))
    finally:
        if saved is None:
            os.environ.pop("AIOFLOW_SIMULATED_GPUS", None)
        else:
            os.environ["AIOFLOW_SIMULATED_GPUS"] = saved
    placed = {n.name: n.device for p in md.partition_graphs for n in p.node}
    return gpu_ops, gpu, cpu, placed


def _names():
    g = af.Graph()
    with g.as_default():
        return sorted(_ops())


@pytest.mark.parametrize("name", _names())
def test_gpu_kernel_gives_the_cpu_value(results, name):
    ops, gpu, cpu, placed = results
    got, want = np.asarray(gpu[name]), np.asarray(cpu[name])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    assert placed[ops[name].op.name] == GPU0


async def test_nchw_convolution_and_pooling_on_the_gpu(monkeypatch):
    """TF's CPU kernels take NHWC only; on the GPU NCHW gives the NHWC values."""
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    w = IMG[1, :2, :2, :, None].repeat(3, 3)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, IMG.shape, name="x")
        with af.device("/gpu:0"):
            nchw = af.transpose(x, [0, 3, 1, 2])
            conv = af.nn.conv2d(nchw, w, strides=[1, 1, 2, 2], padding="SAME",
                                data_format="NCHW")
            pool = af.nn.max_pool(nchw, [1, 1, 2, 2], [1, 1, 2, 2], "VALID",
                                  data_format="NCHW")
        with af.device("/cpu:0"):
            conv_ref = af.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME")
            pool_ref = af.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    async with af.Session(graph=g) as sess:
        got = await sess.run([conv, pool, conv_ref, pool_ref], {x: IMG})
    np.testing.assert_allclose(got[0].transpose(0, 2, 3, 1), got[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[1].transpose(0, 2, 3, 1), got[3])


async def test_windowed_gpu_kernels_check_as_the_cpu_ones(monkeypatch):
    """Bad input gives the CPU kernels' InvalidArgumentError naming the node (never a raw
    ValueError from the array code); a window that fits nowhere gives an empty output."""
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default(), af.device("/gpu:0"):
        x = af.placeholder(af.float32, None, name="x")
        w = af.placeholder(af.float32, None, name="w")
        conv = af.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="VALID", name="conv")
        depthwise = af.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="VALID",
                                           name="depthwise")
        pool = af.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "VALID", name="pool")
    w4 = np.ones((4, 4, 2, 1), np.float32)
    async with af.Session(graph=g) as sess:
        empty = await sess.run(pool, {x: np.ones((1, 1, 1, 2), np.float32)})
        assert empty.shape == (1, 0, 0, 2)
        cases = [(conv, np.ones((2, 2, 2), np.float32), w4,
                  r"^convolution input must be 4-dimensional: \[2,2,2\]"),
                 (depthwise, np.ones((1, 2, 2, 2), np.float32), w4[0],
                  r"^filter must be 4-dimensional: \[4,2,1\]"),
                 (pool, np.ones((2, 2), np.float32), w4,
                  r"^tensor_in_shape must have 2 spatial dimensions"),
                 (conv, np.ones((1, 2, 2, 2), np.float32), w4,
                  r"^Computed output size would be negative: -1 \[input_size: 2, "
                  r"effective_filter_size: 4, stride: 1\]")]
        for op, xv, wv, message in cases:
            with pytest.raises(af.errors.InvalidArgumentError, match=message) as info:
                await sess.run(op, {x: xv, w: wv})
            assert op.op.name in str(info.value)


async def test_binary_gpu_kernels_refuse_shapes_that_do_not_broadcast(monkeypatch):
    """TF's "Incompatible shapes" InvalidArgumentError naming the node, as the CPU kernels
    give it (was the array module's ValueError, wrapped)."""
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    g = af.Graph()
    with g.as_default(), af.device("/gpu:0"):
        a = af.placeholder(af.float32, None, name="a")
        b = af.placeholder(af.float32, None, name="b")
        total = af.add(a, b, name="total")
        both = af.logical_and(a > 0, b > 0, name="both")
    feed = {a: np.ones((2, 3), np.float32), b: np.ones((3, 3, 3), np.float32)}
    async with af.Session(graph=g) as sess:
        for op in (total, both):
            with pytest.raises(af.errors.InvalidArgumentError,
                               match=r"^Incompatible shapes: \[2,3\] vs. \[3,3,3\]") as info:
                await sess.run(op, feed)
            assert op.op.name in str(info.value)
        np.testing.assert_array_equal(
            await sess.run(total, {a: np.ones((2, 1), np.float32), b: np.ones(3, np.float32)}),
            np.full((2, 3), 2, np.float32))


def _bad_input_cases():
    """(name, builder of the op from float32 placeholders a and b, a, b) that the CPU
    kernels refuse with TF's InvalidArgumentError."""
    f = np.float32
    return [
        ("fill_negative", lambda a, b: af.fill(af.cast(a, af.int32), 1.0),
         np.array([2, -1], f), None),
        ("fill_value_not_scalar", lambda a, b: af.fill([2, 2], b),
         None, np.ones(2, f)),
        ("unstack_wrong_num", lambda a, b: af.unstack(a, num=3)[0],
         np.ones((2, 4), f), None),
        ("matmul_transposed", lambda a, b: af.matmul(a, b, transpose_a=True),
         np.ones((2, 3), f), np.ones((2, 4), f).T),
        ("matmul_rank", lambda a, b: af.matmul(a, b), np.ones(3, f), np.ones(3, f)),
        ("batch_matmul_rank", lambda a, b: af.matmul(a, b),
         np.ones((2, 2, 3), f), np.ones(3, f)),
        ("batch_matmul_batch", lambda a, b: af.matmul(a, b),
         np.ones((2, 2, 3), f), np.ones((3, 3, 2), f)),
        ("batch_matmul_inner", lambda a, b: af.matmul(a, b, adjoint_b=True),
         np.ones((2, 2, 3), f), np.ones((2, 2, 4), f)),
        # no check of the GPU kernel's own: the CPU kernel's error, from base.py's fallback
        ("concat_shapes", lambda a, b: af.concat([a, b], axis=0),
         np.ones((2, 3), f), np.ones((2, 4), f)),
        ("transpose_perm", lambda a, b: af.transpose(a, af.cast(b, af.int32)),
         np.ones((2, 3), f), np.array([0, 0], f)),
        ("reshape_size", lambda a, b: af.reshape(a, af.cast(b, af.int32)),
         np.ones((2, 3), f), np.array([4, 2], f)),
        ("expand_dims_two_dims", lambda a, b: af.expand_dims(a, af.cast(b, af.int32)),
         np.ones((2, 3), f), np.array([0, 1], f)),
        ("split_v_sizes", lambda a, b: af.split(a, af.cast(b, af.int32), axis=1, num=2)[0],
         np.ones((2, 3), f), np.array([1, 1], f)),
    ]


@pytest.mark.parametrize("case", _bad_input_cases(), ids=lambda c: c[0])
async def test_gpu_kernels_refuse_bad_input_as_the_cpu_ones(case, monkeypatch):
    """The GPU kernel's error is the CPU kernel's (class and message), naming the node."""
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    _, build, a_value, b_value = case
    messages = []
    for device in ("/cpu:0", "/gpu:0"):
        g = af.Graph()
        with g.as_default():
            a = af.placeholder(af.float32, None, name="a")
            b = af.placeholder(af.float32, None, name="b")
            with af.device(device):
                op = build(a, b)
        feed = {t: v for t, v in ((a, a_value), (b, b_value)) if v is not None}
        async with af.Session(graph=g) as sess:
            with pytest.raises(af.errors.InvalidArgumentError) as info:
                await sess.run(op, feed)
        assert op.op.name in str(info.value)
        messages.append(info.value.message.split(" [[")[0].split("\n")[0])
    assert messages[1] == messages[0]


async def test_gpu_kernels_give_the_cpu_values_on_edge_inputs(monkeypatch):
    """Empty softmax rows, empty Max/Min reductions (the reducer's identity) and Equal /
    NotEqual of shapes that do not broadcast with incompatible_shape_error=False (a
    scalar): the GPU kernels give the CPU kernels' values (they raised NumPy errors)."""
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")
    f = np.float32
    feed_values = {"a": np.ones((3, 0), f), "b": np.ones((2, 3), f), "c": np.ones(4, f)}
    results = []
    for device in ("/cpu:0", "/gpu:0"):
        g = af.Graph()
        with g.as_default():
            a, b, c = (af.placeholder(af.float32, None, name=n) for n in "abc")
            with af.device(device):
                ops = [af.nn.softmax(a), af.nn.log_softmax(a),
                       af.reduce_max(a, axis=1), af.reduce_min(a, axis=[0, 1]),
                       apply_op("Equal", x=b, y=c, incompatible_shape_error=False),
                       apply_op("NotEqual", x=b, y=c, incompatible_shape_error=False)]
        async with af.Session(graph=g) as sess:
            results.append(await sess.run(ops, {f"{n}:0": v for n, v in feed_values.items()}))
    for cpu, gpu in zip(*results, strict=True):
        assert np.asarray(gpu).dtype == np.asarray(cpu).dtype
        np.testing.assert_array_equal(gpu, cpu)
    assert [np.shape(v) for v in results[1]] == [(3, 0), (3, 0), (3,), (), (), ()]
