"""The convolutions' own threads: BLAS single-threaded inside a convolution, its GEMM
split by rows or by columns over intra_op_parallelism_threads threads (kernels/
conv_kernels.py, aioflow/runtime/blas_gate.py); Conv3D's K-major patches."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from kernel_testutil import run1

from aioflow.framework import intra_op_threads
from aioflow.framework.intra_op_threads import BlasThreads
from aioflow.kernels.nn import conv_kernels, fused_kernels
from aioflow.runtime.blas_gate import BlasGate

needs_openblas = pytest.mark.skipif(BlasThreads.find() is None,
                                    reason="needs numpy on a pthreads OpenBLAS")


@pytest.fixture(autouse=True)
def _numpy_kernels(monkeypatch):
    """The NumPy kernels' threads (the oneDNN backend's teams: tests/test_onednn_kernels.py)."""
    from aioflow.kernels.onednn import backend
    monkeypatch.setattr(backend, "ACTIVE", False)


@pytest.fixture
def blas_count():
    """Sets BLAS's process-wide thread count for a test (as a session's intra_op does)
    and puts the count found back afterwards."""
    blas = BlasThreads.find()
    before = blas.get() if blas is not None else None

    def set_count(n):
        if blas is None:
            pytest.skip("needs numpy on a pthreads OpenBLAS")
        intra_op_threads.set_blas_threads(n)

    yield set_count
    if blas is not None:
        intra_op_threads.set_blas_threads(before)


@pytest.fixture(params=["default", "intra_op_1"])
def policy(request, blas_count):
    """Both thread policies: BLAS's default count (the cores), and
    intra_op_parallelism_threads=1."""
    if request.param == "intra_op_1":
        blas_count(1)
    elif BlasThreads.find() is not None:
        blas_count(max(2, conv_kernels._CORES))
    return request.param


@pytest.fixture
def recorded(monkeypatch):
    """Every parallel_blocks call's (number of blocks, threads asked for)."""
    calls = []
    real = conv_kernels.parallel_blocks

    def record(blocks, fn, work, threads=None):
        calls.append((len(blocks), threads, work > conv_kernels.PARALLEL_WORK))
        return real(blocks, fn, work, threads)

    monkeypatch.setattr(conv_kernels, "parallel_blocks", record)
    return calls


# -- the section -----------------------------------------------------------------------------------

@needs_openblas
def test_blas_is_single_threaded_inside_and_restored_after(blas_count):
    blas_count(3)
    blas = BlasThreads.find()
    with intra_op_threads.own_threads() as threads:
        assert threads == 3
        assert blas.get() == 1
        assert intra_op_threads.blas_threads_outside() == 3
        assert BlasGate.for_device(pool_size=64, intra_op_threads=0).slots == \
            max(1, BlasGate.for_device(pool_size=64, intra_op_threads=3).slots)
    assert blas.get() == 3


@needs_openblas
def test_sections_at_once_share_one_saved_count(blas_count):
    """Two convolutions on two threads: the count is restored when the last one leaves,
    not by the first (which would let the second's GEMMs run threaded)."""
    blas_count(2)
    blas = BlasThreads.find()
    entered, leave = threading.Event(), threading.Event()
    seen = []

    def other():
        with intra_op_threads.own_threads() as threads:
            seen.append(threads)
            entered.set()
            leave.wait(10)
            seen.append(blas.get())

    with intra_op_threads.own_threads() as threads:
        t = threading.Thread(target=other)
        t.start()
        assert entered.wait(10)
    assert threads == 2 and seen == [2]
    assert blas.get() == 1  # the other section is still open
    leave.set()
    t.join(10)
    assert seen == [2, 1]
    assert blas.get() == 2


@needs_openblas
def test_intra_op_set_while_a_section_is_open_holds_after_it(blas_count):
    blas_count(2)
    with intra_op_threads.own_threads():
        intra_op_threads.set_blas_threads(1)
        assert BlasThreads.find().get() == 1
        assert intra_op_threads.blas_threads_outside() == 1
    assert BlasThreads.find().get() == 1


def test_without_a_controllable_blas_the_kernel_leaves_blas_alone(monkeypatch):
    monkeypatch.setattr(intra_op_threads, "_blas", False)
    with intra_op_threads.own_threads() as threads:
        assert threads == 0
    assert intra_op_threads.blas_threads_outside() == 0


# -- values, split by rows and by columns ----------------------------------------------------------

def _ref_conv(x, w, s, d, pads):
    """Direct N-d convolution in float64: one GEMM per tap of the window."""
    nd = x.ndim - 2
    xp = np.pad(x.astype(np.float64), [(0, 0)] + list(pads) + [(0, 0)])
    k = w.shape[:nd]
    outs = [(xp.shape[1 + i] - (k[i] - 1) * d[i] - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros((x.shape[0], *outs, w.shape[-1]))
    for tap in np.ndindex(*k):
        idx = (slice(None),) + tuple(
            slice(t * dd, t * dd + (o - 1) * ss + 1, ss)
            for t, dd, o, ss in zip(tap, d, outs, s, strict=True))
        out += xp[idx] @ w[tap].astype(np.float64)
    return out


def _relu6_bias(bias):
    return fused_kernels.make_epilogue("BiasAdd", fused_kernels._relu6, 0.0, 0.2, [bias],
                                       bias.shape[0], np.float32)


@pytest.mark.parametrize("x_shape, k, o, s, pads", [
    ((1, 9, 11, 5), (3, 3), 37, (1, 1), [(1, 1), (1, 1)]),   # one image, odd columns
    ((3, 7, 7, 6), (3, 3), 70, (2, 2), [(0, 1), (1, 0)]),    # a batch, asymmetric pads
    ((1, 13, 5, 3), (3, 3), 33, (2, 1), [(1, 1), (1, 1)]),   # K-major patches (kw*C <= 12)
    ((2, 7, 9, 8), (1, 1), 45, (1, 1), [(0, 0), (0, 0)]),    # 1x1: a plain GEMM
    ((1, 8, 8, 7), (1, 1), 65, (2, 2), [(0, 0), (0, 0)]),    # 1x1 strided
])
@pytest.mark.parametrize("split", ["rows", "columns"])
def test_split_conv_matches_reference(x_shape, k, o, s, pads, split, policy, recorded,
                                      monkeypatch):
    monkeypatch.setattr(conv_kernels, "_CONV_SPLIT_MACS", 0)
    monkeypatch.setattr(conv_kernels, "PARALLEL_WORK", 0)
    monkeypatch.setattr(conv_kernels, "_MIN_ROWS", 5)  # many uneven row blocks
    monkeypatch.setattr(conv_kernels, "_MIN_COLUMNS", 8)
    monkeypatch.setattr(conv_kernels, "_COLUMN_SPLIT_ROWS", 10**6 if split == "columns" else 0)
    rng = np.random.default_rng(sum(x_shape) + o)
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(k + (x_shape[-1], o)).astype(np.float32)
    bias = rng.standard_normal(o).astype(np.float32)
    outs = [(x_shape[1 + i] + sum(pads[i]) - k[i]) // s[i] + 1 for i in range(2)]
    want = _ref_conv(x, w, s, (1, 1), pads)
    got = conv_kernels.conv_channels_last(x, w, s, (1, 1), pads, outs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    fused = conv_kernels.conv_channels_last(x, w, s, (1, 1), pads, outs, _relu6_bias(bias))
    np.testing.assert_allclose(fused, np.clip(want + bias, 0, 6), rtol=1e-4, atol=1e-4)
    if BlasThreads.find() is not None:
        want = 1 if policy == "intra_op_1" else max(2, conv_kernels._CORES)
        assert recorded and all(t == want for _, t, _ in recorded)
        if want > 1:  # shared: several blocks (of rows, or of columns)
            assert all(blocks > 1 and shared for blocks, _, shared in recorded)


def test_a_small_conv_is_not_split(policy, recorded):
    x = np.ones((1, 6, 6, 4), np.float32)
    w = np.ones((3, 3, 4, 8), np.float32)
    got = conv_kernels.conv_channels_last(x, w, (1, 1), (1, 1), [(1, 1), (1, 1)], (6, 6))
    assert got[0, 2, 2, 0] == 36 and got[0, 0, 0, 0] == 16
    assert recorded and not any(shared for _, _, shared in recorded)


def test_depthwise_of_a_batch_is_bounded_by_intra_op(policy, recorded, monkeypatch):
    monkeypatch.setattr(conv_kernels, "PARALLEL_WORK", 0)
    monkeypatch.setattr(conv_kernels, "_DW_BLOCK_BYTES", 64)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 9, 7, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 1)).astype(np.float32)
    got = run1("DepthwiseConv2dNative", [x, w], strides=[1, 1, 1, 1], padding="SAME")
    want = np.concatenate([_ref_conv(x[..., c:c + 1], w[:, :, c:c + 1], (1, 1), (1, 1),
                                     [(1, 1), (1, 1)]) for c in range(5)], axis=-1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    if BlasThreads.find() is not None:
        expected = 1 if policy == "intra_op_1" else conv_kernels._CORES
        assert recorded and all(t == expected for _, t, _ in recorded)


# -- Conv3D: patch rows of a few elements copied K-major -----------------------------------------

@pytest.mark.parametrize("x_shape, k, s, d, padding", [
    ((2, 5, 9, 8, 3), (3, 3, 3), (1, 1, 1), (1, 1, 1), "SAME"),  # the video case, shrunk
    ((1, 6, 7, 10, 2), (2, 3, 4), (2, 1, 3), (1, 2, 1), "VALID"),
    ((3, 4, 5, 6, 1), (3, 2, 3), (1, 2, 1), (2, 1, 1), "SAME"),
])
@pytest.mark.parametrize("k_major_run", [0, 1000])
@pytest.mark.parametrize("block_bytes", [8, 1 << 21])
def test_conv3d_k_major_patches_match_reference(x_shape, k, s, d, padding, k_major_run,
                                                block_bytes, policy, monkeypatch):
    monkeypatch.setattr(conv_kernels, "_K_MAJOR_RUN", k_major_run)
    monkeypatch.setattr(conv_kernels, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(conv_kernels, "_CONV_SPLIT_MACS", 0)
    monkeypatch.setattr(conv_kernels, "PARALLEL_WORK", 0)
    rng = np.random.default_rng(sum(x_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal(k + (x_shape[-1], 11)).astype(np.float32)
    pads = []
    for i in range(3):
        if padding == "SAME":
            size, eff = x_shape[1 + i], (k[i] - 1) * d[i] + 1
            need = max(0, (-(-size // s[i]) - 1) * s[i] + eff - size)
            pads.append((need // 2, need - need // 2))
        else:
            pads.append((0, 0))
    got = run1("Conv3D", [x, w], strides=[1, *s, 1], dilations=[1, *d, 1], padding=padding)
    np.testing.assert_allclose(got, _ref_conv(x, w, s, d, pads), rtol=1e-4, atol=1e-4)


# -- a small MatMul after convolutions ------------------------------------------------------------

@needs_openblas
@pytest.mark.parametrize("shape", [(8, 1280, 1000), (3, 700, 1001), (64, 784, 256)])
def test_matmul_runs_blas_single_threaded_in_its_own_section(shape, blas_count,
                                                            monkeypatch):
    """A product OpenBLAS would thread runs in a section of its own (BLAS on one
    thread, OpenBLAS's busy-waiting workers never woken), after a convolution or not;
    BLAS's count is put back after it."""
    from aioflow.kernels.math import matmul_kernels
    blas_count(2)
    m, k, n = shape
    rng = np.random.default_rng(m)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    seen = []
    real = np.matmul

    def matmul(x, y, **kw):
        seen.append(BlasThreads.find().get())
        return real(x, y, **kw)

    monkeypatch.setattr(matmul_kernels.np, "matmul", matmul)
    got = run1("MatMul", [a, b])
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    assert seen and set(seen) == {1}
    assert BlasThreads.find().get() == 2
    assert m * k * n > matmul_kernels._BLAS_SERIAL_MACS
