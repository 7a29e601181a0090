"""Large Relu, Relu6 and Pad: the compiled and thread-split paths (aioflow/kernels/
element_threads.py, nn/activation_jit.py, array/pad_fill.py) against the plain NumPy
results, bit for bit, at the size thresholds and on odd shapes. The split sizes are
lowered here so that small tensors take every path."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from kernel_testutil import run1, stopped_warm_helper

from aioflow.kernels import element_threads
from aioflow.kernels.array import pad_fill
from aioflow.kernels.nn import activation_jit, activation_kernels, pass_placement

SPECIALS = [np.nan, -np.nan, -0.0, 0.0, -np.inf, np.inf, -1.0, 1.0, 7.0, 6.0, 5.9, -1e-45]
REFERENCES = {
    "Relu": lambda x, t: np.maximum(x, t(0)),
    "Relu6": lambda x, t: np.minimum(np.maximum(x, t(0)), t(6)),
}


@pytest.fixture(scope="module")
def compiled():
    """The activation loops compiled (skipped without numba)."""
    if not activation_jit.wait_ready(120):
        pytest.skip(f"numba cannot compile the loops: {activation_jit._group.last_error!r}")


@pytest.fixture
def small_split(monkeypatch):
    """Splitting from 4,096 elements in blocks of 1,000, over 3 threads (Relu and Relu6
    split from as few: their whole-pass limit lowered too)."""
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 4096)
    monkeypatch.setattr(pass_placement, "WHOLE_PASS", 4096)
    monkeypatch.setattr(element_threads, "BLOCK", 1000)
    monkeypatch.setattr(element_threads, "intra_op_threads", lambda: 3)


def _features(shape, dtype, seed=0):
    """Random values with NaNs (both signs, a payload), signed zeros and infinities
    spread through, so that every block of a split sees some."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 5).astype(dtype)
    flat = x.reshape(-1)
    where = rng.choice(flat.size, size=min(flat.size, 200), replace=False)
    flat[where] = np.resize(np.array(SPECIALS, dtype), where.size)
    if dtype == np.float32 and flat.size > 3:
        flat[3:4].view(np.uint32)[0] = 0xFFC00123  # -NaN with a payload
    return x


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


# -- the ranges ---------------------------------------------------------------------------------

def test_split_ranges_at_the_threshold():
    limit = element_threads.SPLIT_ABOVE
    assert element_threads.split_ranges(limit, 4) == [(0, limit)]
    assert element_threads.split_ranges(limit + 1, 1) == [(0, limit + 1)]
    ranges = element_threads.split_ranges(limit + 1, 2)
    assert len(ranges) > 1
    assert ranges[0][0] == 0 and ranges[-1][1] == limit + 1
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert all(hi - lo >= element_threads.BLOCK or hi == limit + 1 for lo, hi in ranges)


def test_split_ranges_of_rows():
    # 300 rows of 7,000 elements: each range at least BLOCK elements, about two a thread
    ranges = element_threads.split_ranges(300, 4, unit=7000)
    assert ranges[0] == (0, 38) and ranges[-1][1] == 300 and len(ranges) == 8
    assert element_threads.split_ranges(10, 4, unit=100) == [(0, 10)]


def test_for_ranges_covers_every_element_once(small_split):
    seen = np.zeros(10_007, np.int32)

    def mark(lo, hi):
        seen[lo:hi] += 1

    element_threads.for_ranges(seen.size, mark)
    assert (seen == 1).all()
    calls = []
    element_threads.for_ranges(4096, lambda lo, hi: calls.append((lo, hi)))
    assert calls == [(0, 4096)]  # at the threshold: one call, inline


@pytest.mark.skipif(element_threads._CORES < 2, reason="no helper threads on one core")
def test_a_busy_helper_leaves_its_share_to_the_caller(small_split, monkeypatch):
    """The caller never waits for a helper job that has not started: with every helper
    held up (the warm helper not coming), it does every range itself and returns."""
    stopped_warm_helper(monkeypatch)
    release = threading.Event()
    pool = element_threads._helper_pool()
    blockers = [pool.submit(release.wait, 30) for _ in range(element_threads._CORES - 1)]
    try:
        seen = np.zeros(20_000, np.int32)

        def mark(lo, hi):
            seen[lo:hi] += 1

        element_threads.for_ranges(seen.size, mark)
        assert (seen == 1).all()
        assert not any(b.done() for b in blockers)  # returned while they are held up
    finally:
        release.set()
        for b in blockers:
            b.result()


def test_an_error_in_a_range_is_raised_after_every_range_ends(small_split):
    seen = np.zeros(20_000, np.int32)

    def mark(lo, hi):
        seen[lo:hi] += 1
        if lo == 0:
            raise ValueError("first range")

    with pytest.raises(ValueError, match="first range"):
        element_threads.for_ranges(seen.size, mark)
    assert (seen == 1).all()


# -- Relu, Relu6 -------------------------------------------------------------------------------

@pytest.mark.parametrize("op", sorted(REFERENCES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [
    (activation_kernels.COMPILED_FROM - 1,),  # NumPy's maximum
    (activation_kernels.COMPILED_FROM,),  # the compiled loop, one range
    (4096,), (4097,),  # the split threshold (lowered)
    (3, 37, 41, 7),  # odd: ranges of unequal blocks
    (2, 5, 1, 1001),
])
def test_activation_paths_match_numpy(compiled, small_split, op, dtype, shape):
    x = _features(shape, dtype)
    _same_bits(run1(op, [x]), REFERENCES[op](x, dtype))


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_activation_numpy_ranges_before_the_compile(small_split, monkeypatch, op):
    monkeypatch.setattr(activation_jit, "ready", lambda: False)
    x = _features((3, 37, 41, 7), np.float32, seed=1)
    _same_bits(run1(op, [x]), REFERENCES[op](x, np.float32))


@pytest.mark.parametrize("op", sorted(REFERENCES))
def test_activation_strided_and_other_types(compiled, small_split, op):
    x = _features((64, 300), np.float32, seed=2).T  # not C-contiguous: NumPy's path
    _same_bits(run1(op, [x]), REFERENCES[op](x, np.float32))
    ints = np.arange(-9000, 9000, dtype=np.int32).reshape(3, -1)
    _same_bits(run1(op, [ints]), REFERENCES[op](ints, np.int32))
    half = _features((40, 500), np.float16, seed=3)
    _same_bits(run1(op, [half]), REFERENCES[op](half, np.float16))


def test_activation_loops_keep_nan_bits(compiled):
    x = np.array(SPECIALS * 3, np.float32)
    x[1:2].view(np.uint32)[0] = 0xFFC00123
    out = np.empty_like(x)
    activation_jit.relu(x, out, 0, x.size)
    _same_bits(out, np.maximum(x, np.float32(0)))
    assert out.view(np.uint32)[1] == 0xFFC00123
    assert out.view(np.uint32)[2] == 0  # -0.0 becomes +0.0, as TF's Relu gives
    activation_jit.relu6(x, out, 2, 30)  # a range: only it is written
    _same_bits(out[2:30], np.minimum(np.maximum(x[2:30], np.float32(0)), np.float32(6)))


# -- Pad ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, pads", [
    ((1, 112, 11, 5), [[0, 0], [1, 1], [1, 1], [0, 0]]),  # one image: its rows are cut
    ((8, 13, 17, 3), [[0, 0], [3, 3], [3, 3], [0, 0]]),  # the batch is cut
    ((3, 29, 31, 9), [[0, 0], [0, 1], [0, 1], [0, 0]]),  # after only
    ((5, 40, 33), [[2, 3], [0, 0], [4, 0]]),  # the batch axis padded too
    ((1, 1, 90, 70), [[0, 0], [0, 0], [5, 2], [1, 1]]),  # two leading 1s dropped
    ((1, 1, 90, 70), [[0, 0], [2, 0], [0, 0], [0, 0]]),  # a leading 1 padded
    ((9000,), [[7, 5000]]),  # one axis
    ((2, 3, 4, 5, 60), [[1, 0], [0, 2], [1, 1], [0, 0], [3, 0]]),
    ((2, 70, 80), [[0, 0], [0, 0], [0, 0]]),  # no padding
    ((0, 70, 80), [[2, 1], [0, 0], [1, 1]]),  # empty input
])
@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_pad_paths_match_np_pad(small_split, shape, pads, dtype):
    x = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) + 1
    pads_arr = np.array(pads, np.int32)
    _same_bits(run1("Pad", [x, pads_arr]), np.pad(x, pads))
    constant = dtype(-7)
    _same_bits(run1("PadV2", [x, pads_arr, constant]),
               np.pad(x, pads, constant_values=constant))


def test_pad_at_the_border_threshold(small_split):
    # BORDER_FROM output elements: the border-only pass; one fewer: fill then copy
    for rows in (pad_fill.BORDER_FROM // 64 - 2, pad_fill.BORDER_FROM // 64 - 2 - 1):
        x = np.full((rows, 64), 3.5, np.float32)
        out = pad_fill.pad_constant(x, [[1, 1], [0, 0]], np.float32(9))
        _same_bits(out, np.pad(x, [[1, 1], [0, 0]], constant_values=9))


def test_pad_without_threads_matches(monkeypatch):
    # the default split sizes, one thread: one range inline
    monkeypatch.setattr(element_threads, "intra_op_threads", lambda: 1)
    x = np.random.default_rng(4).standard_normal((2, 115, 117, 24)).astype(np.float32)
    pads = [[0, 0], [1, 2], [3, 0], [0, 0]]
    _same_bits(pad_fill.pad_constant(x, pads, np.float32(0)), np.pad(x, pads))


def test_pad_strided_and_bool_inputs(small_split):
    x = np.random.default_rng(5).standard_normal((6, 80, 90)).astype(np.float32)
    view = x.transpose(2, 1, 0)[::2]  # not C-contiguous
    pads = [[1, 2], [0, 3], [2, 2]]
    _same_bits(pad_fill.pad_constant(view, pads, np.float32(0)), np.pad(view, pads))
    mask = x > 0
    _same_bits(pad_fill.pad_constant(mask, pads, np.False_), np.pad(mask, pads))
