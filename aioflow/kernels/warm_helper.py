"""A helper thread that waits for work spinning briefly, with the GIL released, before it
sleeps: a kernel hands it a share of its work (half a GEMM, a range of an element-wise
pass, a batch chunk of a convolution gradient) for ~1-5 µs when it is warm, where waking
a sleeping thread costs 50-300 µs on the development VM (a futex wake of an idle vCPU;
docs/performance.md, "Session 11's quiet window"). TF's intra-op pool (Eigen's) spins
the same way before its threads sleep; libgomp's teams do not once they have more threads
than cores (GOMP_SPINCOUNT is ignored then), and OMP_WAIT_POLICY=PASSIVE is aioflow's
default because spinning team threads hurt busy machines.

The protocol (one helper, one caller at a time: `post_*` takes the helper only when no
other caller holds it, else returns None and the caller runs everything itself):

* The caller writes the job into the control words (an int64 array) and posts it
  (STATE: IDLE -> POSTED_NATIVE or POSTED_PYTHON), runs its own share, then `finish`es:
  it takes the job back (posted -> IDLE by compare-exchange) when the helper has not
  taken it and runs it
  itself, else waits for it (polling up to CALLER_SPIN_NS, then sleeping on a futex).
  So a helper that gets no core, or sleeps, leaves its share to the caller instead of
  holding the kernel up, as aioflow/kernels/element_threads.py's helpers do.
* The helper lives in compiled code (aioflow/kernels/warm_helper_jit.py `serve`, GIL
  released): it polls STATE, calling sched_yield between polls, so a runnable thread
  wanting its core gets it, and takes a posted native job (a C call through a function
  pointer: oneDNN's GEMM) by compare-exchange (POSTED_NATIVE -> TAKEN) and runs it there,
  without the GIL. For a Python job it returns to Python, and takes the job only once
  it holds the GIL (`take`), so a caller never waits on a helper that waits for the
  GIL; the callable lets the GIL go in its NumPy / numba / ctypes work. It polls
  HELPER_SPIN_NS after its last job (or wake-up), then sleeps on a futex: spinning
  follows a job only, so an idle process keeps no core busy.
* Sleeping without losing a wake-up (a Dekker handshake): the helper stores SLEEPING=1
  and then reads STATE, the caller stores STATE=posted and then reads SLEEPING, and
  wakes it when it reads 1. The stores and loads are seq_cst atomics (an xchg and plain
  loads on x86): a load cannot pass the same thread's earlier store, so at least one
  side sees the other's store. The caller's sleep on a running job (WAITING and DONE)
  is the same handshake mirrored. The job's arguments and results are plain stores
  ordered before the seq_cst store that publishes them (warm_helper_jit.py says how).

Threads: on a machine of two or more cores one helper (on the 2-vCPU development
machine: the second core's thread). Its OpenMP team is one thread (`at_thread_start`
hooks: aioflow/kernels/onednn/primitives.py registers one). The compiled loops
compile once on a daemon thread (aioflow/kernels/background_jit.py); until then, or
without numba, off x86-64 (its syscall numbers), or with AIOFLOW_WARM_HELPER=0,
`helper()` returns None and kernels split their work as before (OpenMP teams, pool
threads). A fork's child starts a helper of its own when it first needs
one; the helper ends at interpreter exit.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import os
import platform
import sys
import threading
from collections.abc import Callable

import numpy as np

from aioflow.kernels import jit
from aioflow.kernels.background_jit import BackgroundCompile

#: How long the helper polls for a job after its last one before it sleeps (a training
#: step's products and gradients come 20-300 µs apart).
HELPER_SPIN_NS = 500_000
#: How long a caller polls for the helper's running share before it sleeps on it.
CALLER_SPIN_NS = 500_000

_CORES = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
#: Whether a helper may run: numba, two cores or more, Linux on x86-64 (the futex
#: syscall's number, x86's ordering argument), not turned off by AIOFLOW_WARM_HELPER=0.
ENABLED = (jit.ENABLED and _CORES >= 2 and sys.platform.startswith("linux")
           and platform.machine() == "x86_64"
           and os.environ.get("AIOFLOW_WARM_HELPER", "1").strip() != "0")

# -- the control words (an int64 array shared by a caller and the helper) ------------------------

STATE = 0       # IDLE, POSTED_NATIVE, POSTED_PYTHON, TAKEN, DONE
KIND = 1        # the posted job's kind: PYTHON, CALL, SGEMM
STATUS = 2      # a native job's return status (0: success)
SLEEPING = 3    # 1: the helper is going to sleep (a futex wait on this word)
WAITING = 4     # 1: the caller is going to sleep until the job is done (a futex wait)
STOP = 5        # 1: the helper ends
JOBS = 6        # jobs the helper has taken
ARGS = 8        # the job's argument words from here (16 of them)
WORDS = ARGS + 16

#: A posted job's state says its kind: the helper's compare-exchange can then take a
#: native job only (POSTED_NATIVE -> TAKEN) and `take` a Python one only. With one
#: POSTED state, the helper that read "posted, kind native" and then won the exchange
#: could take a Python job posted in between (the caller had taken the first back), and
#: call its stale argument words as a function: a segmentation fault in
#: benchmarks/grad_ops.py's split convolution gradients.
IDLE, POSTED_NATIVE, POSTED_PYTHON, TAKEN, DONE = 0, 1, 4, 2, 3
#: Job kinds. CALL: words f, a, b, c, d [, g, e, f2, h, i]: status = f(a, b, c, d) (integer
#: or pointer arguments; `c` an int), then g(e, f2, h, i) when that succeeded and g is
#: not 0 (a primitive's execution and its stream's wait). SGEMM: words f, transa,
#: transb (character codes), M, N, K, alpha (float32 bits), A, lda, B, ldb, beta (bits),
#: C, ldc: status = f(...) (oneDNN's dnnl_sgemm).
PYTHON, CALL, SGEMM = 1, 2, 3
# serve's answers
RUN_PYTHON, STOPPED = 1, 2
# reclaim_or_wait's answers
RECLAIMED, FINISHED = 0, 1

_libc = ctypes.CDLL(None) if ENABLED else None


def _address(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value


#: SYS_futex on x86-64 and FUTEX_WAIT / FUTEX_WAKE | FUTEX_PRIVATE_FLAG.
_FUTEX, _FUTEX_WAIT, _FUTEX_WAKE = 202, 128, 129
#: What the compiled loops call: syscall(), SYS_futex, FUTEX_WAIT, FUTEX_WAKE,
#: clock_gettime(), and sched_yield() between polls.
_SYS = np.array([_address(_libc.syscall), _FUTEX, _FUTEX_WAIT, _FUTEX_WAKE,
                 _address(_libc.clock_gettime), _address(_libc.sched_yield)], np.int64) \
    if ENABLED else None
_thread_start_hooks: list[Callable[[], None]] = []
_jit = None  # aioflow.kernels.warm_helper_jit once compiled


def at_thread_start(fn: Callable[[], None]) -> None:
    """fn() runs first on every helper thread (e.g. its OpenMP team of one)."""
    _thread_start_hooks.append(fn)


def _warm_up() -> None:
    """Compiles the loops (each called once on a control array whose helper has
    stopped)."""
    global _jit
    module = importlib.import_module("aioflow.kernels.warm_helper_jit")
    ctrl = np.zeros(WORDS, np.int64)
    ts = np.zeros(2, np.int64)
    module.stop(ctrl, _SYS)
    module.serve(ctrl, 0, _SYS, ts)
    module.post(ctrl, PYTHON, _SYS)
    module.reclaim_or_wait(ctrl, 0, _SYS, ts)
    module.take(ctrl)
    module.python_done(ctrl, _SYS)
    _jit = module


_compile = BackgroundCompile("warm-helper", _warm_up, ENABLED)


class Ticket:
    """A posted job: `finish()` after the caller's own share."""

    __slots__ = ("_helper", "finished")

    def __init__(self, helper: WarmHelper):
        self._helper = helper
        self.finished = False

    def finish(self):
        """Takes the job back or waits for it. Returns None when the caller must run the
        job itself (the helper had not taken it); else the native job's status (0:
        success) or, for a Python job, True (its exception is raised here)."""
        if self.finished:
            raise RuntimeError("a warm helper's job finished twice")
        self.finished = True
        return self._helper._finish()


class WarmHelper:
    """One helper thread and its control words (module docstring)."""

    def __init__(self):
        self._m = _jit
        self.ctrl = np.zeros(WORDS, np.int64)
        self._ts = np.zeros(2, np.int64)  # the caller's clock buffer (one caller at a time)
        self._owner = threading.Lock()
        self._python_job: Callable[[], None] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="aioflow-warm-helper",
                                        daemon=True)
        self._thread.start()

    # -- the helper thread --

    def _main(self) -> None:
        m, ctrl = self._m, self.ctrl
        ts = np.zeros(2, np.int64)
        for hook in _thread_start_hooks:
            hook()
        while m.serve(ctrl, HELPER_SPIN_NS, _SYS, ts) == RUN_PYTHON:
            if not m.take(ctrl):
                continue
            try:
                self._python_job()
            except BaseException as e:  # noqa: BLE001 - raised by the caller
                self._error = e
            m.python_done(ctrl, _SYS)

    # -- the caller --

    def post_native(self, kind: int, words) -> Ticket | None:
        """Posts a native job (CALL or SGEMM with its argument words), or None when
        another caller holds the helper."""
        if not self._owner.acquire(blocking=False):
            return None
        self.ctrl[ARGS:ARGS + len(words)] = words
        self._m.post(self.ctrl, kind, _SYS)
        return Ticket(self)

    def post_python(self, fn: Callable[[], None]) -> Ticket | None:
        """Posts fn() (run on the helper with the GIL), or None when another caller holds
        the helper."""
        if not self._owner.acquire(blocking=False):
            return None
        self._python_job = fn
        self._error = None
        self._m.post(self.ctrl, PYTHON, _SYS)
        return Ticket(self)

    def _finish(self):
        try:
            if self._m.reclaim_or_wait(self.ctrl, CALLER_SPIN_NS, _SYS, self._ts) == RECLAIMED:
                return None
            if self.ctrl[KIND] != PYTHON:
                return int(self.ctrl[STATUS])
            error, self._error, self._python_job = self._error, None, None
            if error is not None:
                raise error
            return True
        finally:
            self._owner.release()

    @property
    def jobs(self) -> int:
        """Jobs the helper has taken."""
        return int(self.ctrl[JOBS])

    def stop(self, timeout: float = 1.0) -> None:
        """Ends the helper thread (a job posted later is left to its caller)."""
        self._m.stop(self.ctrl, _SYS)
        self._thread.join(timeout)


class _Global:
    helper: WarmHelper | None = None
    lock = threading.Lock()


def helper() -> WarmHelper | None:
    """The process's warm helper, or None while its loops compile (started on the first
    call), without numba, on one core, or with AIOFLOW_WARM_HELPER=0."""
    h = _Global.helper
    if h is not None or not ENABLED:
        return h
    if not _compile.ready():
        _compile.start()
        return None
    with _Global.lock:
        if _Global.helper is None:
            _Global.helper = WarmHelper()
        return _Global.helper


def wait_ready(timeout: float | None = None) -> bool:
    """Compile the helper's loops now and wait for them (warm-ups, tests)."""
    _compile.start()
    return _compile.wait_ready(timeout)


def _stop_at_exit() -> None:
    if _Global.helper is not None:
        _Global.helper.stop()


def _forget_in_child() -> None:
    """A fork's child has no helper thread: it starts its own when it needs one."""
    _Global.helper = None
    _Global.lock = threading.Lock()


atexit.register(_stop_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
