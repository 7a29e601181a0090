"""SyncSession: the blocking facade for callers outside an event loop (TF 1.x code).

It owns a private event loop (uvloop when installed) running in a background thread
and forwards each call to an awaitable Session on it. The migration path from
`tf.compat.v1.Session().run(...)`: replace it with `af.SyncSession().run(...)`.
"""

from __future__ import annotations

import asyncio
import sys
import threading

from aioflow.client.session import NOT_RUN, Session


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop

        return uvloop.new_event_loop()
    except ImportError:
        return asyncio.new_event_loop()


# How often a blocked caller wakes to run pending signal handlers. Ctrl-C is raised in the
# main thread only when its wait is interrupted, and the OS may deliver SIGINT to any of the
# process's threads (a pool or loop thread): an untimed wait could then sleep through it.
_SIGNAL_POLL_S = 0.1


def _wait(future):
    """future.result(), waking every _SIGNAL_POLL_S so a KeyboardInterrupt is never lost."""
    while True:
        try:
            return future.result(timeout=_SIGNAL_POLL_S)
        except TimeoutError:
            if future.done():  # finished between the timeout and here
                return future.result()


async def _as_task(coro, tasks: list):
    """Await `coro` on the session's loop, noting its task in `tasks` (so that an
    interrupted caller can wait for the cancelled run to end)."""
    tasks.append(asyncio.current_task())
    return await coro


class SyncSession:
    """A Session whose run/close block the caller; same arguments as Session (including
    `compile_segments`). Threads may share one: their runs interleave on its loop. Ctrl-C
    (KeyboardInterrupt) in a blocking call cancels its run, then re-raises."""

    def __init__(self, target: str = "", graph=None, config=None, **kwargs):
        self._loop = _new_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="aioflow-sync-loop",
                                        daemon=True)
        self._thread.start()
        self._session = Session(target, graph, config, **kwargs)
        self._closed = False

    @property
    def graph(self):
        return self._session.graph

    def _call(self, coro):
        if self._closed:
            coro.close()
            raise RuntimeError("Attempted to use a closed Session.")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            coro.close()
            raise RuntimeError("SyncSession blocks: inside an event loop use "
                               "`await af.Session(...).run(...)` instead.")
        tasks: list = []
        future = asyncio.run_coroutine_threadsafe(_as_task(coro, tasks), self._loop)
        try:
            return _wait(future)
        except KeyboardInterrupt:  # Ctrl-C in a REPL or notebook: stop the run, then raise
            future.cancel()
            if tasks:
                waited = asyncio.run_coroutine_threadsafe(asyncio.wait(tasks), self._loop)
                waited.result()
            raise

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run the graph and block until the results are ready. A step that is one
        compiled call (a small graph of cheap kernels, once compiled) runs here, on the
        calling thread: no round trip to the loop's thread (Session.run_here)."""
        if (options is None and run_metadata is None and not self._closed
                and asyncio._get_running_loop() is None):
            values = self._session.run_here(fetches, feed_dict)
            if values is not NOT_RUN:
                return values
        return self._call(self._session.run(fetches, feed_dict, options, run_metadata))

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """A blocking callable: `call(*feed_values)`. The step is built here, on the
        calling thread (it blocks anyway), not on the loop other threads' runs share."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        async_call = self._session.make_callable(fetches, feed_list, accept_options)

        def call(*feed_values, options=None, run_metadata=None):
            if (options is None and run_metadata is None and not self._closed
                    and asyncio._get_running_loop() is None):
                values = async_call.here(*feed_values)  # (see `run`)
                if values is not NOT_RUN:
                    return values
            return self._call(async_call(*feed_values, options=options,
                                         run_metadata=run_metadata))

        return call

    def list_devices(self) -> list:
        """Session.list_devices."""
        return self._session.list_devices()

    def partial_run_setup(self, fetches, feeds=None, targets=None):
        """Session.partial_run_setup, blocking; returns the partial run's handle."""
        return self._call(self._session.partial_run_setup(fetches, feeds, targets))

    def partial_run(self, handle, fetches, feed_dict=None):
        """Session.partial_run, blocking."""
        return self._call(self._session.partial_run(handle, fetches, feed_dict))

    def close(self) -> None:
        """Close the session and stop the private loop."""
        if self._closed:
            return
        asyncio.run_coroutine_threadsafe(self._session.close(), self._loop).result()
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self) -> SyncSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_closed", True):
            return
        if sys.is_finalizing() or threading.current_thread() is self._thread \
                or not self._thread.is_alive():
            # The loop thread cannot serve a blocking close now (at interpreter exit
            # daemon threads no longer run): stop it without waiting.
            self._closed = True
            try:
                self._loop.call_soon_threadsafe(self._loop.stop)
            except Exception:  # noqa: BLE001 - the loop may be gone already
                pass
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001 - best effort from a finalizer
            pass
