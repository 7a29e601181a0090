"""Optional compiled inner loops: numba (the `jit` extra, `pip install 'aioflow[jit]'`)
compiles the few kernels whose work NumPy can only do in many passes (the depthwise
convolution's taps). Without numba, or with AIOFLOW_JIT=0, those kernels keep their NumPy
path; results agree to float rounding either way.

numba is imported, and a function compiled, on the function's first call (numba's import
costs a few hundred ms: a process that never runs such a kernel never pays it). Compiled
functions release the GIL (they run on pool threads beside the event loop) and are cached
on disk by numba, so the compile (about 0.3 s a signature) is paid once per machine; a
kernel asks `ready()` so that its first, compiling call goes to the pool instead of
stalling the loop."""

from __future__ import annotations

import importlib.util
import os
import threading

# numba's coloured error messages (where colorama is importable: Ray vendors one) call
# colorama.init() / deinit(), which replace sys.stdout and sys.stderr process-wide from
# whichever thread formats a message; numba formats (and catches) typing errors while it
# resolves overloads, and aioflow compiles on background threads, so the main thread's
# streams changed under it (a print lost from pytest's capsys, 1 run in 3 beside the
# compiled loops' chains). Plain messages (numba reads this when it is first imported).
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

ENABLED = (os.environ.get("AIOFLOW_JIT", "1") != "0"
           and importlib.util.find_spec("numba") is not None)
_lock = threading.Lock()


class LazyJit:
    """A Python function compiled by numba (nogil, cached) when first called, with the
    module-level functions in `helpers` it calls (each compiled too and bound in fn's
    module under its name, so that fn's compiled code can call it); `options`
    are numba's own (error_model="numpy": a float division by zero gives inf or NaN as
    NumPy's does, instead of a check that keeps LLVM from vectorizing the loop)."""

    def __init__(self, fn, helpers=(), **options):
        self._fn = fn
        self._helpers = tuple(helpers)
        self._options = options
        self._compiled = None
        self._ready = False  # kept once true: numba's list of signatures costs ~1.3 µs

    def __call__(self, *args):
        compiled = self._compiled
        if compiled is None:
            with _lock:
                if self._compiled is None:
                    import numba

                    for helper in self._helpers:  # callable from fn's compiled code
                        self._fn.__globals__[helper.__name__] = numba.njit(
                            nogil=True, cache=True, boundscheck=False, **self._options)(helper)
                    self._compiled = numba.njit(nogil=True, cache=True, boundscheck=False,
                                                **self._options)(self._fn)
                compiled = self._compiled
        return compiled(*args)

    def freeze(self) -> None:
        """Compile nothing more: a later call that matches no compiled signature raises
        TypeError instead of compiling (or opening numba's cache files, which fails at
        the descriptor limit), after a warm-up has compiled what is wanted."""
        if self._compiled is not None:
            self._compiled.disable_compile()

    def ready(self) -> bool:
        """Whether a call would run without importing numba or compiling first (a
        compiled signature stays compiled, so a true answer is kept)."""
        if not self._ready:
            self._ready = self._compiled is not None and bool(self._compiled.signatures)
        return self._ready


def njit(fn, **options) -> LazyJit | None:
    """fn to be compiled by numba on first call, or None without numba (or AIOFLOW_JIT=0)."""
    return LazyJit(fn, **options) if ENABLED else None
