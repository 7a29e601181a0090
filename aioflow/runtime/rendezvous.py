"""The per-step Rendezvous: carries tensors from a partition's _Send to another
partition's _Recv (TF's IntraProcessRendezvous / LocalRendezvous), on the event loop.

A key names one transfer (framework/rendezvous_key.py); a transfer inside a while loop
is keyed by (its key's prefix, frame_id, iter): TF's key is the prefix and
"frame_id:iter". Send never waits; Recv awaits the matching Send, or the step's abort.
Each key is used once per step.
"""

from __future__ import annotations

import asyncio

from aioflow.framework import errors


class Rendezvous:
    """Values sent and receivers waiting, by key; touched only on the event loop."""

    __slots__ = ("_sent", "_waiting", "_error")

    def __init__(self):
        self._sent: dict[str, tuple] = {}       # key -> (value, is_dead)
        # key -> (arrived, token): `arrived(token, value, is_dead, error)` is called at
        # the key's send or at the step's abort
        self._waiting: dict[str, tuple] = {}
        self._error: errors.OpError | None = None

    def send(self, key: str | tuple, value, is_dead: bool) -> None:
        """Deliver a value (or deadness) for `key`; a second send of a key is an error."""
        if self._error is not None:
            raise self._error
        waiter = self._waiting.pop(key, None)
        if waiter is not None:
            waiter[0](waiter[1], value, is_dead, None)
            return
        if key in self._sent:
            raise errors.AbortedError(None, None, f"Duplicated send: {_text(key)}")
        self._sent[key] = (value, is_dead)

    def recv_callback(self, key: str, done) -> tuple | None:
        """(value, is_dead) when `key` was sent already; else None, and
        `done(value, is_dead, error)` is called at its send or at the step's abort
        (TF's RecvAsync: no task, no future)."""
        return self.recv_or_wait(key, _call_done, done)

    def recv_or_wait(self, key: str | tuple, arrived, token) -> tuple | None:
        """recv_callback without a closure per call: `arrived(token, value, is_dead,
        error)` (a waiting Recv inside a loop: the state's bound method and its node)."""
        if self._error is not None:
            raise self._error
        item = self._sent.pop(key, None)
        if item is not None:
            return item
        waiter = (arrived, token)
        if self._waiting.setdefault(key, waiter) is not waiter:
            raise errors.AbortedError(None, None, f"Duplicated recv: {_text(key)}")
        return None

    def park(self, key: str | tuple, arrived, token) -> bool:
        """recv_or_wait's waiting half, for a caller that found nothing sent under `key`
        (`takers`): park `(arrived, token)` and return True; False, touching nothing,
        after an abort or when a receiver waits already (the Recv then runs as a node
        and raises its error)."""
        if self._error is not None:
            return False
        return self._waiting.setdefault(key, (arrived, token))[1] is token

    def put(self, key: str | tuple, value, is_dead: bool) -> None:
        """send's storing half, for a caller that found no receiver waiting (`takers`)."""
        if self._error is not None:
            raise self._error
        if key in self._sent:
            raise errors.AbortedError(None, None, f"Duplicated send: {_text(key)}")
        self._sent[key] = (value, is_dead)

    def takers(self) -> tuple:
        """(take_waiter, take_sent): the executor's fast path for transfers inside a
        loop, `pop(key, None)` of the waiting receivers and of the values sent. A miss
        goes through send / recv_or_wait, which check the step's abort (it empties
        both) and duplicates."""
        return self._waiting.pop, self._sent.pop

    async def recv(self, key: str) -> tuple:
        """(value, is_dead) for `key`, awaiting its send if need be."""
        future = asyncio.get_running_loop().create_future()

        def done(value, is_dead, error):
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result((value, is_dead))

        item = self.recv_callback(key, done)
        if item is not None:
            return item
        try:
            return await future
        finally:
            waiter = self._waiting.get(key)
            if waiter is not None and waiter[1] is done:
                del self._waiting[key]

    def abort(self, err: errors.OpError) -> None:
        """Fail every receiver waiting now and every later send or recv (first error)."""
        if self._error is not None:
            return
        self._error = err
        self._sent.clear()
        waiting = list(self._waiting.values())
        self._waiting.clear()  # (the same dict: `takers` hold its pop)
        for arrived, token in waiting:
            arrived(token, None, False, err)

    def __len__(self) -> int:
        """Entries still held: values sent but not received, and receivers waiting."""
        return len(self._sent) + len(self._waiting)


def _call_done(done, value, is_dead: bool, error) -> None:
    """A recv_callback's waiter: `done` takes no token."""
    done(value, is_dead, error)


def _text(key) -> str:
    """A key as TF writes it (a transfer in a loop is keyed by its parts)."""
    return key if isinstance(key, str) else f"{key[0]}{key[1]}:{key[2]}"
