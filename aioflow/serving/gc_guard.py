"""Keeps the collector's full collections short while a model server serves.

A full (generation 2) collection walks every object the collector tracks, with the event
loop stopped: tens of ms for a loaded model's graph and session, or for what a lazy
compile left behind (numba's), a pause every request in flight waits through (the p99).
`main.serve` freezes what it loaded (gc.freeze: the collector skips it) before serving;
`GcGuard` freezes again after a full collection that was slow, so that long-lived objects
made later (a version loaded by the poll, a kernel compiled on its first call) cost one
slow collection, not one every few seconds. What a full collection leaves is alive by
definition; the objects of requests in flight at that moment stay frozen after them too,
which costs nothing for those refcounting frees (nearly all) and keeps a reference cycle
among them (rare: one per slow collection at most) for the process's life.
"""

from __future__ import annotations

import asyncio
import gc
import time

#: A full collection taking more CPU time than this (s) freezes what it left.
SLOW_FULL_COLLECTION_S = 0.005


class GcGuard:
    """gc.callbacks hook: after a generation-2 collection that took more than
    `threshold_s` of CPU time, gc.freeze() on the event loop (not in the callback, which
    runs inside the collector, on whichever thread triggered it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 threshold_s: float = SLOW_FULL_COLLECTION_S):
        self.loop = loop
        self.threshold_s = threshold_s
        self.freezes = 0  # how many times it froze (tests, and the curious)
        self._started = 0.0
        self._pending = False

    def install(self) -> GcGuard:
        gc.callbacks.append(self)
        return self

    def uninstall(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)

    def __call__(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.thread_time()
        elif time.thread_time() - self._started > self.threshold_s and not self._pending:
            self._pending = True
            try:
                self.loop.call_soon_threadsafe(self._freeze)
            except RuntimeError:  # the loop is closed: nothing is served any more
                self._pending = False

    def _freeze(self) -> None:
        self._pending = False
        gc.freeze()
        self.freezes += 1
