"""The threads that build steps off the event loop (graph conversion, placement, passes,
partitioning, the optimizer, executor construction), and what keeps them from starving
the loop of the GIL.

A thread running Python holds the GIL until the interpreter's switch interval (5 ms by
default) has passed since another thread asked for it: a loop waking from its selector
would wait that long for each slice. While a build runs the interval is lowered to
BUILD_SWITCH_INTERVAL_S (and restored when the last overlapping build ends), so the
loop gets the GIL back within a fraction of its time budget. The builders make no long
C call that keeps the GIL (no copy, parse or serialization of a whole GraphDef).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

BUILD_SWITCH_INTERVAL_S = 0.0002
_WORKERS = 2

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_depth = 0
_saved_interval = 0.0


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="aioflow-build")
    return _pool


@contextlib.contextmanager
def loop_keeps_gil():
    """Lower the switch interval while the block runs (counted: overlapping builds on
    several threads restore the saved interval once, when the last one ends)."""
    global _depth, _saved_interval
    with _lock:
        if _depth == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, BUILD_SWITCH_INTERVAL_S))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.setswitchinterval(_saved_interval)


def _call(fn, args):
    with loop_keeps_gil():
        return fn(*args)


async def run_in_build_thread(fn, *args):
    """`fn(*args)` on a build thread, awaited; the loop keeps its slices meanwhile."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_get_pool(), _call, fn, args)
