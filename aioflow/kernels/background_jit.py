"""A group of numba loops (aioflow/kernels/jit.py) compiled together on a daemon thread, so that a
kernel's first call never waits for numba's import or a compile: the kernel asks
`ready()`, runs its NumPy path while the answer is no, and calls `start()`; a failed
compile is tried again on a later call, a few times, and then NumPy stays for good.

Used by the pooling and normalisation loops (aioflow/kernels/nn/pooling_jit.py,
aioflow/kernels/nn/normalization_jit.py); the pattern is epilogue_jit's."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

_MAX_ATTEMPTS = 3
_groups: weakref.WeakSet = weakref.WeakSet()  # every group made (wait_for_started)


class BackgroundCompile:
    """Runs `warm_up()` (calls that compile every signature the kernels use) on a daemon
    thread, once; `ready()` is true when it returned without an error."""

    def __init__(self, name: str, warm_up: Callable[[], None], available: bool):
        self._name = name
        self._warm_up = warm_up
        self._available = available
        self._ready = threading.Event()
        self._finished = threading.Event()  # the last attempt ended, compiled or not
        self._lock = threading.Lock()
        self._started = False
        self._attempts = 0
        self.last_error: Exception | None = None  # why the last attempt failed
        _groups.add(self)

    def ready(self) -> bool:
        """Whether every loop of the group is compiled (callers run NumPy until then)."""
        return self._ready.is_set()

    def start(self) -> None:
        """Start the compile on a daemon thread, unless started, done or given up."""
        if self._ready.is_set() or not self._available:
            return
        with self._lock:
            if self._started or self._attempts >= _MAX_ATTEMPTS:
                return
            self._started = True
            self._attempts += 1
            self._finished.clear()
        threading.Thread(target=self._compile, name=f"aioflow-{self._name}-jit",
                         daemon=True).start()

    def _compile(self) -> None:
        try:
            self._warm_up()
            self._ready.set()
        except Exception as e:  # noqa: BLE001 - numba could not compile: NumPy stays
            self.last_error = e
            with self._lock:
                self._started = False  # a later call tries again, up to _MAX_ATTEMPTS
        finally:
            self._finished.set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Start the compile if needed and wait for it to end (tests, warm-ups that may
        block); whether the group is compiled."""
        if not self._available:
            return False
        self.start()
        if not self._ready.is_set():
            self._finished.wait(timeout)
        return self._ready.is_set()


def wait_for_started(timeout: float = 60.0) -> None:
    """Wait for every compile under way to end (tests that measure the memory or time of
    one call: a compile on its daemon thread allocates megabytes meanwhile)."""
    for group in list(_groups):
        if group._started and not group._ready.is_set():
            group._finished.wait(timeout)
