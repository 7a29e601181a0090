"""The BLAS gate (bounded BLAS kernels in flight) and intra_op_parallelism_threads."""

import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor

import pytest

from aioflow.framework.intra_op_threads import BlasThreads
from aioflow.runtime.blas_gate import BlasGate


def _recorder():
    """A job that records how many jobs overlap it and which thread ran it."""
    lock = threading.Lock()
    state = {"now": 0, "peak": 0, "order": [], "threads": []}

    def job(i, seconds=0.02):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            state["order"].append(i)
            state["threads"].append(threading.get_ident())
        time.sleep(seconds)
        with lock:
            state["now"] -= 1
        return i * 10

    return job, state


def test_one_slot_runs_jobs_one_at_a_time_in_order_on_one_thread():
    job, state = _recorder()
    gate = BlasGate(1)
    with ThreadPoolExecutor(4) as pool:
        futures = [gate.submit(pool, job, i) for i in range(6)]
        assert [f.result(timeout=5) for f in futures] == [0, 10, 20, 30, 40, 50]
    assert state["peak"] == 1
    assert state["order"] == list(range(6))
    assert len(set(state["threads"])) == 1  # back to back, no hand-off between jobs


def test_two_slots_run_two_at_once_never_three():
    job, state = _recorder()
    gate = BlasGate(2)
    with ThreadPoolExecutor(4) as pool:
        futures = [gate.submit(pool, job, i, 0.05) for i in range(6)]
        [f.result(timeout=5) for f in futures]
    assert state["peak"] == 2


def test_errors_reach_the_future_and_the_queue_goes_on():
    gate = BlasGate(1)

    def boom():
        raise ValueError("bad input")

    with ThreadPoolExecutor(2) as pool:
        first = gate.submit(pool, boom)
        second = gate.submit(pool, lambda: 7)
        with pytest.raises(ValueError, match="bad input"):
            first.result(timeout=5)
        assert second.result(timeout=5) == 7


def test_cancelled_queued_job_is_skipped():
    job, state = _recorder()
    gate = BlasGate(1)
    with ThreadPoolExecutor(2) as pool:
        running = gate.submit(pool, job, 0, 0.1)
        queued = gate.submit(pool, job, 1)
        assert queued.cancel()
        after = gate.submit(pool, job, 2)
        assert running.result(timeout=5) == 0 and after.result(timeout=5) == 20
        with pytest.raises(CancelledError):
            queued.result()
    assert state["order"] == [0, 2]


def test_submit_to_a_shut_down_pool_raises_and_frees_the_slot():
    gate = BlasGate(1)
    pool = ThreadPoolExecutor(1)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        gate.submit(pool, lambda: 1)
    with ThreadPoolExecutor(1) as live:
        assert gate.submit(live, lambda: 2).result(timeout=5) == 2


def test_slots_are_cores_over_blas_threads_bounded_by_the_pool():
    cores = os.cpu_count() or 1
    assert BlasGate.for_device(pool_size=64, intra_op_threads=1).slots == cores
    assert BlasGate.for_device(pool_size=1, intra_op_threads=1).slots == 1
    assert BlasGate.for_device(pool_size=64, intra_op_threads=cores * 4).slots == 1
    blas = BlasThreads.find()
    if blas is not None:
        expected = max(1, cores // blas.get())
        assert BlasGate.for_device(pool_size=64, intra_op_threads=0).slots == expected


@pytest.mark.skipif(BlasThreads.find() is None, reason="needs numpy on a pthreads OpenBLAS")
def test_intra_op_threads_set_blas_threads_even_when_threadpoolctl_has_another_owner():
    # threadpoolctl's setter only works from the first thread that used it; here the
    # main thread claims it first, and the session's pool thread must still win.
    # A child process, since the BLAS thread count is process-wide; the NumPy MatMul
    # kernel (OpenBLAS), not the oneDNN extra's GEMM, which leaves OpenBLAS alone.
    code = textwrap.dedent("""
        import asyncio, numpy as np, threadpoolctl, aioflow as af
        from aioflow.framework.intra_op_threads import BlasThreads
        threadpoolctl.threadpool_limits(limits=2, user_api="blas")
        g = af.Graph()
        with g.as_default():
            x = af.placeholder(af.float32, [512, 512])
            y = af.matmul(x, x)
        async def main():
            config = af.ConfigProto(intra_op_parallelism_threads=1)
            async with af.Session(graph=g, config=config) as sess:
                await sess.run(y, {x: np.ones((512, 512), np.float32)})
        asyncio.run(main())
        print(BlasThreads.find().get())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "AIOFLOW_ONEDNN": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"
