"""Pooling (MaxPool, MaxPoolV2, AvgPool, MaxPool3D, AvgPool3D) and normalisation (LRN,
FusedBatchNorm*) kernels on each of their paths: NumPy's, and the loops numba compiles
(aioflow/kernels/nn/pooling_jit.py, aioflow/kernels/nn/normalization_jit.py) once they are ready:
TF 2.21's
fixtures (tests/data/nn_conv_cases) on both, NumPy references at the shapes, paddings,
strides, formats and dtypes the fixtures do not cover, and the first call running NumPy
while the loops compile in the background. The oneDNN backend (the onednn extra) is off
here: its pooling kernels are tested in tests/test_onednn_kernels.py and on the fixtures
in tests/test_kernels_conv.py."""

from __future__ import annotations

import numpy as np
import pytest
import test_kernels_conv as fixtures
from kernel_testutil import run1, run_kernel

from aioflow.kernels.nn import (
    normalization_jit,
    normalization_kernels,
    pooling_jit,
    pooling_kernels,
)

try:
    from ml_dtypes import bfloat16
except ImportError:  # pragma: no cover - ml_dtypes comes with aioflow
    bfloat16 = None


@pytest.fixture(autouse=True)
def _numpy_kernels(monkeypatch):
    """The NumPy/numba kernels, whether or not the oneDNN backend is installed."""
    from aioflow.kernels.onednn import backend
    monkeypatch.setattr(backend, "ACTIVE", False)


@pytest.fixture(params=["numpy", "jit"])
def path(request, monkeypatch):
    """The kernels' NumPy path, and their compiled one where numba is installed."""
    if request.param == "numpy":
        monkeypatch.setattr(pooling_kernels, "_COMPILED", False)
        monkeypatch.setattr(normalization_kernels, "_COMPILED", False)
    elif not pooling_kernels._COMPILED:
        pytest.skip("numba (the jit extra) is not installed")
    else:
        assert pooling_jit.wait_ready(120), repr(pooling_jit._group.last_error)
        assert normalization_jit.wait_ready(120), repr(normalization_jit._group.last_error)
        # the fixtures' small tensors through the compiled training loops too
        monkeypatch.setattr(normalization_kernels, "_COMPILED_TRAINING_FROM", 1)
    return request.param


_OPS = ("MaxPool", "MaxPoolV2", "AvgPool", "MaxPool3D", "AvgPool3D", "LRN", "FusedBatchNorm",
        "FusedBatchNormV2", "FusedBatchNormV3")
_CASES = [c for c in fixtures.CASES if c["op"] in _OPS]


@pytest.mark.parametrize("case", _CASES, ids=[c["id"] for c in _CASES])
def test_matches_tensorflow_on_each_path(case, path):
    fixtures.test_matches_tensorflow(case)


# -- pooling against NumPy ---------------------------------------------------------------------

def _same(size, k, s):
    out = -(-size // s)
    need = max(0, (out - 1) * s + k - size)
    return need // 2, need - need // 2


def _ref_pool(x, k, s, pads, op):
    """Max (NaN wins, padding never does) or mean over the taps inside, in float64, of x
    (N, *spatial, C)."""
    nsp = x.ndim - 2
    widths = [(0, 0)] + list(pads) + [(0, 0)]
    xp = np.pad(x.astype(np.float64), widths)
    inside = np.pad(np.ones(x.shape[1:-1], bool), list(pads))
    outs = [(xp.shape[1 + i] - k[i]) // s[i] + 1 for i in range(nsp)]
    best = np.full((x.shape[0], *outs, x.shape[-1]), -np.inf)
    total = np.zeros_like(best)
    count = np.zeros(outs)
    for tap in np.ndindex(*k):
        sl = tuple(slice(t, t + (o - 1) * st + 1, st) for t, o, st in zip(tap, outs, s,
                                                                          strict=True))
        v = xp[(slice(None),) + sl]
        m = inside[sl]
        best = np.where(m[None, ..., None], np.maximum(best, v), best)
        total += np.where(m[None, ..., None], v, 0)
        count += m
    return best if op == "max" else total / count[None, ..., None]


def _tol(dtype):
    if dtype == np.float16 or dtype == bfloat16:
        return dict(rtol=1e-2, atol=1e-2)
    return dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


_POOL_SHAPES = [
    # (input shape, ksize, strides, padding, explicit)
    ((2, 13, 11, 5), (3, 3), (2, 2), "SAME", None),
    ((1, 12, 12, 64), (3, 3), (2, 2), "SAME", None),
    ((3, 9, 8, 3), (2, 3), (1, 2), "VALID", None),
    ((2, 2, 3, 4), (5, 4), (3, 1), "SAME", None),  # the window larger than the input
    ((1, 7, 7, 17), (7, 7), (1, 1), "VALID", None),  # global
    ((9, 6, 5, 1), (2, 2), (2, 2), "VALID", None),  # more batches than blocks
    ((0, 6, 6, 3), (2, 2), (2, 2), "SAME", None),  # empty
    ((2, 5, 7, 2, 3), (2, 2, 2), (2, 2, 2), "VALID", None),
    ((1, 5, 7, 9, 4), (3, 2, 3), (2, 1, 2), "SAME", None),
    ((2, 3, 4, 5, 33), (3, 3, 3), (1, 1, 1), "SAME", None),
    ((1, 2, 3, 3, 2), (4, 4, 4), (2, 3, 1), "SAME", None),
]


@pytest.mark.parametrize("shape, k, s, padding, explicit", _POOL_SHAPES)
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, bfloat16])
def test_pooling_matches_reference(shape, k, s, padding, explicit, op, dtype, path,
                                   monkeypatch):
    """Max and average pooling, 2-D and 3-D, against NumPy; NaN and -inf in the input;
    whole and in blocks of one row."""
    nsp = len(shape) - 2
    if nsp == 3 and op == "max" and dtype == np.float64:
        pytest.skip("MaxPool3D has no float64 kernel (as TF's)")
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    if op == "max" and x.size > 8:
        x.flat[::7] = -np.inf
        x.flat[3] = np.nan
    name = {("max", 2): "MaxPool", ("avg", 2): "AvgPool", ("max", 3): "MaxPool3D",
            ("avg", 3): "AvgPool3D"}[op, nsp]
    attrs = dict(ksize=[1, *k, 1], strides=[1, *s, 1], padding=padding)
    pads = ([_same(n, kk, ss) for n, kk, ss in zip(shape[1:-1], k, s, strict=True)]
            if padding == "SAME" else [(0, 0)] * nsp)
    got = run1(name, [x], **attrs)
    assert got.dtype == x.dtype
    want = _ref_pool(x, k, s, pads, op)
    np.testing.assert_allclose(got.astype(np.float64), want, **_tol(dtype))
    monkeypatch.setattr(pooling_kernels, "_BLOCK_BYTES", 8)
    np.testing.assert_array_equal(run1(name, [x], **attrs).astype(np.float64),
                                  got.astype(np.float64))


@pytest.mark.parametrize("op", ["MaxPool", "AvgPool"])
def test_pooling_channels_first_and_v2(op, path):
    """NCHW input (run in channels-last) and MaxPoolV2's window as inputs."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 9, 7)).astype(np.float32)  # NCHW
    nchw = run1(op, [x], ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], padding="SAME",
                data_format="NCHW")
    nhwc = run1(op, [x.transpose(0, 2, 3, 1)], ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1],
                padding="SAME")
    np.testing.assert_array_equal(nchw, nhwc.transpose(0, 3, 1, 2))
    if op == "MaxPool":
        v2 = run1("MaxPoolV2", [x.transpose(0, 2, 3, 1), np.array([1, 3, 3, 1], np.int32),
                                np.array([1, 2, 2, 1], np.int32)], padding="SAME")
        np.testing.assert_array_equal(v2, nhwc)


def test_max_pool_explicit_padding(path):
    x = np.random.default_rng(2).standard_normal((2, 5, 6, 3)).astype(np.float32) - 5
    explicit = [0, 0, 2, 1, 0, 2, 0, 0]
    got = run1("MaxPool", [x], ksize=[1, 3, 3, 1], strides=[1, 2, 1, 1], padding="EXPLICIT",
               explicit_paddings=explicit)
    want = _ref_pool(x, (3, 3), (2, 1), [(2, 1), (0, 2)], "max")
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_int_max_pool_keeps_numpy(path):
    x = np.arange(2 * 5 * 5 * 3, dtype=np.int32).reshape(2, 5, 5, 3) - 40
    got = run1("MaxPool", [x], ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    np.testing.assert_array_equal(got, _ref_pool(x, (2, 2), (2, 2), [(0, 1), (0, 1)], "max"))
    assert got.dtype == np.int32


@pytest.mark.skipif(not pooling_jit.available(), reason="numba (the jit extra) is not "
                    "installed")
def test_pooling_runs_numpy_until_the_loops_are_compiled(monkeypatch):
    """A first call never waits for numba: NumPy pools, and the compile is asked for."""
    requested = []
    monkeypatch.setattr(pooling_jit, "ready", lambda: False)
    monkeypatch.setattr(pooling_jit, "compile_in_background", lambda: requested.append(1))
    monkeypatch.setattr(pooling_jit, "pool_rows", None)  # a call would raise
    x = np.random.default_rng(1).standard_normal((1, 2, 6, 6, 3)).astype(np.float32)
    got = run1("AvgPool3D", [x], ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1],
               padding="VALID")
    np.testing.assert_allclose(got, _ref_pool(x, (2, 2, 2), (2, 2, 2), [(0, 0)] * 3, "avg"),
                               rtol=1e-6)
    assert requested


# -- normalisation against NumPy ---------------------------------------------------------------

def _ref_batch_norm(x, scale, offset, mean, var, eps, axis):
    shape = [1] * x.ndim
    shape[axis] = -1
    inv = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
    return (x.astype(np.float64) - mean.reshape(shape)) * inv.reshape(shape) + \
        offset.reshape(shape)


@pytest.mark.parametrize("shape, fmt", [
    ((2, 5, 7, 3), "NHWC"), ((2, 3, 5, 7), "NCHW"), ((1, 9, 9, 300), "NHWC"),
    ((3, 33, 4, 5), "NCHW"), ((2, 3, 4, 5, 6), "NDHWC"), ((2, 6, 3, 4, 5), "NCDHW"),
    ((0, 4, 4, 3), "NHWC"), ((2, 0, 4, 3), "NCHW"), ((8, 30, 30, 16), "NHWC"),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, bfloat16])
def test_batch_norm_inference_matches_reference(shape, fmt, dtype, path, monkeypatch):
    """FusedBatchNormV3 at inference, every format, whole and in blocks of one row."""
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    axis = 1 if fmt.startswith("NC") else len(shape) - 1
    c = shape[axis]
    scale, offset, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    var = np.abs(rng.standard_normal(c)).astype(np.float32) + 0.1
    args = [x, scale, offset, mean, var]
    y, *_ = run_kernel("FusedBatchNormV3", args, is_training=False, epsilon=0.001,
                       data_format=fmt)
    assert y.dtype == x.dtype and y.shape == x.shape
    want = _ref_batch_norm(x, scale, offset, mean, var, 0.001, axis)
    np.testing.assert_allclose(y.astype(np.float64), want, **(
        _tol(dtype) if dtype != np.float32 else dict(rtol=1e-5, atol=1e-5)))
    monkeypatch.setattr(normalization_kernels, "_BLOCK_BYTES", 1)
    again, *_ = run_kernel("FusedBatchNormV3", args, is_training=False, epsilon=0.001,
                           data_format=fmt)
    np.testing.assert_array_equal(again.astype(np.float64), y.astype(np.float64))


@pytest.mark.parametrize("shape, fmt", [
    ((32, 28, 28, 16), "NHWC"), ((3, 5, 7, 300), "NHWC"), ((2, 3, 4, 5, 6), "NDHWC"),
    ((4, 16, 9, 9), "NCHW"), ((1, 1, 1, 8), "NHWC"),
])
@pytest.mark.parametrize("factor", [1.0, 0.25])
def test_batch_norm_training_matches_reference(shape, fmt, factor, path):
    """FusedBatchNormV3 in training (batch statistics, the running ones blended by
    exponential_avg_factor), on each path, against float64 NumPy; the compiled loops
    give the NumPy path's values bit for bit."""
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 3 + 5).astype(np.float32)
    axis = 1 if fmt.startswith("NC") else len(shape) - 1
    c = shape[axis]
    scale, offset, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    var = np.abs(rng.standard_normal(c)).astype(np.float32) + 0.1
    args = [x, scale, offset, mean, var]
    attrs = dict(is_training=True, epsilon=0.001, data_format=fmt,
                 exponential_avg_factor=factor)
    y, out_mean, out_var, bmean, bvar, _ = run_kernel("FusedBatchNormV3", args, **attrs)
    axes = tuple(i for i in range(x.ndim) if i != axis)
    x64 = x.astype(np.float64)
    want_mean, want_var = x64.mean(axis=axes), x64.var(axis=axes)
    count = x.size // c
    np.testing.assert_allclose(bmean, want_mean, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(bvar, want_var, rtol=1e-5)
    np.testing.assert_allclose(y, _ref_batch_norm(x, scale, offset, want_mean, want_var,
                                                  0.001, axis), rtol=1e-4, atol=1e-4)
    unbiased = want_var * count / max(count - 1, 1)
    np.testing.assert_allclose(out_mean, (1 - factor) * mean + factor * want_mean,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_var, (1 - factor) * var + factor * unbiased, rtol=1e-5)
    if path == "jit":
        numpy_outs = _numpy_training(args, attrs)
        for got, want in zip([y, out_mean, out_var, bmean, bvar], numpy_outs, strict=False):
            np.testing.assert_array_equal(got, want)


def test_batch_norm_training_blocks_shared_among_threads(path, monkeypatch):
    """The statistics summed per thread and the blocks shared: the one-block values, up
    to the float64 sums' order."""
    if path != "jit":
        pytest.skip("the NumPy path has no blocks")
    from aioflow.kernels.nn import conv_kernels
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 9, 9, 24)).astype(np.float32)
    ones, zeros = np.ones(24, np.float32), np.zeros(24, np.float32)
    args = [x, ones, zeros, zeros, ones]
    whole = run_kernel("FusedBatchNormV3", args, is_training=True, epsilon=0.001)
    monkeypatch.setattr(conv_kernels, "PARALLEL_WORK", 0)
    monkeypatch.setattr(normalization_kernels, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(normalization_kernels, "intra_op_threads", lambda: 2)
    monkeypatch.setattr(normalization_kernels, "_SPLIT_WORK", 0)
    blocked = run_kernel("FusedBatchNormV3", args, is_training=True, epsilon=0.001)
    for got, want in zip(blocked[:5], whole[:5], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _numpy_training(args, attrs):
    saved = normalization_kernels._COMPILED
    normalization_kernels._COMPILED = False
    try:
        return run_kernel("FusedBatchNormV3", args, **attrs)
    finally:
        normalization_kernels._COMPILED = saved


def test_batch_norm_keeps_nan_and_inf(path):
    x = np.array([[[[np.nan, np.inf, -np.inf, 1.0]]]], np.float32)
    ones, zeros = np.ones(4, np.float32), np.zeros(4, np.float32)
    y, *_ = run_kernel("FusedBatchNorm", [x, ones * 2, ones, zeros, ones], is_training=False,
                       epsilon=0.0)
    np.testing.assert_array_equal(y, [[[[np.nan, np.inf, -np.inf, 3.0]]]])


def _ref_lrn(x, radius, bias, alpha, beta):
    x = x.astype(np.float64)
    sq = np.square(x)
    depth = x.shape[-1]
    window = np.zeros_like(x)
    for ch in range(depth):
        if radius >= 0:
            lo, hi = max(0, ch - radius), min(depth, ch + radius + 1)
            window[..., ch] = sq[..., lo:hi].sum(-1)
    return x / (bias + alpha * window) ** beta


@pytest.mark.parametrize("shape", [(2, 5, 7, 12), (1, 3, 3, 1), (1, 27, 27, 96), (0, 3, 3, 4),
                                   (2, 2, 2, 0)])
@pytest.mark.parametrize("radius, bias, alpha, beta", [
    (2, 1.0, 2e-5, 0.75), (5, 1.0, 1.0, 0.5), (1, 2.0, 0.5, 1.0), (3, 0.5, 0.3, 0.6),
    (0, 1.5, 0.1, 0.75), (-1, 1.0, 1.0, 0.5), (1000, 1.0, 0.01, 0.75),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, bfloat16])
def test_lrn_matches_reference(shape, radius, bias, alpha, beta, dtype, path, monkeypatch):
    rng = np.random.default_rng(sum(shape) + radius)
    x = rng.standard_normal(shape).astype(dtype)
    attrs = dict(depth_radius=radius, bias=bias, alpha=alpha, beta=beta)
    y = run1("LRN", [x], **attrs)
    assert y.dtype == x.dtype and y.shape == x.shape
    want = _ref_lrn(x, radius, bias, alpha, beta)
    np.testing.assert_allclose(y.astype(np.float64), want, **(
        _tol(dtype) if dtype != np.float32 else dict(rtol=1e-5, atol=1e-6)))
    monkeypatch.setattr(normalization_kernels, "_BLOCK_BYTES", 1)
    np.testing.assert_array_equal(run1("LRN", [x], **attrs).astype(np.float64),
                                  y.astype(np.float64))


@pytest.mark.skipif(not normalization_jit.available(), reason="numba (the jit extra) is not "
                    "installed")
def test_normalization_runs_numpy_until_the_loops_are_compiled(monkeypatch):
    """A first call never waits for numba: NumPy computes, and the compile is asked for."""
    requested = []
    monkeypatch.setattr(normalization_jit, "ready", lambda: False)
    monkeypatch.setattr(normalization_jit, "compile_in_background", lambda: requested.append(1))
    monkeypatch.setattr(normalization_jit, "scale_shift", None)  # a call would raise
    monkeypatch.setattr(normalization_jit, "lrn_rows", None)
    x = np.random.default_rng(4).standard_normal((2, 4, 4, 6)).astype(np.float32)
    ones, zeros = np.ones(6, np.float32), np.zeros(6, np.float32)
    y, *_ = run_kernel("FusedBatchNormV3", [x, ones, zeros, zeros, ones], is_training=False,
                       epsilon=0.0)
    np.testing.assert_allclose(y, x, rtol=1e-6)
    y = run1("LRN", [x], depth_radius=1, bias=1.0, alpha=1.0, beta=0.75)
    np.testing.assert_allclose(y, _ref_lrn(x, 1, 1.0, 1.0, 0.75), rtol=1e-5)
    assert len(requested) == 2


# -- _FusedBatchNormEx (the remapper's batch norm + Relu) -----------------------------------------

def _ex_args(shape=(4, 5, 5, 6), seed=3):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    c = shape[-1]
    scale, offset, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    var = np.abs(rng.standard_normal(c)).astype(np.float32) + 0.1
    return [x, scale, offset, mean, var]


@pytest.mark.parametrize("is_training", [True, False])
def test_fused_batch_norm_ex_is_the_batch_norm_then_relu(is_training, path):
    """activation_mode Relu: y = Relu(FusedBatchNormV3's y), the other outputs
    FusedBatchNormV3's; Identity: FusedBatchNormV3's outputs."""
    args = _ex_args()
    attrs = dict(is_training=is_training, epsilon=0.001, exponential_avg_factor=0.5)
    want = run_kernel("FusedBatchNormV3", args, **attrs)
    got = run_kernel("_FusedBatchNormEx", args, activation_mode="Relu", **attrs)
    assert len(got) == 6 and (got[0] >= 0).all() and (got[0] == 0).any()
    np.testing.assert_array_equal(got[0], np.maximum(want[0], 0))
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_array_equal(g, w)
    same = run_kernel("_FusedBatchNormEx", args, **attrs)
    np.testing.assert_array_equal(same[0], want[0])


def test_fused_batch_norm_ex_adds_its_side_input_before_the_relu():
    args = _ex_args()
    side = np.random.default_rng(4).standard_normal(args[0].shape).astype(np.float32)
    attrs = dict(is_training=True, epsilon=0.001)
    want = run_kernel("FusedBatchNormV3", args, **attrs)[0] + side
    got = run_kernel("_FusedBatchNormEx", args + [side], activation_mode="Relu",
                     num_side_inputs=1, **attrs)
    np.testing.assert_array_equal(got[0], np.maximum(want, 0))


@pytest.mark.parametrize("attrs, side_shape, message", [
    (dict(activation_mode="Elu"), None, "only supports Identity and Relu"),
    (dict(activation_mode="Relu", num_side_inputs=2), None, "at most one side input"),
    (dict(num_side_inputs=1), (4, 5, 5, 6), "Identity activation is not supported"),
    (dict(activation_mode="Relu", num_side_inputs=1), (4, 5, 5, 1),
     r"side_input shape must be equal to input shape: \[4,5,5,1\] != \[4,5,5,6\]"),
])
def test_fused_batch_norm_ex_errors(attrs, side_shape, message):
    from kernel_testutil import create

    from aioflow.framework import errors

    args = _ex_args()
    sides = [np.zeros(side_shape, np.float32)] * attrs.get("num_side_inputs", 0) \
        if side_shape else [args[0]] * attrs.get("num_side_inputs", 0)
    with pytest.raises(errors.InvalidArgumentError, match=message):
        kernel = create("_FusedBatchNormEx", args + sides, is_training=True, **attrs)
        kernel.compute(None, args + sides)
