"""Fuzz targets of `aioflow serve` (issue 30): raw HTTP request bytes for the REST
front ends, and PredictRequests with mutated TensorProtos for gRPC, each sent to a real
server over a real socket.

A case is a FuzzCase whose `kind` starts with "http:" or "grpc:" and whose `graph_def`
holds the bytes sent (the request bytes; a serialized PredictRequest). ServingRunner
serves a small model (mlp: x float[?,8] -> probs float[?,3]; multi: strings and two
float inputs) on both front ends and classifies how each case ended:

- HTTP: the bytes are sent, the client's side closed (so an incomplete request ends),
  and everything the server answers is read until it closes. Acceptable: every answer
  parses as HTTP/1.1 with a status that is not 500, and none carries a traceback or a
  path of the server's files. Failures: "FAIL:http-500", "FAIL:http-leak" (a traceback
  or a path), "FAIL:http-garbled" (not HTTP), "FAIL:hang" (no close within the case
  timeout), "FAIL:server-error" (the server logged an exception meanwhile).
- gRPC: the bytes are the request of a Predict call. Acceptable: OK, or a status other
  than UNKNOWN and INTERNAL whose details hold no traceback or path. Failures:
  "FAIL:grpc-<CODE>", "FAIL:grpc-leak", "FAIL:hang", "FAIL:server-error".

Sizes are bounded (bodies up to 64 KiB, declared tensors up to 2^62 elements but
content up to 64 KiB) and the strategies are seeded by hypothesis as the others are.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from fuzz_runner import FuzzCase, Outcome
from hypothesis import strategies as st

import aioflow as af
from aioflow.proto import tensor_pb2, types_pb2
from aioflow.proto.serving import predict_pb2

CASE_TIMEOUT_S = 10.0
_LEAKS = ("Traceback", 'File "/', "site-packages", "/aioflow/")

# -- HTTP --------------------------------------------------------------------------------

_PATHS = ["/v1/models/mlp:predict", "/v1/models/mlp", "/v1/models/mlp/metadata",
          "/v1/models/mlp/versions/1:predict", "/v1/models/mlp/labels/x:predict",
          "/v1/models/multi:predict", "/v1/models/nosuch:predict", "/monitoring/prometheus"
          "/metrics", "/v1/models/mlp:classify", "/v1/models/mlp:regress", "/", "*",
          "/v1/models/%6dlp:predict", "/v1/models/mlp/versions/\u00b2", "http://h/v1/models/mlp",
          "/v1/models/" + "a" * 3000]
_METHODS = ["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "CONNECT", "get", "G ET",
            "\x00"]
_VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/0.9", "HTTP/1.1 ", "http/1.1", "HTTP/1"]
_HEADERS = [
    "Host: x", "Host: x", "Host: y", "Content-Length: 0", "Content-Length: 5",
    "Content-Length: -1", "Content-Length: 99999999999999999999", "Content-Length: \u00b2",
    "Transfer-Encoding: chunked", "Transfer-Encoding: gzip", "Transfer-Encoding: chunked, gzip",
    "Transfer-Encoding:  chunked", "Connection: close", "Connection: keep-alive",
    "Connection: Upgrade", "Upgrade: websocket", "Expect: 100-continue", "Expect: nonsense",
    "X-Request-Timeout-Ms: 1", "X-Request-Timeout-Ms: -5", "X-Request-Timeout-Ms: x",
    "Host : x", "Ho\x00st: x", "X: a\nContent-Length: 3", "X: a\rb", "X-Dup: 1",
    "X-Long: " + "a" * 9000, " X: folded", "\tcontinuation", ": empty", "X:",
]
_JSON_VALUES = [
    0, -1, 1.5, 1e308, -1e308, 2**64, "s", "", None, True, [], {}, [[]], [1, "a"],
    {"b64": "AAAA"}, {"b64": "!!"}, {"b64": 1}, [float("nan")], [[1.0] * 8],
    [[1.0] * 7], [[[1.0] * 8]], [[True] * 8], [["1"] * 8], [[1.0] * 8] * 3,
]


def _json_body(draw) -> bytes:
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return json.dumps({"instances": [[draw(st.floats(allow_nan=False, width=32))] * 8]}
                          ).encode()
    if kind == 1:
        key = draw(st.sampled_from(["instances", "inputs", "signature_name", "examples",
                                    "x", "context"]))
        doc = {key: draw(st.sampled_from(_JSON_VALUES))}
        if draw(st.booleans()):
            doc["signature_name"] = draw(st.sampled_from(
                ["serving_default", "nope", 1, [1], {"a": 1}, "\ud800x"]))
        return json.dumps(doc).encode()
    if kind == 2:
        depth = draw(st.integers(1, 4000))
        return b'{"instances": ' + b"[" * depth + b"1.0" + b"]" * depth + b"}"
    if kind == 3:
        return draw(st.binary(max_size=2048))
    if kind == 4:
        return b'{"instances": [[NaN, Infinity, -Infinity, 1, 2, 3, 4, 5]]}'
    if kind == 5:
        return json.dumps({"inputs": {"a": [[1.0, 2.0, 3.0]], "b": [[1.0, 2.0, 3.0]],
                                      "text": draw(st.sampled_from(
                                          [["x"], [{"b64": "eA=="}], [1], [["x"]]]))}}
                          ).encode()
    rows = draw(st.integers(0, 2000))
    return json.dumps({"instances": [[0.5] * 8] * rows}).encode()


def _chunked(draw, body: bytes) -> bytes:
    out = b""
    at = 0
    while at < len(body):
        n = draw(st.integers(1, max(1, len(body) - at)))
        size = draw(st.sampled_from([b"%x" % n, b"%X" % n, b" %x" % n, b"%x " % n,
                                     b"%x;e=1" % n, b"%x;e\n" % n, b"0x%x" % n, b"-%x" % n]))
        out += size + b"\r\n" + body[at:at + n] + draw(st.sampled_from(
            [b"\r\n", b"\r\n", b"\n", b""]))
        at += n
    return out + draw(st.sampled_from([b"0\r\n\r\n", b"0\r\nX: t\r\n\r\n", b"0\r\n",
                                       b"0\n\n", b""]))


@st.composite
def http_cases(draw) -> FuzzCase:
    """One connection's bytes: one to three requests, each from valid parts and edge
    parts, then byte-level mutations."""
    data = b""
    notes = []
    for _ in range(draw(st.integers(1, 3))):
        method = draw(st.sampled_from(_METHODS))
        path = draw(st.sampled_from(_PATHS))
        if draw(st.integers(0, 5)) == 0:
            path += "?timeout_ms=" + draw(st.sampled_from(["1", "0", "x", "99999999999"]))
        version = draw(st.sampled_from(_VERSIONS))
        headers = draw(st.lists(st.sampled_from(_HEADERS), max_size=6))
        body = _json_body(draw) if draw(st.integers(0, 3)) else b""
        chunked = "Transfer-Encoding: chunked" in headers
        if chunked:
            body = _chunked(draw, body)
        elif not any(h.lower().startswith("content-length") for h in headers) and body:
            headers.append(f"Content-Length: {len(body)}")
        if draw(st.integers(0, 4)) == 0:
            headers += ["X-Many: 1"] * draw(st.integers(100, 140))
        head = f"{method} {path} {version}\r\n" + "".join(h + "\r\n" for h in headers) + "\r\n"
        data += head.encode("utf-8", "surrogatepass") + body
        notes.append(f"{method} {path[:40]}")
    mutation = draw(st.integers(0, 5))
    if mutation == 0 and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    elif mutation == 1 and data:
        data = data[:draw(st.integers(0, len(data)))]
    elif mutation == 2:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(max_size=16)) + data[at:]
    return FuzzCase(f"http:{'|'.join(notes)}", data[:1 << 17])


# -- gRPC --------------------------------------------------------------------------------

_DTYPES = [types_pb2.DT_FLOAT, types_pb2.DT_FLOAT, types_pb2.DT_DOUBLE, types_pb2.DT_INT32,
           types_pb2.DT_STRING, types_pb2.DT_HALF, types_pb2.DT_BOOL, types_pb2.DT_COMPLEX64,
           types_pb2.DT_INVALID, 99, types_pb2.DT_RESOURCE, types_pb2.DT_VARIANT,
           types_pb2.DT_FLOAT_REF]
_DIMS = [0, 1, 2, 3, 8, -1, -5, 2**25, 2**31, 2**33, 2**62]


@st.composite
def tensor_protos(draw) -> tensor_pb2.TensorProto:
    proto = tensor_pb2.TensorProto(dtype=draw(st.sampled_from(_DTYPES)))
    if draw(st.integers(0, 9)) == 0:
        proto.tensor_shape.unknown_rank = True
    for d in draw(st.lists(st.sampled_from(_DIMS), max_size=4)):
        proto.tensor_shape.dim.add(size=d)
    kind = draw(st.integers(0, 5))
    if kind == 0:
        proto.tensor_content = draw(st.binary(max_size=4096))
    elif kind == 1:
        proto.float_val.extend(draw(st.lists(st.floats(width=32), max_size=64)))
    elif kind == 2:
        proto.string_val.extend(draw(st.lists(st.binary(max_size=32), max_size=32)))
    elif kind == 3:
        proto.int_val.extend(draw(st.lists(st.integers(-2**31, 2**31 - 1), max_size=64)))
    elif kind == 4:
        n = draw(st.integers(0, 8))
        proto.tensor_content = b"\x00" * n + b"\xff" * draw(st.integers(0, 8))
    else:
        proto.half_val.extend(draw(st.lists(st.integers(0, 65535), max_size=16)))
        proto.scomplex_val.extend(draw(st.lists(st.floats(width=32), max_size=5)))
    return proto


@st.composite
def grpc_cases(draw) -> FuzzCase:
    request = predict_pb2.PredictRequest()
    request.model_spec.name = draw(st.sampled_from(["mlp", "mlp", "multi", "nosuch", ""]))
    choice = draw(st.integers(0, 4))
    if choice == 1:
        request.model_spec.version.value = draw(st.sampled_from([1, 2, -1, 2**62]))
    elif choice == 2:
        request.model_spec.version_label = draw(st.sampled_from(["stable", "x", ""]))
    if draw(st.booleans()):
        request.model_spec.signature_name = draw(st.sampled_from(
            ["serving_default", "nope", "", "\u00b2"]))
    keys = draw(st.lists(st.sampled_from(["x", "a", "b", "text", "y", ""]), max_size=3,
                         unique=True))
    for key in keys:
        request.inputs[key].CopyFrom(draw(tensor_protos()))
    request.output_filter.extend(draw(st.lists(st.sampled_from(
        ["probs", "sum", "nope", "probs"]), max_size=2)))
    data = request.SerializeToString()
    if data and draw(st.integers(0, 5)) == 0:  # byte-level: what protobuf refuses too
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    return FuzzCase(f"grpc:{request.model_spec.name}:{','.join(keys)}", data)


def serving_cases():
    return st.one_of(http_cases(), grpc_cases())


# -- the server and the runner -----------------------------------------------------------

def _write_models(root: Path) -> None:
    rng = np.random.default_rng(3)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 8], name="x")
        h = af.nn.relu(af.matmul(x, af.constant(rng.standard_normal((8, 16)).astype(
            np.float32))))
        af.nn.softmax(af.matmul(h, af.constant(rng.standard_normal((16, 3)).astype(
            np.float32))), name="probs")
    (root / "mlp" / "1").mkdir(parents=True)
    (root / "mlp" / "1" / "model.pb").write_bytes(g.as_graph_def().SerializeToString())
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float32, [None, 3], name="a")
        b = af.placeholder(af.float32, [None, 3], name="b")
        text = af.placeholder(af.string, [None], name="text")
        af.add(a, b, name="sum")
        af.strings.length(text, name="length")
    (root / "multi" / "1").mkdir(parents=True)
    (root / "multi" / "1" / "multi.pb").write_bytes(g.as_graph_def().SerializeToString())


class _ErrorLog(logging.Handler):
    """Counts the exceptions the server logs (a request that failed inside it)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record) -> None:
        self.records.append(record.getMessage()[:300])


class ServingRunner:
    """A model server on a loop of its own thread, both front ends (native and aiohttp)
    and gRPC; `run(case)` sends a case and classifies its end."""

    def __init__(self):
        from aioflow.serving.loader import LoadOptions
        from aioflow.serving.model_registry import ModelConfig

        self._dir = tempfile.TemporaryDirectory(prefix="aioflow-fuzz-serving-")
        root = Path(self._dir.name)
        _write_models(root)
        self.configs = [
            ModelConfig("mlp", str(root / "mlp"), labels={"stable": 1},
                        load_options=LoadOptions(inputs=(("x", "x:0"),),
                                                 outputs=(("probs", "probs:0"),))),
            ModelConfig("multi", str(root / "multi"), load_options=LoadOptions(
                inputs=(("a", "a:0"), ("b", "b:0"), ("text", "text:0")),
                outputs=(("sum", "sum:0"), ("length", "length:0"))))]
        self.errors = _ErrorLog()
        logging.getLogger("aioflow.serving").addHandler(self.errors)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                        name="fuzz-serving")
        self._thread.start()
        self.servers = self._call(self._start(), 120)
        self.channel = None

    def _call(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self):
        from aioflow.serving.server import ModelServer

        servers = {}
        for front in ("native", "aiohttp"):
            server = ModelServer(self.configs, host="127.0.0.1", port=0 if front == "native"
                                 else None, rest_api_port=0, access_log=False, grace_s=1.0,
                                 poll_seconds=0, rest_api_server=front,
                                 rest_api_timeout_ms=5000)
            await server.start()
            servers[front] = server
        return servers

    def run(self, case: FuzzCase) -> Outcome:
        began = time.monotonic()
        logged = len(self.errors.records)
        if case.kind.startswith("grpc:"):
            outcome = self._grpc(case.graph_def)
        else:
            outcome = None
            for front in ("native", "aiohttp"):
                outcome = self._http(front, case.graph_def)
                if not outcome.acceptable:
                    outcome.stage = f"http-{front}"
                    break
        if outcome.acceptable and len(self.errors.records) > logged:
            outcome = Outcome("FAIL:server-error", outcome.stage,
                              "; ".join(self.errors.records[logged:])[:2000])
        outcome.seconds = time.monotonic() - began
        return outcome

    def _http(self, front: str, data: bytes) -> Outcome:
        port = self.servers[front].rest_port
        stage = f"http-{front}"
        got = b""
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=CASE_TIMEOUT_S) as s:
                try:
                    s.sendall(data)
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass  # closed by the server already (a bad head): read its answer
                deadline = time.monotonic() + CASE_TIMEOUT_S
                while True:
                    s.settimeout(max(0.01, deadline - time.monotonic()))
                    try:
                        chunk = s.recv(65536)
                    except TimeoutError:
                        return Outcome("FAIL:hang", stage, f"no close after {len(got)} bytes",
                                       where=front)
                    except ConnectionError:
                        break
                    if not chunk:
                        break
                    got += chunk
        except OSError as e:
            return Outcome("FAIL:connect", stage, str(e), where=front)
        return _classify_http(got, stage, front)

    def _grpc(self, data: bytes) -> Outcome:
        return self._call(self._grpc_call(data), CASE_TIMEOUT_S + 5)

    async def _grpc_call(self, data: bytes) -> Outcome:
        import grpc

        if self.channel is None:
            self.channel = grpc.aio.insecure_channel(
                f"127.0.0.1:{self.servers['native'].grpc_port}")
        call = self.channel.unary_unary("/tensorflow.serving.PredictionService/Predict",
                                        request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
        try:
            await call(data, timeout=CASE_TIMEOUT_S)
        except grpc.aio.AioRpcError as e:
            code, details = e.code(), e.details() or ""
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return Outcome("FAIL:hang", "grpc", details)
            if code in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL):
                return Outcome(f"FAIL:grpc-{code.name}", "grpc", details, where="grpc")
            if any(leak in details for leak in _LEAKS):
                return Outcome("FAIL:grpc-leak", "grpc", details, where="grpc")
            return Outcome(f"grpc:{code.name}", "grpc", details[:300])
        return Outcome("ok", "grpc")

    def close(self) -> None:
        async def stop():
            if self.channel is not None:
                await self.channel.close()
            for server in self.servers.values():
                await server.stop()

        try:
            self._call(stop(), 60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
            logging.getLogger("aioflow.serving").removeHandler(self.errors)
            self._dir.cleanup()


def _classify_http(got: bytes, stage: str, front: str) -> Outcome:
    """Every answer in `got` parses, none is a 500, none leaks a traceback or a path."""
    statuses = []
    rest = got
    while rest:
        head, sep, rest = rest.partition(b"\r\n\r\n")
        if not sep or not head.startswith(b"HTTP/"):  # (aiohttp echoes the version)
            return Outcome("FAIL:http-garbled", stage, repr(head[:200]), where=front)
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ")[1])
        except (IndexError, ValueError):
            return Outcome("FAIL:http-garbled", stage, lines[0][:200], where=front)
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0") or 0)
        if 100 <= status < 200 or rest.startswith(b"HTTP/"):
            length = 0  # an interim answer (100 Continue), or a HEAD's: no body
        body, rest = rest[:length], rest[length:]
        if status == 500:
            return Outcome("FAIL:http-500", stage, body[:300].decode("latin-1"), where=front)
        text = body.decode("latin-1")
        if any(leak in text for leak in _LEAKS):
            return Outcome("FAIL:http-leak", stage, text[:300], where=front)
        statuses.append(status)
    return Outcome("ok" if not statuses else f"http:{statuses[0]}", stage)
