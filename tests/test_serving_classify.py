"""TF Serving's Classify and Regress APIs (REST `:classify` / `:regress` with JSON
examples, gRPC PredictionService.Classify / Regress with the Input proto): a SavedModel
with classification and regression signatures over tf.Example inputs, answered as TF
Serving answers, against NumPy; a context merged into every example; TF Serving's errors
for the wrong kind of signature and for empty or malformed examples."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("grpc")
pytest.importorskip("prometheus_client")

import aiohttp  # noqa: E402
import grpc  # noqa: E402

import aioflow as af  # noqa: E402
from aioflow.proto.serving import classification_pb2, regression_pb2  # noqa: E402
from aioflow.serving import classify  # noqa: E402
from aioflow.serving.model_registry import ModelConfig  # noqa: E402
from aioflow.serving.server import ModelServer  # noqa: E402

W = np.array([[1.0, -1.0], [0.5, 2.0]], np.float32)
B = np.array([0.1, -0.2], np.float32)


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


async def _write_model(path) -> None:
    g = af.Graph()
    with g.as_default():
        serialized = af.placeholder(af.string, [None], name="tf_example")
        features = af.io.parse_example(serialized, {
            "x": af.io.FixedLenFeature([2], af.float32),
            "scale": af.io.FixedLenFeature([], af.float32, default_value=1.0)})
        x = features["x"] * af.expand_dims(features["scale"], 1)
        scores = af.nn.softmax(af.matmul(x, af.constant(W)) + af.constant(B), name="scores")
        classes = af.tile(af.constant([["neg", "pos"]]), af.stack([af.shape(x)[0], 1]),
                          name="classes")
        total = af.reduce_sum(x, axis=1, name="total")
        utils = af.saved_model.signature_def_utils
        sigs = {"serving_default": utils.classification_signature_def(serialized, classes,
                                                                      scores),
                "scores_only": utils.classification_signature_def(serialized, None, scores),
                "regress": utils.regression_signature_def(serialized, total),
                "predict": utils.predict_signature_def({"examples": serialized},
                                                       {"total": total})}
    async with af.Session(graph=g) as sess:
        builder = af.saved_model.Builder(str(path))
        await builder.add_meta_graph_and_variables(sess, ["serve"], sigs)
        await builder.save()


@pytest.fixture
async def server(tmp_path):
    await _write_model(tmp_path / "clf" / "1")
    srv = ModelServer([ModelConfig("clf", str(tmp_path / "clf"))], host="127.0.0.1", port=0,
                      rest_api_port=0, access_log=False, grace_s=5.0, poll_seconds=0)
    await srv.start()
    yield srv
    await srv.stop()


async def _post(server, api: str, body) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{server.rest_port}/v1/models/clf:{api}"
    async with aiohttp.ClientSession() as http, http.post(url, data=json.dumps(body)) as r:
        return r.status, json.loads(await r.read())


X = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)


async def test_rest_classify_and_regress(server):
    body = {"context": {"scale": 2.0},
            "examples": [{"x": X[0].tolist()}, {"x": X[1].tolist(), "scale": 1.0}]}
    scaled = X * np.array([[2.0], [1.0]], np.float32)
    status, doc = await _post(server, "classify", body)
    assert status == 200, doc
    want = softmax(scaled @ W + B)
    assert [[p[0] for p in row] for row in doc["results"]] == [["neg", "pos"]] * 2
    np.testing.assert_allclose([[p[1] for p in row] for row in doc["results"]], want,
                               rtol=1e-6)
    status, doc = await _post(server, "regress", dict(body, signature_name="regress"))
    assert status == 200, doc
    np.testing.assert_allclose(doc["results"], scaled.sum(axis=1), rtol=1e-6)
    status, doc = await _post(server, "classify", dict(body, signature_name="scores_only"))
    assert status == 200 and [p[0] for p in doc["results"][0]] == ["", ""]


@pytest.mark.parametrize("api, body, message", [
    ("classify", {"signature_name": "predict", "examples": [{"x": [1, 2]}]},
     "Expected classification signature method_name to be tensorflow/serving/classify. "
     "Was: tensorflow/serving/predict"),
    ("regress", {"examples": [{"x": [1, 2]}]},
     "Expected regression signature method_name to be tensorflow/serving/regress. "
     "Was: tensorflow/serving/classify"),
    ("classify", {"examples": []}, "Input is empty."),
    ("classify", {"examples": [{"x": [1, "a"]}]}, 'Feature "x" must hold numbers'),
    ("classify", {"examples": [{"y": [1.0, 2.0]}]},
     "Name: <unknown>, Feature: x (data type: float) is required but could not be found."),
])
async def test_rest_errors(server, api, body, message):
    status, doc = await _post(server, api, body)
    assert status == 400
    assert doc["error"].startswith(message)


async def test_grpc_classify_and_regress(server):
    from aioflow.proto import example_pb2
    from aioflow.proto.serving import input_pb2

    context = example_pb2.Example()
    context.features.feature["scale"].float_list.value.append(2.0)
    request_input = input_pb2.Input()
    with_context = request_input.example_list_with_context
    with_context.context.CopyFrom(context)
    for row in X:
        with_context.examples.add().features.feature["x"].float_list.value.extend(row)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        call = channel.unary_unary(
            "/tensorflow.serving.PredictionService/Classify",
            request_serializer=classification_pb2.ClassificationRequest.SerializeToString,
            response_deserializer=classification_pb2.ClassificationResponse.FromString)
        request = classification_pb2.ClassificationRequest(input=request_input)
        request.model_spec.name = "clf"
        response = await call(request)
        regress = channel.unary_unary(
            "/tensorflow.serving.PredictionService/Regress",
            request_serializer=regression_pb2.RegressionRequest.SerializeToString,
            response_deserializer=regression_pb2.RegressionResponse.FromString)
        r_request = regression_pb2.RegressionRequest(input=request_input)
        r_request.model_spec.name = "clf"
        r_request.model_spec.signature_name = "regress"
        r_response = await regress(r_request)
        bad = classification_pb2.ClassificationRequest()
        bad.model_spec.name = "clf"
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await call(bad)
    want = softmax(X * 2 @ W + B)
    got = [[(c.label, c.score) for c in item.classes]
           for item in response.result.classifications]
    assert [[label for label, _ in row] for row in got] == [["neg", "pos"]] * 2
    np.testing.assert_allclose([[s for _, s in row] for row in got], want, rtol=1e-6)
    assert response.model_spec.version.value == 1
    np.testing.assert_allclose([r.value for r in r_response.result.regressions],
                               (X * 2).sum(axis=1), rtol=1e-6)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert e.value.details() == "Input is empty."


def test_json_features_become_tf_example_lists():
    from aioflow.proto import example_pb2

    data = classify.example_from_json(
        {"i": [1, 2], "f": [1, 2.5], "s": "abc", "b": {"b64": "AAE="}, "e": []}, "x")
    feature = example_pb2.Example.FromString(data).features.feature
    assert list(feature["i"].int64_list.value) == [1, 2]
    assert list(feature["f"].float_list.value) == [1.0, 2.5]
    assert list(feature["s"].bytes_list.value) == [b"abc"]
    assert list(feature["b"].bytes_list.value) == [b"\x00\x01"]
    assert feature["e"].WhichOneof("kind") is None


async def test_rest_classify_a_body_over_a_mebibyte(server):
    """A large body is parsed off the loop, to the same answer."""
    pad = "p" * 2000
    body = {"examples": [{"x": X[i % 2].tolist(), "note": pad} for i in range(600)]}
    assert len(json.dumps(body)) > 1 << 20
    status, doc = await _post(server, "classify", body)
    assert status == 200, doc
    want = softmax(X @ W + B)
    np.testing.assert_allclose([[p[1] for p in doc["results"][i]] for i in (0, 1, 599)],
                               want[[0, 1, 1]], rtol=1e-6)
