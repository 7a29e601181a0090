"""Deadlines for every phase of a connection, and a cap on connections, for the aiohttp
front end (`--rest_api_server aiohttp`): aiohttp closes an idle keep-alive connection,
but not one whose head or body has stalled, nor one whose client does not read its
answer, and it accepts until the process runs out of descriptors. http_server.py keeps
the same rules itself (see its docstring); here they wrap aiohttp's protocol:

- each connection's protocol is wrapped (`_Guarded`) to see its bytes arrive and its
  writes pause; `middleware` marks when a request is being handled (aiohttp reads a
  body in the handler: a handled request whose body has stalled is timed out too);
- a sweep closes what is past its phase's deadline: a connection's first head and a
  request's head (from its first byte) `head_timeout_s`, a body without a byte
  `body_timeout_s`, an idle keep-alive connection `idle_timeout_s`, an answer not read
  `write_timeout_s`;
- at `max_connections` a new connection takes the place of the one answered longest
  ago that has no request being handled (idle, or its head or body still coming), or
  is answered 503 and closed.
"""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from aioflow.serving.http_server import (
    BODY_TIMEOUT_S,
    HEAD_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    REFUSED,
    WRITE_TIMEOUT_S,
    default_max_connections,
)

_NEVER = float("inf")


class ConnectionGuard:
    """The deadlines and the cap over the protocols `factory` makes."""

    def __init__(self, max_connections: int | None = None):
        self.max_connections = max_connections or default_max_connections()
        self.head_timeout_s = HEAD_TIMEOUT_S
        self.body_timeout_s = BODY_TIMEOUT_S
        self.idle_timeout_s = IDLE_TIMEOUT_S
        self.write_timeout_s = WRITE_TIMEOUT_S
        # open connections, the one answered longest ago first
        self.connections: dict[_Guarded, None] = {}
        self._by_transport: dict = {}
        self._sweeper: asyncio.TimerHandle | None = None

    def factory(self, make_protocol):
        """A protocol factory: `make_protocol()`'s protocols, guarded."""
        def make():
            if len(self.connections) >= self.max_connections and not self._evict():
                return _Refused()
            return _Guarded(self, make_protocol())
        return make

    def start(self) -> None:
        self._sweep()

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    @web.middleware
    async def middleware(self, request: web.Request, handler):
        """Marks the request's connection as handling a request, until it is answered."""
        conn = self._by_transport.get(request.transport)
        if conn is None:
            return await handler(request)
        conn.request = request
        try:
            return await handler(request)
        finally:
            conn.request = None
            conn.answered()

    def _evict(self) -> bool:
        for conn in self.connections:
            if conn.request is None or not conn.request.content.is_eof():
                del self.connections[conn]
                conn.transport.abort()
                return True
        return False

    def _sweep(self) -> None:
        now = time.monotonic()
        try:
            for conn in list(self.connections):
                if conn.deadline(now) < now:
                    conn.transport.abort()
        finally:  # (whatever happened, the sweeps go on)
            self._schedule()

    def _schedule(self) -> None:
        shortest = min(self.idle_timeout_s, self.head_timeout_s, self.body_timeout_s,
                       self.write_timeout_s)
        self._sweeper = asyncio.get_running_loop().call_later(min(1.0, shortest / 4),
                                                              self._sweep)


class _Refused(asyncio.Protocol):
    """A connection over the cap: answered 503, closed."""

    def connection_made(self, transport) -> None:
        transport.write(REFUSED)
        transport.close()


class _Guarded(asyncio.Protocol):
    """A connection's protocol, with what the guard needs to know of it."""

    def __init__(self, guard: ConnectionGuard, inner):
        self.guard, self.inner = guard, inner
        self.transport = None
        self.request: web.Request | None = None  # the one being handled
        self.answered_at = time.monotonic()  # (or connected)
        self.first_data_at: float | None = None  # since then
        self.last_data_at = self.answered_at
        self.write_deadline = _NEVER
        self.fresh = True  # no request answered yet

    def deadline(self, now: float) -> float:
        """When the connection's current phase times out."""
        guard = self.guard
        if self.write_deadline < now:
            return self.write_deadline
        request = self.request
        if request is not None:
            if request.content.is_eof():
                return _NEVER  # handled: its run's deadline bounds it
            return self.last_data_at + guard.body_timeout_s
        if self.first_data_at is not None:
            return self.first_data_at + guard.head_timeout_s
        return self.answered_at + (guard.head_timeout_s if self.fresh
                                   else guard.idle_timeout_s)

    def answered(self) -> None:
        self.fresh = False
        self.answered_at = time.monotonic()
        self.first_data_at = None
        connections = self.guard.connections
        if self in connections:
            del connections[self]
            connections[self] = None

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.guard.connections[self] = None
        self.guard._by_transport[transport] = self
        self.inner.connection_made(transport)

    def connection_lost(self, exc) -> None:
        self.guard.connections.pop(self, None)
        self.guard._by_transport.pop(self.transport, None)
        self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self.last_data_at = now = time.monotonic()
        if self.first_data_at is None and self.request is None:
            self.first_data_at = now
        self.inner.data_received(data)

    def eof_received(self):
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.write_deadline = time.monotonic() + self.guard.write_timeout_s
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.write_deadline = _NEVER
        self.inner.resume_writing()
