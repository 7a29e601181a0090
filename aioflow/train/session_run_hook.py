"""SessionRunHook and its arguments (TF's session_run_hook): what a MonitoredSession
calls around each run. In af.train a hook may do its session work in an `async def`
method (the monitored session awaits what a hook method returns); `session_run(...)` runs
a fetch in a hook whatever the session (awaitable or blocking)."""

from __future__ import annotations

import asyncio
import collections
import inspect
import threading

from aioflow.train import session_creation

_current = threading.local()


class SessionRunHook:
    """Hook into a MonitoredSession's creation, runs and end."""

    def begin(self) -> None:
        pass

    def after_create_session(self, session, coord) -> None:
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values) -> None:
        pass

    def end(self, session) -> None:
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook adds to a run: fetches, feeds, RunOptions."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunContext:
    """The run under way: its original arguments, the session, and a stop request."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        self._stop_requested = True


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """What a hook's fetches gave."""


def resolve(value):
    """`value`, or the result of the awaitable it is (run on the monitored session's loop
    from the hook's thread)."""
    if not inspect.isawaitable(value):
        return value
    loop = getattr(_current, "loop", None)
    if loop is None:
        raise RuntimeError("an awaitable hook result outside a monitored session")
    return asyncio.run_coroutine_threadsafe(_awaited(value), loop).result()


async def _awaited(value):
    return await value


def awaitable_session(session):
    """The awaitable Session behind a blocking one (or `session` itself): what
    af.train.Saver's save and restore take."""
    return session._session if session_creation.is_blocking(session) else session


def session_run(session, fetches, feed_dict=None):
    """session.run(fetches, feed_dict) in a hook, blocking or awaitable session alike."""
    return resolve(session.run(fetches, feed_dict))
