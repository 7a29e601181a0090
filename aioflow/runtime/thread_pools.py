"""Inter-op thread pools as TF's session options choose them (DirectSession's
thread_pools_): where the expensive synchronous kernels of a step run.

- By default one pool for the whole process, shared by every session (TF's
  GlobalThreadPool: sized by the first session's inter_op_parallelism_threads, or one
  thread per core besides the event loop's).
- `use_per_session_threads`: a pool of the session's own.
- `session_inter_op_thread_pool`: one pool per entry, the session's own, or, with a
  `global_name`, a process-wide pool shared by every session naming it (the first
  configuration of a name wins: TF 2.21 runs a later session with another
  `num_threads` on the existing pool).
- `RunOptions.inter_op_thread_pool` picks the pool of one run by index (-1: the caller's
  thread, i.e. every kernel of the step inline on the loop); an index out of range is
  InvalidArgumentError, as TF's.

Pools create their threads on first use (most graphs never need them).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from aioflow.framework import errors


class InterOpPool:
    """One pool of inter-op threads; `executor` is created on first use."""

    def __init__(self, name: str, num_threads: int, owned: bool):
        self.name = name
        self.num_threads = max(1, num_threads)
        self.owned = owned  # the session's own: shut down when the session closes
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    @property
    def executor(self) -> ThreadPoolExecutor:
        executor = self._executor
        if executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        max_workers=self.num_threads,
                        thread_name_prefix=f"aioflow-CPU-pool-{self.name}")
                executor = self._executor
        return executor

    def shutdown(self, wait: bool = True) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)

    def __repr__(self) -> str:
        return f"<InterOpPool {self.name} threads={self.num_threads}>"


def default_inter_op_threads() -> int:
    """The pool's size when the config leaves it to the system (0): one thread per core
    besides the event loop's, which runs cheap kernels and a share of the expensive ones
    itself (TF's caller thread only waits, so TF's pool takes every core). With `cores`
    threads, two pool jobs and the loop's kernel contended for two cores whenever a run
    had made the pool start its second thread (Python's pool starts threads on demand):
    InceptionV3 b1 1.55x TF's then, 1.23x with one pool thread (docs/performance.md)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    return max(1, cores - 1)


def num_inter_op_threads(config) -> int:
    """TF's NumInterOpThreadsFromSessionOptions: the config's count, else
    `default_inter_op_threads` (a negative count runs every step in the caller's thread,
    see DirectSession: its pool gets one thread, for what runs there regardless)."""
    n = config.inter_op_parallelism_threads if config is not None else 0
    if n < 0:
        return 1
    return n or default_inter_op_threads()


_lock = threading.Lock()
_global: InterOpPool | None = None
_named: dict[str, InterOpPool] = {}


def global_pool(config) -> InterOpPool:
    """The process's default pool, made with the first asking session's options."""
    global _global
    with _lock:
        if _global is None:
            _global = InterOpPool("global", num_inter_op_threads(config), owned=False)
        return _global


def named_pool(name: str, num_threads: int) -> InterOpPool:
    """The process-wide pool called `name`, made at its first configuration."""
    with _lock:
        pool = _named.get(name)
        if pool is None:
            pool = _named[name] = InterOpPool(name, num_threads, owned=False)
        return pool


def session_pools(config) -> list[InterOpPool]:
    """The inter-op pools of a session with `config`, in TF's order of precedence:
    session_inter_op_thread_pool, else use_per_session_threads, else the global pool."""
    if config is not None and len(config.session_inter_op_thread_pool):
        pools = []
        for i, options in enumerate(config.session_inter_op_thread_pool):
            threads = options.num_threads or num_inter_op_threads(config)
            if options.global_name:
                pools.append(named_pool(options.global_name, threads))
            else:
                pools.append(InterOpPool(f"Compute{i}", threads, owned=True))
        return pools
    if config is not None and config.use_per_session_threads:
        return [InterOpPool("Compute", num_inter_op_threads(config), owned=True)]
    return [global_pool(config)]


def check_pool_index(index: int, num_pools: int) -> None:
    """RunOptions.inter_op_thread_pool must be -1 or the index of a session pool."""
    if index < -1 or index >= num_pools:
        raise errors.InvalidArgumentError(None, None, f"Invalid inter_op_thread_pool: {index}")
