"""The built-in kernel library: the runtime registers it (the framework never imports
the kernels), once, safely from any thread."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_loaded = False


def load_builtin_kernels() -> None:
    """Import aioflow.kernels (registering every built-in kernel) once. A thread that asks
    while another is importing waits for it instead of seeing a half-filled registry."""
    global _loaded
    if _loaded:
        return
    with _lock:
        if not _loaded:
            from aioflow import kernels  # noqa: F401  (importing registers the kernels)
            _loaded = True
