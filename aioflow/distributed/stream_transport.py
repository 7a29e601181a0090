"""TF's messages between aioflow tasks on a plain TCP stream, beside the gRPC port.

A step's calls between tasks (RunGraph, RecvTensor, RecvTensors, CleanupGraph, the
client's RunStep) are small and many: grpcio costs some 0.4-0.5 ms of CPU per call on
its two ends, where the same request and answer framed on an asyncio stream cost about a
tenth of that. So an aioflow server also listens on a TCP port of its own, and an aioflow
peer that asks for it (aioflow's `StreamPort` call over gRPC, beside TF's
WorkerService) sends those calls there: the same message bytes as over gRPC (TF's
RunGraphRequest, ...), multiplexed on one connection by call id. A TF peer answers
`StreamPort` with UNIMPLEMENTED and is called over gRPC; a TF client never sees the port.

Frames (little-endian): payload length (u32), kind (u8), method or status (u8), call id
(u64), then the payload.
- request (kind 0): method = its index in METHODS + 1, payload = the request message;
- cancel (kind 1): the caller gave up on the call (a cancelled RunGraph aborts its step
  there, as a cancelled gRPC call does);
- response (kind 2): status 0 and the response message, or TF's error code and the error
  message (UTF-8).
A lost connection fails the calls in flight with UnavailableError on the calling side and
cancels them on the serving side, as gRPC does.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import struct

from aioflow.framework import errors

#: The calls that go on the stream (control calls stay on gRPC).
METHODS = ("RunGraph", "RecvTensor", "RecvTensors", "CleanupGraph", "RunStep")
CODES = {name: i + 1 for i, name in enumerate(METHODS)}
#: AIOFLOW_RPC_STREAM=0 turns the stream off (a server offers no port, a client asks none).
ENABLED = os.environ.get("AIOFLOW_RPC_STREAM", "1") != "0"

_HEADER = struct.Struct("<IBBQ")
_REQUEST, _CANCEL, _RESPONSE = 0, 1, 2
_UNKNOWN = errors.UNKNOWN
# A frame at least this large is read into a buffer of its own as it arrives.
_LARGE = 1 << 20


class _Framed(asyncio.Protocol):
    """Frames in, frames out (the shared half of both ends)."""

    def __init__(self):
        self.transport = None
        self._buffer = bytearray()
        self._large: tuple | None = None  # (kind, code, call id, bytearray, filled)
        self._need = _HEADER.size  # bytes the buffered frame needs (with its header)

    def connection_made(self, transport) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:  # (a peer machine gone without a word is noticed, as TCP can)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)

    def write(self, kind: int, code: int, call_id: int, payload: bytes) -> None:
        header = _HEADER.pack(len(payload), kind, code, call_id)
        if len(payload) < _LARGE:
            self.transport.write(header + payload)
        else:
            self.transport.write(header)
            self.transport.write(payload)

    def data_received(self, data: bytes) -> None:
        if self._large is not None:
            data = self._fill_large(data)
            if not data:
                return
        buffer = self._buffer
        if buffer:
            buffer += data
            if len(buffer) < self._need:
                return
            data = bytes(buffer)
            buffer.clear()
        view, pos, end = memoryview(data), 0, len(data)
        self._need = _HEADER.size
        while end - pos >= _HEADER.size:
            length, kind, code, call_id = _HEADER.unpack_from(view, pos)
            start = pos + _HEADER.size
            if end - start >= length:
                pos = start + length
                self.frame(kind, code, call_id, data[start:pos])
            elif length >= _LARGE:
                payload = bytearray(length)
                payload[:end - start] = view[start:end]
                self._large = (kind, code, call_id, payload, end - start)
                return
            else:
                self._need = _HEADER.size + length
                break
        if pos < end:
            buffer += view[pos:end]

    def _fill_large(self, data: bytes) -> bytes:
        """Copy `data` into the large frame being read; what is left after it."""
        kind, code, call_id, payload, filled = self._large
        take = min(len(data), len(payload) - filled)
        payload[filled:filled + take] = memoryview(data)[:take]
        filled += take
        if filled < len(payload):
            self._large = (kind, code, call_id, payload, filled)
            return b""
        self._large = None
        self.frame(kind, code, call_id, payload)
        return data[take:]

    def frame(self, kind: int, code: int, call_id: int, payload) -> None:
        raise NotImplementedError


# -- serving ------------------------------------------------------------------------------
class _ServerConnection(_Framed):
    """One peer's connection: each request runs as a task of the server's loop."""

    def __init__(self, handlers: dict, counts, live: set):
        super().__init__()
        self.handlers = handlers  # method code -> (name, coroutine fn, decode, encode)
        self.counts = counts
        self.live = live  # the server's open connections
        self.calls: dict[int, asyncio.Task] = {}

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.live.add(self)

    def frame(self, kind: int, code: int, call_id: int, payload) -> None:
        if kind == _REQUEST:
            self.calls[call_id] = asyncio.get_running_loop().create_task(
                self._serve(code, call_id, payload))
        elif kind == _CANCEL:
            task = self.calls.pop(call_id, None)
            if task is not None:
                task.cancel()

    async def _serve(self, code: int, call_id: int, payload) -> None:
        try:
            name, fn, decode, encode = self.handlers[code]
            self.counts["served", "stream", name] += 1
            status, answer = 0, encode(await fn(decode(payload)))
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                return  # (the caller gave up or went away: nobody to answer)
            status, answer = errors.CANCELLED, b"The call was cancelled"
        except errors.OpError as e:
            status, answer = e.error_code, e.message.encode()
        except Exception as e:  # noqa: BLE001 - a server answers every call
            status, answer = _UNKNOWN, f"{type(e).__name__}: {e}".encode()
        finally:
            self.calls.pop(call_id, None)
        if not self.transport.is_closing():
            self.write(_RESPONSE, status, call_id, answer)

    def connection_lost(self, exc) -> None:
        self.live.discard(self)
        for task in self.calls.values():
            task.cancel()
        self.calls.clear()


class StreamServer:
    """The listening sockets of one server's stream and its open connections."""

    def __init__(self, servers: list, port: int, live: set):
        self.servers = servers
        self.port = port
        self.live = live

    def close(self) -> None:
        """Stop listening and close every connection (their callers: UnavailableError)."""
        for server in self.servers:
            server.close()
        for connection in list(self.live):
            connection.transport.close()


async def serve(host: str, handlers: dict, counts) -> StreamServer:
    """Listen on `host` (a free port, the same one on each of its addresses).
    `handlers`: method name -> (coroutine fn, decode, encode); `counts`: a Counter of
    ("served", "stream", method)."""
    loop = asyncio.get_running_loop()
    table = {CODES[name]: (name, *entry) for name, entry in handlers.items()}
    live: set = set()
    infos = socket.getaddrinfo(host.strip("[]") or None, 0, type=socket.SOCK_STREAM,
                               flags=socket.AI_PASSIVE)
    servers, port = [], 0
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((address[0], port) + tuple(address[2:]))
        except OSError:
            sock.close()
            if not servers:
                raise
            continue  # (another address of the host, its port taken: the first serves)
        port = sock.getsockname()[1]
        servers.append(await loop.create_server(
            lambda: _ServerConnection(table, counts, live), sock=sock))
    return StreamServer(servers, port, live)


# -- calling ------------------------------------------------------------------------------
class StreamChannel(_Framed):
    """One connection to a peer's stream port; calls multiplexed by id."""

    def __init__(self, task: str):
        super().__init__()
        self.task = task
        self.lost = False
        self._ids = itertools.count(1)
        self._calls: dict[int, asyncio.Future] = {}

    @classmethod
    async def connect(cls, host: str, port: int, task: str) -> StreamChannel:
        loop = asyncio.get_running_loop()
        _, channel = await loop.create_connection(lambda: cls(task), host.strip("[]"), port)
        return channel

    async def call(self, name: str, payload: bytes, decode, timeout: float | None):
        """The decoded answer of method `name`; a failed call raises TF's error class
        (a deadline: DeadlineExceededError; the connection lost: UnavailableError)."""
        if self.lost:
            raise self._unavailable("the connection was lost")
        loop = asyncio.get_running_loop()
        call_id = next(self._ids)
        future = self._calls[call_id] = loop.create_future()
        self.write(_REQUEST, CODES[name], call_id, payload)
        expiry = (None if timeout is None
                  else loop.call_later(timeout, self._expire, call_id))
        try:
            status, answer = await future
        except asyncio.CancelledError:
            self._give_up(call_id)
            raise
        finally:
            if expiry is not None:
                expiry.cancel()
        if status:
            raise errors.exception_type_from_error_code(status)(
                None, None, bytes(answer).decode(errors="replace"))
        return decode(answer)

    def _give_up(self, call_id: int) -> None:
        if self._calls.pop(call_id, None) is not None and not self.lost:
            self.write(_CANCEL, 0, call_id, b"")

    def _expire(self, call_id: int) -> None:
        future = self._calls.get(call_id)
        self._give_up(call_id)
        if future is not None and not future.done():
            future.set_exception(errors.DeadlineExceededError(
                None, None, f"Deadline Exceeded (task {self.task})"))

    def frame(self, kind: int, code: int, call_id: int, payload) -> None:
        future = self._calls.pop(call_id, None)
        if kind == _RESPONSE and future is not None and not future.done():
            future.set_result((code, payload))

    def connection_lost(self, exc) -> None:
        self.lost = True
        err = self._unavailable(f"the connection was lost ({exc or 'closed by the peer'})")
        for future in self._calls.values():
            if not future.done():
                future.set_exception(err)
        self._calls.clear()

    def _unavailable(self, why: str) -> errors.UnavailableError:
        return errors.UnavailableError(None, None, f"Task {self.task}: {why}")

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()
