"""What keeps `aioflow serve`'s latency tail short: connections accepted as they come
(not one a turn of the loop, as uvloop's libuv does), full collections kept short
(gc_guard.GcGuard, and the fused kernels' epilogue compiled when the model is built, so
that the server freezes numba's objects with the model's), and connections served in
turn: the predicts of one turn start longest-waiting connection first."""

from __future__ import annotations

import asyncio
import gc
import socket
import time

import numpy as np
import pytest
from kernel_testutil import create

from aioflow.kernels.nn import epilogue_jit
from aioflow.serving.gc_guard import GcGuard
from aioflow.serving.http_server import HttpServer, _Connection

uvloop = pytest.importorskip("uvloop")


class _StatusApi:
    """The least a RestApi offers the HTTP server: GET answers at once."""

    max_request_bytes = 1 << 20

    def get_model(self, request):
        return 200, b'{"model":"%s"}' % request.tail.encode(), b"application/json"


def _spin(loop, busy: list, seconds: float) -> None:
    """Keep the loop busy: each turn lasts `seconds` longer (a loaded server's turns)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    if busy:
        loop.call_soon(_spin, loop, busy, seconds)


@pytest.mark.parametrize("loop_factory", [uvloop.new_event_loop, asyncio.new_event_loop],
                         ids=["uvloop", "asyncio"])
def test_a_burst_of_connections_is_accepted_in_one_turn(loop_factory):
    """32 clients connect at once to a busy server: all are accepted within a few turns of
    its loop (libuv accepted one a turn: 32 turns, ~0.2 s at c=64 under load), then each
    is answered."""
    async def main():
        http = HttpServer(_StatusApi())
        port = await http.start("127.0.0.1", 0)
        loop = asyncio.get_running_loop()
        busy = [True]
        _spin(loop, busy, 0.003)
        socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(32)]
        try:
            turns = 0
            while len(http.connections) < 32 and turns < 100:
                await asyncio.sleep(0)
                turns += 1
            busy.clear()
            assert turns <= 4, f"32 connections took {turns} turns to be accepted"
            for i, s in enumerate(socks):
                s.sendall(b"GET /v1/models/m%d HTTP/1.1\r\nHost: x\r\n\r\n" % i)
            for i, s in enumerate(socks):
                s.setblocking(False)
                data = b""
                while b'"}' not in data:
                    try:
                        data += s.recv(4096)
                    except BlockingIOError:
                        await asyncio.sleep(0.001)
                assert data.startswith(b"HTTP/1.1 200 OK") and data.endswith(
                    b'{"model":"m%d"}' % i), data
        finally:
            busy.clear()
            for s in socks:
                s.close()
            await http.stop(1.0)
        assert not http.connections
        with pytest.raises(OSError):  # the port is closed
            socket.create_connection(("127.0.0.1", port), timeout=1).close()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main())


async def test_gc_guard_freezes_after_a_slow_full_collection_only():
    loop = asyncio.get_running_loop()
    frozen = gc.get_freeze_count()
    slow = GcGuard(loop, threshold_s=0.0).install()  # every full collection is "slow"
    never = GcGuard(loop, threshold_s=3600.0).install()
    try:
        keep = [[i] for i in range(20000)]  # long-lived objects made after a freeze
        gc.collect(0)
        gc.collect(1)
        await asyncio.sleep(0)
        assert slow.freezes == 0  # younger generations do not count
        gc.collect(2)
        assert slow.freezes == 0  # not in the collector's callback: on the loop
        await asyncio.sleep(0)
        assert slow.freezes == 1 and never.freezes == 0
        assert gc.get_freeze_count() >= frozen + len(keep)
        gc.collect(2)
        gc.collect(2)  # two before the loop turns: one freeze
        await asyncio.sleep(0)
        assert slow.freezes == 2
    finally:
        slow.uninstall()
        never.uninstall()
        gc.unfreeze()  # (other tests count what is frozen)
    assert slow not in gc.callbacks and never not in gc.callbacks


@pytest.mark.parametrize("op, w, attrs", [
    ("_FusedMatMul", np.ones((3, 4), np.float32), {}),
    ("_FusedConv2D", np.ones((1, 1, 3, 4), np.float32),
     {"strides": [1, 1, 1, 1], "padding": "SAME"}),
])
@pytest.mark.parametrize("act, compiles", [("Relu", True), ("Relu6", True), ("Tanh", False),
                                           (None, True)])
def test_fused_kernel_build_starts_the_epilogue_compile(monkeypatch, op, w, attrs, act,
                                                        compiles):
    """Building a fused kernel whose epilogue the compiled loop takes starts its compile
    (a model server's load, before it freezes what it loaded), not its first call."""
    if act == "Tanh" and op != "_FusedMatMul":
        pytest.skip("Tanh is fused into MatMul only")
    requested = []
    monkeypatch.setattr(epilogue_jit, "compile_in_background", lambda: requested.append(1))
    x = np.ones((2, 3) if op == "_FusedMatMul" else (1, 2, 2, 3), np.float32)
    fused = ["BiasAdd"] + ([act] if act else [])
    kernel = create(op, [x, w, np.zeros(4, np.float32)], fused_ops=fused, num_args=1,
                    **attrs)
    # (the oneDNN backend's convolutions fuse the chain as post-ops: nothing to compile)
    compiles = compiles and getattr(kernel, "compiles_epilogue", True)
    assert bool(requested) == (compiles and epilogue_jit.available())
    requested.clear()
    create(op, [x.astype(np.float16), w.astype(np.float16), np.zeros(4, np.float16)],
           fused_ops=fused, num_args=1, **attrs)
    assert not requested  # half floats take NumPy's passes


def test_wait_started_waits_for_a_started_compile_only(monkeypatch):
    import threading

    for name, value in (("_ready", threading.Event()), ("_finished", threading.Event()),
                        ("_started", False)):
        monkeypatch.setattr(epilogue_jit, name, value)
    began = time.perf_counter()
    assert not epilogue_jit.wait_started(5.0)  # none started: no wait
    assert time.perf_counter() - began < 1.0
    monkeypatch.setattr(epilogue_jit, "_started", True)

    def finish():
        time.sleep(0.2)
        epilogue_jit._ready.set()
        epilogue_jit._finished.set()

    threading.Thread(target=finish).start()
    assert epilogue_jit.wait_started(10.0)
    assert time.perf_counter() - began >= 0.2


class _PredictApi(_StatusApi):
    """Answers every predict at once, noting the order the predicts started in."""

    def __init__(self):
        self.started: list[str] = []

    async def post_model(self, request):
        self.started.append(request.tail)
        return 200, b"{}", b"application/json"


class _Transport:
    """What a connection asks of its transport, keeping what it writes."""

    def __init__(self):
        self.written, self.closed = [], False

    def write(self, data):
        self.written.append(bytes(data))

    def writelines(self, parts):
        self.written.append(b"".join(parts))

    def get_extra_info(self, name):
        return ("127.0.0.1", 1)

    def is_closing(self):
        return self.closed

    def close(self):
        self.closed = True

    abort = close


def _connections(http, n):
    conns = []
    for _ in range(n):
        conn = _Connection(http)
        conn.connection_made(_Transport())
        conns.append(conn)
    return conns


def _post(name: str) -> bytes:
    return b"POST /v1/models/%s:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}" % (
        name.encode())


async def test_a_turns_predicts_start_longest_waiting_first():
    """Four requests come in one turn (one poll reports them in the order c0..c3); c3's
    connection has waited longest since its last answer, c1's least. c0, the turn's
    first, starts at once (a lone request loses no turn); the others start in the next
    turn, c3 first: epoll's order would put a connection answered late last again and
    again."""
    api = _PredictApi()
    http = HttpServer(api)
    conns = _connections(http, 4)
    now = time.monotonic()
    for conn, waited in zip(conns, (0.002, 0.001, 0.003, 0.009), strict=True):
        conn.since = now - waited
    for i, conn in enumerate(conns):  # one turn's data_received calls
        conn.data_received(_post(f"c{i}"))
    assert api.started == []  # (the tasks' first steps come in a later turn)
    for _ in range(4):
        await asyncio.sleep(0)
    assert api.started == ["c0:predict", "c3:predict", "c2:predict", "c1:predict"]
    for conn in conns:
        assert conn.task is None
        assert conn.transport.written and conn.transport.written[0].startswith(
            b"HTTP/1.1 200 OK")


async def test_a_predict_waiting_in_its_line_is_dropped_when_its_client_goes():
    """A connection lost while its predict waits for the turn's line never starts it."""
    api = _PredictApi()
    http = HttpServer(api)
    first, gone, kept = _connections(http, 3)
    first.data_received(_post("first"))
    gone.data_received(_post("gone"))
    kept.data_received(_post("kept"))
    gone.connection_lost(None)
    for _ in range(4):
        await asyncio.sleep(0)
    assert api.started == ["first:predict", "kept:predict"]
    assert gone.task is None and not gone.transport.written
    assert kept.task is None and kept.transport.written


async def test_the_next_turns_first_predict_starts_at_once_again():
    """After the line has started, a new request is again a turn's first: it is not
    held for a line of its own."""
    api = _PredictApi()
    http = HttpServer(api)
    a, b = _connections(http, 2)
    a.data_received(_post("a"))
    b.data_received(_post("b"))
    for _ in range(3):
        await asyncio.sleep(0)
    assert api.started == ["a:predict", "b:predict"]
    a.data_received(_post("a2"))
    assert isinstance(a.task, asyncio.Task)  # started at once, not in a line
    await asyncio.sleep(0)
    assert api.started[-1] == "a2:predict"
