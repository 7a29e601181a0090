"""A compiled while loop's late-read products started early (runtime/loop_deferred.py,
kernels/onednn/matmul_onednn.py `deferred_gemm`): a product only an accumulator reads is
started on the warm helper as soon as its inputs are ready and collected at the end of
the iteration, with the values of the loop run node by node; a product the iteration
needs is not; the helper's GEMM equals the caller's bit for bit, whichever thread runs
it; a loop that fails after starting one settles it (the helper is free again) and
raises the node's error."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from kernel_testutil import rand_f32, stopped_warm_helper
from test_segments import assert_identical, executors_for

import aioflow as af
from aioflow.kernels import warm_helper
from aioflow.kernels.onednn import backend, matmul_onednn
from aioflow.runtime.loop_segments import LoopSegment

pytestmark = [
    pytest.mark.skipif(not backend.ACTIVE, reason="the deferred product is oneDNN's GEMM"),
    pytest.mark.skipif(not warm_helper.ENABLED,
                       reason="no warm helper (numba, x86-64, two cores)"),
]

_DEADLINE_S = 30


@pytest.fixture(autouse=True)
def _default_segments(monkeypatch):
    monkeypatch.delenv("AIOFLOW_SEGMENTS", raising=False)


@pytest.fixture(scope="module")
def helper():
    assert warm_helper.wait_ready(300), warm_helper._compile.last_error
    h = warm_helper.helper()
    assert h is not None
    return h


def _accumulating_loop(v_rows: int = 96):
    """An RNN gradient's shape: dW += xs^T @ g_t (96x32 @ 32x256, oneDNN's size) read
    only by its accumulator, and h = xs @ v, a product the iteration reads
    (g_{t+1} = g_t / 2 + h / 100), xs = x * i."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [32, 96], name="x")
        g0 = af.placeholder(af.float32, [32, 256], name="g0")
        v = af.placeholder(af.float32, [None, 256], name="v")

        def body(i, gt, dw):
            xs = x * af.cast(i, af.float32)
            dw = dw + af.matmul(xs, gt, transpose_a=True, name="dw")
            h = af.matmul(xs, v, name="next")
            return i + 1, gt * 0.5 + h * 0.01, dw

        out = af.while_loop(lambda i, *_: i < 6, body,
                            [af.constant(0), g0, af.zeros([96, 256], af.float32)])
    feeds = {x: rand_f32(32, 96, seed=1), g0: rand_f32(32, 256, seed=2),
             v: rand_f32(v_rows, 256, seed=3)}
    return g, [x, g0, v], list(out), feeds


def _loop(eak) -> LoopSegment:
    (loop,) = [s for s in eak.executors[0].segments if isinstance(s, LoopSegment)]
    return loop


async def test_a_late_read_product_starts_early_with_the_node_by_node_values(monkeypatch,
                                                                             helper):
    g, feeds_at, out, feeds = _accumulating_loop()
    direct, eak = executors_for(g, feeds_at, out)
    try:
        loop = _loop(eak)
        (dw,) = [m for m in loop.members if m.name.endswith("/dw")]
        (nxt,) = [m for m in loop.members if m.name.endswith("/next")]
        source, _ = loop.generate()
        start, collect = f"d{dw.id} = s{dw.id}(", f"v{dw.id} = r{dw.id}(d{dw.id})"
        # started before the product the iteration needs, collected after it
        assert source.index(start) < source.index(f"v{nxt.id} = ") < \
            source.index(collect), source
        assert f"d{nxt.id} = " not in source  # (the iteration reads it)
        assert f"_settle((d{dw.id},))" in source
    finally:
        direct.close()
    results = {}
    jobs = helper.jobs
    for mode in ("0", "eager"):
        monkeypatch.setenv("AIOFLOW_SEGMENTS", mode)
        async with af.Session(graph=g) as sess:
            results[mode] = [await asyncio.wait_for(sess.run(out, feeds), 30)
                             for _ in range(3)]
    assert_identical(results["eager"], results["0"])
    assert helper.jobs >= jobs  # (taken or left to the caller: the same values)
    assert not helper._owner.locked()


def _until_taken(h) -> None:
    deadline = time.monotonic() + _DEADLINE_S
    while h.ctrl[warm_helper.STATE] == warm_helper.POSTED_NATIVE:
        assert time.monotonic() < deadline, "the helper never took its job"
        time.sleep(0)


@pytest.mark.parametrize("ta, tb", [(True, False), (False, False), (False, True)])
def test_the_helpers_product_is_the_lean_products_bit_for_bit(helper, ta, tb):
    a = rand_f32(*((96, 32) if ta else (32, 96)), seed=4)
    b = rand_f32(*((256, 96) if tb else (96, 256)), seed=5)
    want = matmul_onednn.lean_gemm(ta, tb, None)(a, b)
    start, collect = matmul_onednn.deferred_gemm(ta, tb, None)
    jobs = helper.jobs
    d = start(a, b)
    assert d.ticket is not None  # on the helper
    _until_taken(helper)
    got = collect(d)
    assert helper.jobs == jobs + 1
    assert_identical(got, want)
    assert collect(d) is got and not helper._owner.locked()


def test_a_product_the_helper_never_takes_is_computed_by_the_caller(monkeypatch):
    stopped = stopped_warm_helper(monkeypatch)
    a, b = rand_f32(32, 96, seed=6), rand_f32(32, 256, seed=7)
    start, collect = matmul_onednn.deferred_gemm(True, False, None)
    d = start(a, b)
    assert d.ticket is not None
    assert_identical(collect(d), matmul_onednn.lean_gemm(True, False, None)(a, b))
    assert stopped.jobs == 0 and not stopped._owner.locked()


def test_a_small_product_or_a_busy_core_is_computed_at_start(helper):
    start, collect = matmul_onednn.deferred_gemm(False, False, np.matmul)
    small = start(rand_f32(8, 8), rand_f32(8, 8))  # below oneDNN's size: lean's NumPy
    assert small.ticket is None
    assert_identical(collect(small), rand_f32(8, 8) @ rand_f32(8, 8))
    busy = backend.team(0)
    busy.threads = backend._CORES - 1  # other primitives' threads: no core to lend
    with busy:
        d = start(rand_f32(32, 96), rand_f32(96, 256))
    assert d.ticket is None and not helper._owner.locked()
    assert_identical(collect(d), matmul_onednn.lean_gemm(False, False, None)(
        rand_f32(32, 96), rand_f32(96, 256)))


async def test_a_loop_failing_after_the_start_settles_the_product(monkeypatch, helper):
    """The product the iteration needs fails (v's rows do not match) after the deferred
    product started: the helper is free again and the step fails naming the node."""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    g, feeds_at, out, feeds = _accumulating_loop(v_rows=90)
    direct, eak = executors_for(g, feeds_at, out)
    try:
        loop = _loop(eak)
        (dw,) = [m for m in loop.members if m.name.endswith("/dw")]
        (nxt,) = [m for m in loop.members if m.name.endswith("/next")]
        source, _ = loop.generate()
        assert source.index(f"d{dw.id} = s{dw.id}(") < source.index(f"v{nxt.id} = "), source
    finally:
        direct.close()
    settled = []
    settle = matmul_onednn.Deferred.settle

    def counting(d):
        settled.append(d.ticket is not None)
        return settle(d)

    monkeypatch.setattr(matmul_onednn.Deferred, "settle", counting)
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            with pytest.raises(af.errors.InvalidArgumentError, match="next"):
                await asyncio.wait_for(sess.run(out, feeds), 30)
    assert True in settled  # a started product was settled by the loop's end
    assert not helper._owner.locked()
