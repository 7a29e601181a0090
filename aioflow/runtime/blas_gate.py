"""The BLAS gate: how many BLAS kernels run at once on a device, so the inter-op pool
and BLAS's own threads never oversubscribe the cores.

Each BLAS call uses intra_op_parallelism_threads threads when that is set, else BLAS's
own count; at most cores / that many BLAS kernels run at once and the rest wait in FIFO
order.  Two 2-thread GEMMs at once on two cores were 5-10% slower than one after the
other.  Queued kernels run back to back on the pool thread that finished the previous
one: no hand-off through the event loop between consecutive BLAS calls.

(Measured and not adopted: sharing the cores by running several GEMMs side by side at
one BLAS thread each.  It only ties one multi-threaded GEMM after another, and while
OpenBLAS's helper thread still spins after any multi-threaded call, up to ~0.1 s, the
side-by-side GEMMs lose a third of a core to it: docs/performance.md.)
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

from aioflow.framework.intra_op_threads import _blas_threads_any, blas_threads_outside


class BlasGate:
    """Bounds the BLAS kernels in flight on a pool, queueing the rest (FIFO)."""

    def __init__(self, slots: int):
        self.slots = max(1, slots)
        self._running = 0
        self._waiting: deque = deque()
        self._lock = threading.Lock()

    @classmethod
    def for_device(cls, pool_size: int, intra_op_threads: int) -> BlasGate:
        """cores / threads-per-BLAS-call slots (intra_op threads, else BLAS's own count),
        at most the pool's size."""
        threads = intra_op_threads
        if threads <= 0:
            threads = blas_threads_outside() or _blas_threads_any()
        cores = os.cpu_count() or 1
        return cls(min(pool_size, cores // max(1, threads)))

    def submit(self, pool: ThreadPoolExecutor, fn, *args) -> Future:
        future: Future = Future()
        with self._lock:
            start = self._running < self.slots
            if start:
                self._running += 1
            else:
                self._waiting.append((future, fn, args))
        if start:
            try:
                pool.submit(self._run, future, fn, args)
            except RuntimeError:  # the pool is shut down: the slot is given back
                with self._lock:
                    self._running -= 1
                raise
        return future

    def _run(self, future: Future, fn, args) -> None:
        """Run this job, then the queued ones, on the same thread."""
        while True:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as e:  # noqa: BLE001 - handed to the future
                    future.set_exception(e)
            with self._lock:
                if not self._waiting:
                    self._running -= 1
                    return
                future, fn, args = self._waiting.popleft()
