"""A lean HTTP/1.1 server for the REST API: an asyncio.Protocol serving rest_app.RestApi's
routes with no web framework in between (`--rest_api_server native`, the default;
docs/performance.md "Serving" says what it saves over the aiohttp app).

Per connection (all on the event loop):
- `buf` holds the bytes received and not yet consumed: a request is parsed only once its
  head (up to the blank line) and its whole body (Content-Length, or chunked) are in;
- requests are answered one at a time, in order: what follows a request (pipelining)
  waits in `buf` until its answer is written, so answers never interleave;
- a predict runs in its own task (`task`), cancelled when the client disconnects, so
  its run (or its place in a batch) is cancelled too; status, metadata and metrics are
  answered at once;
- the predicts that come in one turn of the loop start in the order their connections
  have waited, longest first (`HttpServer._start_line`), not in the order the poll
  reported them: epoll (level-triggered, as libuv uses it) reports the connections it
  reported last time first, so a connection answered at the end of a busy turn, whose
  next request comes just after the poll, was last again in every later turn and saw
  two turns of latency (at c=64: every other turn served, p99 twice the p50);
- keep-alive follows HTTP/1.1 (HTTP/1.0 and "Connection: close" close after the answer);
- a request the server cannot take is answered {"error": reason} with 400 (malformed),
  404 (no such path), 405 (method), 413 (body over --max_request_bytes), 431 (head over
  64 KiB), 501 (a transfer coding other than chunked) or 505 (HTTP version), and the
  connection closes after those that leave the byte stream unusable. An over-long body
  announced by Content-Length is read and dropped, then answered 413, so the client
  reads the answer rather than a reset (with "Expect: 100-continue" it is answered at
  once instead, and the body never sent);
- a connection that waits for a request longer than `idle_timeout_s` (idle, or its head
  still coming: a client sending a byte now and then) is closed by a sweep, as the
  aiohttp server's keep-alive timeout closed an idle one.
`stop()` closes the listening socket, closes idle connections, lets each request in
flight finish and closes its connection after the answer, and cancels what is left when
the grace period ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from email.utils import formatdate
from http import HTTPStatus
from urllib.parse import parse_qs, unquote

from aioflow.serving import rest_codec
from aioflow.serving.rest_app import RestApi, TooLarge, access_line

#: Largest request head (request line and headers).
MAX_HEAD_BYTES = 64 << 10
#: Pipelined bytes buffered behind a request being answered before reading pauses.
MAX_PIPELINED_BYTES = 1 << 20
#: How long a connection may wait for a request's head (aiohttp's keep-alive timeout).
IDLE_TIMEOUT_S = 75.0
#: Connections waiting to be accepted (listen's backlog), and the most accepted a turn.
LISTEN_BACKLOG = 1024
#: After a failed accept (out of file descriptors), accepting resumes this much later.
ACCEPT_RETRY_S = 0.1

_log = logging.getLogger("aioflow.serving")

_REASONS = {s.value: s.phrase.encode() for s in HTTPStatus}
_REASONS[499] = b"Client Closed Request"
_JSON = b"application/json"
_MODELS = "/v1/models/"
_METRICS = "/monitoring/prometheus/metrics"
_NOT_ALLOWED = b'{"error":"Method Not Allowed"}'
_HEX = b"0123456789abcdefABCDEF"
_AGAIN = object()  # _take answered a request itself (413): look for the next one


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


class HttpServer:
    """Serves `api` over HTTP/1.1; access lines (rest_app.access_line) go to
    `access_log` when it is given."""

    def __init__(self, api: RestApi, access_log: logging.Logger | None = None,
                 idle_timeout_s: float = IDLE_TIMEOUT_S):
        self.api = api
        self.access_log = access_log
        self.max_body = api.max_request_bytes
        self.idle_timeout_s = idle_timeout_s
        self.connections: set[_Connection] = set()
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
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._connect(loop, sock))
            self._connecting.add(task)  # (held: the loop holds its tasks weakly)
            task.add_done_callback(self._connecting.discard)

    def _resume_accepting(self, listener: socket.socket) -> None:
        if not self.stopping and listener.fileno() >= 0:
            asyncio.get_running_loop().add_reader(listener.fileno(), self._accept, listener)

    async def _connect(self, loop, sock: socket.socket) -> None:
        try:
            await loop.connect_accepted_socket(lambda: _Connection(self), sock)
        except OSError:  # the client is gone already
            sock.close()

    def _close_listeners(self) -> None:
        loop = asyncio.get_running_loop()
        for listener in self._listeners:
            if listener.fileno() >= 0:
                loop.remove_reader(listener.fileno())
                listener.close()
        self._listeners = []

    def _sweep(self) -> None:
        """Close the connections that have waited too long for a request's head (none
        has a request being answered or a body coming); again in a while."""
        limit = self.idle_timeout_s
        expired = time.monotonic() - limit
        for conn in self.connections:
            if conn.since < expired and conn.task is None and conn.head is None and \
                    not conn.discard and not conn.writing_paused:
                conn.transport.close()
        self._sweeper = asyncio.get_running_loop().call_later(min(1.0, limit / 4),
                                                              self._sweep)

    def start_predict(self, conn: _Connection, args: tuple) -> None:
        """Start `conn`'s predict: at once when it is the first this turn (a lone
        request loses no turn), else in this turn's line (`_start_line`)."""
        if self._line_scheduled:
            conn.task = waiting = _Waiting(conn, args)
            self._line.append(waiting)
            return
        self._line_scheduled = True
        conn.loop.call_soon(self._start_line)
        conn.task = conn.loop.create_task(conn._predict(*args))

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
            conn.task = conn.loop.create_task(conn._predict(*waiting.args))

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


class _Connection(asyncio.Protocol):
    """One client connection (see the module docstring for its states)."""

    def __init__(self, server: HttpServer):
        self.server = server
        self.api = server.api
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.remote = None
        self.buf: bytes | bytearray = b""  # received, not yet consumed
        self.head = None  # the parsed head of the request being received, or None
        self.chunks: list | None = None  # a chunked body being received: its pieces,
        self.chunk_at = 0  # where in buf its next chunk-size line starts,
        self.chunk_size = 0  # and its size so far
        self.discard = 0  # bytes of an over-long body still to drop,
        self.too_large = None  # and the head of its request (answered 413 after)
        self.task: asyncio.Task | _Waiting | None = None  # the predict being answered
        self.close_after = False  # close once the current answer is written
        self.lost = False
        self.reading_paused = False
        self.writing_paused = False
        self.say_keep_alive = False  # the request is HTTP/1.0 with keep-alive
        self.status = self.sent = 0  # the last answer's status and body size (access log)
        self.since = 0.0  # when it began to wait for its next request (time.monotonic)

    # -- transport callbacks ---------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        self.since = time.monotonic()
        peer = transport.get_extra_info("peername")
        self.remote = peer[0] if isinstance(peer, tuple) else peer
        self.server.connections.add(self)
        if self.server.stopping:
            transport.close()

    def connection_lost(self, exc) -> None:
        self.lost = True
        self.server.connections.discard(self)
        if self.task is not None:
            self.task.cancel()  # the client went away: stop its run

    def data_received(self, data: bytes) -> None:
        if self.discard:
            if len(data) < self.discard:
                self.discard -= len(data)
                return
            data = data[self.discard:]
            self.discard = 0
            self._answer_too_large()
            if not data:
                return
        if self.buf:
            if type(self.buf) is bytes:
                self.buf = bytearray(self.buf)
            self.buf += data
        else:
            self.buf = data
        if self.task is None:
            self._next()
        if (self.task is not None or self.writing_paused) and \
                len(self.buf) > MAX_PIPELINED_BYTES and not self.reading_paused:
            self.reading_paused = True
            self.transport.pause_reading()

    def eof_received(self):
        # The client closed its side: close (connection_lost cancels a run in flight), as
        # a FIN cannot be told from a client that gave up.
        return False

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self.task is None:
            self._next()

    # -- shutdown ----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Close now if idle, else after the answer being computed."""
        self.close_after = True
        if self.task is None and not self.buf and self.head is None:
            self.transport.close()

    def abort(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.transport is not None:
            self.transport.abort()

    # -- requests ----------------------------------------------------------------------------
    def _next(self) -> None:
        """Answer the requests that are wholly in `buf`, in order, until one needs a task
        or more bytes."""
        while self.task is None and not self.writing_paused and \
                not self.transport.is_closing():
            if self.reading_paused:  # answering again: read on (a body may be partly in)
                self.reading_paused = False
                self.transport.resume_reading()
            try:
                request = self._take()
            except _BadRequest as e:
                self.close_after = True
                self._write(e.status, rest_codec.dumps({"error": str(e)}))
                return
            if request is _AGAIN:
                continue
            if request is None:
                if self.task is None and self.close_after and not self.buf and \
                        self.head is None and not self.discard:
                    self.transport.close()
                return
            self._dispatch(*request)

    def _take(self):
        """The next whole request in `buf` as (method, target, headers, body), consumed;
        None while it is not all in; _AGAIN when it was answered 413 here."""
        buf = self.buf
        if self.head is None:
            if not buf:
                return None
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise _BadRequest(431, "Request Header Fields Too Large")
                return None
            if end > MAX_HEAD_BYTES:
                raise _BadRequest(431, "Request Header Fields Too Large")
            self.head = self._parse_head(buf, end)
            head = self.head
            self.say_keep_alive = head[3] == 2
            if head[4] is not None and head[4] > self.server.max_body:
                if head[5]:  # Expect: 100-continue: answer now, the body is not coming
                    self.close_after = True
                    self.head = None
                    self._write_too_large(head, head[4])
                    return _AGAIN
                self._drop_body(head, end + 4)
                return _AGAIN
        head = self.head
        method, target, headers, keep_alive, length, expect, start = head
        if length is not None:
            end = start + length
            if len(buf) < end:
                if expect and len(buf) == start:
                    expect = False
                    self.head = head[:5] + (False, start)
                    self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return None
            body = bytes(buf[start:end])
        else:
            body, end = self._chunked(buf, start, expect)
            if body is None or body is _AGAIN:
                return body
        self.buf = buf[end:] if end < len(buf) else b""
        self.head = None
        if not keep_alive:
            self.close_after = True
        return method, target, headers, body

    def _parse_head(self, buf, end: int):
        """(method, target, headers, keep_alive (0, 1 or 2, below), content_length or
        None when chunked, expects_100, body_start) of the head ending at `end`."""
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise _BadRequest(400, f"Bad request line: {lines[0][:100]!r}")
        method, target, version = parts
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            if not version.startswith("HTTP/"):
                raise _BadRequest(400, f"Bad request line: {lines[0][:100]!r}")
            raise _BadRequest(505, "HTTP Version Not Supported")
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name[-1] in " \t" or name[0] in " \t":
                raise _BadRequest(400, f"Bad header line: {line[:100]!r}")
            name = name.lower()
            value = value.strip(" \t")
            if name in headers:
                if name == "content-length" and headers[name] != value:
                    raise _BadRequest(400, "Conflicting Content-Length headers")
                headers[name] = headers[name] + ", " + value
            else:
                headers[name] = value
        connection = headers.get("connection", "").lower()
        # 1: persistent (HTTP/1.1's default); 2: an HTTP/1.0 client asked for it, and the
        # answer must say so; 0: close after the answer
        keep_alive = (int("close" not in connection) if version == "HTTP/1.1"
                      else 2 * ("keep-alive" in connection))
        coding = headers.get("transfer-encoding")
        if coding is not None:
            if "content-length" in headers:
                raise _BadRequest(400, "Both Transfer-Encoding and Content-Length given")
            if coding.lower() != "chunked":
                raise _BadRequest(501, f"Transfer-Encoding {coding!r} is not supported "
                                       "(chunked is)")
            length = None
        else:
            text = headers.get("content-length", "0")
            # (ASCII digits only, and few enough for int(): str.isdigit takes "²")
            if not (text.isascii() and text.isdigit()) or len(text) > 18:
                raise _BadRequest(400, f"Bad Content-Length: {text[:40]!r}")
            length = int(text)
        expect = headers.get("expect", "").lower() == "100-continue"
        return method, target, headers, keep_alive, length, expect, end + 4

    def _chunked(self, buf, start: int, expect: bool):
        """A chunked body: (body, end) once its last chunk and trailers are in, else
        (None, 0); the chunks are collected as they come (`chunks`, `chunk_at`)."""
        if self.chunks is None:
            if expect and len(buf) == start:
                self.head = self.head[:5] + (False, start)
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                return None, 0
            self.chunks, self.chunk_at, self.chunk_size = [], start, 0
        at = self.chunk_at
        while True:
            eol = buf.find(b"\r\n", at)
            if eol < 0:
                if len(buf) - at > 1024:
                    raise _BadRequest(400, "Bad chunk size line")
                break
            size_text = bytes(buf[at:eol]).split(b";", 1)[0].strip()
            # (hex digits only: int(text, 16) also takes a sign, "0x" and underscores)
            if not size_text or len(size_text) > 15 or size_text.translate(None, _HEX):
                raise _BadRequest(400, f"Bad chunk size: {size_text[:20]!r}")
            size = int(size_text, 16)
            if size == 0:  # the last chunk: then trailers, up to an empty line
                if buf[eol:eol + 4] == b"\r\n\r\n":
                    end = eol + 4
                else:
                    stop = buf.find(b"\r\n\r\n", eol)
                    if stop < 0:
                        if len(buf) - eol > MAX_HEAD_BYTES:
                            raise _BadRequest(431, "Request Header Fields Too Large")
                        break
                    end = stop + 4
                body = b"".join(self.chunks)
                self.chunks = None
                if self.chunk_size > self.server.max_body:
                    head, self.head = self.head, None
                    self.buf = buf[end:] if end < len(buf) else b""
                    if not head[3]:
                        self.close_after = True
                    self._write_too_large(head, self.chunk_size)
                    return _AGAIN, 0
                return body, end
            if len(buf) < eol + 2 + size + 2:
                held = len(buf) - eol - 2
                if self.chunk_size + size > self.server.max_body and 0 < held < size:
                    # dropped anyway: take what is in, and leave the rest as a chunk of
                    # its own (its size line rewritten), so that it is not held whole
                    self.chunk_size += held
                    buf = self.buf = b"%x\r\n" % (size - held)
                    at = 0
                break
            if buf[eol + 2 + size:eol + 4 + size] != b"\r\n":
                raise _BadRequest(400, "Chunk data not followed by CRLF")
            self.chunk_size += size
            if self.chunk_size <= self.server.max_body:  # else read on and drop
                self.chunks.append(bytes(buf[eol + 2:eol + 2 + size]))
            at = eol + 4 + size
        if at:  # the chunks taken are in self.chunks: let their bytes go
            self.buf = buf[at:]
            at = 0
        self.chunk_at = at
        return None, 0

    def _drop_body(self, head, start: int) -> None:
        """Read and drop an over-long body (Content-Length), then answer 413."""
        self.head = None
        self.too_large = head
        rest = len(self.buf) - start - head[4]
        if rest >= 0:
            self.buf = self.buf[start + head[4]:] if rest else b""
            self._answer_too_large()
        else:
            self.buf = b""
            self.discard = -rest

    def _answer_too_large(self) -> None:
        head, self.too_large = self.too_large, None
        if not head[3]:
            self.close_after = True
        self._write_too_large(head, head[4])

    def _write_too_large(self, head, size: int) -> None:
        """Answer 413 to the request of `head` (a predict counts it in the metrics)."""
        method, target = head[0], head[1]
        path = target.partition("?")[0]
        error = TooLarge(f"Maximum request body size {self.server.max_body} exceeded, "
                         f"actual body size {size}")
        if method == "POST" and path.startswith(_MODELS):
            self._start_predict(method, target, path, None, error, time.perf_counter())
        else:
            self._write(413, rest_codec.dumps({"error": str(error)}))

    def _dispatch(self, method: str, target: str, headers: dict, body: bytes) -> None:
        started = time.perf_counter()
        if target[0] != "/":  # absolute form: http://host/path
            slash = target.find("/", target.find("//") + 2)
            target = target[slash:] if slash > 0 and "//" in target else "/"
        path, _, query = target.partition("?")
        if "%" in path:
            path = unquote(path)
        if path.startswith(_MODELS):
            if method == "POST":
                timeout = parse_qs(query).get("timeout_ms", (None,))[0] if query else None
                timeout = timeout or headers.get("x-request-timeout-ms")
                self._start_predict(method, target, path, timeout, body, started)
                return
            if method in ("GET", "HEAD"):
                status, answer = self.api.get(path[len(_MODELS):], path)
                self._write(status, answer, head_only=method == "HEAD")
            else:
                self._write(405, _NOT_ALLOWED, extra=b"Allow: GET,HEAD,POST\r\n")
        elif path == _METRICS:
            if method in ("GET", "HEAD"):
                status, answer, content_type = self.api.metrics_text()
                self._write(status, answer, content_type.encode(), head_only=method == "HEAD")
            else:
                self._write(405, _NOT_ALLOWED, extra=b"Allow: GET,HEAD\r\n")
        else:
            self._write(404, b'{"error":"Not Found"}')
        self._log(method, path, query, started)

    def _start_predict(self, method, target, path, timeout, body, started) -> None:
        self.server.start_predict(self, (method, target, path, timeout, body, started))

    async def _predict(self, method, target, path, timeout, body, started) -> None:
        try:
            status, answer = await self.api.predict(
                path[len(_MODELS):], path, _raise(body) if isinstance(body, TooLarge) else body,
                timeout, started)
        except asyncio.CancelledError:
            return  # the client went away, or the server gave up on the request
        finally:
            self.task = None
        if self.lost:
            return
        self._write(status, answer)
        self._log(method, path, target.partition("?")[2], started)
        self._next()

    def _write(self, status: int, body: bytes, content_type: bytes = _JSON,
               extra: bytes = b"", head_only: bool = False) -> None:
        self.status, self.sent = status, len(body)
        self.since = time.monotonic()  # (waiting for the next request from now)
        close = self.close_after or self.server.stopping
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
