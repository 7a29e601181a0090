"""Turning "the stream has reached this point" into a callback on the event loop (TF's
EventMgr), in the two ways a GPU allows:

- HostCallbackEvents (the default): a host function enqueued on the stream after the
  work (CUDA's cudaLaunchHostFunc, CuPy's `Stream.launch_host_func`) runs on a driver
  thread when the stream gets there; it hands the work to the loop with
  `call_soon_threadsafe`, one wake-up for every completion that arrived meanwhile. No
  thread ever waits and the loop never polls: its cost is one thread hop per batch.
- PollingEvents: an event recorded after the work, polled from the loop with
  `call_later` and a growing delay (50 µs doubling to 1 ms, TF's polling_active_delay
  idea). It costs timer wake-ups while work is in flight, and adds up to a delay's
  latency. AIOFLOW_GPU_EVENT_WAIT=poll selects it.

The host callback is kept as the default: it resolves a launch as soon as the stream
reaches it, wakes the loop once per batch instead of once per poll, and keeps an idle
loop idle (benchmarks/gpu_check.py measures both where a GPU is present; on the
simulated device tests/test_gpu_sim_events.py runs both).
"""

from __future__ import annotations

import os
import threading
from collections import deque

_FIRST_DELAY_S = 50e-6
_MAX_DELAY_S = 1e-3


class HostCallbackEvents:
    """Completions posted by a host function on the stream, batched per loop."""

    kind = "callback"

    def __init__(self):
        self._lock = threading.Lock()
        self._pending: dict = {}  # loop -> deque of work whose stream got there

    def watch(self, stream, work) -> None:
        """Call `work.finish()` on `work.loop` once `stream` reaches this point."""
        stream.launch_host_func(self._reached, work)

    def _reached(self, work) -> None:  # a stream's (driver) thread
        loop = work.loop
        with self._lock:
            queue = self._pending.get(loop)
            wake = queue is None
            if wake:
                queue = self._pending[loop] = deque()
            queue.append(work)
        if wake:
            try:
                loop.call_soon_threadsafe(self._drain, loop)
            except RuntimeError:  # the loop is closed: nobody waits for it any more
                with self._lock:
                    self._pending.pop(loop, None)

    def _drain(self, loop) -> None:
        with self._lock:
            queue = self._pending.pop(loop, ())
        for work in queue:
            work.finish()


class PollingEvents:
    """Completions found by polling an event recorded on the stream after the work."""

    kind = "poll"

    def watch(self, stream, work) -> None:
        event = stream.record()
        work.loop.call_soon(self._poll, event, work, _FIRST_DELAY_S)

    def _poll(self, event, work, delay: float) -> None:
        if event.done:
            work.finish()
            return
        work.loop.call_later(delay, self._poll, event, work, min(delay * 2, _MAX_DELAY_S))


def event_manager(kind: str | None = None):
    """The event manager `kind` names ("callback", "poll"; default: the environment's
    AIOFLOW_GPU_EVENT_WAIT, else "callback")."""
    kind = kind or os.environ.get("AIOFLOW_GPU_EVENT_WAIT", "callback")
    if kind == "poll":
        return PollingEvents()
    if kind != "callback":
        raise ValueError(f"AIOFLOW_GPU_EVENT_WAIT must be 'callback' or 'poll', not {kind!r}")
    return HostCallbackEvents()
