"""paused_gc: hold Python's cyclic garbage collector during bulk graph construction.

Building a 10k-node graph allocates hundreds of thousands of long-lived objects; the
collector would traverse them again and again as they are made (about 40% of a cold
start: import + Session + first run). Nothing built there is garbage, so collection
waits until the bulk step is done.

Re-enabling the collector alone would only defer that work: the first collection after
the pause would scan every object made during it as young (tens of milliseconds, the
GIL held, so every thread and the event loop stop). Instead, when the last pause ends,
the objects made are moved to the oldest generation unscanned (gc.freeze then
gc.unfreeze, unless the application keeps objects frozen itself): they are long-lived,
and the next full collection looks at them once, as it would after they had survived.

The collector's switch is global to the process and steps are built on several threads
at once (a session's build threads, other sessions): the pauses are counted, so the
collector is enabled again only when the last one ends, and only if it was on before
the first began.
"""

from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused_gc():
    """Disable automatic collection inside the block (re-enabled after the last
    overlapping pause ends, if it was on before the first began)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                _age_young_objects()
                gc.enable()


def _age_young_objects() -> None:
    """Move every tracked object to the oldest generation without scanning it."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
