"""`aioflow serve` end to end: a real server on a free loopback port, a real HTTP client
(aiohttp) and a real gRPC client (grpc.aio channel calling TF Serving's method names
with TF Serving's messages), answers checked against NumPy and against the v1 SavedModel
TF 2.21 wrote (tests/data/saved_model_v1)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("grpc")
pytest.importorskip("prometheus_client")

import aiohttp  # noqa: E402
import grpc  # noqa: E402

import aioflow as af  # noqa: E402
from aioflow.framework import errors, tensor_util  # noqa: E402
from aioflow.proto.serving import (  # noqa: E402
    get_model_metadata_pb2,
    get_model_status_pb2,
    predict_pb2,
)
from aioflow.serving.batching import Batcher, BatchingOptions  # noqa: E402
from aioflow.serving.loader import (  # noqa: E402
    LoadOptions,
    frozen_signature_def,
    graph_servable,
)
from aioflow.serving.model_registry import ModelConfig, VersionPolicy  # noqa: E402
from aioflow.serving.server import ModelServer  # noqa: E402

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent
RNG = np.random.default_rng(7)
W1 = RNG.standard_normal((8, 16)).astype(np.float32)
W2 = RNG.standard_normal((16, 3)).astype(np.float32)
MLP_OPTIONS = LoadOptions(inputs=(("x", "x:0"),), outputs=(("probs", "probs:0"),))


# -- models --------------------------------------------------------------------------------

def mlp_numpy(x, scale=1.0):
    """The MLP's answer in NumPy (float64 reference)."""
    h = np.maximum(x.astype(np.float64) @ (W1 * scale), 0.0)
    logits = h @ W2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def write_mlp(path: Path, scale: float = 1.0) -> None:
    """A frozen MLP x[?,8] -> relu -> softmax probs[?,3] (weights W1 * scale, W2)."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 8], name="x")
        h = af.nn.relu(af.matmul(x, af.constant(W1 * scale)))
        af.nn.softmax(af.matmul(h, af.constant(W2)), name="probs")
    path.mkdir(parents=True, exist_ok=True)
    (path / "model.pb").write_bytes(g.as_graph_def().SerializeToString())


def write_multi(path: Path) -> None:
    """Several inputs and outputs, strings among them: a, b float[?,3]; text string[?]
    -> sum, prod, text_bytes (the bytes back), length int32; and a graph error: `check`
    fails when a holds a NaN."""
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float32, [None, 3], name="a")
        b = af.placeholder(af.float32, [None, 3], name="b")
        text = af.placeholder(af.string, [None], name="text")
        checked = af.check_numerics(a, "a holds NaN or Inf", name="check")
        af.add(checked, b, name="sum")
        af.multiply(a, b, name="prod")
        af.identity(text, name="text_out")
        af.strings.length(text, name="length")
    path.mkdir(parents=True, exist_ok=True)
    (path / "multi.pb").write_bytes(g.as_graph_def().SerializeToString())


MULTI_OPTIONS = LoadOptions(
    inputs=(("a", "a:0"), ("b", "b:0"), ("text", "text:0")),
    outputs=(("sum", "sum:0"), ("prod", "prod:0"), ("text_bytes", "text_out:0"),
             ("length", "length:0")))


def write_spin(path: Path) -> None:
    """A graph whose run takes as long as its input says: a while loop counting to
    sum(n) (about 20 µs an iteration), out = that count for each row."""
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [None], name="n")
        total = af.reduce_sum(n)
        i = af.while_loop(lambda i: i < total, lambda i: i + 1, [af.constant(0)])
        af.identity(af.fill(af.shape(n), i), name="out")
    path.mkdir(parents=True, exist_ok=True)
    (path / "spin.pb").write_bytes(g.as_graph_def().SerializeToString())


SPIN_OPTIONS = LoadOptions(inputs=(("n", "n:0"),), outputs=(("out", "out:0"),))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def models(tmp_path):
    """Model base paths: mlp (version 1), multi (1), spin (1), saved (the v1 SavedModel
    TF wrote, as version 3)."""
    write_mlp(tmp_path / "mlp" / "1")
    write_multi(tmp_path / "multi" / "1")
    write_spin(tmp_path / "spin" / "1")
    shutil.copytree(DATA / "saved_model_v1" / "main_op", tmp_path / "saved" / "3")
    return tmp_path


def configs(root: Path, **overrides) -> list[ModelConfig]:
    return [ModelConfig("mlp", str(root / "mlp"), load_options=MLP_OPTIONS,
                        labels={"stable": 1}),
            ModelConfig("multi", str(root / "multi"), load_options=MULTI_OPTIONS),
            ModelConfig("spin", str(root / "spin"), load_options=SPIN_OPTIONS),
            ModelConfig("saved", str(root / "saved"))]


class Client:
    """A running in-process server and clients for it."""

    def __init__(self, server: ModelServer):
        self.server = server
        self.rest = f"http://127.0.0.1:{server.rest_port}"
        self.http = aiohttp.ClientSession()
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}")

    async def post(self, path, body, **kw):
        data = body if isinstance(body, (bytes, str)) else json.dumps(body)
        async with self.http.post(self.rest + path, data=data, **kw) as r:
            return r.status, json.loads(await r.read())

    async def get(self, path):
        async with self.http.get(self.rest + path) as r:
            text = await r.text()
            return r.status, (json.loads(text) if r.content_type == "application/json"
                              else text)

    def rpc(self, service, method, request_cls, response_cls):
        return self.channel.unary_unary(
            f"/tensorflow.serving.{service}/{method}",
            request_serializer=request_cls.SerializeToString,
            response_deserializer=response_cls.FromString)

    async def metric(self, name: str, **labels) -> float:
        """The sum of a metric's samples whose labels include `labels`."""
        _, text = await self.get("/monitoring/prometheus/metrics")
        total = 0.0
        for line in text.splitlines():
            if not line.startswith(name + "{"):
                continue
            head, value = line.rsplit(" ", 1)
            if all(f'{k}="{v}"' in head for k, v in labels.items()):
                total += float(value)
        return total

    async def close(self):
        await self.http.close()
        await self.channel.close()
        await self.server.stop()


async def start(models_or_configs, **kw) -> Client:
    cfgs = (configs(models_or_configs) if isinstance(models_or_configs, Path)
            else models_or_configs)
    kw.setdefault("poll_seconds", 0)
    server = ModelServer(cfgs, host="127.0.0.1", port=0, rest_api_port=0, access_log=False,
                         grace_s=5.0, **kw)
    await server.start()
    return Client(server)


@pytest.fixture
async def client(models):
    c = await start(models)
    yield c
    await c.close()


@pytest.fixture(params=["native", "aiohttp"])
async def rest_client(models, request):
    """A server whose REST API is served by each REST server in turn (the same answers
    from both)."""
    c = await start(models, rest_api_server=request.param)
    yield c
    await c.close()


# -- REST ----------------------------------------------------------------------------------

async def test_rest_predict_row_and_columnar(rest_client):
    x = RNG.standard_normal((4, 8)).astype(np.float32)
    status, body = await rest_client.post("/v1/models/mlp:predict", {"instances": x.tolist()})
    assert status == 200, body
    np.testing.assert_allclose(body["predictions"], mlp_numpy(x), rtol=1e-5, atol=1e-6)
    status, body = await rest_client.post("/v1/models/mlp/versions/1:predict",
                                          {"inputs": {"x": x.tolist()}})
    assert status == 200, body
    np.testing.assert_allclose(body["outputs"], mlp_numpy(x), rtol=1e-5, atol=1e-6)
    status, body = await rest_client.post("/v1/models/mlp/labels/stable:predict",
                                          {"signature_name": "serving_default",
                                           "inputs": x[:1].tolist()})
    assert status == 200, body
    np.testing.assert_allclose(body["outputs"], mlp_numpy(x[:1]), rtol=1e-5, atol=1e-6)


async def test_rest_named_instances_several_outputs_and_b64(rest_client):
    a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    b = [[0.5, 0.5, 0.5], [-1.0, 2.0, 0.0]]
    raw = [b"\x00\xffbinary", "h\u00e9llo".encode()]
    instances = [{"a": a[i], "b": b[i], "text": {"b64": base64.b64encode(raw[i]).decode()}}
                 for i in range(2)]
    status, body = await rest_client.post("/v1/models/multi:predict", {"instances": instances})
    assert status == 200, body
    preds = body["predictions"]
    assert len(preds) == 2
    for i in range(2):
        assert preds[i]["sum"] == (np.float32(a[i]) + np.float32(b[i])).tolist()
        assert preds[i]["prod"] == (np.float32(a[i]) * np.float32(b[i])).tolist()
        assert base64.b64decode(preds[i]["text_bytes"]["b64"]) == raw[i]
        assert preds[i]["length"] == len(raw[i])
    # columnar, a plain string input: outputs by key
    status, body = await rest_client.post("/v1/models/multi:predict", {
        "inputs": {"a": a, "b": b, "text": ["ab", "cde"]}})
    assert status == 200, body
    assert body["outputs"]["length"] == [2, 3]
    assert [base64.b64decode(t["b64"]) for t in body["outputs"]["text_bytes"]] == [b"ab",
                                                                                  b"cde"]


async def test_rest_saved_model_matches_tf(client):
    expected = json.loads((DATA / "saved_model_v1" / "expected.json").read_text())
    status, body = await client.post("/v1/models/saved:predict", {"instances": expected["X"]})
    assert status == 200, body
    want = np.float32(expected["X"]) @ np.float32(expected["W"]) + np.float32(expected["B"])
    np.testing.assert_allclose(body["predictions"], want, rtol=1e-6)


async def test_rest_status_and_metadata(rest_client):
    status, body = await rest_client.get("/v1/models/mlp")
    assert status == 200
    assert body == {"model_version_status": [
        {"version": "1", "state": "AVAILABLE",
         "status": {"error_code": "OK", "error_message": ""}}]}
    status, body = await rest_client.get("/v1/models/saved/versions/3")
    assert status == 200 and body["model_version_status"][0]["version"] == "3"
    status, body = await rest_client.get("/v1/models/mlp/labels/stable")
    assert status == 200 and body["model_version_status"][0]["version"] == "1"
    status, body = await rest_client.get("/v1/models/mlp/metadata")
    assert status == 200
    assert body["model_spec"] == {"name": "mlp", "signature_name": "", "version": "1"}
    sigmap = body["metadata"]["signature_def"]
    assert sigmap["@type"] == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    sig = sigmap["signature_def"]["serving_default"]
    assert sig["method_name"] == "tensorflow/serving/predict"
    assert sig["inputs"]["x"]["name"] == "x:0"
    assert sig["inputs"]["x"]["dtype"] == "DT_FLOAT"
    assert [d["size"] for d in sig["inputs"]["x"]["tensor_shape"]["dim"]] == ["-1", "8"]
    assert sig["outputs"]["probs"]["name"] == "probs:0"
    status, body = await rest_client.get("/v1/models/saved/versions/3/metadata")
    assert status == 200
    sig = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["x"]["name"] == "x:0" and sig["outputs"]["y"]["name"] == "y:0"


@pytest.mark.parametrize("method,path,body,status,message", [
    ("post", "/v1/models/nope:predict", {"instances": [1]}, 404,
     "Servable not found for request: Latest(nope)"),
    ("post", "/v1/models/mlp/versions/7:predict", {"instances": [1]}, 404,
     "Servable not found for request: Specific(mlp, 7)"),
    ("post", "/v1/models/mlp/labels/canary:predict", {"instances": [1]}, 400,
     "Unrecognized servable version label: canary"),
    ("get", "/v1/models/nope", None, 404, "Could not find any versions of model nope"),
    ("get", "/v1/models/mlp/versions/9", None, 404, "Could not find version 9 of model mlp"),
    ("post", "/v1/models/mlp:predict", b'{"instances": [[1, 2,', 400, "JSON Parse error"),
    ("post", "/v1/models/mlp:predict", b"", 400, "JSON Parse error: The document is empty"),
    ("post", "/v1/models/mlp:predict", {"instance": [[1.0] * 8]}, 400,
     "Missing 'inputs' or 'instances' key"),
    ("post", "/v1/models/mlp:predict", {"inputs": {"y": [[1.0] * 8]}}, 400,
     "Missing named input: x in 'inputs' object."),
    ("post", "/v1/models/multi:predict", {"inputs": {"a": [[1, 2, 3]], "b": [[1, 2, 3]],
                                                     "text": ["t"], "c": [1]}}, 400,
     "input size does not match signature: 4!=3 len({a,b,c,text}) != len({a,b,text}). "
     "Sent extra: {c}. Missing but required: {}."),
    ("post", "/v1/models/mlp:predict", {"instances": [[1.0] * 7 + ["a"]]}, 400,
     'JSON Value: "a" Type: String is not of expected type: float'),
    ("post", "/v1/models/mlp:predict", {"instances": [[1.0] * 7]}, 400,
     "Cannot feed value of shape (1, 7) for Tensor x:0, which has shape (None, 8)"),
    ("post", "/v1/models/mlp:predict", {"signature_name": "other", "instances": [[1.0] * 8]},
     400, 'Serving signature name: "other" not found in signature def'),
    ("post", "/v1/models/multi:predict", {"inputs": {"a": [[float("nan"), 0, 0]],
                                                     "b": [[1, 2, 3]], "text": ["t"]}}, 400,
     "a holds NaN or Inf"),
    ("post", "/v1/models/mlp:classify", {"examples": []}, 400, "Input is empty."),
    ("post", "/v1/models/mlp:regress", {"examples": [{"a": 1}]}, 400,
     "Expected regression signature method_name"),
    ("get", "/v1/models/mlp/versions/one", None, 400, "Failed to convert version: one"),
    ("get", "/v1/other", None, 404, "Not Found"),
])
async def test_rest_errors(rest_client, method, path, body, status, message):
    if method == "post":
        got, answer = await rest_client.post(path, body)
    else:
        got, answer = await rest_client.get(path)
    assert got == status, answer
    assert set(answer) == {"error"}
    assert message in answer["error"], answer["error"]


@pytest.mark.parametrize("rest_api_server", ["native", "aiohttp"])
async def test_rest_oversize_request(models, rest_api_server):
    c = await start(models, max_request_bytes=1024, rest_api_server=rest_api_server)
    try:
        status, body = await c.post("/v1/models/mlp:predict",
                                    {"instances": [[1.0] * 8] * 200})
        assert status == 413 and "error" in body
        status, body = await c.post("/v1/models/mlp:predict", {"instances": [[1.0] * 8]})
        assert status == 200
    finally:
        await c.close()


async def test_rest_deadline(rest_client):
    status, body = await rest_client.post("/v1/models/spin:predict?timeout_ms=100",
                                          {"instances": [200000]})
    assert status == 504, body
    status, body = await rest_client.post("/v1/models/spin:predict", {"instances": [200000]},
                                          headers={"X-Request-Timeout-Ms": "100"})
    assert status == 504, body
    status, body = await rest_client.post("/v1/models/spin:predict?timeout_ms=60000",
                                          {"instances": [10, 5]})
    assert status == 200 and body["predictions"] == [15, 15]


@pytest.mark.parametrize("batching,rest_api_server", [
    (None, "native"), (BatchingOptions(max_batch_size=4), "native"), (None, "aiohttp")])
async def test_rest_default_deadline(models, batching, rest_api_server):
    """--rest_api_timeout_in_ms bounds a request that carries no deadline: 504 soon after
    it (one sweep timer for all requests), the run cancelled, the next request served."""
    c = await start(models, rest_api_timeout_ms=200, batching=batching,
                    rest_api_server=rest_api_server)
    try:
        started = time.perf_counter()
        status, body = await c.post("/v1/models/spin:predict", {"instances": [300000]})
        took = time.perf_counter() - started
        assert status == 504 and body == {"error": "Deadline Exceeded"}
        assert 0.2 <= took < 2.0, took
        status, body = await c.post("/v1/models/spin:predict", {"instances": [10, 5]})
        assert status == 200 and body == {"predictions": [15, 15]}
        assert await c.metric("aioflow_serving_requests_total", model_name="spin",
                              status="DEADLINE_EXCEEDED") == 1
        deadlines = next(iter(c.server.service._deadlines.values()))
        assert not deadlines.tasks and not deadlines.expired
        assert c.server.registry.versions["spin"][1].in_flight == 0
    finally:
        await c.close()


async def test_metrics_count_requests_and_errors(client):
    for _ in range(3):
        await client.post("/v1/models/mlp:predict", {"instances": [[0.0] * 8]})
    await client.post("/v1/models/mlp:predict", {"instances": [[0.0] * 7]})
    assert await client.metric("aioflow_serving_requests_total", model_name="mlp",
                               status="OK", api="rest", version="1",
                               signature_name="serving_default") == 3
    assert await client.metric("aioflow_serving_run_errors_total", model_name="mlp",
                               error_class="INVALID_ARGUMENT") == 1
    assert await client.metric("aioflow_serving_request_latency_seconds_count",
                               model_name="mlp", api="rest") == 4
    assert await client.metric("aioflow_serving_model_version_state", model_name="mlp",
                               version="1", state="AVAILABLE") == 1


# -- gRPC ----------------------------------------------------------------------------------

async def test_grpc_predict_metadata_status(client):
    predict = client.rpc("PredictionService", "Predict", predict_pb2.PredictRequest,
                         predict_pb2.PredictResponse)
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "mlp"
    request.inputs["x"].CopyFrom(tensor_util.make_tensor_proto(x))
    response = await predict(request, timeout=10)
    assert response.model_spec.name == "mlp"
    assert response.model_spec.version.value == 1
    assert response.model_spec.signature_name == "serving_default"
    got = tensor_util.make_ndarray(response.outputs["probs"])
    assert got.dtype == np.float32 and got.shape == (3, 3)
    np.testing.assert_allclose(got, mlp_numpy(x), rtol=1e-5, atol=1e-6)

    # strings and an output filter
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "multi"
    request.model_spec.version.value = 1
    for key, value in (("a", np.ones((2, 3), np.float32)), ("b", np.ones((2, 3), np.float32)),
                       ("text", np.array([b"\xff\x00", b"abc"], dtype=object))):
        request.inputs[key].CopyFrom(tensor_util.make_tensor_proto(value))
    request.output_filter.extend(["length", "text_bytes"])
    response = await predict(request, timeout=10)
    assert sorted(response.outputs) == ["length", "text_bytes"]
    assert tensor_util.make_ndarray(response.outputs["length"]).tolist() == [2, 3]
    assert tensor_util.make_ndarray(response.outputs["text_bytes"]).tolist() == [b"\xff\x00",
                                                                                b"abc"]

    # larger than gRPC's default 4 MiB message limit, both ways
    big = RNG.standard_normal((150_000, 8)).astype(np.float32)
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "mlp"
    request.inputs["x"].CopyFrom(tensor_util.make_tensor_proto(big))
    big_channel = grpc.aio.insecure_channel(
        f"127.0.0.1:{client.server.grpc_port}",
        options=[("grpc.max_receive_message_length", -1)])
    try:
        big_predict = big_channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict",
            request_serializer=predict_pb2.PredictRequest.SerializeToString,
            response_deserializer=predict_pb2.PredictResponse.FromString)
        response = await big_predict(request, timeout=60)
    finally:
        await big_channel.close()
    got = tensor_util.make_ndarray(response.outputs["probs"])
    np.testing.assert_allclose(got[-5:], mlp_numpy(big[-5:]), rtol=1e-5, atol=1e-6)
    assert got.shape == (150_000, 3)

    metadata = client.rpc("PredictionService", "GetModelMetadata",
                          get_model_metadata_pb2.GetModelMetadataRequest,
                          get_model_metadata_pb2.GetModelMetadataResponse)
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
    request.model_spec.name = "saved"
    response = await metadata(request, timeout=10)
    assert response.model_spec.version.value == 3
    packed = response.metadata["signature_def"]
    assert packed.type_url == "type.googleapis.com/tensorflow.serving.SignatureDefMap"
    sigmap = get_model_metadata_pb2.SignatureDefMap.FromString(packed.value)
    assert sigmap.signature_def["serving_default"].outputs["y"].name == "y:0"

    status = client.rpc("ModelService", "GetModelStatus",
                        get_model_status_pb2.GetModelStatusRequest,
                        get_model_status_pb2.GetModelStatusResponse)
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = "mlp"
    response = await status(request, timeout=10)
    assert [(s.version, s.state) for s in response.model_version_status] == [
        (1, get_model_status_pb2.ModelVersionStatus.AVAILABLE)]


async def test_grpc_errors_and_deadline(client):
    predict = client.rpc("PredictionService", "Predict", predict_pb2.PredictRequest,
                         predict_pb2.PredictResponse)

    async def code_of(request, timeout=10):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await predict(request, timeout=timeout)
        return info.value.code(), info.value.details()

    request = predict_pb2.PredictRequest()
    request.model_spec.name = "nope"
    assert await code_of(request) == (grpc.StatusCode.NOT_FOUND,
                                      "Servable not found for request: Latest(nope)")
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "mlp"
    request.inputs["x"].CopyFrom(tensor_util.make_tensor_proto(np.ones((1, 8), np.float64)))
    assert await code_of(request) == (grpc.StatusCode.INVALID_ARGUMENT,
                                      "Expects arg[0] to be float but double is provided")
    request.model_spec.signature_name = "nope"
    assert await code_of(request) == (grpc.StatusCode.FAILED_PRECONDITION,
                                      'Serving signature key "nope" not found.')
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "spin"
    request.inputs["n"].CopyFrom(tensor_util.make_tensor_proto(np.int32([200000])))
    code, _ = await code_of(request, timeout=0.2)
    assert code == grpc.StatusCode.DEADLINE_EXCEEDED


# -- batching ------------------------------------------------------------------------------

async def test_batching_merges_requests_with_unbatched_results(models):
    c = await start(models, batching=BatchingOptions(
        max_batch_size=8, batch_timeout_micros=200_000, num_batch_threads=1,
        allowed_batch_sizes=(4, 8)))
    try:
        xs = [RNG.standard_normal((1 + i % 2, 8)).astype(np.float32) for i in range(12)]
        answers = await asyncio.gather(*(
            c.post("/v1/models/mlp:predict", {"instances": x.tolist()}) for x in xs))
        for x, (status, body) in zip(xs, answers, strict=True):
            assert status == 200, body
            np.testing.assert_allclose(body["predictions"], mlp_numpy(x), rtol=1e-5, atol=1e-6)
        rows = sum(len(x) for x in xs)
        labels = {"model_name": "mlp", "version": "1", "signature_name": "serving_default"}
        batches = await c.metric("aioflow_serving_batch_size_count", **labels)
        assert await c.metric("aioflow_serving_batch_size_sum", **labels) == rows
        assert batches < len(xs), "no two requests were merged"
        # padded to an allowed size: every batch ran at 4 or 8 rows
        padded = await c.metric("aioflow_serving_padded_batch_size_sum", **labels)
        assert padded >= rows and padded % 4 == 0
    finally:
        await c.close()


async def test_batcher_full_queue_and_abandoned_tasks():
    release = asyncio.Event()
    seen = []

    async def run(inputs):
        seen.append(len(inputs["x"]))
        await release.wait()
        return {"y": inputs["x"] * 2}

    batcher = Batcher(run, BatchingOptions(max_batch_size=2, max_enqueued_batches=1,
                                           num_batch_threads=1))
    first = asyncio.ensure_future(batcher.submit({"x": np.float32([1, 2])}))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the first batch runs (and blocks): its slot is taken
    waiting = asyncio.ensure_future(batcher.submit({"x": np.float32([3])}))
    await asyncio.sleep(0)
    with pytest.raises(errors.UnavailableError, match="queue .* is full"):
        await batcher.submit({"x": np.float32([4, 5])})  # needs a second waiting batch
    waiting.cancel()  # its caller left: the batch it waited in is dropped
    await asyncio.sleep(0)
    assert batcher.queue_depth == 0
    release.set()
    assert (await first)["y"].tolist() == [2, 4]
    await batcher.drain()
    assert seen == [2]
    with pytest.raises(errors.InvalidArgumentError, match="larger than maximum"):
        await batcher.submit({"x": np.float32([1, 2, 3])})


async def test_batching_pads_variable_length_inputs():
    async def run(inputs):
        return {"y": inputs["x"].sum(axis=1)}

    batcher = Batcher(run, BatchingOptions(max_batch_size=4, batch_timeout_micros=20_000,
                                           pad_variable_length_inputs=True))
    a, b = await asyncio.gather(batcher.submit({"x": np.float32([[1, 2, 3]])}),
                                batcher.submit({"x": np.float32([[5]])}))
    assert a["y"].tolist() == [6.0]
    assert b["y"].tolist() == [15.0]  # [5] padded to [5, 5, 5] with its first element


async def test_batching_full_queue_answers_503(models):
    c = await start(models, batching=BatchingOptions(
        max_batch_size=1, max_enqueued_batches=1, num_batch_threads=1))

    async def until(condition):
        for _ in range(500):
            batchers = c.server.registry.versions["spin"][1].batchers
            if batchers and condition(next(iter(batchers.values()))):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the batcher never got there")

    try:
        slow = asyncio.ensure_future(c.post("/v1/models/spin:predict",
                                            {"instances": [60000]}))
        await until(lambda b: b._running == 1)  # running: the only slot is taken
        waiting = asyncio.ensure_future(c.post("/v1/models/spin:predict",
                                               {"instances": [1]}))
        await until(lambda b: b.queue_depth == 1)  # queued: the queue is full
        status, body = await c.post("/v1/models/spin:predict", {"instances": [1]})
        assert status == 503, body
        assert body["error"] == ("The batch scheduling queue to which this task was "
                                 "submitted is full")
        assert not slow.done()
        assert await slow == (200, {"predictions": [60000]})
        assert await waiting == (200, {"predictions": [1]})
    finally:
        await c.close()


async def test_batched_request_past_its_deadline_leaves_the_queue(models):
    c = await start(models, batching=BatchingOptions(max_batch_size=4, num_batch_threads=1))
    try:
        slow = asyncio.ensure_future(c.post("/v1/models/spin:predict",
                                            {"instances": [60000]}))
        for _ in range(500):
            batchers = c.server.registry.versions["spin"][1].batchers
            if batchers and next(iter(batchers.values()))._running == 1:
                break
            await asyncio.sleep(0.01)
        batcher = next(iter(c.server.registry.versions["spin"][1].batchers.values()))
        status, body = await c.post("/v1/models/spin:predict?timeout_ms=100",
                                    {"instances": [1]})
        assert status == 504, body
        assert batcher.queue_depth == 0  # it left its batch
        assert not slow.done()
        assert await slow == (200, {"predictions": [60000]})
    finally:
        await c.close()


# -- versions ------------------------------------------------------------------------------

async def test_version_swap_under_load_fails_no_request(tmp_path):
    write_mlp(tmp_path / "mlp" / "1", scale=1.0)
    c = await start([ModelConfig("mlp", str(tmp_path / "mlp"), load_options=MLP_OPTIONS)],
                    poll_seconds=0.05)
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    v1, v2 = mlp_numpy(x, 1.0), mlp_numpy(x, -1.0)
    results, stop = [], asyncio.Event()

    async def load():
        while not stop.is_set():
            results.append(await c.post("/v1/models/mlp:predict", {"instances": x.tolist()}))

    try:
        workers = [asyncio.ensure_future(load()) for _ in range(8)]
        await asyncio.sleep(0.3)
        staging = tmp_path / "staging"
        write_mlp(staging, scale=-1.0)
        os.rename(staging, tmp_path / "mlp" / "2")  # appears whole, as a deploy would
        for _ in range(200):
            _, status = await c.get("/v1/models/mlp")
            states = {s["version"]: s["state"] for s in status["model_version_status"]}
            if states == {"2": "AVAILABLE", "1": "END"}:
                break
            await asyncio.sleep(0.05)
        assert states == {"2": "AVAILABLE", "1": "END"}
        await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(*workers)
    finally:
        await c.close()
    assert all(status == 200 for status, _ in results), [r for r in results if r[0] != 200]
    kinds = []
    for _, body in results:
        got = np.asarray(body["predictions"])
        kind = 1 if np.allclose(got, v1, atol=1e-5) else 2 if np.allclose(got, v2,
                                                                         atol=1e-5) else 0
        kinds.append(kind)
    assert 0 not in kinds
    first_v2 = kinds.index(2)
    assert kinds[0] == 1 and kinds[-1] == 2
    assert 1 not in kinds[first_v2 + 8:]  # at most the requests already in flight


async def test_version_policies_and_failed_load(tmp_path):
    for v in (1, 2, 3):
        write_mlp(tmp_path / "m" / str(v))
    (tmp_path / "m" / "4").mkdir()  # no model in it: its load fails
    c = await start([
        ModelConfig("m", str(tmp_path / "m"), VersionPolicy("specific", versions={1, 3}),
                    load_options=MLP_OPTIONS),
        ModelConfig("all", str(tmp_path / "m"), VersionPolicy("all"),
                    load_options=MLP_OPTIONS)])
    try:
        _, body = await c.get("/v1/models/m")
        assert [(s["version"], s["state"]) for s in body["model_version_status"]] == [
            ("3", "AVAILABLE"), ("1", "AVAILABLE")]
        _, body = await c.get("/v1/models/all")
        states = {s["version"]: s for s in body["model_version_status"]}
        assert [states[v]["state"] for v in "123"] == ["AVAILABLE"] * 3
        assert states["4"]["state"] == "END"
        assert states["4"]["status"]["error_code"] != "OK"
        assert "GraphDef" in states["4"]["status"]["error_message"]
        status, _ = await c.post("/v1/models/all:predict", {"instances": [[0.0] * 8]})
        assert status == 200  # the latest version that loaded serves
    finally:
        await c.close()


# -- asyncio where it matters ----------------------------------------------------------------

@pytest.mark.parametrize("rest_api_server", ["native", "aiohttp"])
async def test_disconnect_cancels_the_run(tmp_path, rest_api_server):
    """A client that goes away cancels its run: the graph's awaited step never ends."""
    events = {"started": 0, "finished": 0}

    async def slow(values):
        events["started"] += 1
        await asyncio.sleep(1.0)
        events["finished"] += 1
        return values

    async def loader(path, options):
        g = af.Graph()
        with g.as_default():
            x = af.placeholder(af.float32, [None], name="x")
            af.identity(af.async_py_func(slow, [x], af.float32), name="y")
        sess = af.Session(graph=g)
        return graph_servable(sess, {"serving_default": frozen_signature_def(
            g, [("x", "x:0")], [("y", "y:0")])})

    (tmp_path / "slow" / "1").mkdir(parents=True)
    c = await start([ModelConfig("slow", str(tmp_path / "slow"), loader=loader)],
                    rest_api_server=rest_api_server)
    try:
        with pytest.raises(asyncio.TimeoutError):
            await c.post("/v1/models/slow:predict", {"instances": [1.0]},
                         timeout=aiohttp.ClientTimeout(total=0.3))
        await asyncio.sleep(1.2)
        assert events == {"started": 1, "finished": 0}
        assert await c.metric("aioflow_serving_requests_total", model_name="slow",
                              status="CANCELLED") == 1
        assert c.server.registry.versions["slow"][1].in_flight == 0
        # a gRPC call that gives up (its deadline) stops its run too
        predict = c.rpc("PredictionService", "Predict", predict_pb2.PredictRequest,
                        predict_pb2.PredictResponse)
        request = predict_pb2.PredictRequest()
        request.model_spec.name = "slow"
        request.inputs["x"].CopyFrom(tensor_util.make_tensor_proto(np.float32([1.0])))
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await predict(request, timeout=0.3)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        await asyncio.sleep(1.2)
        assert events == {"started": 2, "finished": 0}
        assert c.server.registry.versions["slow"][1].in_flight == 0
    finally:
        await c.close()


def test_sigterm_finishes_requests_in_flight(models):
    grpc_port, rest_port = free_port(), free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", "spin",
         "--model_base_path", str(models / "spin"), "--inputs", "n", "--outputs", "out",
         "--port", str(grpc_port), "--rest_api_port", str(rest_port), "--host", "127.0.0.1",
         "--access_log", "false"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        line = ""
        while "REST on" not in line:
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "server exited"
            assert time.monotonic() < deadline

        async def scenario():
            url = f"http://127.0.0.1:{rest_port}/v1/models/spin:predict"
            async with aiohttp.ClientSession() as http:
                async def call(n):
                    async with http.post(url, json={"instances": [n]}) as r:
                        return r.status, await r.json()

                in_flight = asyncio.ensure_future(call(100000))  # about 2 s
                await asyncio.sleep(0.3)
                proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.2)
                async with aiohttp.ClientSession() as fresh:  # a new connection
                    with pytest.raises(aiohttp.ClientConnectionError):
                        async with fresh.post(url, json={"instances": [1]}) as r:
                            await r.read()
                assert not in_flight.done()
                return await in_flight

        status, body = asyncio.run(scenario())
        assert status == 200 and body == {"predictions": [100000]}
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def _wait_for_output(proc, text: str, times: int, timeout_s: float) -> None:
    """Wait until `text` has appeared `times` times in proc's stderr (several workers
    write to one pipe), reading on a thread so that a silent process fails the test at
    the deadline instead of blocking a readline forever; the output read so far is in
    the failure message. The thread keeps draining the pipe afterwards."""
    seen: list[str] = []
    enough = threading.Event()

    def read() -> None:
        try:
            for line in proc.stderr:
                seen.append(line)
                if "".join(seen).count(text) >= times:
                    enough.set()
        except (OSError, ValueError):  # closed by the test's cleanup
            pass
        enough.set()  # (the pipe closed: the process exited)

    threading.Thread(target=read, daemon=True).start()
    assert enough.wait(timeout_s), f"no {times} x {text!r} in {timeout_s} s: {''.join(seen)!r}"
    assert "".join(seen).count(text) >= times, f"server exited: {''.join(seen)!r}"


def test_workers_share_the_ports_and_sum_their_metrics(models, tmp_path):
    """--workers 2: both workers answer (new connections are spread over them), the
    metrics of either are the sum over both, SIGTERM drains both."""
    grpc_port, rest_port = free_port(), free_port()
    metrics_dir = tmp_path / "metrics"
    env = dict(os.environ, PYTHONPATH=str(REPO), PROMETHEUS_MULTIPROC_DIR=str(metrics_dir))
    proc = subprocess.Popen(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", "spin",
         "--model_base_path", str(models / "spin"), "--inputs", "n", "--outputs", "out",
         "--port", str(grpc_port), "--rest_api_port", str(rest_port), "--host", "127.0.0.1",
         "--access_log", "false", "--workers", "2"], env=env, stderr=subprocess.PIPE,
        text=True)
    try:
        _wait_for_output(proc, "REST on", times=2, timeout_s=120)  # both workers up

        async def scenario():
            url = f"http://127.0.0.1:{rest_port}/v1/models/spin:predict"
            answers = []
            for n in range(40):  # a new connection each
                async with aiohttp.ClientSession() as http, \
                        http.post(url, json={"instances": [n]}) as r:
                    answers.append((r.status, await r.json()))
            assert answers == [(200, {"predictions": [n]}) for n in range(40)]
            pids = {p.stem.rsplit("_", 1)[1] for p in metrics_dir.glob("counter_*.db")}
            assert len(pids) == 2, pids  # both workers counted requests
            for _ in range(4):  # whichever worker answers (new connections), all 40 count
                async with aiohttp.ClientSession() as http, http.get(
                        f"http://127.0.0.1:{rest_port}/monitoring/prometheus/metrics") as r:
                    text = await r.text()
                total = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                            if line.startswith("aioflow_serving_requests_total{"))
                assert total == 40
            async with aiohttp.ClientSession() as http:
                in_flight = asyncio.ensure_future(http.post(url, json={"instances": [100000]}))
                await asyncio.sleep(0.3)
                proc.send_signal(signal.SIGTERM)
                r = await in_flight
                assert r.status == 200 and await r.json() == {"predictions": [100000]}

        asyncio.run(scenario())
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_workers_stop_when_one_fails_to_start(tmp_path):
    (tmp_path / "bad" / "1").mkdir(parents=True)
    (tmp_path / "bad" / "1" / "model.pb").write_bytes(b"not a graph")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", "bad",
         "--model_base_path", str(tmp_path / "bad"), "--inputs", "x", "--outputs", "y",
         "--port", str(free_port()), "--host", "127.0.0.1", "--workers", "2"],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "no version could be loaded" in result.stderr
    assert "stopping the others" in result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_base_path", str(tmp_path),
         "--port", "0", "--workers", "2"], env=env, capture_output=True, text=True,
        timeout=60)
    assert result.returncode == 1 and "--workers needs a fixed --port" in result.stderr


def test_workers_a_stop_while_starting_them_starts_no_more(monkeypatch, tmp_path):
    """SIGTERM while the workers are being started (a supervisor stopping the service at
    once): the workers started already are stopped and no other starts, so the parent
    exits at once (a worker started after the signal was never signalled: the parent
    waited for it for ever). Each worker here is a sleep that only a signal ends."""
    import argparse
    import multiprocessing

    from aioflow.serving import workers

    spawn = multiprocessing.get_context("spawn")

    class Worker:
        """A sleep for a worker; SIGTERM reaches the parent as the first one starts."""

        def __init__(self, name, **_):
            self.proc = spawn.Process(target=time.sleep, args=(60,), name=name)

        def __getattr__(self, attr):
            return getattr(self.proc, attr)

        def start(self):
            self.proc.start()
            if self.proc.name.endswith("-0"):
                os.kill(os.getpid(), signal.SIGTERM)

    class Context:
        Process = Worker

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Context())
    monkeypatch.setenv(workers.METRICS_DIR_ENV, str(tmp_path))
    began = time.monotonic()
    workers.run_workers(argparse.Namespace(port=1, rest_api_port=2, workers=3), serve=None)
    assert time.monotonic() - began < 30


# -- configuration ---------------------------------------------------------------------------

def test_model_config_file_and_batching_parameters(tmp_path):
    from aioflow.serving import flags
    from aioflow.serving.main import batching_options, model_configs

    (tmp_path / "models.config").write_text("""
model_config_list {
  config { name: "a" base_path: "a_dir" model_platform: "tensorflow"
           model_version_policy { specific { versions: 1 versions: 3 } }
           version_labels { key: "stable" value: 1 } }
  config { name: "b" base_path: "/abs/b" model_version_policy { latest { num_versions: 2 } } }
}""")
    (tmp_path / "batching.config").write_text("""
max_batch_size { value: 32 }
batch_timeout_micros { value: 1000 }
num_batch_threads { value: 2 }
allowed_batch_sizes: 8
allowed_batch_sizes: 32
pad_variable_length_inputs: true
""")
    import argparse

    parser = argparse.ArgumentParser()
    flags.add_arguments(parser)
    args = parser.parse_args(["--model_config_file", str(tmp_path / "models.config"),
                              "--enable_batching", "--batching_parameters_file",
                              str(tmp_path / "batching.config")])
    a, b = model_configs(args)
    assert (a.name, a.base_path, a.labels) == ("a", str(tmp_path / "a_dir"), {"stable": 1})
    assert a.policy.aspired([1, 2, 3, 4]) == {1, 3}
    assert (b.base_path, b.policy.aspired([1, 2, 3, 4])) == ("/abs/b", {3, 4})
    assert batching_options(args) == BatchingOptions(
        max_batch_size=32, batch_timeout_micros=1000, num_batch_threads=2,
        allowed_batch_sizes=(8, 32), pad_variable_length_inputs=True)
    (tmp_path / "models.json").write_text(json.dumps({"model_config_list": {"config": [
        {"name": "j", "base_path": "/j"}]}}))
    args = parser.parse_args(["--model_config_file", str(tmp_path / "models.json")])
    [j] = model_configs(args)
    assert (j.name, j.base_path, j.policy.aspired([5, 6])) == ("j", "/j", {6})
    with pytest.raises(ValueError, match="must match max_batch_size"):
        BatchingOptions(max_batch_size=16, allowed_batch_sizes=(8,))


# -- the JSON codec ------------------------------------------------------------------------

def test_rest_codec_values_as_tf_serving_writes_them():
    from aioflow.serving import rest_codec

    body = rest_codec.format_predict({"y": np.float32([[np.nan, 1.5], [np.inf, -np.inf]])},
                                     "row")
    assert body == b'{"predictions": [[NaN, 1.5], [Infinity, -Infinity]]}'
    doc = rest_codec.loads(b'{"instances": [[NaN, 1.0], [Infinity, 2.0]]}')
    x = rest_codec.to_array(doc["instances"], af.float32)
    assert x.dtype == np.float32 and np.isnan(x[0, 0]) and np.isinf(x[1, 0])
    body = rest_codec.format_predict({"a": np.int64([1, 2]),
                                      "s": np.array([b"x", b"y"], dtype=object)}, "row")
    assert json.loads(body) == {"predictions": [{"a": 1, "s": "x"}, {"a": 2, "s": "y"}]}
    body = rest_codec.format_predict({"h": np.float16([0.5, 2.0])}, "columnar")
    assert json.loads(body) == {"outputs": [0.5, 2.0]}
    with pytest.raises(errors.InvalidArgumentError, match="ragged"):
        rest_codec.to_array([[1, 2], [3, 4, 5], [6]], af.float32)
    with pytest.raises(errors.InvalidArgumentError, match="not of expected type: int32"):
        rest_codec.to_array([1, 2.5], af.int32)
    with pytest.raises(errors.InvalidArgumentError, match="not of expected type: bool"):
        rest_codec.to_array([True, 1], af.bool)
    assert rest_codec.to_array([[1, 2]], af.float64).dtype == np.float64
    with pytest.raises(errors.InvalidArgumentError, match="out of range of uint8"):
        rest_codec.to_array([1, 300], af.uint8)
    with pytest.raises(errors.InvalidArgumentError, match="Unable to base64 decode"):
        rest_codec.to_array([{"b64": "@@"}], af.string)


async def test_tf2_signature_functions_are_served(tmp_path):
    """The TF 2 SavedModel shape (an object whose .signatures[name] are async callables
    taking keyword arrays and returning dicts of arrays) plugs into the same server."""
    from aioflow.serving.loader import function_servable

    class Spec:  # what TF 2's signature functions describe their arguments with
        def __init__(self, dims, dtype, name):
            self.shape, self.dtype, self.name = af.TensorShape(dims), dtype, name

    class AffineSignature:
        structured_input_signature = ((), {"x": Spec([None, 2], af.float32, "x")})
        structured_outputs = {"y": Spec([None, 2], af.float32, "Identity")}

        async def __call__(self, *, x):
            await asyncio.sleep(0)
            return {"y": x * np.float32(2.0) + np.float32(1.0)}

    class Loaded:
        signatures = {"serving_default": AffineSignature()}

    async def loader(path, options):
        return function_servable(Loaded().signatures)

    (tmp_path / "tf2" / "1").mkdir(parents=True)
    c = await start([ModelConfig("tf2", str(tmp_path / "tf2"), loader=loader)],
                    batching=BatchingOptions(max_batch_size=8, batch_timeout_micros=20_000))
    try:
        rows = [[[1.0, 2.0]], [[-1.0, 0.5], [3.0, 4.0]]]
        answers = await asyncio.gather(*(c.post("/v1/models/tf2:predict", {"instances": r})
                                         for r in rows))
        for r, (status, body) in zip(rows, answers, strict=True):
            assert status == 200, body
            assert body["predictions"] == (np.float32(r) * 2 + 1).tolist()
        assert await c.metric("aioflow_serving_batch_size_count", model_name="tf2") == 1
        _, body = await c.get("/v1/models/tf2/metadata")
        sig = body["metadata"]["signature_def"]["signature_def"]["serving_default"]
        assert sig["inputs"]["x"]["dtype"] == "DT_FLOAT"
        assert [d["size"] for d in sig["inputs"]["x"]["tensor_shape"]["dim"]] == ["-1", "2"]
        assert sig["outputs"]["y"]["name"] == "Identity"
    finally:
        await c.close()


def test_serve_refuses_to_start_when_no_version_loads(tmp_path):
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.pb").write_bytes(b"not a graph")
    proc = subprocess.run(
        [sys.executable, "-m", "aioflow.cli", "serve", "--model_name", "m",
         "--model_base_path", str(tmp_path / "m"), "--inputs", "x", "--outputs", "y",
         "--port", str(free_port()), "--host", "127.0.0.1"],
        env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
        timeout=60)
    assert proc.returncode == 1
    assert "error: ValueError: no version could be loaded: m:" in proc.stderr


async def test_old_version_unloads_after_its_requests_finish(tmp_path):
    write_spin(tmp_path / "spin" / "1")
    c = await start([ModelConfig("spin", str(tmp_path / "spin"), load_options=SPIN_OPTIONS)],
                    poll_seconds=0.05)
    try:
        slow = asyncio.ensure_future(c.post("/v1/models/spin:predict", {"instances": [40000]}))
        await asyncio.sleep(0.2)  # running on version 1
        staging = tmp_path / "staging"
        write_spin(staging)
        os.rename(staging, tmp_path / "spin" / "2")
        states = {}
        for _ in range(100):
            _, body = await c.get("/v1/models/spin")
            states = {s["version"]: s["state"] for s in body["model_version_status"]}
            if states.get("2") == "AVAILABLE":
                break
            await asyncio.sleep(0.02)
        if not slow.done():  # version 1 waits for the request still using it
            assert states == {"2": "AVAILABLE", "1": "UNLOADING"}
            assert c.server.registry.versions["spin"][1].in_flight == 1
        assert await slow == (200, {"predictions": [40000]})
        for _ in range(100):
            _, body = await c.get("/v1/models/spin")
            states = {s["version"]: s["state"] for s in body["model_version_status"]}
            if states.get("1") == "END":
                break
            await asyncio.sleep(0.02)
        assert states == {"2": "AVAILABLE", "1": "END"}
        assert c.server.registry.versions["spin"][1].servable is None
    finally:
        await c.close()


@pytest.mark.parametrize("rest_api_server", ["native", "aiohttp"])
async def test_access_log_lines_are_json(models, caplog, rest_api_server):
    server = ModelServer(configs(models), host="127.0.0.1", port=0, rest_api_port=0,
                         poll_seconds=0, access_log=True, rest_api_server=rest_api_server)
    await server.start()
    client = Client(server)
    try:
        with caplog.at_level("INFO", logger="aioflow.serving.access"):
            await client.post("/v1/models/mlp:predict", {"instances": [[0.0] * 8]})
            await client.get("/v1/models/nope")
        lines = [json.loads(r.getMessage()) for r in caplog.records
                 if r.name == "aioflow.serving.access"]
        assert [(l["method"], l["path"], l["status"]) for l in lines] == [
            ("POST", "/v1/models/mlp:predict", 200), ("GET", "/v1/models/nope", 404)]
        assert all(l["ms"] >= 0 and l["remote"] == "127.0.0.1" for l in lines)
    finally:
        await client.close()


async def test_tf_serving_client_talks_to_aioflow_serve(client):
    """TensorFlow Serving's own Python client (tensorflow-serving-api) against the
    server: Predict, GetModelMetadata, GetModelStatus and a NOT_FOUND, on the v1
    SavedModel TF wrote. Needs AIOFLOW_TF_SERVING_PYTHON: a Python with tensorflow and
    tensorflow-serving-api."""
    python = os.environ.get("AIOFLOW_TF_SERVING_PYTHON")
    if not python:
        pytest.skip("AIOFLOW_TF_SERVING_PYTHON (tensorflow + tensorflow-serving-api) not set")
    expected = json.loads((DATA / "saved_model_v1" / "expected.json").read_text())
    proc = await asyncio.create_subprocess_exec(
        python, str(DATA / "check_serving_with_tf_serving_client.py"),
        str(client.server.grpc_port), "saved", json.dumps(expected["X"]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    if proc.returncode == 3:
        pytest.skip(err.decode()[-300:])
    assert proc.returncode == 0, err.decode()[-3000:]
    report = json.loads(out.decode().strip().splitlines()[-1])
    want = np.float32(expected["X"]) @ np.float32(expected["W"]) + np.float32(expected["B"])
    np.testing.assert_allclose(report["outputs"]["y"], want, rtol=1e-6)
    assert report["version"] == 3
    assert report["inputs"] == {"x": "x:0"} and report["output_names"] == {"y": "y:0"}
    assert report["states"] == [[3, "AVAILABLE"]]
    assert report["missing"] == "NOT_FOUND"


async def test_tf2_saved_model_served_or_refused_saying_why(tmp_path):
    """The TF 2 SavedModel TF wrote (y = x * [1, 2]) is served through aioflow's TF 2
    loader when there is one; without it, its version ends with the v1 loader's
    NotImplementedError saying why."""
    from aioflow.serving.loader import _tf2_loader

    shutil.copytree(DATA / "saved_model_v1" / "tf2", tmp_path / "tf2" / "1")
    c = await start([ModelConfig("tf2", str(tmp_path / "tf2"))])
    try:
        _, body = await c.get("/v1/models/tf2")
        [status] = body["model_version_status"]
        if _tf2_loader() is None:
            assert status["state"] == "END"
            assert "graph functions" in status["status"]["error_message"]
            return
        assert status["state"] == "AVAILABLE", status
        got, answer = await c.post("/v1/models/tf2:predict", {"inputs": {"x": [3.0, 4.0]}})
        assert got == 200, answer
        assert answer == {"outputs": [3.0, 8.0]}
    finally:
        await c.close()


async def test_loading_a_version_does_not_block_the_loop(tmp_path):
    """A version loads (graph import, executor builds) on a loading thread: the loop
    keeps running meanwhile (were the load on the loop, no beat would fall inside it)."""
    from aioflow.serving.loader import load_servable

    (tmp_path / "1").mkdir()
    shutil.copy(DATA / "models_mobilenet_v2_0.35_96.pb", tmp_path / "1" / "model.pb")
    beats = []
    stop = asyncio.Event()

    async def beat():
        while not stop.is_set():
            beats.append(time.perf_counter())
            await asyncio.sleep(0.002)

    ticker = asyncio.ensure_future(beat())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    servable = await load_servable(tmp_path / "1", LoadOptions(
        inputs=(("images", "images:0"),), outputs=(("logits", "Identity:0"),)))
    ended = time.perf_counter()
    stop.set()
    await ticker
    try:
        inside = [t for t in beats if started < t < ended]
        assert len(inside) >= 5, (len(inside), ended - started)
        images = np.load(DATA / "models_mobilenet_v2_0.35_96.npz")["feed:images:0"]
        want = np.load(DATA / "models_mobilenet_v2_0.35_96.npz")["fetch:Identity:0"]
        got = await servable.signatures["serving_default"].run({"images": images},
                                                                ("logits",))
        np.testing.assert_allclose(got["logits"], want, rtol=1e-4,
                                   atol=2e-4 * np.abs(want).max())
    finally:
        await servable.close()


# -- the native REST server's HTTP/1.1 ---------------------------------------------------------

async def exchange(port: int, data: bytes, answers: int, head_only=()) -> list:
    """Send raw bytes on one connection and read `answers` responses, as (status,
    headers, body); the responses whose index is in `head_only` have no body (HEAD)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return [await read_response(reader, i in head_only) for i in range(answers)]
    finally:
        writer.close()


async def read_response(reader, head_only=False):
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:] if l)}
    length = int(headers.get("content-length", 0))
    body = b"" if head_only else await reader.readexactly(length)
    return status, headers, body


def post(path: str, body: bytes, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}", *extra]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def test_http_keep_alive_pipelining_chunked_and_head(client):
    port = client.server.rest_port
    xs = [RNG.standard_normal((1 + i, 8)).astype(np.float32) for i in range(3)]
    bodies = [json.dumps({"instances": x.tolist()}).encode() for x in xs]
    # three requests in one write (pipelined), a status request between them: answered
    # in order, on the one connection
    data = (post("/v1/models/mlp:predict", bodies[0])
            + b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n"
            + post("/v1/models/mlp:predict", bodies[1]) + post("/v1/models/ml%70:predict",
                                                                bodies[2]))
    answers = await exchange(port, data, 4)
    assert [a[0] for a in answers] == [200, 200, 200, 200]
    assert json.loads(answers[1][2])["model_version_status"][0]["state"] == "AVAILABLE"
    for x, (_, headers, body) in zip(xs, [answers[0], answers[2], answers[3]], strict=True):
        assert headers["content-type"] == "application/json" and "connection" not in headers
        np.testing.assert_allclose(json.loads(body)["predictions"], mlp_numpy(x), rtol=1e-5,
                                   atol=1e-6)
    # the same requests one byte at a time
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for i in range(len(data)):
            writer.write(data[i:i + 1])
            await writer.drain()
        got = [await read_response(reader) for _ in range(4)]
        assert [g[2] for g in got] == [a[2] for a in answers]
    finally:
        writer.close()
    # a chunked body (with a chunk extension and a trailer), then HEAD, then a request
    body = bodies[1]
    chunked = (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n"
               + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7])
                          for i in range(0, len(body), 7))
               + b"0\r\nX-Trailer: t\r\n\r\n"
               + b"HEAD /v1/models/mlp/metadata HTTP/1.1\r\nHost: x\r\n\r\n"
               + b"GET /v1/models/mlp/metadata HTTP/1.1\r\nHost: x\r\n\r\n")
    (s1, _, b1), (s2, h2, b2), (s3, _, b3) = await exchange(port, chunked, 3, head_only={1})
    assert (s1, s2, s3) == (200, 200, 200)
    np.testing.assert_allclose(json.loads(b1)["predictions"], mlp_numpy(xs[1]), rtol=1e-5,
                               atol=1e-6)
    assert b2 == b"" and int(h2["content-length"]) == len(b3) > 0
    # Expect: 100-continue: the server says continue before the body is sent
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(post("/v1/models/mlp:predict", bodies[0],
                          "Expect: 100-continue").split(b"\r\n\r\n")[0] + b"\r\n\r\n")
        assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10) == \
            b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(bodies[0])
        status, _, body = await read_response(reader)
        assert status == 200 and json.loads(answers[0][2]) == json.loads(body)
    finally:
        writer.close()


async def test_http_connection_close_and_http_1_0(client):
    port = client.server.rest_port
    for data in (b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                 b"GET /v1/models/mlp HTTP/1.0\r\n\r\n"):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(data)
        status, headers, _ = await read_response(reader)
        assert status == 200 and headers["connection"] == "close"
        assert await asyncio.wait_for(reader.read(), 10) == b""  # closed by the server
        writer.close()
    # HTTP/1.0 asking for keep-alive keeps the connection, and the answer says so
    data = b"GET /v1/models/mlp HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
    answers = await exchange(port, data * 2, 2)
    assert [(a[0], a[1]["connection"]) for a in answers] == [(200, "keep-alive")] * 2


@pytest.mark.parametrize("data,status,message", [
    (b"HELLO\r\n\r\n", 400, "Bad request: Invalid method"),
    (b"GET /v1/models/mlp HTTP/2.0\r\n\r\n", 505, "HTTP Version Not Supported"),
    (b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", 400,
     "Bad request: Invalid header token"),
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", 400,
     "Bad request: Invalid character in Content-Length"),
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3"
     b"\r\n\r\n{}", 400, "Bad request: Duplicate Content-Length"),
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
     "Transfer-Encoding 'gzip' is not supported"),
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
     b"Content-Length: 3\r\n\r\n", 400,
     "Bad request: Content-Length can't be present with Transfer-Encoding"),
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"zz\r\n", 400, "Bad request: Invalid character in chunk size"),
    (b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", 431,
     "Request Header Fields Too Large"),
    # digits Python reads but HTTP does not (a latin-1 superscript), and a length too
    # long for int(): answered, not a failed data_received and a reset
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Length: \xb2\r\n\r\n{}", 400,
     "Bad request: Invalid character in Content-Length"),
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 5000
     + b"\r\n\r\n", 400, "Bad request: Content-Length overflow"),
    # chunk sizes are hex digits only: no sign, no 0x, no underscores (int(text, 16)
    # takes them all; "-2" would be a chunk that moves back)
    *[(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
       + size + b"\r\n{}\r\n0\r\n\r\n", 400,
      "Bad request: Invalid character in chunk size")
      for size in (b"0x2", b"+2", b"-2", b"0_2")],
    # trailers are bounded as a head is (a field llhttp holds in pieces: at 64 KiB and
    # one read)
    (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"0\r\nX-Trailer: " + b"a" * 400000, 431, "Request Header Fields Too Large"),
])
async def test_http_malformed_requests_answered_then_closed(client, data, status, message):
    reader, writer = await asyncio.open_connection("127.0.0.1", client.server.rest_port)
    try:
        writer.write(data)
        got, headers, body = await read_response(reader)
        assert got == status and message in json.loads(body)["error"], body
        assert headers["connection"] == "close"
        assert await asyncio.wait_for(reader.read(), 10) == b""
    finally:
        writer.close()


async def test_http_methods_not_allowed(client):
    port = client.server.rest_port
    data = (b"PUT /v1/models/mlp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            b"POST /monitoring/prometheus/metrics HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: 2\r\n\r\n{}"
            b"GET /monitoring/prometheus/metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    (s1, h1, b1), (s2, h2, _), (s3, h3, b3) = await exchange(port, data, 3)
    assert (s1, h1["allow"], json.loads(b1)) == (405, "GET,HEAD,POST",
                                                 {"error": "Method Not Allowed"})
    assert (s2, h2["allow"]) == (405, "GET,HEAD")
    assert s3 == 200 and h3["content-type"].startswith("text/plain")
    assert b"aioflow_serving_requests_total" in b3


async def test_http_oversize_bodies(models):
    c = await start(models, max_request_bytes=1024)
    try:
        port = c.server.rest_port
        big = json.dumps({"instances": [[1.0] * 8] * 200}).encode()
        small = json.dumps({"instances": [[1.0] * 8]}).encode()
        # by Content-Length: the body is read and dropped, the connection goes on
        answers = await exchange(port, post("/v1/models/mlp:predict", big)
                                 + post("/v1/models/mlp:predict", small), 2)
        assert [a[0] for a in answers] == [413, 200]
        assert "Maximum request body size 1024 exceeded" in json.loads(answers[0][2])["error"]
        # chunked: the same once the last chunk is in
        chunked = (b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
                   b"\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(big), big))
        answers = await exchange(port, chunked + post("/v1/models/mlp:predict", small), 2)
        assert [a[0] for a in answers] == [413, 200]
        # Expect: 100-continue: 413 at once, no body awaited, the connection closed
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(post("/v1/models/mlp:predict", big, "Expect: 100-continue")[:-len(big)])
        status, headers, _ = await read_response(reader)
        assert status == 413 and headers["connection"] == "close"
        writer.close()
        assert await c.metric("aioflow_serving_requests_total", model_name="mlp",
                              status="INVALID_ARGUMENT") == 3
    finally:
        await c.close()


async def test_http_oversize_chunked_body_is_not_buffered(models):
    """An over-long chunked body is dropped as it comes: what the server holds stays
    bounded (not the whole body, nor a whole announced chunk), and the answer is 413
    once the last chunk is in, the connection going on."""
    c = await start(models, max_request_bytes=1024)
    try:
        port = c.server.rest_port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(b"POST /v1/models/mlp:predict HTTP/1.1\r\nHost: x\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            held = []
            # many small chunks, then one announced chunk of 4 MiB sent in pieces
            for _ in range(200):
                writer.write(b"400\r\n" + b"x" * 1024 + b"\r\n")
            writer.write(b"400000\r\n")
            for _ in range(64):
                writer.write(b"y" * (1 << 16))
                await writer.drain()
                await asyncio.sleep(0)
                held.append(max((sum(map(len, conn.incoming.body))
                                 for conn in c.server._http.connections
                                 if conn.incoming is not None), default=0))
            writer.write(b"\r\n0\r\n\r\n" + post("/v1/models/mlp:predict",
                                                     b'{"instances": [[1,2,3,4,5,6,7,8]]}'))
            (s1, _, b1), (s2, _, b2) = [await read_response(reader) for _ in range(2)]
            assert s1 == 413 and "Maximum request body size 1024 exceeded" in \
                json.loads(b1)["error"]
            assert s2 == 200 and "predictions" in json.loads(b2)
            assert max(held) <= 1 << 17, held
        finally:
            writer.close()
    finally:
        await c.close()


async def test_http_pipelined_bodies_larger_than_the_pipelining_buffer(client):
    """Two predicts of 1.5 MB bodies in one write: the second arrives while the first
    runs, and reading pauses past MAX_PIPELINED_BYTES; once the first is answered,
    reading resumes even though its body is only partly in (else it waits for ever)."""
    from aioflow.serving import http_server

    xs = [RNG.standard_normal((12000, 8)).astype(np.float32) for _ in range(2)]
    bodies = [json.dumps({"instances": x.tolist()}).encode() for x in xs]
    assert all(len(b) > http_server.MAX_PIPELINED_BYTES for b in bodies)
    answers = await exchange(client.server.rest_port,
                             post("/v1/models/mlp:predict", bodies[0])
                             + post("/v1/models/mlp:predict", bodies[1]), 2)
    assert [a[0] for a in answers] == [200, 200]
    for x, (_, _, body) in zip(xs, answers, strict=True):
        np.testing.assert_allclose(json.loads(body)["predictions"], mlp_numpy(x),
                                   rtol=1e-5, atol=1e-5)


async def test_http_idle_and_slow_head_connections_are_closed(models):
    """A connection waiting for its next request longer than idle_timeout_s is closed,
    as the aiohttp server's keep-alive timeout closed it: an idle one, and one whose
    head comes a byte at a time (slowloris); one that keeps asking is answered on."""
    c = await start(models)
    try:
        port = c.server.rest_port
        c.server._http.idle_timeout_s = c.server._http.head_timeout_s = 0.3
        idle = await asyncio.open_connection("127.0.0.1", port)
        slow = await asyncio.open_connection("127.0.0.1", port)
        busy = await asyncio.open_connection("127.0.0.1", port)
        slow[1].write(b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        statuses = []
        for _ in range(12):  # 1.2 s: four timeouts
            await asyncio.sleep(0.1)
            if not slow[0].at_eof():
                try:
                    slow[1].write(b"a")
                except ConnectionError:
                    pass  # closed by the server since
            busy[1].write(b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n")
            statuses.append((await read_response(busy[0]))[0])
        assert statuses == [200] * 12
        assert await asyncio.wait_for(idle[0].read(), 5) == b""
        assert await asyncio.wait_for(slow[0].read(), 5) == b""
        for _, writer in (idle, slow, busy):
            writer.close()
    finally:
        await c.close()

def test_http_pipelined_requests_pause_reading_while_writes_are_paused():
    """A client that pipelines requests and reads no answers: once the transport says
    its write buffer is full, what arrives is held up to MAX_PIPELINED_BYTES, then
    reading pauses (else the server buffers without limit). Reading on, each request is
    answered in a turn of its own."""
    from aioflow.serving import http_server

    class Transport:
        def __init__(self):
            self.reading = True
            self.written = []

        def get_extra_info(self, name):
            return ("127.0.0.1", 1)

        def is_closing(self):
            return False

        def write(self, data):
            self.written.append(data)

        def writelines(self, parts):
            self.written.extend(parts)

        def pause_reading(self):
            self.reading = False

        def resume_reading(self):
            self.reading = True

    class Api:
        max_request_bytes = 1 << 20

        def get_model(self, request):
            return 200, b"{}", b"application/json"

    async def run():
        server = http_server.HttpServer(Api())
        conn = http_server._Connection(server)
        transport = Transport()
        conn.connection_made(transport)
        conn.pause_writing()
        request = b"GET /v1/models/mlp HTTP/1.1\r\nHost: x\r\n\r\n"
        for _ in range(2 * http_server.MAX_PIPELINED_BYTES // len(request)):
            conn.data_received(request)
            if not transport.reading:
                break
        assert not transport.reading and conn.waiting_bytes <= \
            http_server.MAX_PIPELINED_BYTES + len(request) + http_server.REQUEST_OVERHEAD
        conn.resume_writing()  # the client reads again: all answered (a turn each),
        while conn.busy():  # reading resumed
            await asyncio.sleep(0)
        assert transport.reading and not conn.requests
        assert sum(w.startswith(b"HTTP/1.1 200") for w in transport.written) > 1000

    asyncio.run(run())

