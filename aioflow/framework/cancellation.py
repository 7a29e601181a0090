"""CancellationManager: how a kernel learns that its step is being cancelled (TF's
cancellation.h). The runtime starts the cancellation; kernels only observe it."""

from __future__ import annotations

import threading
from collections.abc import Callable


class CancellationManager:
    """Callbacks registered by kernels, run once when the step is cancelled.

    Thread-safe: a kernel on a pool thread may register or poll while the loop cancels.
    """

    __slots__ = ("_lock", "_callbacks", "_next_token", "_cancelled")

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._next_token = 0
        self._cancelled = False

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    def register_callback(self, callback: Callable[[], None]) -> int | None:
        """Call `callback` when the step is cancelled; a token to deregister it, or None
        when the step is already cancelled (the callback is then not called: act now)."""
        with self._lock:
            if self._cancelled:
                return None
            token = self._next_token
            self._next_token += 1
            self._callbacks[token] = callback
            return token

    def deregister_callback(self, token: int | None) -> bool:
        """Forget a callback; False when cancellation already ran (or is running) it."""
        with self._lock:
            return self._callbacks.pop(token, None) is not None

    def start_cancel(self) -> None:
        """Cancel: run every registered callback once (the runtime calls this)."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            callback()
