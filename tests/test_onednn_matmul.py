"""MatMul and _FusedMatMul on oneDNN's GEMM (aioflow/kernels/onednn/matmul_onednn.py): the
kernels chosen for float32, their products against the NumPy kernels' (TF's fixtures run
on those in test_kernels_matmul.py) for every transpose combination and for inputs that
are themselves transposed or strided views, the fused bias and activation, and the
fallbacks (small products, other types, empty matrices, strides the GEMM cannot take).
Skipped without the onednn extra."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from kernel_testutil import create, make_node_def

import aioflow as af
from aioflow.framework import op_def_registry
from aioflow.framework.op_kernel import OpKernelConstruction
from aioflow.kernels.math.matmul_kernels import MatMulOp
from aioflow.kernels.nn.fused_kernels import FusedMatMulOp
from aioflow.kernels.onednn import backend, dnnl_api, matmul_onednn

pytestmark = pytest.mark.skipif(not backend.AVAILABLE,
                                reason=f"oneDNN not loaded: {dnnl_api.load_error()}")

#: Sums of up to 784 float32 products in another order (TF's own MatMul tests compare
#: float32 products with rtol 1e-5-ish; here an absolute part for sums near zero).
TOL = dict(rtol=1e-5, atol=1e-4)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _both(op, reference_cls, inputs, **attrs):
    kernel = create(op, inputs, **attrs)
    assert type(kernel).__module__ == "aioflow.kernels.onednn.matmul_onednn", type(kernel)
    got = kernel.compute(None, inputs)[0]
    node = make_node_def(op, inputs, **attrs)
    want = reference_cls(OpKernelConstruction(node, op_def_registry.get(op))).compute(
        None, inputs)[0]
    return got, want


@pytest.fixture
def gemm_calls(monkeypatch):
    """The products oneDNN ran: (m, k, n) each."""
    calls = []
    real = matmul_onednn.sgemm

    def counted(x, y):
        calls.append((x.shape[0], x.shape[1], y.shape[1]))
        return real(x, y)

    monkeypatch.setattr(matmul_onednn, "sgemm", counted)
    return calls


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_matches_numpy_for_every_transpose(ta, tb, gemm_calls):
    m, k, n = 64, 784, 256  # the MLP's first layer
    a = _rand(k, m) if ta else _rand(m, k)
    b = _rand(n, k, seed=1) if tb else _rand(k, n, seed=1)
    got, want = _both("MatMul", MatMulOp, [a, b], transpose_a=ta, transpose_b=tb)
    assert got.dtype == np.float32 and got.shape == (m, n)
    np.testing.assert_allclose(got, want, **TOL)
    assert gemm_calls == [(m, k, n)]


@pytest.mark.parametrize("view", ["transposed", "row_slice", "column_slice", "step"])
def test_inputs_that_are_views_are_read_where_they_lie_or_fall_back(view, gemm_calls):
    base = _rand(300, 260)
    a = {"transposed": base.T[:, :256],          # Fortran-ordered: passed transposed
         "row_slice": base[10:74, :256],          # leading dimension 260
         "column_slice": base[:64, 4:260],        # offset start, leading dimension 260
         "step": base[:128:2, :256]}[view]        # every other row: leading dimension 520
    b = _rand(a.shape[1], 256, seed=2)
    got, want = _both("MatMul", MatMulOp, [a, b])
    np.testing.assert_allclose(got, want, **TOL)
    assert len(gemm_calls) == 1


def test_strides_the_gemm_cannot_take_run_numpy():
    a = _rand(64, 1024)[:, ::2]  # element stride 2 on both axes' inner one
    b = _rand(512, 128, seed=3)
    assert matmul_onednn.sgemm(a, b) is None
    got, want = _both("MatMul", MatMulOp, [a, b])
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("fused_ops", [["BiasAdd"], ["BiasAdd", "Relu"], ["BiasAdd", "Relu6"],
                                       ["BiasAdd", "Elu"], ["BiasAdd", "Tanh"]])
def test_fused_matmul_matches_numpy(fused_ops, gemm_calls):
    x, w, bias = _rand(64, 256), _rand(256, 128, seed=4), _rand(128, seed=5)
    got, want = _both("_FusedMatMul", FusedMatMulOp, [x, w, bias], fused_ops=fused_ops,
                      num_args=1)
    np.testing.assert_allclose(got, want, **TOL)
    assert gemm_calls == [(64, 256, 128)]


def test_small_products_empty_matrices_and_other_types_run_numpy(gemm_calls):
    small = create("MatMul", [_rand(64, 16), _rand(16, 10)])
    np.testing.assert_allclose(small.compute(None, [_rand(64, 16), _rand(16, 10)])[0],
                               _rand(64, 16) @ _rand(16, 10), **TOL)
    empty = create("MatMul", [_rand(0, 1024), _rand(1024, 512)])
    assert empty.compute(None, [_rand(0, 1024), _rand(1024, 512)])[0].shape == (0, 512)
    zero_k = np.zeros((512, 0), np.float32), np.zeros((0, 512), np.float32)
    np.testing.assert_array_equal(create("MatMul", list(zero_k)).compute(None, zero_k)[0],
                                  np.zeros((512, 512), np.float32))
    assert gemm_calls == []
    a64, b64 = _rand(64, 784).astype(np.float64), _rand(784, 256).astype(np.float64)
    assert type(create("MatMul", [a64, b64])) is MatMulOp


def test_inactive_backend_runs_numpy(monkeypatch, gemm_calls):
    monkeypatch.setattr(backend, "ACTIVE", False)
    got, want = _both("MatMul", MatMulOp, [_rand(64, 784), _rand(784, 256)])
    np.testing.assert_array_equal(got, want)
    assert gemm_calls == []


def test_nan_and_inf_propagate_as_in_numpy():
    a, b = _rand(64, 784), _rand(784, 256)
    a[3, 5], b[7, 9] = np.nan, np.inf
    got, want = _both("MatMul", MatMulOp, [a, b])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


def test_products_run_inline_up_to_the_backends_inline_work(monkeypatch):
    """As the oneDNN convolutions: with intra-op threads covering the cores, a product
    runs on the calling thread (the event loop, on a team of every core) up to
    backend.INLINE_WORK multiply-adds; with fewer, the NumPy kernel's pool rule holds."""
    kernel = create("MatMul", [_rand(64, 784), _rand(784, 256)])
    mlp_layer = [_rand(64, 784), _rand(784, 256)]  # 2^23.6 multiply-adds
    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: matmul_onednn._CORES)
    assert not kernel.is_expensive(mlp_layer)
    monkeypatch.setattr(backend, "INLINE_WORK", 1 << 20)
    assert kernel.is_expensive(mlp_layer)
    monkeypatch.setattr(backend, "INLINE_WORK", 1 << 27)
    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: 1)
    assert kernel.is_expensive(mlp_layer) == MatMulOp.is_expensive(kernel, mlp_layer) is True


async def test_a_slow_product_under_inline_work_stays_on_the_loop(monkeypatch):
    """The product's multiply-adds are its cost (`learns_cost` False): the executor does
    not learn a per-element cost that would send it to the pool, where each hand-off to
    a thread and back cost a quiet 2-core machine's MLP step 0.3-0.4 ms."""
    threads = []
    real = matmul_onednn.sgemm

    def slow(x, y):  # over kernel_stats.POOL_COST_S a call, as the MLP's layer on a busy core
        threads.append(threading.get_native_id())
        time.sleep(0.0005)
        return real(x, y)

    monkeypatch.setattr(matmul_onednn, "sgemm", slow)
    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: matmul_onednn._CORES)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [64, 784])
        w = af.constant(_rand(784, 256))
        y = af.matmul(x, w)
    feed = {x: _rand(64, 784)}
    async with af.Session(graph=g) as sess:
        for _ in range(12):  # past kernel_stats.WARMUP's timed calls
            value = await sess.run(y, feed)
    assert threads == [threading.get_native_id()] * 12
    np.testing.assert_allclose(value, feed[x] @ _rand(784, 256), **TOL)


def test_the_executor_learns_a_products_cost_only_under_the_numpy_rule(monkeypatch):
    """With intra-op threads covering the cores the product's multiply-adds decide
    (nothing learned); with fewer (a serving model's intra_op_parallelism_threads=1) the
    NumPy kernel's static rule does, overruled by the learned cost as for NumPy's
    MatMul; so with the backend inactive."""
    layer = [_rand(64, 784), _rand(784, 256)]
    kernel = create("MatMul", layer)
    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: matmul_onednn._CORES)
    assert not kernel.learns_cost and kernel.worth_a_thread(layer)
    monkeypatch.setattr(backend, "ACTIVE", False)
    assert kernel.learns_cost and not kernel.worth_a_thread(layer)
    monkeypatch.setattr(backend, "ACTIVE", True)
    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: 1)
    assert kernel.learns_cost and not kernel.worth_a_thread(layer)


def test_a_product_worth_a_team_is_worth_a_thread(monkeypatch):
    """As the backend's forward kernels: a product of at least TEAM_MACS may go to a free
    pool thread while other runs wait for the loop (the executor decides); a smaller one
    never does; the executor asks for both MatMul and _FusedMatMul."""
    from aioflow.runtime.executor import _mode_of

    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: matmul_onednn._CORES)
    from aioflow.runtime.node_item import MAYBE

    layer = [_rand(64, 784), _rand(784, 256)]  # 12.8M multiply-adds
    small = [_rand(64, 256), _rand(256, 128)]  # 2M: under TEAM_MACS
    for op, extra in (("MatMul", []), ("_FusedMatMul", [_rand(256)])):
        attrs = dict(fused_ops=[b"BiasAdd"], num_args=1) if extra else {}
        kernel = create(op, layer + extra, **attrs)
        assert _mode_of(kernel, 2 + len(extra), False) == MAYBE
        assert kernel.worth_a_thread(layer + extra) and not kernel.is_expensive(layer + extra)
        assert not kernel.worth_a_thread(small + extra)


async def test_a_product_goes_to_a_pool_thread_only_while_other_runs_wait(monkeypatch):
    """Alone, the MLP layer's product runs on the loop; with a second run waiting for
    the loop, one of the two goes to a pool thread."""
    threads = []
    real = matmul_onednn.sgemm

    def recorded(x, y):
        threads.append(threading.get_native_id())
        return real(x, y)

    monkeypatch.setattr(matmul_onednn, "sgemm", recorded)
    monkeypatch.setattr(matmul_onednn, "intra_op_threads", lambda: matmul_onednn._CORES)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [64, 784])
        h = x
        for _ in range(40):  # (node by node, a tiny budget: runs take turns every 32)
            h = af.negative(h)
        y = af.matmul(h, af.constant(_rand(784, 256)))
    feed = {x: _rand(64, 784)}
    want = feed[x] @ _rand(784, 256)
    loop_thread = threading.get_native_id()
    async with af.Session(graph=g, compile_segments=False, time_budget_ms=0.001) as sess:
        np.testing.assert_allclose(await sess.run(y, feed), want, **TOL)
        assert threads == [loop_thread]  # alone: inline
        threads.clear()
        both = await asyncio.gather(sess.run(y, feed), sess.run(y, feed))
    for value in both:
        np.testing.assert_allclose(value, want, **TOL)
    assert len(threads) == 2 and any(t != loop_thread for t in threads)


def test_products_run_from_many_threads_at_once():
    """The pool's threads and the event loop call the GEMM at the same time."""
    from concurrent.futures import ThreadPoolExecutor
    pairs = [(_rand(64, 784, seed=i), _rand(784, 256, seed=10 + i)) for i in range(8)]
    want = [matmul_onednn.sgemm(a, b) for a, b in pairs]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(5):
            got = list(pool.map(lambda ab: matmul_onednn.sgemm(*ab), pairs))
            for g, w in zip(got, want, strict=True):  # (a team of another size may
                np.testing.assert_allclose(g, w, **TOL)  # split the sums otherwise)


def test_only_products_from_team_macs_take_a_team(monkeypatch):
    asked = []
    real = matmul_onednn.team

    def recorded(work):
        asked.append(work)
        return real(work)

    monkeypatch.setattr(matmul_onednn, "team", recorded)
    matmul_onednn.sgemm(_rand(64, 256), _rand(256, 128))        # 2^21: one thread
    matmul_onednn.sgemm(_rand(64, 784), _rand(784, 256))        # 12.8M: a team's worth
    assert asked == [0, 64 * 784 * 256]
    assert backend.team_size(0) == 1
