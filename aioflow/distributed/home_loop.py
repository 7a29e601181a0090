"""A server's home event loop: every piece of a server's state (its worker's steps and
rendezvous, its master's sessions, its gRPC service) is touched only on one loop, run by
one thread of its own (one shared by the "in_process" servers of the process). A caller
on another loop (a client session, a peer server in the same process) awaits its calls
there (TF's in-process shortcut, without sockets)."""

from __future__ import annotations

import asyncio
import threading


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (a step's stream calls cost a third of the
    CPU there), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class HomeLoop:
    """An event loop running in a daemon thread until `stop`."""

    shared = False  # the in-process servers' loop: it outlives every one of them

    def __init__(self, name: str):
        self.loop = _new_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    async def call(self, coro):
        """Await `coro` on the home loop (directly when already on it); a cancelled
        caller cancels it there."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            return await coro
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    def call_blocking(self, coro, timeout: float | None = None):
        """Run `coro` on the home loop and block this (non-home) thread for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.shared or self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    @property
    def thread(self) -> threading.Thread:
        return self._thread


_SHARED: HomeLoop | None = None
_SHARED_LOCK = threading.Lock()


def shared_home_loop() -> HomeLoop:
    """The one home loop of every "in_process" server of this process: tasks that never
    leave the process reach each other without changing threads."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED.loop.is_closed() or not _SHARED.thread.is_alive():
            _SHARED = HomeLoop("aioflow-in-process-servers")
            _SHARED.shared = True
        return _SHARED
