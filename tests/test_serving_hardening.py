"""`aioflow serve` under hostile clients and untrusted model directories (issue 30): each
test reproduces one finding against the real server over real sockets (raw bytes where
the finding is about HTTP itself) and checks what TF Serving, or a well-kept HTTP server,
does instead."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import aioflow as af

pytest.importorskip("aiohttp")
pytest.importorskip("grpc")
pytest.importorskip("httptools")

from test_serving import (  # noqa: E402
    DATA,
    REPO,
    exchange,
    free_port,
    mlp_numpy,
    models,  # noqa: F401  (the fixture)
    post,
    read_response,
    start,
    write_mlp,
)

from aioflow.serving.model_registry import list_versions  # noqa: E402

SMALL = json.dumps({"instances": [[1.0] * 8]}).encode()
RNG_BIG = np.random.default_rng(11)


async def _status_of(port: int, data: bytes) -> tuple[int, bytes, bool]:
    """Send raw bytes; (status, body, whether a second answer followed the first)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        status, _, body = await read_response(reader)
        try:
            rest = await asyncio.wait_for(reader.read(), 5)
        except (ConnectionError, TimeoutError):
            rest = b""
        return status, body, rest.startswith(b"HTTP/")
    finally:
        writer.close()


# Each is a request a front proxy could read differently from the server (smuggling):
# the server must answer 400 and never answer a second, smuggled request.
SMUGGLING = {
    "bare LF in a chunk extension": (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
        b"\r\n\r\n25;a\nbcd\r\n" + b"x" * 0x25 + b"\r\n0\r\n\r\n"),
    "whitespace around a chunk size": (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
        b"\r\n\r\n 25 \r\n" + b"x" * 0x25 + b"\r\n0\r\n\r\n"),
    "LF before a chunk size": (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
        b"\r\n\r\n\n25\r\n" + b"x" * 0x25 + b"\r\n0\r\n\r\n"),
    "bare LF in a header value": (
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\nContent-Length: 45\r\n\r\n"
        + b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n" + b"x" * 4),
    "bare CR in a header value": (
        b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\rX: y\r\n\r\n"),
    "NUL in a header value": b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\x00y\r\n\r\n",
    "whitespace in a field name": b"GET /v1/models/mlp HTTP/1.1\r\nHost : x\r\n\r\n",
    "NUL in a field name": b"GET /v1/models/mlp HTTP/1.1\r\nHo\x00st: x\r\n\r\n",
    "HTTP/1.1 without Host": b"GET /v1/models/mlp HTTP/1.1\r\n\r\n",
    "two Host headers": b"GET /v1/models/mlp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
}


@pytest.mark.parametrize("front", ["native", "aiohttp"])
async def test_smuggling_shapes_are_answered_400(models, front):  # noqa: F811
    c = await start(models, rest_api_server=front)
    try:
        port = c.server.rest_port
        for case, data in SMUGGLING.items():
            status, body, second = await _status_of(port, data)
            assert status == 400 and not second, (case, status, body)
            if front == "native":
                assert json.loads(body)["error"], case
        # and the server serves on
        (status, _, _), = await exchange(port, post("/v1/models/mlp:predict", SMALL), 1)
        assert status == 200
    finally:
        await c.close()


async def test_header_count_is_capped_and_duplicates_merge_in_linear_time(models):  # noqa: F811
    """129 fields: 431 (aiohttp's cap is 128). 128 duplicates of 500 bytes each: merged
    in linear time (pipelined heads of them were 34-52 ms each)."""
    c = await start(models)
    try:
        port = c.server.rest_port
        many = b"".join(b"X-%d: v\r\n" % i for i in range(129))
        status, body, _ = await _status_of(
            port, b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
        assert status == 431 and b"Too many header fields" in body
        dup = b"X-Dup: " + b"d" * 500 + b"\r\n"
        head = b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n" + dup * 120 + b"\r\n"
        began = time.perf_counter()
        answers = await exchange(port, head * 50, 50)
        assert [a[0] for a in answers] == [200] * 50
        assert time.perf_counter() - began < 5.0
    finally:
        await c.close()


async def test_pipelined_requests_yield_the_loop_between_them(models):  # noqa: F811
    """200 pipelined requests in one write are answered a turn each: a probe on another
    connection is answered before the pile is through."""
    c = await start(models)
    try:
        port = c.server.rest_port
        pile = b"GET /v1/models/mlp/metadata HTTP/1.1\r\nHost: x\r\n\r\n" * 400
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        probe = await asyncio.open_connection("127.0.0.1", port)
        writer.write(pile)
        await asyncio.sleep(0)
        probe[1].write(b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = await read_response(probe[0])
        assert status == 200
        conn = next(conn for conn in c.server._http.connections if conn.requests)
        assert conn.requests, "the probe waited for the whole pile"
        for _ in range(400):
            await read_response(reader)
        writer.close()
        probe[1].close()
    finally:
        await c.close()


# -- bad JSON ----------------------------------------------------------------------------

@pytest.mark.parametrize("front", ["native", "aiohttp"])
async def test_bad_json_is_400_and_counted_invalid_argument(models, front):  # noqa: F811
    c = await start(models, rest_api_server=front)
    try:
        bodies = {
            "nested past orjson's limit": b"[" * 5000 + b"]" * 5000,
            "nested past Python's recursion": b'{"instances": ' + b"[" * 1020 + b"1.0"
                                              + b"]" * 1020 + b"}",
            "NaN and nested past Python's": b'{"instances": ' + b"[" * 3000 + b"NaN"
                                            + b"]" * 3000 + b"}",
            "signature_name an array": b'{"signature_name": [1], "instances": [[1]]}',
            "signature_name an object": b'{"signature_name": {"a": 1}, "instances": [[1]]}',
        }
        for case, body in bodies.items():
            status, answer = await asyncio.wait_for(
                c.post("/v1/models/mlp:predict", body), 10)
            assert status == 400, (case, answer)
            assert "Traceback" not in answer["error"] and "Recursion" not in answer["error"]
        status, answer = await c.post("/v1/models/mlp:classify",
                                      b'{"signature_name": [1], "examples": []}')
        assert status == 400 and "'signature_name' key must be a string" in answer["error"]
        assert await c.metric("aioflow_serving_requests_total", model_name="mlp",
                              status="INVALID_ARGUMENT") == len(bodies) + 1
    finally:
        await c.close()


# -- metrics -----------------------------------------------------------------------------

async def test_metric_labels_name_only_what_is_served(models):  # noqa: F811
    """Made-up model and signature names add no series (they are counted as
    "(unknown)"), and the page is rendered off the loop."""
    c = await start(models)
    try:
        for i in range(50):
            await c.post(f"/v1/models/nosuch{i}:predict", SMALL)
            await c.post("/v1/models/mlp:predict",
                         {"signature_name": f"made_up_{i}", "instances": [[1.0] * 8]})
        await c.post("/v1/models/mlp:predict", SMALL)
        metrics = c.server.service.metrics
        threads = []
        expose = metrics.expose
        metrics.expose = lambda: threads.append(threading.current_thread()) or expose()
        _, text = await c.get("/monitoring/prometheus/metrics")
        assert threads and threads[0] is not threading.main_thread()
        assert "nosuch" not in text and "made_up" not in text
        assert await c.metric("aioflow_serving_requests_total", model_name="(unknown)",
                              status="NOT_FOUND") == 50
        assert await c.metric("aioflow_serving_requests_total", model_name="mlp",
                              signature_name="(unknown)") == 50
        assert await c.metric("aioflow_serving_requests_total", model_name="mlp",
                              signature_name="serving_default", status="OK") == 1
        assert len(c.server.service._children) < 10
    finally:
        await c.close()


# -- version directories -----------------------------------------------------------------

async def test_version_directories_are_ascii_digits(tmp_path):
    """"²" and "١" are not versions (TF Serving parses ASCII digits): the server starts
    and serves version 2; a "²" appearing later does not stop the polls."""
    write_mlp(tmp_path / "mlp" / "2")
    (tmp_path / "mlp" / "\u00b2").mkdir()
    (tmp_path / "mlp" / "\u0661").mkdir()  # (ARABIC-INDIC DIGIT ONE)
    (tmp_path / "mlp" / ("9" * 30)).mkdir()  # past int64
    assert list_versions(str(tmp_path / "mlp")) == [2]
    from test_serving import configs

    c = await start([configs(tmp_path)[0]])
    try:
        status, body = await c.get("/v1/models/mlp")
        assert status == 200 and [v["version"] for v in body["model_version_status"]] == ["2"]
        write_mlp(tmp_path / "mlp" / "3")
        await c.server.registry.poll_once()
        status, body = await c.get("/v1/models/mlp")
        assert body["model_version_status"][0]["version"] == "3"
        status, body = await c.get("/v1/models/mlp/versions/\u00b2")
        assert status == 400 and "Failed to convert version" in body["error"]
    finally:
        await c.close()


# -- shape errors ------------------------------------------------------------------------

async def test_rest_shape_errors_speak_of_the_request(tmp_path):
    """A TF 2 SavedModel fed the wrong shape: 400 saying which input and which shapes,
    not the tf.function binding text (which quoted the arrays and the function)."""
    shutil.copytree(DATA / "saved_model_v2" / "mlp", tmp_path / "m" / "1")
    from aioflow.serving.model_registry import ModelConfig

    c = await start([ModelConfig("m", str(tmp_path / "m"))])
    try:
        _, meta = await c.get("/v1/models/m/metadata")
        sig = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]
        (key, info), = sig["inputs"].items()
        dims = [int(d["size"]) for d in info["tensor_shape"]["dim"]]
        wrong = [[1.0] * (dims[-1] + 1)]
        status, body = await c.post("/v1/models/m:predict", {"instances": wrong})
        expected = "[" + ",".join("?" if d < 0 else str(d) for d in dims) + "]"
        assert status == 400 and body["error"] == (
            f"input {key!r} has shape [1,{dims[-1] + 1}], which the signature's "
            f"{expected} does not admit")
    finally:
        await c.close()


# -- slow and stalled clients --------------------------------------------------------------

def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_idle(pid: int, timeout_s: float = 60.0) -> None:
    """Until the process has used no CPU for 0.3 s."""
    deadline = time.monotonic() + timeout_s
    last = _cpu_ticks(pid)
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = _cpu_ticks(pid)
        if now == last:
            return
        last = now


@pytest.mark.parametrize("front", ["native", "aiohttp"])
def test_a_slowloris_crowd_cannot_lock_new_clients_out(tmp_path, front):
    """A server limited to 256 descriptors; 300 connections that send half a head, 300
    that send a head announcing a body and then nothing, 50 that ask for large answers
    and never read: a fresh client's predict is still answered within 2 s, and the
    server's descriptors stay under its limit."""
    write_mlp(tmp_path / "mlp" / "1")
    grpc_port, rest_port = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    limit = 256

    def limit_fds():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    proc = subprocess.Popen(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", "mlp",
         "--model_base_path", str(tmp_path / "mlp"), "--inputs", "x", "--outputs", "probs",
         "--port", str(grpc_port), "--rest_api_port", str(rest_port), "--host", "127.0.0.1",
         "--access_log", "false", "--rest_api_server", front],
        env=env, stderr=subprocess.PIPE, text=True, preexec_fn=limit_fds)
    crowd: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "REST on" not in line:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "server exited"
            assert time.monotonic() < deadline
        big = json.dumps({"instances": [[0.5] * 8] * 2000}).encode()
        waves = ([b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\nX-Slow: "] * 300
                 + [b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Length: 1000\r\n\r\n{"] * 300
                 + [post("/v1/models/mlp:predict", big) * 4] * 50)
        for data in waves:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # (reads nothing)
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", rest_port))
                s.setblocking(False)
                try:
                    s.send(data)
                except (BlockingIOError, ConnectionError):
                    pass
            except OSError:
                pass  # refused or reset at the cap: allowed
            crowd.append(s)
        _wait_idle(proc.pid)  # (the never-reading clients' predicts computed)
        began = time.monotonic()
        with socket.create_connection(("127.0.0.1", rest_port), timeout=2) as fresh:
            fresh.sendall(post("/v1/models/mlp:predict", SMALL))
            answer = b""
            while b"predictions" not in answer or not answer.endswith(b"}"):
                chunk = fresh.recv(65536)
                assert chunk, (answer, proc.stderr.read(3000) if proc.poll() else _fds(proc.pid))
                answer += chunk
        took = time.monotonic() - began
        assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        np.testing.assert_allclose(body["predictions"], mlp_numpy(np.ones((1, 8))),
                                   rtol=1e-5)
        assert took < 2.0, took
        assert _fds(proc.pid) < limit
    finally:
        for s in crowd:
            s.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


async def test_stalled_bodies_and_unread_answers_time_out(models):  # noqa: F811
    """A head announcing a body that never comes is closed after body_timeout_s; a
    connection whose answer the client does not read (its transport's buffer full:
    writing paused) is dropped after write_timeout_s."""
    c = await start(models)
    try:
        http = c.server._http
        http.body_timeout_s = http.write_timeout_s = 0.3
        port = c.server.rest_port
        stalled = await asyncio.open_connection("127.0.0.1", port)
        stalled[1].write(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Length: 100\r\n\r\n{")
        unread = await asyncio.open_connection("127.0.0.1", port)
        unread[1].write(b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n")
        await read_response(unread[0])
        conn, = [conn for conn in http.connections if conn.since and not conn.incoming]
        conn.pause_writing()  # (as its transport says when its buffer is full)
        began = time.monotonic()
        assert await asyncio.wait_for(stalled[0].read(), 5) == b""
        try:  # (aborted: a reset, or an end)
            assert await asyncio.wait_for(unread[0].read(), 5) == b""
        except ConnectionError:
            pass
        assert time.monotonic() - began < 2.0 and not http.connections
        stalled[1].close()
        unread[1].close()
    finally:
        await c.close()


# -- gRPC ----------------------------------------------------------------------------------

def _predict_request(model: str, **protos):
    from aioflow.proto.serving import predict_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model
    for key, proto in protos.items():
        request.inputs[key].CopyFrom(proto)
    return request


async def test_grpc_tensors_are_checked_before_they_are_decoded(models, monkeypatch):  # noqa: F811
    """A TensorProto declaring far more than it carries is refused before anything is
    allocated (a 20-byte message declared 512 MiB); raw content of the wrong size is
    refused as TF's parsing refuses it; strings are decoded at C speed."""
    import grpc

    from aioflow.framework import tensor_util
    from aioflow.proto import tensor_pb2, types_pb2
    from aioflow.proto.serving import predict_pb2

    c = await start(models)
    try:
        predict = c.rpc("PredictionService", "Predict", predict_pb2.PredictRequest,
                        predict_pb2.PredictResponse)
        decoded = []
        make_ndarray = tensor_util.make_ndarray
        monkeypatch.setattr(tensor_util, "make_ndarray",
                            lambda proto: decoded.append(proto) or make_ndarray(proto))

        async def code_of(request):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await predict(request, timeout=10)
            return info.value.code(), info.value.details()

        huge = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[1.0])
        huge.tensor_shape.dim.add(size=1 << 25)
        huge.tensor_shape.dim.add(size=4)
        assert len(huge.SerializeToString()) < 32
        code, details = await code_of(_predict_request("mlp", x=huge))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(
            "tensor parsing error: x (1 values for 134217728 elements")
        short = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_content=b"\0" * 12)
        short.tensor_shape.dim.add(size=1)
        short.tensor_shape.dim.add(size=8)
        code, details = await code_of(_predict_request("mlp", x=short))
        assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT,
                                   "tensor parsing error: x (12 bytes of content for 8 "
                                   "elements of 4 bytes)")
        wrong = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[b"a"])
        code, details = await code_of(_predict_request("mlp", x=wrong))
        assert (code, details) == (grpc.StatusCode.INVALID_ARGUMENT,
                                   "Expects arg[0] to be float but string is provided")
        assert decoded == []
        # TF's fill rule still holds within the limit: one value for eight
        fill = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=[0.5])
        fill.tensor_shape.dim.add(size=1)
        fill.tensor_shape.dim.add(size=8)
        response = await predict(_predict_request("mlp", x=fill), timeout=10)
        np.testing.assert_allclose(make_ndarray(response.outputs["probs"]),
                                   mlp_numpy(np.full((1, 8), 0.5)), rtol=1e-5)
    finally:
        await c.close()


def test_string_tensor_content_decodes_without_a_python_loop():
    """Four million strings in tensor_content (TF's varint-framed encoding) decode in
    well under the time a per-element Python loop took, and exactly."""
    from aioflow.framework import tensor_util
    from aioflow.proto import tensor_pb2, types_pb2

    n = 1 << 22
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                   tensor_content=b"\x00" * n)
    proto.tensor_shape.dim.add(size=n)
    began = time.perf_counter()
    got = tensor_util.make_ndarray(proto)
    assert got.shape == (n,) and got[0] == b"" and got[-1] == b""
    assert time.perf_counter() - began < 2.0
    values = [b"", b"a", b"\x00\xff" * 100, b"z" * 300, b"q"]
    lengths = b"".join(bytes([len(v)]) if len(v) < 128 else
                       bytes([len(v) & 0x7F | 0x80, len(v) >> 7]) for v in values)
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING,
                                   tensor_content=lengths + b"".join(values))
    proto.tensor_shape.dim.add(size=len(values))
    assert tensor_util.make_ndarray(proto).tolist() == values
    for bad in (proto.tensor_content[:-1], proto.tensor_content + b"x"):
        proto.tensor_content = bad
        with pytest.raises(ValueError, match="bad string tensor_content"):
            tensor_util.make_ndarray(proto)


async def test_grpc_calls_that_arrived_before_a_stop_finish(models):  # noqa: F811
    """128 Predicts sent at once, the server stopped as the first is handled (what
    SIGTERM does): every one is answered, none CANCELLED."""
    from aioflow.framework import tensor_util
    from aioflow.proto.serving import predict_pb2

    c = await start(models)
    try:
        predict = c.rpc("PredictionService", "Predict", predict_pb2.PredictRequest,
                        predict_pb2.PredictResponse)
        request = _predict_request(
            "spin", n=tensor_util.make_tensor_proto(np.int32([200])))
        api = c.server._grpc_api
        calls = [asyncio.ensure_future(predict(request, timeout=30)) for _ in range(128)]
        while api.calls_started == 0:
            await asyncio.sleep(0.001)
        await c.server.stop()
        answers = await asyncio.gather(*calls, return_exceptions=True)
        failed = [a for a in answers if isinstance(a, Exception)]
        assert not failed, f"{len(failed)} of 128 failed: {failed[0]!r}"
        assert all(tensor_util.make_ndarray(a.outputs["out"]).tolist() == [200]
                   for a in answers)
    finally:
        await c.close()


async def test_aiohttp_front_end_times_out_stalled_heads_and_bodies(models):  # noqa: F811
    """The same deadlines on the aiohttp front end (connection_guard.py): a head that
    never ends and a body that never comes are closed; a client that keeps asking is
    answered on."""
    c = await start(models, rest_api_server="aiohttp")
    try:
        guard = c.server._guard
        guard.head_timeout_s = guard.body_timeout_s = 0.3
        port = c.server.rest_port
        head = await asyncio.open_connection("127.0.0.1", port)
        head[1].write(b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\nX-Slow: a")
        body = await asyncio.open_connection("127.0.0.1", port)
        body[1].write(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: 100\r\n\r\n{")
        began = time.monotonic()
        for reader, _ in (head, body):
            try:
                assert await asyncio.wait_for(reader.read(), 5) == b""
            except ConnectionError:
                pass
        assert time.monotonic() - began < 2.0
        (status, _, _), = await exchange(port, post("/v1/models/mlp:predict", SMALL), 1)
        assert status == 200
        for _, writer in (head, body):
            writer.close()
    finally:
        await c.close()


# -- kernels built before serving; no path in an answer ------------------------------------

def test_the_compiled_epilogue_never_compiles_after_its_warm_up():
    """Once compiled for float32 and float64 the epilogue's loop compiles nothing more: a
    call it has no signature for (a strided bias) runs NumPy's passes instead of
    compiling, which opened numba's cache files (at the descriptor limit: an OSError and
    a 500 for every predict)."""
    from aioflow.kernels.nn import epilogue_jit
    from aioflow.kernels.nn.fused_kernels import Epilogue

    if not epilogue_jit.available():
        pytest.skip("numba is not installed")
    assert epilogue_jit.wait_ready(120)
    dispatcher = epilogue_jit._compiled._compiled
    signatures = list(dispatcher.signatures)
    strided = np.arange(6, dtype=np.float32)[::2]
    block = np.full((2, 3), -1.0, np.float32)
    Epilogue(None, strided, None, None)(block)  # (no activation: bias only)
    np.testing.assert_array_equal(block, np.full((2, 3), -1.0) + strided)
    assert list(dispatcher.signatures) == signatures


def test_a_version_is_served_only_once_its_kernels_are_compiled(tmp_path):
    """A fresh process loading a version whose graph fuses MatMul, BiasAdd and Relu:
    when load_servable returns, the fused epilogue is compiled (the first request
    compiles nothing)."""
    script = f"""
import asyncio, numpy as np
import aioflow as af
from aioflow.kernels.nn import epilogue_jit
from aioflow.serving.loader import LoadOptions, load_servable
g = af.Graph()
with g.as_default():
    x = af.placeholder(af.float32, [None, 4], name="x")
    y = af.nn.relu(af.nn.bias_add(af.matmul(x, af.constant(np.ones((4, 4), np.float32))),
                                  af.constant(np.ones(4, np.float32))), name="y")
import pathlib
p = pathlib.Path({str(tmp_path)!r}) / "1"
p.mkdir()
(p / "m.pb").write_bytes(g.as_graph_def().SerializeToString())
assert not epilogue_jit.ready()
servable = asyncio.run(load_servable(p, LoadOptions(inputs=(("x", "x:0"),),
                                                     outputs=(("y", "y:0"),))))
print("READY", epilogue_jit.ready())
"""
    if not __import__("aioflow.kernels.jit", fromlist=["ENABLED"]).ENABLED:
        pytest.skip("numba is not installed")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert "READY True" in proc.stdout, proc.stdout + proc.stderr[-3000:]


async def test_an_internal_error_names_no_path_of_the_server(tmp_path):
    """A request failing with an OSError of the server's own files: 500, the error
    class named, the path not."""
    from aioflow.serving.loader import function_servable
    from aioflow.serving.model_registry import ModelConfig

    class Spec:
        def __init__(self, dims, name):
            self.shape, self.dtype, self.name = af.TensorShape(dims), af.float32, name

    class Failing:
        structured_input_signature = ((), {"x": Spec([None, 2], "x")})
        structured_outputs = {"y": Spec([None, 2], "y")}

        async def __call__(self, *, x):
            raise OSError(24, "Too many open files",
                          "/opt/venv/lib/python3.11/site-packages/numba/cache/x.nbi")

    async def loader(path, options):
        return function_servable({"serving_default": Failing()})

    (tmp_path / "f" / "1").mkdir(parents=True)
    c = await start([ModelConfig("f", str(tmp_path / "f"), loader=loader)])
    try:
        status, body = await c.post("/v1/models/f:predict", {"instances": [[1.0, 2.0]]})
        assert status == 500 and body["error"].startswith("OSError: [Errno 24] Too many")
        assert "/opt" not in body["error"] and "<path>" in body["error"]
    finally:
        await c.close()


# -- big bodies ----------------------------------------------------------------------------

async def test_big_bodies_are_parsed_and_formatted_outside_the_servers_process(
        models, monkeypatch):  # noqa: F811
    """A predict of 40,000 rows (3 MB of JSON): its body is parsed, and its answer
    formatted, in the worker process (json_worker.py), so the C calls that hold the GIL
    for the whole body (orjson, NumPy's conversion of nested lists) never stop the
    loop, nor grow the server's memory; small predicts are answered meanwhile."""
    from aioflow.serving import rest_codec

    c = await start(models)
    try:
        loads, format_predict = rest_codec.loads, rest_codec.format_predict

        def small_loads(body):
            assert len(body) < 1 << 20, "a large body parsed in the server's process"
            return loads(body)

        def small_format(outputs, fmt):
            assert sum(a.size for a in outputs.values()) < 1 << 16, "formatted in-process"
            return format_predict(outputs, fmt)

        monkeypatch.setattr(rest_codec, "loads", small_loads)
        monkeypatch.setattr(rest_codec, "format_predict", small_format)
        x = RNG_BIG.standard_normal((40000, 8)).astype(np.float32)
        big = asyncio.ensure_future(c.post("/v1/models/mlp:predict",
                                           {"instances": x.tolist()}))
        answered_meanwhile = 0
        while not big.done():
            status, _ = await c.post("/v1/models/mlp:predict", SMALL)
            assert status == 200
            answered_meanwhile += not big.done()
        status, body = await big
        assert status == 200, body
        np.testing.assert_allclose(body["predictions"][-3:], mlp_numpy(x[-3:]), rtol=1e-4,
                                   atol=1e-5)
        assert answered_meanwhile > 0
        # a body that is not JSON, and one naming no signature served: the worker's
        # errors are the same answers
        status, body = await c.post("/v1/models/mlp:predict", b"[" * (2 << 20))
        assert status == 400 and "JSON Parse error" in body["error"]
        status, body = await c.post("/v1/models/mlp:predict", {
            "signature_name": "nope", "instances": x[:20000].tolist()})
        assert (status, body["error"]) == (
            400, 'Serving signature name: "nope" not found in signature def')
    finally:
        await c.close()


# -- many bad requests ---------------------------------------------------------------------

def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _bad_requests():
    """Bad requests of every kind, as (bytes, pipelinable): malformed HTTP (smuggling
    shapes, too many fields, bad lengths: each closes its connection) and well-formed
    requests the API refuses (bad JSON, deep nesting, made-up models, signatures and
    versions, wrong types, oversize: kept alive, pipelined)."""
    malformed = [data for data in SMUGGLING.values()] + [
        b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n" + b"X-A: 1\r\n" * 129 + b"\r\n",
        b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n",
        b"HELLO\r\n\r\n", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n"]
    bodies = [b"[" * 5000, b"{", b'{"instances": "x"}', b'{"signature_name": [1]}',
              b'{"instances": [[1, 2]]}', b'{"inputs": {"nope": [1]}}',
              b'{"instances": [[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, "a"]]}']
    api = [post(f"/v1/models/{name}:predict", body) for name in
           ("mlp", "nosuch", "mlp/versions/9", "mlp/labels/nope") for body in bodies]
    api += [b"GET /v1/models/nosuch%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(3)]
    api += [post("/v1/models/mlp:predict", b'{"signature_name": "made_up_%d", '
                 b'"instances": [[1,1,1,1,1,1,1,1]]}' % i) for i in range(3)]
    return malformed, api


def _whole(got: bytes) -> bool:
    """Whether the last answer in `got` has all of its body."""
    head, sep, body = got.rpartition(b"HTTP/")[2].partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return bool(sep) and len(body) >= length


@pytest.mark.skipif(not os.environ.get("AIOFLOW_SOAK"), reason="a soak (AIOFLOW_SOAK=1)")
@pytest.mark.parametrize("front", ["native", "aiohttp"])
def test_ten_thousand_bad_requests_leave_nothing_behind(tmp_path, front):
    """10,000 bad requests of every kind (after 1,000 to warm up): the server's RSS
    within 20 MB of where it was, its descriptors as they were, every answer a 4xx
    naming the problem, never a 500, a path or a traceback."""
    write_mlp(tmp_path / "mlp" / "1")
    rest_port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", "mlp",
         "--model_base_path", str(tmp_path / "mlp"), "--inputs", "x", "--outputs", "probs",
         "--port", str(free_port()), "--rest_api_port", str(rest_port), "--host",
         "127.0.0.1", "--access_log", "false", "--rest_api_server", front,
         "--max_request_bytes", "100000"],
        env=dict(os.environ, PYTHONPATH=str(REPO)), stderr=subprocess.PIPE, text=True)
    malformed, api = _bad_requests()
    statuses: dict = {}

    def send(data: bytes, answers: int) -> None:
        with socket.create_connection(("127.0.0.1", rest_port), timeout=30) as s:
            s.sendall(data)
            got = b""
            while got.count(b"HTTP/") < answers or not _whole(got):
                try:
                    chunk = s.recv(1 << 16)
                except TimeoutError:
                    raise AssertionError(f"no answer to {data[:200]!r}: {got[:300]!r}") \
                        from None
                if not chunk:
                    break
                got += chunk
        n = 0
        for part in got.split(b"HTTP/")[1:]:  # (aiohttp echoes the request's version)
            status = int(part.split(b" ")[1][:3])
            statuses[status] = statuses.get(status, 0) + 1
            assert status != 500 and (status < 500 or status == 505), part[:300]
            assert b"Traceback" not in part and b"/site-packages" not in part, part[:300]
            n += 1
        assert n == answers, (n, answers, got[:300])

    def burst(count: int) -> None:
        sent = 0
        while sent < count:
            for data in malformed:
                send(data, 1)
            for i in range(0, len(api), 10):  # ten pipelined a connection
                send(b"".join(api[i:i + 10]), len(api[i:i + 10]))
            sent += len(malformed) + len(api)

    try:
        deadline = time.monotonic() + 60
        line = ""
        while "REST on" not in line:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "server exited"
            assert time.monotonic() < deadline
        # (aiohttp logs a traceback for each malformed request: keep its pipe drained)
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        burst(1000)
        _wait_idle(proc.pid)
        rss, fds = _rss_kb(proc.pid), _fds(proc.pid)
        statuses.clear()
        began = time.monotonic()
        burst(10000)
        took = time.monotonic() - began
        _wait_idle(proc.pid)
        grew = (_rss_kb(proc.pid) - rss) / 1024
        print(f"{front}: {sum(statuses.values())} bad requests in {took:.1f} s, statuses "
              f"{statuses}, RSS {rss / 1024:.0f} MB grew {grew:.1f} MB, descriptors {fds} "
              f"-> {_fds(proc.pid)}")
        assert sum(statuses.values()) >= 10000
        assert grew < 20, grew
        assert _fds(proc.pid) <= fds
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()
