"""The threads that build steps off the event loop (graph conversion, placement, passes,
partitioning, the optimizer, executor construction). While a build runs, the switch
interval is lowered (framework/gil.py: loop_keeps_gil) so the loop gets the GIL back
within a fraction of its time budget. The builders make no long C call that keeps the
GIL (no copy, parse or serialization of a whole GraphDef).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from aioflow.framework.gil import SWITCH_INTERVAL_S, loop_keeps_gil  # noqa: F401

BUILD_SWITCH_INTERVAL_S = SWITCH_INTERVAL_S
_WORKERS = 2

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="aioflow-build")
    return _pool


def _call(fn, args):
    with loop_keeps_gil():
        return fn(*args)


async def run_in_build_thread(fn, *args):
    """`fn(*args)` on a build thread, awaited; the loop keeps its slices meanwhile."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_get_pool(), _call, fn, args)
