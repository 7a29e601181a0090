"""Host memory policy: keep freed tensor memory for reuse, as TF's allocator does.

A step often holds several large outputs at once (eight matmul results before their
AddN). With glibc's defaults each such buffer is a fresh mmap, page-faulted in on every
run and returned to the OS afterwards, which cost ~10% on the matmul benchmark. Like
TF's BFC allocator keeps its pool, aioflow asks glibc (once, process-wide) to serve
buffers below 64 MiB from the heap and to keep up to 256 MiB of freed heap.

The thresholds hold for glibc's main arena only. Each thread's first allocation gives it
an arena of its own (up to 8 per core), whose heaps are unmapped as soon as they are
empty, whatever the trim threshold: kernels run on the executor's pool threads allocate
their outputs there, so every large output was faulted in again on every run (ResNet50
batch 8: ~1,000 page faults and ~20 ms of system time a run, where TF has none). So the
policy also keeps one arena (M_ARENA_MAX 1: threads that have not allocated yet share
the main arena; tensor buffers are allocated a few hundred times a step, under the GIL
mostly, so its lock is not contended). Set AIOFLOW_RETAIN_HOST_MEMORY=0 to leave malloc
as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 256 << 20
ARENA_MAX = 1

_applied: bool | None = None


def retain_freed_memory() -> bool:
    """Apply the policy once per process; whether it is in force (glibc only)."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if os.environ.get("AIOFLOW_RETAIN_HOST_MEMORY", "1") == "0" or not sys.platform.startswith(
            "linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    _applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and \
        bool(mallopt(_M_ARENA_MAX, ARENA_MAX))
    return _applied
