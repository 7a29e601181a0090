"""What keeps `aioflow serve`'s latency tail short: connections accepted as they come
(not one a turn of the loop, as uvloop's libuv does), full collections kept short
(gc_guard.GcGuard, and the fused kernels' epilogue compiled when the model is built, so
that the server freezes numba's objects with the model's), and connections served in
turn."""

from __future__ import annotations

import asyncio
import gc
import socket
import time

import numpy as np
import pytest
from aioflow.kernels import epilogue_jit
from kernel_testutil import create

from aioflow.serving.gc_guard import GcGuard
from aioflow.serving.http_server import HttpServer

uvloop = pytest.importorskip("uvloop")


class _StatusApi:
    """The least a RestApi offers the HTTP server: GET answers at once."""

    max_request_bytes = 1 << 20

    def get(self, tail: str, path: str):
        return 200, b'{"model":"%s"}' % tail.encode()


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
    create(op, [x, w, np.zeros(4, np.float32)], fused_ops=fused, num_args=1, **attrs)
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
