"""Intra-op threads: BLAS's process-wide thread count, and the sections in which a
kernel runs BLAS single-threaded and splits its work over threads of its own.

Part of the kernel API (kernels see the framework, never the runtime): the convolution
and MatMul kernels use `own_threads` (MatMul for every product OpenBLAS would thread),
the CPU device sets the count from intra_op_parallelism_threads (`set_blas_threads`)
and sizes its BLAS gate
(aioflow/runtime/blas_gate.py) from `blas_threads_outside`. OpenBLAS's count is one per
process, so this state is the process's, not a step's or a device's.
"""

from __future__ import annotations

import threading


class BlasThreads:
    """Get and set the process-wide thread count of the OpenBLAS libraries loaded.

    Through OpenBLAS's own entry points, found with threadpoolctl: threadpoolctl's own
    setter silently does nothing unless called from the first thread that used it, and
    the device sets the count from a pool thread."""

    def __init__(self, libs: list):
        self._libs = libs  # (get, set) entry points of each OpenBLAS loaded

    @classmethod
    def find(cls) -> BlasThreads | None:
        """The OpenBLAS libraries loaded (numpy's, and scipy's when scipy is loaded), or
        None when another BLAS is loaded too or an OpenBLAS is OpenMP-threaded (its
        count is per calling thread): those are left alone."""
        try:
            import numpy  # noqa: F401 - loads the BLAS threadpoolctl looks for
            from threadpoolctl import ThreadpoolController

            controllers = [c for c in ThreadpoolController().lib_controllers
                           if c.user_api == "blas"]
        except Exception:  # noqa: BLE001 - without threadpoolctl, BLAS is left alone
            return None
        libs = [_openblas_entry_points(c) for c in controllers]
        if not libs or None in libs:
            return None
        return cls(libs)

    def get(self) -> int:
        return max(int(get()) for get, _ in self._libs)

    def set(self, n: int) -> None:
        for _, set_fn in self._libs:
            set_fn(n)


def _openblas_entry_points(controller):
    """(get, set) thread-count functions of a pthreads OpenBLAS, else None."""
    if controller.internal_api != "openblas" or \
            getattr(controller, "threading_layer", None) != "pthreads":
        return None
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            get_fn = getattr(controller.dynlib, f"{prefix}openblas_get_num_threads{suffix}", None)
            set_fn = getattr(controller.dynlib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get_fn is not None and set_fn is not None:
                return get_fn, set_fn
    return None


def _blas_threads_any() -> int:
    """The largest thread count threadpoolctl reports for any BLAS (1 if none)."""
    try:
        from threadpoolctl import threadpool_info

        return max((i["num_threads"] for i in threadpool_info()
                    if i.get("user_api") == "blas"), default=1)
    except Exception:  # noqa: BLE001 - without threadpoolctl assume one thread
        return 1


# -- the convolutions' own threads: BLAS single-threaded while they run ------------------------

_blas: BlasThreads | None | bool = None  # found on first use (False: none to control)
_section_lock = threading.Lock()
_sections = 0  # convolutions now inside own_threads()
_outside = 0  # BLAS's thread count outside the sections (while any is open)


def _find_blas() -> BlasThreads | None:
    global _blas
    if _blas is None:
        _blas = BlasThreads.find() or False
    return _blas or None


class own_threads:  # noqa: N801 - used as a context manager, like a function
    """Within: every BLAS call runs on one thread, and the kernel splits its work over
    `threads` of its own (the value of `with`): BLAS's count outside, i.e. the session's
    intra_op_parallelism_threads when set, else BLAS's default (the cores).

    TF's convolutions split their work over TF's own intra-op pool; a multi-threaded
    OpenBLAS call leaves its helper thread spinning for up to ~0.1 s afterwards, taking
    the core the next kernel's helper thread needs (MobileNetV2 batch 8: the depthwise
    family 4.2x TF's behind the threaded 1x1 GEMMs, 2.6x with them single-threaded).
    Counted, so that kernels running at once share one section; 0 when the BLAS loaded
    cannot be controlled (the kernel then leaves BLAS to thread itself)."""

    __slots__ = ("threads",)

    def __enter__(self) -> int:
        global _sections, _outside
        blas = _find_blas()
        if blas is None:
            self.threads = 0
            return 0
        with _section_lock:
            if _sections == 0:
                _outside = blas.get()
                if _outside != 1:
                    blas.set(1)
            _sections += 1
            self.threads = _outside
        return self.threads

    def __exit__(self, *exc) -> None:
        global _sections
        if not self.threads:
            return
        with _section_lock:
            _sections -= 1
            if _sections == 0 and _outside != 1:
                _find_blas().set(_outside)


def blas_threads_outside() -> int:
    """BLAS's thread count outside the convolutions' sections (0: no OpenBLAS to read)."""
    blas = _find_blas()
    if blas is None:
        return 0
    with _section_lock:
        return _outside if _sections else blas.get()


def set_blas_threads(n: int) -> bool:
    """Set BLAS's thread count (intra_op_parallelism_threads), process-wide; while a
    convolution's section is open, the count it restores on leaving. False when no
    controllable OpenBLAS is loaded."""
    global _outside
    blas = BlasThreads.find()  # afresh: a BLAS loaded since (scipy's) is set too
    if blas is None:
        return False
    with _section_lock:
        if _sections:
            _outside = n
        else:
            blas.set(n)
    return True



def begin_sharing(branch: bool = False) -> None:
    """A job is handed to a pool thread to run beside the event loop's own work (many
    runs in flight: other runs wait for the loop; or, `branch`, a run's own parallel
    branch); `end_sharing` when it is done or cancelled. While any such job is in
    flight, every core already has a thread of ours, so kernels that split their work
    over teams (the oneDNN primitives) run on their calling thread alone
    (`cores_shared`): a team would only oversubscribe the cores. Counted process wide,
    as the BLAS sections above."""
    global _sharing, _branches
    with _sharing_lock:
        _sharing += 1
        _branches += branch


def end_sharing(*_, branch: bool = False) -> None:
    """The job of a `begin_sharing` finished or was cancelled (takes and ignores a
    future: it is a done callback too)."""
    global _sharing, _branches, _lent
    with _sharing_lock:
        _sharing -= 1
        _branches -= branch
        if not _sharing:
            _lent = 0  # lent to jobs that are done: each lender takes its core back


def cores_shared() -> bool:
    """Whether a job handed off with `begin_sharing` is in flight and needs its core:
    not when an event loop that has nothing else to run lent it its own (`lend_core`:
    the run's other branches are done and it waits for the job)."""
    return _sharing > _lent


def lend_core() -> bool:
    """An event loop's runner went idle while shared jobs are in flight, all of them a
    run's own branches: the jobs' next primitives may take its core until it calls
    `reclaim_core` (it has work again) or the last of those jobs ends. False (nothing
    lent) when no shared job is in flight, or one runs for runs waiting for the loop."""
    global _lent
    with _sharing_lock:
        if not _sharing or _branches != _sharing:
            return False  # (runs in flight wait for their jobs: the loop has other
        _lent += 1        #  work again at once, the job's team would oversubscribe)
        return True


def reclaim_core() -> None:
    """The runner of a `lend_core` has work again."""
    global _lent
    with _sharing_lock:
        if _lent:  # (0 once the jobs it lent to ended)
            _lent -= 1


def sharing_jobs() -> int:
    """The jobs handed off with `begin_sharing` and not yet done (the executor hands off
    another only while fewer than 2 x cores - 1 are: executor_state.SHARED_JOBS)."""
    return _sharing


_sharing_lock = threading.Lock()
_sharing = 0  # jobs handed off with begin_sharing() and not yet done
_branches = 0  # those of them that run a run's own branch (begin_sharing(branch=True))
_lent = 0  # idle event loops' cores lent to those jobs (lend_core)
