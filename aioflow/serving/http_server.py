"""A lean HTTP/1.1 server for the REST API: an asyncio.Protocol serving the routes of
rest_app.ROUTES with no web framework in between (`--rest_api_server native`, the
default; docs/performance.md "Serving" says what it saves over the aiohttp app).

HTTP is parsed by llhttp (through httptools), the parser Node, aiohttp and uvicorn use,
strict as it is by default: a bare CR or LF where CRLF belongs, whitespace around a chunk
size or in a field name, NUL or a control byte in a value, two Content-Lengths, a
Content-Length beside Transfer-Encoding are all refused with 400, so that a request
cannot be read one way here and another way by a proxy in front (request smuggling).
On top of llhttp: HTTP/1.1 needs exactly one Host; heads are bounded (64 KiB, 128
fields: 431); a transfer coding other than chunked is 501, a version other than 1.0 and
1.1 is 505.

Per connection (all on the event loop):
- llhttp parses what arrives as it arrives; each whole request goes to `requests`, and
  they are answered one at a time, in order (pipelining): answers never interleave, and
  the loop is yielded between pipelined requests (a client cannot hold a turn with a
  pile of them); with a request being answered, reading pauses once more than
  MAX_PIPELINED_BYTES wait behind it;
- a handler that is a coroutine function (a predict, the metrics page) runs in its own
  task (`task`), cancelled when the client disconnects, so its run (or its place in a
  batch) is cancelled too; the others (status, metadata) are answered at once;
- the predicts that come in one turn of the loop start in the order their connections
  have waited, longest first (`HttpServer._start_line`), not in the order the poll
  reported them: epoll (level-triggered, as libuv uses it) reports the connections it
  reported last time first, so a connection answered at the end of a busy turn, whose
  next request comes just after the poll, was last again in every later turn and saw
  two turns of latency (at c=64: every other turn served, p99 twice the p50);
- keep-alive follows HTTP/1.1 (HTTP/1.0 and "Connection: close" close after the answer);
- a body over --max_request_bytes is read and dropped as it comes, then answered 413,
  so the client reads the answer rather than a reset (with "Expect: 100-continue" it is
  answered at once instead, and the body never sent);
- every phase has a deadline (`deadline`), enforced by a sweep once a second: a new
  connection and a request's head `head_timeout_s`, a body `body_timeout_s` without a
  byte, an idle keep-alive connection `idle_timeout_s`, an answer the client does not
  read `write_timeout_s`; a connection whose request is being answered has none (its
  request's deadline bounds it);
- connections are capped (`max_connections`: the descriptor limit less headroom for
  model files, logs and gRPC), so that accept() never runs out of descriptors: at the
  cap a new connection takes the place of the one that has waited longest without being
  answered (a slowloris crowd cannot lock new clients out), or is refused with 503 when
  every connection has a request being answered.
`stop()` closes the listening socket, closes idle connections, lets each request in
flight finish and closes its connection after the answer, and cancels what is left when
the grace period ends.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import logging
import os
import resource
import socket
import time
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import unquote

import httptools

from aioflow.serving import rest_codec
from aioflow.serving.rest_app import (
    JSON,
    ROUTES,
    RestApi,
    RestRequest,
    TooLarge,
    access_line,
    allowed_methods,
)

#: Largest request head (request line and headers), and most header fields in one.
MAX_HEAD_BYTES = 64 << 10
MAX_HEADERS = 128
#: Pipelined bytes buffered behind a request being answered before reading pauses (a
#: waiting request counts its head, its body and REQUEST_OVERHEAD for its objects).
MAX_PIPELINED_BYTES = 1 << 20
REQUEST_OVERHEAD = 512
#: The phases' deadlines (module docstring), seconds.
IDLE_TIMEOUT_S = 75.0  # between keep-alive requests (aiohttp's keep-alive timeout)
HEAD_TIMEOUT_S = 15.0  # from a connection's start or a request's first byte to its head
BODY_TIMEOUT_S = 30.0  # a body without a byte
WRITE_TIMEOUT_S = 30.0  # an answer the client does not read
#: After the answer to a bad request, what the client still sends is read and dropped
#: for this long before the connection closes (closing with bytes unread would reset it,
#: and the client could lose the answer).
LINGER_S = 2.0
#: Descriptors kept free of connections: for model files, logs, gRPC (at least this
#: many, or an eighth of the limit).
FD_HEADROOM = 64
#: Connections waiting to be accepted (listen's backlog), and the most accepted a turn.
LISTEN_BACKLOG = 1024
#: After a failed accept (out of file descriptors), accepting resumes this much later.
ACCEPT_RETRY_S = 0.1

_log = logging.getLogger("aioflow.serving")

_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}
_REASONS[499] = b"Client Closed Request"
_NEVER = float("inf")
_REFUSED_BODY = b'{"error":"Too many connections, try again later"}'
#: The answer to a connection over the cap.
REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (len(_REFUSED_BODY), _REFUSED_BODY))


class _BadRequest(Exception):
    """A request the server answers with `status` and then closes the connection."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class _Date:
    """The Date header, formatted once a second."""

    second = -1
    value = b""

    @classmethod
    def now(cls) -> bytes:
        second = int(time.time())
        if second != cls.second:
            cls.second, cls.value = second, formatdate(second, usegmt=True).encode()
        return cls.value


def default_max_connections() -> int:
    """The descriptor limit (RLIMIT_NOFILE's soft value) less FD_HEADROOM or an eighth."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, soft - max(FD_HEADROOM, soft // 8))


class _Endpoint:
    """A route's handler for one method, as the server calls it."""

    __slots__ = ("handler", "is_async", "prefix_len", "allow")

    def __init__(self, handler, prefix_len: int, allow: bytes):
        self.handler = handler
        self.is_async = inspect.iscoroutinefunction(handler)
        self.prefix_len = prefix_len
        self.allow = allow


def _route_table(api) -> tuple[dict, list]:
    """ROUTES bound to `api`: ({path: {method: _Endpoint}}, [(prefix, {method: ...})]),
    HEAD answered by the GET handler (an `api` lacking a handler does not serve it)."""
    exact, prefixes = {}, []
    for route in ROUTES:
        allow = b"Allow: " + allowed_methods(route).encode() + b"\r\n"
        methods = {}
        for method, name in route.methods:
            handler = getattr(api, name, None)
            if handler is not None:
                methods[method] = _Endpoint(handler, len(route.path), allow)
        if "GET" in methods:
            methods["HEAD"] = methods["GET"]
        methods[None] = allow  # (for 405)
        if route.prefix:
            prefixes.append((route.path, methods))
        else:
            exact[route.path] = methods
    return exact, prefixes


class HttpServer:
    """Serves `api` over HTTP/1.1; access lines (rest_app.access_line) go to
    `access_log` when it is given."""

    def __init__(self, api: RestApi, access_log: logging.Logger | None = None,
                 idle_timeout_s: float = IDLE_TIMEOUT_S, max_connections: int | None = None):
        self.api = api
        self.access_log = access_log
        self.max_body = api.max_request_bytes
        self.idle_timeout_s = idle_timeout_s
        self.head_timeout_s = HEAD_TIMEOUT_S
        self.body_timeout_s = BODY_TIMEOUT_S
        self.write_timeout_s = WRITE_TIMEOUT_S
        self.max_connections = max_connections or default_max_connections()
        self.routes, self.prefix_routes = _route_table(api)
        # open connections, the one answered longest ago first (`touch`)
        self.connections: dict[_Connection, None] = {}
        self.stopping = False
        self._listeners: list[socket.socket] = []
        self._connecting: set[asyncio.Task] = set()  # accepted, transport being made
        self._sweeper: asyncio.TimerHandle | None = None
        self._line: list[_Waiting] = []  # this turn's predicts after its first
        self._line_scheduled = False  # (_start_line comes next turn)

    async def start(self, host: str, port: int, reuse_port: bool = False) -> int:
        """Listen on host:port (SO_REUSEPORT: beside other workers); the bound port.

        The server accepts its connections itself: libuv (uvloop) accepts one
        connection per turn of the loop, and a turn of a busy server lasts milliseconds,
        so 64 clients connecting at once waited up to 64 turns (~0.2 s) for their first
        answer, while the connections already open were served again and again. Here
        every connection waiting is accepted in the turn the listening socket is ready,
        in the order they came."""
        loop = asyncio.get_running_loop()
        # (the loop's create_server binds as asyncio does: every address of `host`, an
        # IPv6 one IPv6-only, SO_REUSEADDR; not serving, and its sockets duplicated)
        server = await loop.create_server(asyncio.Protocol, host, port, backlog=LISTEN_BACKLOG,
                                          reuse_port=reuse_port or None, start_serving=False)
        try:
            for sock in server.sockets:
                listener = socket.socket(sock.family, sock.type, sock.proto,
                                         fileno=os.dup(sock.fileno()))
                listener.setblocking(False)
                self._listeners.append(listener)
                listener.listen(LISTEN_BACKLOG)  # (asyncio listens when it starts serving)
        finally:
            server.close()
        for listener in self._listeners:
            loop.add_reader(listener.fileno(), self._accept, listener)
        self._sweep()
        return self._listeners[0].getsockname()[1]

    def _accept(self, listener: socket.socket) -> None:
        """Accept every connection waiting (up to the backlog's size a turn)."""
        loop = asyncio.get_running_loop()
        for _ in range(LISTEN_BACKLOG):
            try:
                sock, _addr = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:  # reset by its client while it waited
                continue
            except OSError as e:  # out of file descriptors, or the like: try again soon
                _log.warning("aioflow serve: accept failed: %s", e)
                loop.remove_reader(listener.fileno())
                loop.call_later(ACCEPT_RETRY_S, self._resume_accepting, listener)
                return
            if len(self.connections) + len(self._connecting) >= self.max_connections and \
                    not self._evict():
                _refuse(sock)
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._connect(loop, sock))
            self._connecting.add(task)  # (held: the loop holds its tasks weakly)
            task.add_done_callback(self._connecting.discard)

    def _evict(self) -> bool:
        """At the cap: close the connection that has waited longest without being
        answered and has nothing being answered (idle, or its request still coming);
        False when every connection is busy."""
        for conn in self.connections:
            if not conn.busy():
                del self.connections[conn]
                conn.transport.abort()
                return True
        return False

    def _resume_accepting(self, listener: socket.socket) -> None:
        if not self.stopping and listener.fileno() >= 0:
            asyncio.get_running_loop().add_reader(listener.fileno(), self._accept, listener)

    async def _connect(self, loop, sock: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(lambda: _Connection(self), sock)
        except OSError:  # the client is gone already
            sock.close()

    def touch(self, conn: _Connection) -> None:
        """`conn` was answered: last in the eviction order."""
        connections = self.connections
        if conn in connections:
            del connections[conn]
            connections[conn] = None

    def _close_listeners(self) -> None:
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            if listener.fileno() >= 0:
                loop.remove_reader(listener.fileno())
                listener.close()
        self._listeners = []

    def _sweep(self) -> None:
        """Close the connections past their phase's deadline; again in a while."""
        now = time.monotonic()
        try:
            for conn in list(self.connections):
                if conn.writing_paused and conn.write_deadline < now:
                    conn.transport.abort()  # (close would wait for the unread answer)
                elif conn.deadline < now and not conn.busy():
                    conn.transport.abort() if conn.writing_paused else conn.transport.close()
        finally:  # (whatever happened, the sweeps go on)
            self._schedule_sweep()

    def _schedule_sweep(self) -> None:
        shortest = min(self.idle_timeout_s, self.head_timeout_s, self.body_timeout_s,
                       self.write_timeout_s)
        self._sweeper = asyncio.get_running_loop().call_later(min(1.0, shortest / 4),
                                                              self._sweep)

    def start_task(self, conn: _Connection, args: tuple) -> None:
        """Start `conn`'s handler task: at once when it is the first this turn (a lone
        request loses no turn), else in this turn's line (`_start_line`)."""
        if self._line_scheduled:
            conn.task = waiting = _Waiting(conn, args)
            self._line.append(waiting)
            return
        self._line_scheduled = True
        conn.loop.call_soon(self._start_line)
        conn.task = conn.loop.create_task(conn._respond(*args))

    def _start_line(self) -> None:
        """Start the turn's waiting predicts, the connection that has waited longest
        since its last answer first (module docstring)."""
        self._line_scheduled = False
        line, self._line = self._line, []
        line.sort(key=_waited_since)
        for waiting in line:
            conn = waiting.conn
            if waiting.cancelled or conn.lost:
                if conn.task is waiting:
                    conn.task = None
                continue
            conn.task = conn.loop.create_task(conn._respond(*waiting.args))

    async def stop(self, grace_s: float) -> None:
        """Refuse new connections, finish the requests in flight (up to grace_s), close."""
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._close_listeners()
        for conn in list(self.connections):
            conn.shutdown()
        deadline = time.monotonic() + grace_s
        while self.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for conn in list(self.connections):
            conn.abort()


def _refuse(sock: socket.socket) -> None:
    """Answer 503 to a connection over the cap, and close it."""
    try:
        sock.setblocking(False)
        sock.send(REFUSED)
    except OSError:
        pass
    sock.close()


class _Waiting:
    """A predict in its turn's line: its connection is busy as with a task, and a
    disconnect (`cancel`) drops it."""

    __slots__ = ("conn", "args", "since", "cancelled")

    def __init__(self, conn: _Connection, args: tuple):
        self.conn, self.args, self.since = conn, args, conn.since
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _waited_since(waiting: _Waiting) -> float:
    return waiting.since


class _Stopped(Exception):
    """Raised in llhttp's callbacks once the connection takes no more input."""


class _Request:
    """A request being received (llhttp's callbacks fill it), then waiting its turn."""

    __slots__ = ("url", "headers", "hosts", "count", "head_size", "partial", "body", "size",
                 "too_large", "expect", "method", "keep_alive", "version", "error")

    def __init__(self):
        self.url = b""
        self.headers: dict[str, str] = {}  # by lower-case name, repeated ones joined ", "
        self.hosts = 0
        self.count = 0  # header fields (trailers too)
        self.head_size = 0  # the head's bytes parsed,
        self.partial = 0  # and received since llhttp's last callback (a field it holds)
        self.body: list[bytes] = []
        self.size = 0
        self.too_large = False
        self.expect = False
        self.method = self.version = ""
        self.keep_alive = True
        self.error: _BadRequest | None = None  # answered in its turn, then closed

    def held(self) -> int:
        """The bytes it holds while it waits (MAX_PIPELINED_BYTES)."""
        return self.head_size + (0 if self.too_large else self.size) + REQUEST_OVERHEAD


class _Connection(asyncio.Protocol):
    """One client connection (see the module docstring for its states)."""

    def __init__(self, server: HttpServer):
        self.server = server
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.remote = None
        self.incoming: _Request | None = None  # the request being received
        self.in_head = False  # its head is still coming
        self.requests: collections.deque[_Request] = collections.deque()  # whole, waiting
        self.waiting_bytes = 0  # what they hold (_Request.held)
        self.closed_to_input = False  # a bad request came: what follows is dropped
        self.lingering = False  # answered and half-closed: input dropped until it ends
        self.task: asyncio.Task | _Waiting | asyncio.Handle | None = None  # answering
        self.close_after = False  # close once the current answer is written
        self.lost = False
        self.reading_paused = False
        self.writing_paused = False
        self.say_keep_alive = False  # the request is HTTP/1.0 with keep-alive
        self.status = self.sent = 0  # the last answer's status and body size (access log)
        self.since = 0.0  # when it began to wait for its next request (time.monotonic)
        self.deadline = _NEVER  # when its current phase times out (module docstring)
        self.write_deadline = _NEVER

    def busy(self) -> bool:
        """A request is being answered, or waits its turn."""
        return self.task is not None or bool(self.requests)

    # -- transport callbacks ---------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self.since = time.monotonic()
        self.deadline = self.since + self.server.head_timeout_s
        peer = transport.get_extra_info("peername")
        self.remote = peer[0] if isinstance(peer, tuple) else peer
        self.server.connections[self] = None
        if self.server.stopping:
            transport.close()

    def connection_lost(self, exc) -> None:
        self.lost = True
        self.server.connections.pop(self, None)
        self.requests.clear()
        if self.task is not None:
            self.task.cancel()  # the client went away: stop its run

    def data_received(self, data: bytes) -> None:
        if self.closed_to_input:
            return
        incoming = self.incoming
        if incoming is not None:
            incoming.partial += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as e:
            error = e.__context__
            if not isinstance(error, _Stopped):
                self._refuse_input(error if isinstance(error, _BadRequest) else _BadRequest(
                    400, "Bad request"))
        except httptools.HttpParserUpgrade:
            self.closed_to_input = True  # (no upgrade spoken: close after the answers)
            self.close_after = True
        except httptools.HttpParserError as e:
            self._refuse_input(_BadRequest(400, f"Bad request: {e}"))
        incoming = self.incoming
        if incoming is not None and incoming.partial > MAX_HEAD_BYTES:
            # (llhttp holds a field's pieces until it is whole, a head's or a trailer's:
            # bounded here; a body's pieces come as they arrive)
            self._refuse_input(_BadRequest(431, "Request Header Fields Too Large"))
        if self.task is None:
            self._next()
        if self.busy() and not self.reading_paused and self.waiting_bytes + (
                self.incoming.size if self.incoming is not None else 0) > MAX_PIPELINED_BYTES:
            self.reading_paused = True
            self.transport.pause_reading()

    def eof_received(self):
        # The client closed its side: close (connection_lost cancels a run in flight), as
        # a FIN cannot be told from a client that gave up.
        return False

    def pause_writing(self) -> None:
        self.writing_paused = True
        self.write_deadline = time.monotonic() + self.server.write_timeout_s

    def resume_writing(self) -> None:
        self.writing_paused = False
        self.write_deadline = _NEVER
        if self.task is None:
            self._next()

    # -- llhttp's callbacks --------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.closed_to_input:
            raise _Stopped
        self.incoming = _Request()
        self.in_head = True
        if not self.busy():
            self.deadline = time.monotonic() + self.server.head_timeout_s

    def on_url(self, url: bytes) -> None:
        if self.closed_to_input:
            raise _Stopped
        incoming = self.incoming
        incoming.url += url
        incoming.partial = 0
        incoming.head_size += len(url)
        if incoming.head_size > MAX_HEAD_BYTES:
            raise _BadRequest(431, "Request Header Fields Too Large")

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.closed_to_input:
            raise _Stopped
        incoming = self.incoming
        incoming.count += 1
        incoming.partial = 0
        incoming.head_size += len(name) + len(value) + 4
        if incoming.count > MAX_HEADERS:
            raise _BadRequest(431, f"Too many header fields (more than {MAX_HEADERS})")
        if incoming.head_size > MAX_HEAD_BYTES:
            raise _BadRequest(431, "Request Header Fields Too Large")
        if not self.in_head:
            return  # a trailer: bounded as a head, otherwise ignored
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = incoming.headers
        if key == "host":
            incoming.hosts += 1
        if key in headers:  # (at most MAX_HEADERS of at most MAX_HEAD_BYTES in all)
            headers[key] = headers[key] + ", " + text
        else:
            headers[key] = text

    def on_headers_complete(self) -> None:
        if self.closed_to_input:
            raise _Stopped
        incoming = self.incoming
        self.in_head = False
        parser = self.parser
        version = parser.get_http_version()
        if version not in ("1.1", "1.0"):
            raise _BadRequest(505, "HTTP Version Not Supported")
        headers = incoming.headers
        if version == "1.1" and incoming.hosts != 1:
            raise _BadRequest(400, "Missing Host header" if not incoming.hosts
                              else "More than one Host header")
        coding = headers.get("transfer-encoding")
        if coding is not None and coding.strip().lower() != "chunked":
            raise _BadRequest(501, f"Transfer-Encoding {coding!r} is not supported "
                                   "(chunked is)")
        incoming.method = parser.get_method().decode("latin-1")
        incoming.version = version
        incoming.keep_alive = parser.should_keep_alive()
        length = headers.get("content-length")
        incoming.expect = headers.get("expect", "").lower() == "100-continue" and (
            coding is not None or (length is not None and length != "0"))
        if length is not None and int(length) > self.server.max_body:
            incoming.too_large = True  # (the body is read and dropped)
            if incoming.expect:  # answer now: the body is not coming
                incoming.size = int(length)
                self._queue(incoming)
                self._refuse_input(None)
                return
        self.deadline = time.monotonic() + self.server.body_timeout_s
        if incoming.expect and not self.busy():
            incoming.expect = False
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, data: bytes) -> None:
        if self.closed_to_input:
            raise _Stopped
        incoming = self.incoming
        self.deadline = time.monotonic() + self.server.body_timeout_s
        incoming.partial = 0
        incoming.size += len(data)
        if incoming.too_large:
            return
        if incoming.size > self.server.max_body:
            incoming.too_large = True  # dropped from here on
            incoming.body = []
            return
        incoming.body.append(data)

    def on_message_complete(self) -> None:
        if self.closed_to_input:
            raise _Stopped
        self._queue(self.incoming)

    def _queue(self, request: _Request) -> None:
        self.incoming = None
        self.in_head = False
        self.requests.append(request)
        self.waiting_bytes += request.held()

    def _refuse_input(self, error: _BadRequest | None) -> None:
        """What came is bad: drop what follows, answer `error` in its turn, close."""
        if self.closed_to_input:
            return
        self.closed_to_input = True
        self.close_after = True
        incoming = self.incoming
        if error is not None:
            if incoming is None:
                incoming = _Request()
            incoming.error = error
            self._queue(incoming)

    # -- shutdown ----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Close now if idle, else after the answer being computed."""
        self.close_after = True
        if not self.busy() and self.incoming is None:
            self.transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.transport is not None:
            self.transport.abort()

    # -- requests ----------------------------------------------------------------------------
    def _next(self) -> None:
        """Answer the next whole request, or arrange for what comes next: a request
        answered at once yields the loop before the one after it."""
        if self.task is not None or self.writing_paused or self.transport.is_closing():
            return
        if not self.requests:
            if self.reading_paused:  # answering again: read on (a body may be partly in)
                self.reading_paused = False
                self.transport.resume_reading()
            incoming = self.incoming
            if incoming is not None and incoming.expect and not incoming.size:
                incoming.expect = False
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            if self.close_after and incoming is None and not self.lingering:
                self.transport.close()
            return
        request = self.requests.popleft()
        self.waiting_bytes -= request.held()
        if request.error is not None:
            self.close_after = True
            self._write(request.error.status,
                        rest_codec.dumps({"error": str(request.error)}))
            return
        self._dispatch(request)
        if self.task is None and not self.transport.is_closing():
            if self.requests:  # the next in a later turn (others are served between)
                self.task = self.loop.call_soon(self._resume)
            else:
                self._next()

    def _resume(self) -> None:
        self.task = None
        self._next()

    def _dispatch(self, request: _Request) -> None:
        started = time.perf_counter()
        method = request.method
        if not request.keep_alive:
            self.close_after = True
        self.say_keep_alive = request.version == "1.0" and request.keep_alive
        target = request.url.decode("latin-1")
        if target[0] != "/":  # absolute form: http://host/path
            slash = target.find("/", target.find("//") + 2)
            target = target[slash:] if slash > 0 and "//" in target else "/"
        path, _, query = target.partition("?")
        if "%" in path:
            path = unquote(path)
        methods = self.server.routes.get(path)
        if methods is None:
            for prefix, candidate in self.server.prefix_routes:
                if path.startswith(prefix):
                    methods = candidate
                    break
            else:
                self._write(404, b'{"error":"Not Found"}')
                self._log(method, path, query, started)
                return
        endpoint = methods.get(method)
        if endpoint is None:
            self._write(405, b'{"error":"Method Not Allowed"}', extra=methods[None])
            self._log(method, path, query, started)
            return
        if request.too_large:
            error = TooLarge(f"Maximum request body size {self.server.max_body} exceeded, "
                             f"actual body size {request.size}")
            if method != "POST":
                self._write(413, rest_codec.dumps({"error": str(error)}))
                self._log(method, path, query, started)
                return
            body = _raise(error)
        else:
            body = request.body[0] if len(request.body) == 1 else b"".join(request.body)
        call = RestRequest(method, path, path[endpoint.prefix_len:], query,
                           request.headers, body, started)
        head_only = method == "HEAD"
        if endpoint.is_async:
            self.server.start_task(self, (endpoint.handler, call, head_only))
            return
        status, answer, content_type = endpoint.handler(call)
        self._write(status, answer, content_type, head_only=head_only)
        self._log(method, path, query, started)

    async def _respond(self, handler, call: RestRequest, head_only: bool) -> None:
        try:
            status, answer, content_type = await handler(call)
        except asyncio.CancelledError:
            return  # the client went away, or the server gave up on the request
        except Exception:  # (the handlers answer their errors: this is a bug's)
            _log.exception("aioflow serve: %s %s failed", call.method, call.path)
            status, answer, content_type = 500, b'{"error":"Internal server error"}', JSON
        finally:
            self.task = None
        if self.lost:
            return
        self._write(status, answer, content_type, head_only=head_only)
        self._log(call.method, call.path, call.query, call.started)
        self._next()

    def _write(self, status: int, body: bytes, content_type: bytes = JSON,
               extra: bytes = b"", head_only: bool = False) -> None:
        self.status, self.sent = status, len(body)
        self.since = now = time.monotonic()  # (waiting for the next request from now)
        server = self.server
        self.deadline = now + (server.idle_timeout_s if self.incoming is None else
                               server.head_timeout_s if self.in_head else
                               server.body_timeout_s)
        server.touch(self)
        close = self.close_after or server.stopping
        if close:
            extra += b"Connection: close\r\n"
        elif self.say_keep_alive:
            extra += b"Connection: keep-alive\r\n"
        head = b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nDate: %s\r\n%s\r\n" % (
            status, _REASONS.get(status, b"Unknown"), content_type, len(body), _Date.now(), extra)
        if head_only:
            self.transport.write(head)
        elif len(body) < 16384:
            self.transport.write(head + body)
        else:
            self.transport.writelines((head, body))
        if close:
            self.close_after = True
            if self.closed_to_input and self.transport.can_write_eof():
                self.lingering = True  # (the sweep closes it at its deadline)
                self.deadline = now + LINGER_S
                self.transport.write_eof()
            else:
                self.transport.close()

    def _log(self, method: str, path: str, query: str, started: float) -> None:
        log = self.server.access_log
        if log is not None:
            log.info(access_line(self.remote, method, f"{path}?{query}" if query else path,
                                 self.status, self.sent, time.perf_counter() - started))


def _raise(error: Exception):
    async def read():
        raise error
    return read
