"""Waiting for the kernels' background compiles (numba loops a session's first build may
have started), for a server that freezes what it loaded out of the collector's way once
they have ended. The client's face of the kernel library, so that serving needs no
kernel internals."""

from __future__ import annotations

from aioflow.kernels.nn import epilogue_jit


def wait_for_started_compiles(timeout: float | None = None) -> bool:
    """Wait for the compiles already started to end, starting none; whether they are done."""
    return epilogue_jit.wait_started(timeout)
