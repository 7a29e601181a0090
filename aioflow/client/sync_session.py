"""SyncSession: the blocking facade for callers outside an event loop (TF 1.x code).

It owns a private event loop (uvloop when installed) running in a background thread
and forwards each call to an awaitable Session on it. The migration path from
`tf.compat.v1.Session().run(...)`: replace it with `af.SyncSession().run(...)`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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


class _Call:
    """One blocking call's coroutine, run as a task on the session's loop; the caller
    blocks on a plain lock the task's done callback releases. Lighter than
    run_coroutine_threadsafe's concurrent future (its condition, its callbacks chained
    between two futures, a wrapping coroutine): a training step's hop to the loop and
    back cost 14-22 µs less CPU and 20-30 µs less wall (docs/performance.md,
    2026-11-29)."""

    __slots__ = ("coro", "task", "error", "lock")

    def __init__(self, coro):
        self.coro = coro
        self.task: asyncio.Task | None = None
        self.error: BaseException | None = None  # the task could not be made
        self.lock = threading.Lock()
        self.lock.acquire()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop: the task (a coroutine that cannot start is closed, and the
        error raised to the caller)."""
        try:
            self.task = loop.create_task(self.coro)
        except BaseException as e:  # noqa: BLE001 - raised by the caller
            self.coro.close()
            self.error = e
            self.lock.release()
            return
        self.task.add_done_callback(self._done)

    def _done(self, _task) -> None:
        self.lock.release()

    def cancel(self) -> None:
        """On the loop: cancel the task (run after `start`: the loop runs callbacks in
        the order they were posted)."""
        if self.task is not None:
            self.task.cancel()

    def wait(self):
        """Block until the task is done (waking every _SIGNAL_POLL_S, so that a
        KeyboardInterrupt is never lost); its result or its error."""
        while not self.lock.acquire(True, _SIGNAL_POLL_S):
            pass
        if self.error is not None:
            raise self.error
        if self.task.cancelled():  # (as run_coroutine_threadsafe's future reported it)
            raise concurrent.futures.CancelledError()
        return self.task.result()


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
        call = _Call(coro)
        try:
            self._loop.call_soon_threadsafe(call.start, self._loop)
        except BaseException:
            coro.close()
            raise
        try:
            return call.wait()
        except KeyboardInterrupt:  # Ctrl-C in a REPL or notebook: stop the run, then raise
            self._loop.call_soon_threadsafe(call.cancel)
            try:
                call.wait()
            except BaseException:  # noqa: BLE001 - the cancelled run's own end
                pass
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
