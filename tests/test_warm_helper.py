"""The warm helper (aioflow/kernels/warm_helper.py): its hand-off protocol (a job handed
and done, an error raised by the caller, a helper that never comes leaving its job to
the caller, one caller at a time, the helper's end, a fork's child), and the products
split with it (aioflow/kernels/onednn/matmul_onednn.py `split_gemm`), equal bit for bit
to the GEMM they cut."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from kernel_testutil import stopped_warm_helper

from aioflow.kernels import element_threads, warm_helper

pytestmark = pytest.mark.skipif(not warm_helper.ENABLED,
                                reason="no warm helper (numba, x86-64, two cores)")

_DEADLINE_S = 30


@pytest.fixture(scope="module")
def helper():
    """A helper of this module's own (the process's may be busy with kernels)."""
    assert warm_helper.wait_ready(300), warm_helper._compile.last_error
    h = warm_helper.WarmHelper()
    yield h
    h.stop()


@pytest.fixture
def stopped_helper(monkeypatch):
    """The process's helper replaced by one whose thread has ended: it takes nothing."""
    return stopped_warm_helper(monkeypatch)


def _until_taken(h: warm_helper.WarmHelper) -> None:
    """Returns once the helper took the posted job (it polls, or wakes from its sleep)."""
    deadline = time.monotonic() + _DEADLINE_S
    while h.ctrl[warm_helper.STATE] in (warm_helper.POSTED_NATIVE, warm_helper.POSTED_PYTHON):
        assert time.monotonic() < deadline, "the helper never took its job"
        time.sleep(0)


def _clock_job(clock_id: int, ts: np.ndarray) -> tuple:
    """A CALL job: clock_gettime(clock_id, ts) (an int and a pointer argument)."""
    return (warm_helper._address(warm_helper._libc.clock_gettime), clock_id, ts.ctypes.data,
            0, 0, 0)


def test_a_native_job_runs_on_the_helper_and_returns_its_status(helper):
    ts = np.zeros(2, np.int64)
    jobs = helper.jobs
    ticket = helper.post_native(warm_helper.CALL, _clock_job(1, ts))  # CLOCK_MONOTONIC
    _until_taken(helper)
    assert ticket.finish() == 0
    assert ts[0] > 0 and helper.jobs == jobs + 1


def test_a_failing_native_call_gives_its_status(helper):
    ts = np.zeros(2, np.int64)
    ticket = helper.post_native(warm_helper.CALL, _clock_job(-12345, ts))  # no such clock
    _until_taken(helper)
    assert ticket.finish() == -1


def test_a_python_job_runs_on_the_helper_thread(helper):
    ran_on = []
    ticket = helper.post_python(lambda: ran_on.append(threading.current_thread().name))
    _until_taken(helper)
    assert ticket.finish() is True
    assert ran_on == ["aioflow-warm-helper"]


def test_a_python_jobs_error_is_raised_by_the_caller(helper):
    def fail():
        raise ValueError("from the helper")

    ticket = helper.post_python(fail)
    _until_taken(helper)
    with pytest.raises(ValueError, match="from the helper"):
        ticket.finish()
    ts = np.zeros(2, np.int64)  # and the helper goes on serving
    ticket = helper.post_native(warm_helper.CALL, _clock_job(1, ts))
    _until_taken(helper)
    assert ticket.finish() == 0


def test_a_job_the_helper_never_takes_is_left_to_the_caller(stopped_helper):
    """finish() takes the job back (None: the caller runs it) instead of waiting."""
    ran = []
    ticket = stopped_helper.post_python(lambda: ran.append(1))
    assert ticket.finish() is None
    assert ran == [] and stopped_helper.jobs == 0
    ticket = stopped_helper.post_native(warm_helper.CALL, _clock_job(1, np.zeros(2, np.int64)))
    assert ticket.finish() is None


def test_one_caller_at_a_time(stopped_helper):
    first = stopped_helper.post_python(lambda: None)
    assert stopped_helper.post_python(lambda: None) is None  # held: run it yourself
    assert first.finish() is None
    second = stopped_helper.post_python(lambda: None)
    assert second is not None
    second.finish()


def test_the_caller_waits_for_a_job_the_helper_started(helper):
    """A job taken is waited for (here past the caller's spin: it sleeps, then the
    helper wakes it)."""
    started, release = threading.Event(), threading.Event()
    done = []

    def job():
        started.set()
        release.wait(_DEADLINE_S)
        done.append(1)

    ticket = helper.post_python(job)
    assert started.wait(_DEADLINE_S)
    timer = threading.Timer(2 * warm_helper.CALLER_SPIN_NS / 1e9, release.set)
    timer.start()
    assert ticket.finish() is True
    assert done == [1]
    timer.join()


def test_the_helper_sleeps_after_its_spin_and_wakes_for_a_job(helper):
    deadline = time.monotonic() + _DEADLINE_S
    while helper.ctrl[warm_helper.SLEEPING] != 1:
        assert time.monotonic() < deadline, "the helper never went to sleep"
        time.sleep(warm_helper.HELPER_SPIN_NS / 1e9)
    ts = np.zeros(2, np.int64)
    ticket = helper.post_native(warm_helper.CALL, _clock_job(1, ts))
    _until_taken(helper)
    assert ticket.finish() == 0 and ts[0] > 0


def test_stop_ends_the_thread():
    assert warm_helper.wait_ready(300)
    h = warm_helper.WarmHelper()
    h.stop(timeout=_DEADLINE_S)
    assert not h._thread.is_alive()


_CHILD_HELPER = """
import os, sys, time
import numpy as np
from aioflow.kernels import warm_helper
assert warm_helper.wait_ready(300)
while warm_helper.helper() is None:
    time.sleep(0.01)
"""
_CHILD = _CHILD_HELPER + """
parent = warm_helper.helper()
pid = os.fork()
if pid == 0:
    h = warm_helper.helper()
    ok = h is not None and h is not parent and h._thread.is_alive()
    ran = []
    t = h.post_python(lambda: ran.append(1))
    ok = ok and t.finish() in (None, True)
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_has_a_helper_of_its_own_and_the_process_exits():
    """The child starts its own helper thread (its parent's is not there), and both
    processes exit with their helper running (it ends at exit)."""
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "child 0" in out.stdout


_POST_AND_RECLAIM = _CHILD_HELPER + """
h = warm_helper.helper()
t0 = time.perf_counter()
while time.perf_counter() - t0 < 1.0:
    ticket = h.post_python(lambda: None)
    ticket.finish()
print("helper took", h.jobs)
"""


def test_a_python_job_posted_while_the_helper_polls_is_never_run_as_native():
    """Python jobs posted and taken back as fast as a caller can (the helper polling
    between them): the helper's compare-exchange once took a Python job it had read as
    not posted yet for a native one and called its empty argument words (a
    segmentation fault within a second, in a child so that it fails the test only)."""
    out = subprocess.run([sys.executable, "-c", _POST_AND_RECLAIM], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "helper took" in out.stdout


# -- users ------------------------------------------------------------------------------------

def test_element_ranges_left_to_the_caller_when_the_helper_does_not_come(stopped_helper,
                                                                        monkeypatch):
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 4096)
    monkeypatch.setattr(element_threads, "BLOCK", 1000)
    monkeypatch.setattr(element_threads, "intra_op_threads", lambda: 2)
    monkeypatch.setattr(element_threads, "_CORES", 2)
    seen = np.zeros(20_000, np.int32)
    callers = set()

    def mark(lo, hi):
        callers.add(threading.get_ident())
        seen[lo:hi] += 1

    element_threads.for_ranges(seen.size, mark)
    assert (seen == 1).all() and callers == {threading.get_ident()}


def test_element_ranges_shared_with_the_warm_helper(monkeypatch, helper):
    """The ranges' helper job goes to the warm helper: a range waits at a barrier of two
    that only a range running on the helper meets."""
    monkeypatch.setattr(warm_helper._Global, "helper", helper)
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 4096)
    monkeypatch.setattr(element_threads, "BLOCK", 1000)
    monkeypatch.setattr(element_threads, "intra_op_threads", lambda: 2)
    monkeypatch.setattr(element_threads, "_CORES", 2)
    barrier = threading.Barrier(2, timeout=_DEADLINE_S)
    seen = np.zeros(20_000, np.int32)
    names = set()

    def mark(lo, hi):
        name = threading.current_thread().name
        if name not in names:
            names.add(name)
            barrier.wait()
        seen[lo:hi] += 1

    element_threads.for_ranges(seen.size, mark)
    assert (seen == 1).all()
    assert names == {threading.current_thread().name, "aioflow-warm-helper"}


def test_element_ranges_skip_the_warm_helper_while_the_cores_are_shared(monkeypatch, helper):
    """While a job runs on the pool beside the loop (cores_shared), every core has a
    thread of ours: the ranges' helper job goes to the pool, not the warm helper."""
    from aioflow.framework import intra_op_threads
    monkeypatch.setattr(warm_helper._Global, "helper", helper)
    monkeypatch.setattr(element_threads, "SPLIT_ABOVE", 4096)
    monkeypatch.setattr(element_threads, "BLOCK", 1000)
    monkeypatch.setattr(element_threads, "intra_op_threads", lambda: 2)
    monkeypatch.setattr(element_threads, "_CORES", 2)
    posted = []
    monkeypatch.setattr(helper, "post_python", lambda fn: posted.append(fn))
    seen = np.zeros(20_000, np.int32)

    def mark(lo, hi):
        seen[lo:hi] += 1

    intra_op_threads.begin_sharing()
    try:
        element_threads.for_ranges(seen.size, mark)
    finally:
        intra_op_threads.end_sharing()
    assert (seen == 1).all() and posted == []


def _onednn():
    from aioflow.kernels.onednn import backend, matmul_onednn
    if not backend.AVAILABLE:
        pytest.skip("oneDNN not installed")
    return matmul_onednn


def _whole(mm, x, y):
    """x @ y by one single-threaded GEMM call (the product split_gemm cuts)."""
    from aioflow.kernels.onednn import dnnl_api, primitives
    ox, oy = mm._operand(x), mm._operand(y)
    out = np.empty((x.shape[0], y.shape[1]), np.float32)
    primitives.set_threads(1)
    status = dnnl_api._lib.dnnl_sgemm(ox[0], oy[0], x.shape[0], y.shape[1], x.shape[1], 1.0,
                                      primitives.address(x), ox[1], primitives.address(y),
                                      oy[1], 0.0, primitives.address(out), y.shape[1])
    assert status == 0
    return out


def _split(mm, h, x, y):
    from aioflow.kernels.onednn import primitives
    ox, oy = mm._operand(x), mm._operand(y)
    out = np.full((x.shape[0], y.shape[1]), np.nan, np.float32)
    status = mm.split_gemm(h, ox, oy, x.shape[0], y.shape[1], x.shape[1],
                           primitives.address(x), primitives.address(y),
                           primitives.address(out))
    assert status == 0
    return out


_PRODUCTS = [  # (m, k, n, transpose a, transpose b): rows cut, columns cut (m < 16)
    (64, 784, 256, False, False), (784, 64, 256, True, False), (64, 128, 256, False, True),
    (33, 70, 45, True, True), (8, 300, 97, False, False), (9, 64, 40, True, True)]


@pytest.mark.parametrize("m,k,n,ta,tb", _PRODUCTS)
def test_a_split_product_equals_the_whole_gemm_bit_for_bit(helper, m, k, n, ta, tb):
    """Whoever runs the second part (the helper, or the caller taking it back)."""
    mm = _onednn()
    rng = np.random.default_rng(m * n)
    a = rng.standard_normal((k, m) if ta else (m, k), dtype=np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n), dtype=np.float32)
    x, y = (a.T if ta else a), (b.T if tb else b)
    want = _whole(mm, x, y)
    for _ in range(3):
        np.testing.assert_array_equal(_split(mm, helper, x, y), want)


def test_a_split_product_without_the_helper_is_computed_by_the_caller(stopped_helper):
    mm = _onednn()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 300), dtype=np.float32)
    y = rng.standard_normal((300, 128), dtype=np.float32)
    np.testing.assert_array_equal(_split(mm, stopped_helper, x, y), _whole(mm, x, y))


def test_a_product_worth_a_team_is_split_with_the_helper(monkeypatch, helper):
    """Where backend.team gives two threads, sgemm cuts the product with the warm helper
    instead of running an OpenMP team (TEAM_MACS and up)."""
    mm = _onednn()
    from aioflow.kernels.onednn import backend
    monkeypatch.setattr(warm_helper._Global, "helper", helper)
    monkeypatch.setattr(backend, "team_size", lambda work: 2 if work else 1)
    posted = []
    real = helper.post_native

    def post_native(kind, words):
        posted.append((kind, tuple(words[3:6])))
        return real(kind, words)

    monkeypatch.setattr(helper, "post_native", post_native)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((64, 1024), dtype=np.float32)
    y = rng.standard_normal((1024, 128), dtype=np.float32)
    got = mm.sgemm(x, y)
    assert posted == [(warm_helper.SGEMM, (32, 128, 1024))]
    np.testing.assert_array_equal(got, _whole(mm, x, y))
    small = rng.standard_normal((64, 16), dtype=np.float32)
    mm.sgemm(small, y[:16])  # below TEAM_MACS: one thread, not split
    assert len(posted) == 1

