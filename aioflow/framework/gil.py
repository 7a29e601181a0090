"""Keeping the event loop's thread supplied with the GIL while other threads run Python.

A thread running Python holds the GIL until the interpreter's switch interval (5 ms by
default) has passed since another thread asked for it: a loop waking from its selector
would wait that long, or more with several busy threads. Around long work on other
threads (step builds, checkpoint reads and writes) the interval is lowered to
SWITCH_INTERVAL_S, and restored when the last overlapping block ends.
"""

from __future__ import annotations

import contextlib
import sys
import threading

SWITCH_INTERVAL_S = 0.0002

_lock = threading.Lock()
_depth = 0
_saved_interval = 0.0


@contextlib.contextmanager
def loop_keeps_gil():
    """Lower the switch interval while the block runs (counted: overlapping blocks on
    several threads restore the saved interval once, when the last one ends)."""
    global _depth, _saved_interval
    with _lock:
        if _depth == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, SWITCH_INTERVAL_S))
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                sys.setswitchinterval(_saved_interval)
