"""Convolution, pooling and normalisation kernels against TF 2.21 (tests/data/nn_conv_cases,
made by tests/data/make_nn_conv_fixtures.py): the same outputs, or the same error class
and message; plus checks against NumPy references at shapes the fixtures do not cover,
the pool/inline decision, and errors naming the node in a session.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import create, run1, run_kernel

import aioflow as af
from aioflow.framework import errors

DATA = Path(__file__).resolve().parent / "data"
_MANIFEST = json.loads((DATA / "nn_conv_cases.json").read_text())
_ARRAYS = np.load(DATA / "nn_conv_cases.npz", allow_pickle=False)
# Errors TF reports while validating the NodeDef against the OpDef (before any kernel).
CASES = [c for c in _MANIFEST["cases"] if "NodeDef:" not in c.get("message", "")]


def _tolerance(dtype) -> dict:
    if dtype in (np.float16,) or dtype.name == "bfloat16":
        return dict(rtol=1e-2, atol=1e-2)
    if dtype == np.float64:
        return dict(rtol=1e-10, atol=1e-10)
    return dict(rtol=2e-5, atol=2e-5)


def _run(case):
    inputs = [_ARRAYS[key] for _, key in case["inputs"]]
    inputs = [v[()] if v.ndim == 0 else v for v in inputs]
    kernel = create(case["op"], inputs, **case["attrs"])
    return list(kernel.compute(None, inputs))


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_matches_tensorflow(case):
    if case["outcome"] == "error":
        cls = getattr(errors, case["error"])
        with pytest.raises(cls) as info:
            _run(case)
        assert type(info.value) is cls
        assert info.value.message == case["message"]
        return
    outputs = _run(case)
    expected = [_ARRAYS[key] for key in case["outputs"]]
    assert len(outputs) == len(expected)
    if case["op"].startswith("FusedBatchNorm") and not case["attrs"].get("is_training", True):
        # reserve_space_1/2 after inference are uninitialised memory in TF.
        outputs, expected = outputs[:3], expected[:3]
    for got, want in zip(outputs, expected, strict=True):
        got = np.asarray(got)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        if want.size and np.issubdtype(want.dtype, np.floating):
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       **_tolerance(want.dtype))
        else:
            np.testing.assert_array_equal(got, want)


def test_fixture_covers_every_op():
    ops = {c["op"] for c in CASES}
    assert ops >= {"Conv2D", "Conv2DBackpropInput", "Conv3D", "DepthwiseConv2dNative",
                   "MaxPool", "MaxPoolV2", "AvgPool", "MaxPool3D", "AvgPool3D",
                   "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "BiasAddV1",
                   "LRN", "L2Loss"}


# -- NumPy references at model shapes ----------------------------------------------------------

def _ref_conv(x, w, s, d, pads):
    xp = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)])
    kh, kw, _, o = w.shape
    oh = (xp.shape[1] - (kh - 1) * d - 1) // s + 1
    ow = (xp.shape[2] - (kw - 1) * d - 1) // s + 1
    out = np.zeros((x.shape[0], oh, ow, o))
    for i in range(kh):
        for j in range(kw):
            v = xp[:, i * d:i * d + (oh - 1) * s + 1:s, j * d:j * d + (ow - 1) * s + 1:s]
            out += v @ w[i, j].astype(np.float64)
    return out


def _same(size, k, s, d=1):
    out = -(-size // s)
    need = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
    return need // 2, need - need // 2


@pytest.mark.parametrize("n, h, c, k, o, s", [
    (2, 17, 3, 3, 8, 2), (1, 30, 16, 1, 24, 1), (3, 12, 8, 7, 4, 2), (1, 9, 32, 3, 32, 1),
    (9, 8, 4, 3, 5, 1),  # more batches than fit one block
])
def test_conv2d_same_matches_reference(n, h, c, k, o, s):
    rng = np.random.default_rng(h * k)
    x = rng.standard_normal((n, h, h + 1, c)).astype(np.float32)
    w = rng.standard_normal((k, k, c, o)).astype(np.float32)
    got = run1("Conv2D", [x, w], strides=[1, s, s, 1], padding="SAME")
    want = _ref_conv(x, w, s, 1, [_same(h, k, s), _same(h + 1, k, s)])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, k, s, d, padding, explicit", [
    ((2, 17, 15, 3), (3, 3), 2, 1, "SAME", None),  # MobileNetV2's first convolution, shrunk
    ((1, 13, 12, 1), (5, 3), 1, 2, "VALID", None),
    ((3, 9, 10, 2), (3, 4), 3, 1, "EXPLICIT", [0, 0, 2, 1, 0, 3, 0, 0]),
])
@pytest.mark.parametrize("k_major_run", [0, 1000])
def test_conv2d_k_major_patches_match_reference(shape, k, s, d, padding, explicit,
                                                k_major_run, monkeypatch):
    """Patches copied K-major (short kw*C runs) or row by row: both the reference's values,
    whole and in blocks of one output row."""
    from aioflow.kernels.nn import conv_kernels
    monkeypatch.setattr(conv_kernels, "_K_MAJOR_RUN", k_major_run)
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(k + (shape[3], 5)).astype(np.float32)
    attrs = dict(strides=[1, s, s, 1], padding=padding, dilations=[1, d, d, 1])
    if explicit:
        attrs["explicit_paddings"] = explicit
        pads = [tuple(explicit[2:4]), tuple(explicit[4:6])]
    elif padding == "SAME":
        pads = [_same(shape[1], k[0], s, d), _same(shape[2], k[1], s, d)]
    else:
        pads = [(0, 0), (0, 0)]
    got = run1("Conv2D", [x, w], **attrs)
    np.testing.assert_allclose(got, _ref_conv(x, w, s, d, pads), rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(conv_kernels, "_BLOCK_BYTES", 8)
    np.testing.assert_allclose(run1("Conv2D", [x, w], **attrs), got, rtol=1e-6, atol=1e-6)


def test_depthwise_explicit_padding_and_big_blocks_agree(depthwise_path, monkeypatch):
    """EXPLICIT asymmetric padding, a 5x4 window, blocks smaller than an image."""
    from aioflow.kernels.nn import conv_kernels
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 12, 13, 4)).astype(np.float32)
    w = rng.standard_normal((5, 4, 4, 2)).astype(np.float32)
    attrs = dict(strides=[1, 2, 2, 1], padding="EXPLICIT",
                 explicit_paddings=[0, 0, 3, 1, 0, 2, 0, 0])
    whole = run1("DepthwiseConv2dNative", [x, w], **attrs)
    xp = np.pad(x, ((0, 0), (3, 1), (0, 2), (0, 0)))
    want = np.stack([_ref_conv(xp[..., ci:ci + 1], w[:, :, ci:ci + 1, :], 2, 1,
                               [(0, 0), (0, 0)]) for ci in range(4)], axis=3)
    np.testing.assert_allclose(whole, want.reshape(whole.shape), rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(conv_kernels, "_DW_BLOCK_BYTES", 64)
    blocked = run1("DepthwiseConv2dNative", [x, w], **attrs)
    np.testing.assert_allclose(blocked, whole, rtol=1e-6, atol=1e-6)


def test_conv2d_large_batch_is_blocked(monkeypatch):
    """Blocks of output rows smaller than an image give the same result."""
    from aioflow.kernels.nn import conv_kernels
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 20, 20, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 6)).astype(np.float32)
    whole = run1("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    monkeypatch.setattr(conv_kernels, "_BLOCK_BYTES", 256)
    blocked = run1("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    np.testing.assert_allclose(blocked, whole, rtol=1e-6, atol=1e-6)


@pytest.fixture(params=["numpy", "jit"])
def depthwise_path(request, monkeypatch):
    """The depthwise kernel's NumPy path, and its compiled one where numba is installed."""
    from aioflow.kernels.nn import conv_kernels
    if request.param == "numpy":
        monkeypatch.setattr(conv_kernels, "_COMPILED_DEPTHWISE", False)
    elif not conv_kernels._COMPILED_DEPTHWISE:
        pytest.skip("numba (the jit extra) is not installed")
    return request.param


@pytest.mark.parametrize("s, m, d", [(1, 1, 1), (2, 1, 1), (1, 3, 1), (2, 2, 1), (1, 1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_matches_reference(s, m, d, dtype, depthwise_path):
    rng = np.random.default_rng(s * 10 + m)
    x = rng.standard_normal((2, 15, 14, 6)).astype(dtype)
    w = rng.standard_normal((3, 3, 6, m)).astype(dtype)
    got = run1("DepthwiseConv2dNative", [x, w], strides=[1, s, s, 1], padding="SAME",
               dilations=[1, d, d, 1])
    assert got.dtype == dtype
    pads = [_same(15, 3, s, d), _same(14, 3, s, d)]
    want = np.stack([_ref_conv(x[..., ci:ci + 1], w[:, :, ci:ci + 1, :], s, d, pads)
                     for ci in range(6)], axis=3).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _ref_depthwise(x, w, s, d, pads):
    """Depthwise reference: each channel convolved with its own filters (c*M + q order)."""
    c = x.shape[-1]
    return np.stack([_ref_conv(x[..., ci:ci + 1], w[:, :, ci:ci + 1, :], s, d, pads)
                     for ci in range(c)], axis=3).reshape(
        _ref_conv(x[..., :1], w[:, :, :1, :], s, d, pads).shape[:3] + (-1,))


@pytest.mark.parametrize("shape, k, s, d, padding, explicit", [
    # Column stride 1, multiplier 1: the compiled row-accumulating loop.
    ((2, 9, 11, 5), (3, 3), (1, 1), 1, "SAME", None),
    ((1, 7, 6, 3), (3, 3), (1, 1), 1, "VALID", None),
    ((3, 10, 13, 16), (3, 5), (1, 1), 2, "SAME", None),  # dilation 2
    ((1, 5, 4, 2), (3, 3), (1, 1), 1, "EXPLICIT", [0, 0, 4, 0, 5, 6, 0, 0]),  # pad > width
    ((2, 3, 2, 7), (3, 5), (1, 1), 1, "SAME", None),  # the window wider than the input
    ((1, 4, 3, 1), (2, 2), (1, 1), 3, "EXPLICIT", [0, 0, 1, 2, 0, 3, 0, 0]),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_depthwise_stride1_rows_match_reference(shape, k, s, d, padding, explicit, dtype,
                                                depthwise_path, monkeypatch):
    """Stride-1 columns (each output row accumulated tap by tap over the columns whose input
    is inside), against the reference, whole and in blocks of one row."""
    from aioflow.kernels.nn import conv_kernels
    rng = np.random.default_rng(sum(shape) + d)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(k + (shape[3], 1)).astype(dtype)
    attrs = dict(strides=[1, s[0], s[1], 1], padding=padding, dilations=[1, d, d, 1])
    if explicit:
        attrs["explicit_paddings"] = explicit
        pads = [tuple(explicit[2:4]), tuple(explicit[4:6])]
    elif padding == "SAME":
        pads = [_same(shape[1], k[0], s[0], d), _same(shape[2], k[1], s[1], d)]
    else:
        pads = [(0, 0), (0, 0)]
    got = run1("DepthwiseConv2dNative", [x, w], **attrs)
    assert got.dtype == dtype
    want = _ref_depthwise(x, w, s[0], d, pads)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    monkeypatch.setattr(conv_kernels, "_DW_BLOCK_BYTES", 8)
    blocked = run1("DepthwiseConv2dNative", [x, w], **attrs)
    np.testing.assert_allclose(blocked, got, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("pad, s, k", [("SAME", 2, 3), ("VALID", 1, 3), ("SAME", 2, 1),
                                       ("VALID", 3, 2)])
def test_backprop_input_is_the_adjoint_of_conv2d(pad, s, k):
    """<conv(x), dy> == <x, conv_backprop_input(dy)> for every x and dy."""
    rng = np.random.default_rng(k)
    x = rng.standard_normal((2, 11, 10, 3))
    w = rng.standard_normal((k, k, 3, 4))
    y = run1("Conv2D", [x, w], strides=[1, s, s, 1], padding=pad)
    dy = rng.standard_normal(y.shape)
    dx = run1("Conv2DBackpropInput", [np.array(x.shape, np.int32), w, dy],
              strides=[1, s, s, 1], padding=pad)
    assert dx.shape == x.shape
    np.testing.assert_allclose((y * dy).sum(), (x * dx).sum(), rtol=1e-10)


def _ref_max_pool(x, k, s, pads):
    """NumPy max pooling: the padding is -inf, NaN wins (np.maximum's rule)."""
    xp = np.pad(x.astype(np.float64), [(0, 0), pads[0], pads[1], (0, 0)],
                constant_values=-np.inf)
    oh = (xp.shape[1] - k[0]) // s[0] + 1
    ow = (xp.shape[2] - k[1]) // s[1] + 1
    out = np.full((x.shape[0], oh, ow, x.shape[3]), -np.inf)
    for i in range(k[0]):
        for j in range(k[1]):
            out = np.maximum(out, xp[:, i:i + (oh - 1) * s[0] + 1:s[0],
                                     j:j + (ow - 1) * s[1] + 1:s[1]])
    return out


@pytest.fixture(params=["numpy", "jit"])
def max_pool_path(request, monkeypatch):
    """MaxPool's NumPy path, and its compiled one where numba is installed (the oneDNN
    backend, where it is installed, off: it takes TF's NaN handling, tested with it)."""
    from aioflow.kernels.nn import pooling_kernels
    from aioflow.kernels.onednn import backend
    monkeypatch.setattr(backend, "ACTIVE", False)
    if request.param == "numpy":
        monkeypatch.setattr(pooling_kernels, "_COMPILED", False)
    elif not pooling_kernels._COMPILED:
        pytest.skip("numba (the jit extra) is not installed")
    else:
        assert pooling_kernels.pooling_jit.wait_ready(120)
    return request.param


@pytest.mark.parametrize("shape, k, s, padding, explicit", [
    ((2, 13, 11, 5), (3, 3), (2, 2), "SAME", None),
    ((1, 12, 12, 64), (3, 3), (2, 2), "SAME", None),  # ResNet50's, shrunk
    ((3, 9, 8, 3), (2, 3), (1, 2), "VALID", None),
    ((1, 5, 6, 2), (3, 3), (1, 1), "EXPLICIT", [0, 0, 2, 1, 0, 2, 0, 0]),
    ((2, 2, 3, 4), (5, 4), (3, 1), "SAME", None),  # the window larger than the input
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_matches_reference(shape, k, s, padding, explicit, dtype, max_pool_path,
                                    monkeypatch):
    """Max pooling against NumPy, with NaN and -inf in the input, whole and in blocks."""
    from aioflow.kernels.nn import pooling_kernels
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    x.flat[::7] = -np.inf
    x.flat[3] = np.nan
    attrs = dict(ksize=[1, k[0], k[1], 1], strides=[1, s[0], s[1], 1], padding=padding)
    if explicit:
        attrs["explicit_paddings"] = explicit
        pads = [tuple(explicit[2:4]), tuple(explicit[4:6])]
    elif padding == "SAME":
        pads = [_same(shape[1], k[0], s[0]), _same(shape[2], k[1], s[1])]
    else:
        pads = [(0, 0), (0, 0)]
    got = run1("MaxPool", [x], **attrs)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, _ref_max_pool(x, k, s, pads).astype(dtype))
    monkeypatch.setattr(pooling_kernels, "_BLOCK_BYTES", 8)
    np.testing.assert_array_equal(run1("MaxPool", [x], **attrs), got)


def test_max_pool_ignores_padding_for_negative_inputs():
    x = -np.ones((1, 3, 3, 1), np.float32) - np.arange(9, dtype=np.float32).reshape(1, 3, 3, 1)
    y = run1("MaxPool", [x], ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")
    assert y[0, 0, 0, 0] == -1 and y.max() < 0


def test_avg_pool_same_counts_only_inside_taps():
    x = np.ones((1, 4, 4, 2), np.float32)
    y = run1("AvgPool", [x], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    np.testing.assert_array_equal(y, np.ones_like(y))


# -- pool or inline ----------------------------------------------------------------------------

@pytest.mark.parametrize("op, small, big, attrs", [
    ("Conv2D", [(1, 8, 8, 3), (3, 3, 3, 4)], [(1, 56, 56, 64), (3, 3, 64, 64)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    ("DepthwiseConv2dNative", [(1, 8, 8, 3), (3, 3, 3, 1)], [(1, 112, 112, 32), (3, 3, 32, 1)],
     dict(strides=[1, 1, 1, 1], padding="SAME")),
    ("MaxPool", [(1, 8, 8, 3)], [(1, 112, 112, 64)],
     dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")),
    ("AvgPool", [(1, 8, 8, 3)], [(8, 7, 7, 2048)],
     dict(ksize=[1, 7, 7, 1], strides=[1, 1, 1, 1], padding="VALID")),
    ("FusedBatchNormV3", [(1, 4, 4, 3), (3,), (3,), (3,), (3,)],
     [(1, 112, 112, 32), (32,), (32,), (32,), (32,)], dict(is_training=False)),
])
def test_expensive_by_size_of_work(op, small, big, attrs, monkeypatch):
    """The NumPy kernels' thresholds (the oneDNN backend's: tests/test_onednn_kernels.py)."""
    from aioflow.kernels.onednn import backend
    monkeypatch.setattr(backend, "ACTIVE", False)
    small_in = [np.ones(s, np.float32) for s in small]
    big_in = [np.ones(s, np.float32) for s in big]
    kernel = create(op, small_in, **attrs)
    assert kernel.expensive is None
    assert not kernel.is_expensive(small_in)
    assert kernel.is_expensive(big_in)


# -- errors name the node in a session ---------------------------------------------------------

def test_kernel_error_names_the_node():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        y = af.nn.conv2d(x, np.ones((3, 3, 2, 4), np.float32), strides=1, padding="VALID",
                         name="my_conv")
    with af.SyncSession(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=re.escape("input depth must be evenly divisible by filter "
                                           "depth: 3 vs 2") + r"[\s\S]*\{\{node my_conv\}\}"):
            sess.run(y, {x: np.ones((1, 5, 5, 3), np.float32)})


def test_construction_error_names_the_node():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        y = af.nn.max_pool2d(x, ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME",
                             name="pool")
    op_def_node = y.op.node_def
    assert op_def_node.name == "pool"
    with af.SyncSession(graph=g) as sess:
        out = sess.run(y, {x: np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)})
    assert out.shape == (1, 4, 4, 1) and out[0, 0, 0, 0] == 5


def test_training_batch_norm_statistics():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    ones, zeros = np.ones(2, np.float32), np.zeros(2, np.float32)
    y, mean, var, r1, r2, r3 = run_kernel("FusedBatchNormV3", [x, ones, zeros, zeros, ones],
                                          is_training=True, epsilon=0.0)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(var, x.var(axis=(0, 1, 2), ddof=1), rtol=1e-5)
    np.testing.assert_allclose(r2, x.var(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(y.mean(axis=(0, 1, 2)), 0, atol=1e-5)
