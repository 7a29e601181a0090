"""Large element-wise kernels' work split over the session's intra-op threads.

TF's element-wise kernels (Eigen's, oneDNN's) split a large tensor over its intra-op
pool; NumPy's ufuncs run on the calling thread. Above SPLIT_ABOVE elements a kernel here
shares ranges of its output with helper threads, at most intra_op_parallelism_threads
threads in all (the count the CPU device sets, read through
aioflow/framework/intra_op_threads.py; the cores when it cannot be read). Below, or with
one thread, the whole range runs inline: a hand-off costs more than the work saved.

Ranges are taken one at a time (at least BLOCK elements each, about two per thread) by
the calling thread and by helper jobs, and the caller waits only for ranges a helper has
started: a helper that is busy (a convolution's blocks, another kernel's) or gets no
core on a loaded machine leaves its share to the caller instead of holding the kernel
up. The first helper job goes to the warm helper (aioflow/kernels/warm_helper.py: a
thread that polls for work a while after its last job, so a hand-off costs a few µs
where waking a sleeping thread costs 50-300 on the development VM); the others (three
or more cores), and the first when the warm helper is not there or another caller holds
it, or while a job runs on the executor's pool beside the loop (`cores_shared`: every
core has a thread of ours already; with 32 MobileNetV2 runs in flight the warm helper's
Python jobs cost 15-28 page faults an image, 0.3 ms of system time), to helpers of
their own, one fewer than the cores: the convolutions' pool
(aioflow/kernels/nn/conv_kernels.py `parallel_blocks`) waits for every job it submitted,
so a job queued behind a convolution's would hold the kernel up until that one ended.
The loops given here release the GIL (NumPy ufuncs on slices, numba's nogil loops).

A memory-bound pass gains from a second thread only where the cores have memory
bandwidth to spare: on the 2-vCPU development machine it gains nothing (two half
passes side by side 0.99 ms, one whole pass 0.78; docs/performance.md, 2026-11-29).
intra_op_parallelism_threads=1 keeps these kernels on one thread.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from aioflow.framework.intra_op_threads import blas_threads_outside, cores_shared
from aioflow.kernels import warm_helper

#: Elements above which a kernel's work is shared among threads (float32: 2 MiB; one
#: thread's numba Relu over it takes ~0.1 ms, a hand-off to a pool thread 10-30 µs).
SPLIT_ABOVE = 1 << 19
#: The fewest elements a thread is handed at once.
BLOCK = 1 << 17
_CORES = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
_helpers: ThreadPoolExecutor | None = None
_helpers_lock = threading.Lock()


def intra_op_threads() -> int:
    """The threads a kernel may use: intra_op_parallelism_threads as the CPU device set
    it (BLAS's count outside the convolutions' sections), else the cores."""
    n = blas_threads_outside()
    return min(n, _CORES) if n > 0 else _CORES


def split_ranges(n: int, threads: int, unit: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) ranges covering 0..n (of `unit` elements each): one when the n * unit
    elements are at most SPLIT_ABOVE or threads <= 1, else about two per thread of at
    least BLOCK elements each."""
    if n * unit <= SPLIT_ABOVE or threads <= 1:
        return [(0, n)]
    step = max(-(-BLOCK // unit), -(-n // (2 * threads)))
    return [(lo, min(lo + step, n)) for lo in range(0, n, step)]


def for_ranges(n: int, fn: Callable[[int, int], None], unit: int = 1,
               threads: int | None = None) -> None:
    """fn(lo, hi) over ranges covering 0..n (of `unit` elements each: rows of a tensor),
    shared among the intra-op threads when the n * unit elements are above
    SPLIT_ABOVE, else one call inline. `threads` overrides the intra-op count (tests)."""
    if n * unit <= SPLIT_ABOVE:
        fn(0, n)
        return
    threads = intra_op_threads() if threads is None else threads
    ranges = split_ranges(n, threads, unit)
    if len(ranges) == 1 or _CORES == 1:
        for lo, hi in ranges:
            fn(lo, hi)
        return
    _share(ranges, fn, min(threads, _CORES, len(ranges)))


def share_ranges(ranges: list, fn: Callable[[int, int], None], threads: int) -> None:
    """fn(lo, hi) over the given ranges, shared among `threads` threads (this one and
    helpers; at most the cores): for kernels that cut their own work (MatMul's GEMM
    blocks, aioflow/kernels/math/matmul_kernels.py)."""
    threads = min(threads, _CORES, len(ranges))
    if threads <= 1:
        for lo, hi in ranges:
            fn(lo, hi)
        return
    _share(ranges, fn, threads)


def _helper_pool() -> ThreadPoolExecutor:
    global _helpers
    if _helpers is None:
        with _helpers_lock:
            if _helpers is None:
                _helpers = ThreadPoolExecutor(max_workers=_CORES - 1,
                                              thread_name_prefix="aioflow-elementwise")
    return _helpers


def _share(ranges: list, fn: Callable[[int, int], None], threads: int) -> None:
    """fn over every range, taken one at a time by this thread and threads - 1 helper
    jobs; returns when every range is done (raising the first error), without waiting
    for a helper job that has not taken a range."""
    total = len(ranges)
    taken = itertools.count()  # next() is atomic under the GIL
    lock = threading.Lock()
    done = threading.Event()
    state = {"left": total, "error": None}

    def run() -> None:
        while (i := next(taken)) < total:
            try:
                fn(*ranges[i])
            except BaseException as e:  # noqa: BLE001 - raised by the caller
                state["error"] = state["error"] or e
            finally:
                with lock:
                    state["left"] -= 1
                    if state["left"] == 0:
                        done.set()

    helper = warm_helper.helper() if not cores_shared() else None
    ticket = helper.post_python(run) if helper is not None else None
    jobs = threads - 1 - (ticket is not None)
    if jobs:
        pool = _helper_pool()
        for _ in range(jobs):
            pool.submit(run)
    try:
        run()
    finally:
        if ticket is not None:
            ticket.finish()  # the helper's job, if it took it, is done
    done.wait()
    if state["error"] is not None:
        raise state["error"]
