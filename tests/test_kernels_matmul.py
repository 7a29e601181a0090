"""MatMul / BatchMatMul(V2) kernels against np.matmul, with TF's transposes, adjoints,
batch broadcasting and error messages."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from kernel_testutil import create, run1
from test_kernels_cwise import assert_same, rand

from aioflow.framework import errors

BF16 = ml_dtypes.bfloat16
TYPES = [np.float16, BF16, np.float32, np.float64, np.int32, np.int64, np.complex64,
         np.complex128]


def _ref(a, b):
    if a.dtype in (np.float16, np.dtype(BF16)):
        return (a.astype(np.float32) @ b.astype(np.float32)).astype(a.dtype)
    return a @ b


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(dt, ta, tb):
    a, b = rand(dt, (2, 3)), rand(dt, (3, 4))
    out = run1("MatMul", [a.T.copy() if ta else a, b.T.copy() if tb else b],
               transpose_a=ta, transpose_b=tb)
    assert_same(out, _ref(a, b), rtol=3e-2)


def test_matmul_transpose_does_not_conjugate():
    a = np.array([[1j, 0], [0, 1]], np.complex64)
    out = run1("MatMul", [a, np.eye(2, dtype=np.complex64)], transpose_a=True)
    assert_same(out, a.T)


def test_matmul_empty():
    assert_same(run1("MatMul", [np.zeros((0, 3), np.float32), np.ones((3, 4), np.float32)]),
                np.zeros((0, 4), np.float32))
    assert_same(run1("MatMul", [np.zeros((2, 0), np.float32), np.ones((0, 4), np.float32)]),
                np.zeros((2, 4), np.float32))


def test_matmul_errors():
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[4,5\]"):
        run1("MatMul", [np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[4,5\]"):
        run1("MatMul", [np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32)],
             transpose_a=True)
    with pytest.raises(errors.InvalidArgumentError, match="has different ndims"):
        run1("MatMul", [np.zeros((2, 3, 4), np.float32), np.zeros((4, 5), np.float32)])
    with pytest.raises(errors.InvalidArgumentError, match="ndims must be == 2: 3"):
        run1("MatMul", [np.zeros((2, 3, 4), np.float32), np.zeros((2, 4, 5), np.float32)])


@pytest.mark.parametrize("dt", TYPES)
def test_batch_matmul_v2_broadcasts(dt):
    a, b = rand(dt, (2, 1, 2, 3)), rand(dt, (5, 3, 4))
    out = run1("BatchMatMulV2", [a, b])
    assert out.shape == (2, 5, 2, 4)
    assert_same(out, _ref(a, b), rtol=3e-2)


@pytest.mark.parametrize("dt", [np.float32, np.complex64])
def test_batch_matmul_adjoints(dt):
    a, b = rand(dt, (2, 3, 2)), rand(dt, (2, 4, 3))
    out = run1("BatchMatMulV2", [a, b], adj_x=True, adj_y=True)
    expected = np.conj(np.swapaxes(a, -1, -2)) @ np.conj(np.swapaxes(b, -1, -2))
    assert_same(out, expected.astype(dt))
    assert_same(run1("BatchMatMul", [a, b], adj_x=True, adj_y=True), expected.astype(dt))


def test_batch_matmul_errors():
    f = np.float32
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"In\[0\] and In\[1\] must have compatible batch dimensions: "
                             r"\[2,3,4\] vs. \[5,4,3\]"):
        run1("BatchMatMulV2", [np.zeros((2, 3, 4), f), np.zeros((5, 4, 3), f)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Matrix size-incompatible: In\[0\]: \[2,3,4\], In\[1\]: \[2,5,6\]"):
        run1("BatchMatMulV2", [np.zeros((2, 3, 4), f), np.zeros((2, 5, 6), f)])
    with pytest.raises(errors.InvalidArgumentError, match=r"In\[0\] ndims must be >= 2: 1"):
        run1("BatchMatMulV2", [np.zeros(3, f), np.zeros((3, 3), f)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"In\[0\].dim\(0\) and In\[1\].dim\(0\) must be the same"):
        run1("BatchMatMul", [np.zeros((2, 3, 4), f), np.zeros((1, 4, 3), f)])


@pytest.mark.usefixtures("numpy_products")
def test_matmul_goes_to_the_pool_when_large_and_has_no_unsigned_kernel():
    a = np.ones((2, 2), np.float32)
    big = np.ones((512, 512), np.float32)
    for op in ("MatMul", "BatchMatMulV2"):
        kernel = create(op, [a, a])
        assert not kernel.is_expensive([a, a])
        assert kernel.is_expensive([big, big])
    with pytest.raises(errors.NotFoundError):
        create("MatMul", [a.astype(np.uint8), a.astype(np.uint8)])


class _Section:
    """intra_op_threads.own_threads as MatMul sees it, counting its entries."""

    def __init__(self, threads: int, entered: list):
        self.threads, self.entered = threads, entered

    def __call__(self):
        return self

    def __enter__(self):
        self.entered.append(self.threads)
        return self.threads

    def __exit__(self, *exc):
        return None


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("m, n", [(300, 90), (40, 330)])
@pytest.mark.usefixtures("numpy_products")
def test_large_matmul_shared_in_blocks_of_rows_or_columns(monkeypatch, ta, tb, m, n):
    """A product worth sharing runs in its own threads' section (BLAS single-threaded),
    cut into blocks of output rows (or columns, when it has more of them) shared among
    the section's threads: the same product, in every transpose."""
    from aioflow.kernels.math import matmul_kernels
    entered, cuts = [], []
    monkeypatch.setattr(matmul_kernels.intra_op_threads, "own_threads",
                        _Section(2, entered))
    real = matmul_kernels.share_ranges

    def share(ranges, fn, threads):
        cuts.append((len(ranges), threads))
        real(ranges, fn, threads)

    monkeypatch.setattr(matmul_kernels, "share_ranges", share)
    monkeypatch.setattr(matmul_kernels, "_SPLIT_MACS", 0)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, 70)).astype(np.float32)
    b = rng.standard_normal((70, n)).astype(np.float32)
    got = run1("MatMul", [a.T.copy() if ta else a, b.T.copy() if tb else b],
               transpose_a=ta, transpose_b=tb)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
    assert got.dtype == np.float32 and got.shape == (m, n)
    assert entered == [2] and cuts == [(4, 2)]


@pytest.mark.usefixtures("numpy_products")
def test_small_matmul_does_not_call_into_blas(monkeypatch):
    """A product OpenBLAS runs on one thread anyway is one np.matmul: no section, whose
    calls into OpenBLAS (ctypes calls let go of the GIL: on the event loop a tiny product
    then waited behind pool threads and was learned as expensive)."""
    from aioflow.kernels.math import matmul_kernels

    def asked():
        raise AssertionError("a section entered for a small product")

    monkeypatch.setattr(matmul_kernels.intra_op_threads, "own_threads", asked)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.arange(16, dtype=np.float32).reshape(8, 2)
    np.testing.assert_array_equal(run1("MatMul", [a, b]), a @ b)
    np.testing.assert_array_equal(
        run1("_FusedMatMul", [a, b, np.float32([1, 2])], fused_ops=[b"BiasAdd"], num_args=1),
        a @ b + np.float32([1, 2]))
    entered = []
    monkeypatch.setattr(matmul_kernels.intra_op_threads, "own_threads", _Section(1, entered))
    big = np.ones((128, 64), np.float32)  # 2**19 multiply-adds: OpenBLAS would thread it
    np.testing.assert_array_equal(run1("MatMul", [big, big.T.copy()]),
                                  np.full((128, 128), 64, np.float32))
    assert entered == [1]
