"""The separable box filter for stride-1 average pooling (aioflow/kernels/nn/box_pool_jit.py,
aioflow/kernels/onednn/box_pool.py): TF 2.21's results (tests/data/box_pool_cases.npz,
made by tests/data/make_box_pool_fixtures_tf.py), a NumPy reference at odd sizes, both
paddings, windows larger than the input and an empty batch, the work split over threads,
and which poolings the oneDNN kernels hand to it."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import create

from aioflow.kernels import element_threads
from aioflow.kernels.nn import box_pool_jit
from aioflow.kernels.onednn import backend, box_pool

pytestmark = pytest.mark.skipif(not box_pool_jit.available(), reason="numba not installed")

_FIXTURES = Path(__file__).parent / "data" / "box_pool_cases.npz"


@pytest.fixture(scope="module", autouse=True)
def _compiled():
    assert box_pool_jit.wait_ready(300), box_pool_jit._group.last_error


def _pads(sizes, window, padding):
    """(before, after) per axis, as TF pads a stride-1 window."""
    if padding == "VALID":
        return [(0, 0)] * len(sizes)
    return [((k - 1) // 2, k - 1 - (k - 1) // 2) for k in window]


def _outs(sizes, window, padding):
    return [s if padding == "SAME" else s - k + 1 for s, k in zip(sizes, window, strict=True)]


def _reference(x, window, padding):
    """The mean (float64) of each window's taps inside x, directly."""
    sizes = x.shape[1:-1]
    pads = _pads(sizes, window, padding)
    outs = _outs(sizes, window, padding)
    out = np.empty((x.shape[0], *outs, x.shape[-1]))
    for pos in itertools.product(*map(range, outs)):
        index = tuple(slice(max(p - b, 0), min(p - b + k, s))
                      for p, (b, _), k, s in zip(pos, pads, window, sizes, strict=True))
        out[(slice(None), *pos)] = x[(slice(None), *index)].astype(np.float64).mean(
            axis=tuple(range(1, x.ndim - 1)))
    return out


def _average(x, window, padding):
    sizes = x.shape[1:-1]
    return box_pool.average(x, window, _pads(sizes, window, padding),
                            _outs(sizes, window, padding))


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _fixture_cases():
    with np.load(_FIXTURES) as data:
        names = sorted({k.split("/")[0] for k in data.files})
        return [(n, data[f"{n}/x"], data[f"{n}/y"], tuple(data[f"{n}/window"].tolist()),
                 str(data[f"{n}/padding"])) for n in names]


@pytest.mark.parametrize("case", _fixture_cases(), ids=lambda c: c[0])
def test_box_filter_equals_tensorflow(case):
    _, x, want, window, padding = case
    got = _average(x, window, padding)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", _fixture_cases(), ids=lambda c: c[0])
def test_avg_pool_kernels_equal_tensorflow(case):
    """The AvgPool / AvgPool3D kernels (oneDNN's where installed, handing the cases that
    suit it to the filter)."""
    _, x, want, window, padding = case
    op = "AvgPool3D" if x.ndim == 5 else "AvgPool"
    kernel = create(op, [x], ksize=[1, *window, 1], strides=[1] * x.ndim, padding=padding)
    got = np.asarray(kernel.compute(None, [x])[0])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape, window, padding", [
    ((3, 5, 7, 3), (3, 3), "SAME"),
    ((2, 9, 4, 5), (2, 5), "SAME"),        # even windows: the extra padding after
    ((1, 6, 11, 16), (4, 3), "VALID"),
    ((2, 1, 1, 4), (3, 3), "SAME"),        # one pixel: every window clipped to it
    ((1, 3, 2, 7), (6, 9), "SAME"),        # the window larger than the input
    ((2, 3, 5, 4, 9), (3, 3, 3), "SAME"),
    ((1, 5, 3, 6, 2), (2, 3, 4), "SAME"),
    ((1, 4, 6, 5, 3), (3, 2, 2), "VALID"),
    ((1, 2, 2, 3, 5), (5, 4, 7), "SAME"),  # larger on every axis
    ((2, 3, 4, 5, 6), (1, 3, 3), "SAME"),  # depth 1 window: the input's own planes
])
def test_box_filter_equals_the_direct_mean(shape, window, padding):
    x = _rand(*shape)
    np.testing.assert_allclose(_average(x, window, padding), _reference(x, window, padding),
                               rtol=1e-6, atol=1e-6)


def test_box_filter_float64():
    x = _rand(2, 3, 4, 5, 3).astype(np.float64)
    np.testing.assert_allclose(_average(x, (3, 3, 3), "SAME"),
                               _reference(x, (3, 3, 3), "SAME"), rtol=1e-12, atol=1e-12)


def test_empty_batch():
    for shape, window in (((0, 4, 5, 64), (3, 3)), ((0, 3, 4, 5, 64), (3, 3, 3))):
        got = _average(np.zeros(shape, np.float32), window, "SAME")
        assert got.shape == shape and got.dtype == np.float32
    x = np.zeros((0, 3, 4, 5, 64), np.float32)
    kernel = create("AvgPool3D", [x], ksize=[1, 3, 3, 3, 1], strides=[1] * 5, padding="SAME")
    assert np.asarray(kernel.compute(None, [x])[0]).shape == x.shape


def test_split_over_threads_equals_one_call(monkeypatch):
    """Above box_pool.SPLIT_ABOVE output elements the planes are shared among threads."""
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 64)
    monkeypatch.setattr(element_threads, "BLOCK", 64)
    monkeypatch.setattr(box_pool, "SPLIT_ABOVE", 64)
    calls = []
    real = box_pool_jit.box_planes
    monkeypatch.setattr(box_pool_jit, "box_planes",
                        lambda *a: (calls.append(a[2:4]), real(*a))[1])
    x = _rand(3, 4, 5, 6, 8)
    got = _average(x, (3, 3, 3), "SAME")
    assert sorted(calls)[0][0] == 0 and max(hi for _, hi in calls) == 12
    assert len(calls) > 1 or element_threads._CORES == 1
    np.testing.assert_allclose(got, _reference(x, (3, 3, 3), "SAME"), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape, window, strides, dtype, takes", [
    ((1, 8, 28, 28, 64), (3, 3, 3), (1, 1, 1), np.float32, True),
    ((1, 8, 28, 28, 64), (3, 3, 3), (2, 2, 2), np.float32, False),  # strided
    ((1, 8, 28, 28, 32), (3, 3, 3), (1, 1, 1), np.float32, False),  # few channels
    ((1, 8, 28, 28, 64), (2, 2, 2), (1, 1, 1), np.float32, False),  # few taps
    ((1, 8, 28, 28, 64), (3, 3, 3), (1, 1, 1), np.float64, False),  # oneDNN's is float32
    ((1, 35, 35, 192), (3, 3), (1, 1), np.float32, True),           # InceptionV3's
    ((1, 35, 35, 192), (3, 3), (2, 1), np.float32, False),
    ((1, 8, 8, 2048), (3, 3), (1, 1), np.float32, False),           # narrow rows
    ((1, 7, 7, 1280), (7, 7), (1, 1), np.float32, False),           # global pooling
])
def test_which_poolings_take_the_filter(shape, window, strides, dtype, takes):
    assert box_pool.suits(np.zeros(shape, dtype), window, strides) is takes


@pytest.mark.skipif(not backend.AVAILABLE, reason="oneDNN not installed")
@pytest.mark.parametrize("op, shape, window", [
    ("AvgPool3D", (1, 3, 4, 13, 64), (3, 3, 3)),
    ("AvgPool", (2, 5, 13, 64), (3, 3)),
])
def test_onednn_avg_pool_uses_the_filter(monkeypatch, op, shape, window):
    calls = []
    real = box_pool.average
    monkeypatch.setattr(box_pool, "average", lambda *a: (calls.append(1), real(*a))[1])
    x = _rand(*shape)
    kernel = create(op, [x], ksize=[1, *window, 1], strides=[1] * x.ndim, padding="SAME")
    got = np.asarray(kernel.compute(None, [x])[0])
    assert calls == [1]
    np.testing.assert_allclose(got, _reference(x, window, "SAME"), rtol=1e-6, atol=1e-6)


def test_below_the_split_one_call(monkeypatch):
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 64)
    monkeypatch.setattr(element_threads, "BLOCK", 64)
    calls = []
    real = box_pool_jit.box_planes
    monkeypatch.setattr(box_pool_jit, "box_planes",
                        lambda *a: (calls.append(a[2:4]), real(*a))[1])
    x = _rand(3, 4, 5, 6, 8)
    got = _average(x, (3, 3, 3), "SAME")
    assert calls == [(0, 12)]
    np.testing.assert_allclose(got, _reference(x, (3, 3, 3), "SAME"), rtol=1e-6, atol=1e-6)
