"""paused_gc: hold Python's cyclic garbage collector during bulk graph construction.

Building a 10k-node graph allocates hundreds of thousands of long-lived objects; the
collector would traverse them again and again as they are made (about 40% of a cold
start: import + Session + first run). Nothing built there is garbage, so collection
waits until the bulk step is done.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def paused_gc():
    """Disable automatic collection inside the block (re-enabled after, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
