"""`aioflow serve` with an image model, as TF Serving users send images: JPEG bytes in
the request ({"b64": ...} over REST, a DT_STRING TensorProto over gRPC), decoded in the
graph by map_fn over the batch (docs/serving.md, "Image models: JPEG bytes in")."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("grpc")
pytest.importorskip("prometheus_client")
pytest.importorskip("simplejpeg")

import aiohttp  # noqa: E402
import grpc  # noqa: E402

import aioflow as af  # noqa: E402
from aioflow.framework import tensor_util  # noqa: E402
from aioflow.proto.serving import predict_pb2  # noqa: E402
from aioflow.serving.loader import LoadOptions  # noqa: E402
from aioflow.serving.model_registry import ModelConfig  # noqa: E402
from aioflow.serving.server import ModelServer  # noqa: E402

CODEC = np.load(Path(__file__).parent / "data" / "image_codec_tf.npz")
FILES = ["rgb_q90_p0_c1.jpg", "rgb_q50_p1_c0.jpg", "c3_uint8.png"]


def expected_mean(name: str) -> np.ndarray:
    """What the model answers for a file: its pixels as TF decoded them, in [0, 1],
    averaged per channel."""
    key = f"jpeg/{name}/c3_r1_f1_default/output" if name.endswith(".jpg") else \
        f"png/{name}/c3_uint8/output"
    return (CODEC[key].astype(np.float32) * np.float32(1 / 255)).mean(axis=(0, 1))


def write_model(path: Path) -> None:
    """image_bytes string[?] -> mean_rgb float[?, 3]: each image decoded (JPEG or PNG),
    converted to floats, averaged per channel."""
    g = af.Graph()
    with g.as_default():
        image_bytes = af.placeholder(af.string, [None], name="image_bytes")

        def mean_rgb(contents):
            image = af.image.decode_image(contents, channels=3, expand_animations=False)
            return af.reduce_mean(af.image.convert_image_dtype(image, af.float32), [0, 1])

        af.identity(af.map_fn(mean_rgb, image_bytes, dtype=af.float32), name="mean_rgb")
    path.mkdir(parents=True)
    (path / "model.pb").write_bytes(g.as_graph_def().SerializeToString())


@pytest.fixture
async def server(tmp_path):
    write_model(tmp_path / "images" / "1")
    options = LoadOptions(inputs=(("image_bytes", "image_bytes:0"),),
                          outputs=(("mean_rgb", "mean_rgb:0"),))
    srv = ModelServer([ModelConfig("images", str(tmp_path / "images"), load_options=options)],
                      host="127.0.0.1", port=0, rest_api_port=0, access_log=False,
                      grace_s=5.0, poll_seconds=0)
    await srv.start()
    yield srv
    await srv.stop()


async def test_rest_b64_images_are_decoded_in_the_graph(server):
    instances = [{"b64": base64.b64encode(CODEC[f"files/{name}"].tobytes()).decode()}
                 for name in FILES]
    async with aiohttp.ClientSession() as http:
        async with http.post(f"http://127.0.0.1:{server.rest_port}/v1/models/images:predict",
                             data=json.dumps({"instances": instances})) as r:
            status, body = r.status, json.loads(await r.read())
        assert status == 200, body
        want = np.stack([expected_mean(name) for name in FILES])
        np.testing.assert_allclose(body["predictions"], want, rtol=1e-6)
        # a request that is not an image: TF's decode error, as a 400
        bad = {"instances": [{"b64": base64.b64encode(b"not an image").decode()}]}
        async with http.post(f"http://127.0.0.1:{server.rest_port}/v1/models/images:predict",
                             data=json.dumps(bad)) as r:
            status, body = r.status, json.loads(await r.read())
        assert status == 400 and "Unknown image file format" in body["error"], body


async def test_grpc_string_tensor_of_jpegs(server):
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "images"
    files = np.array([CODEC[f"files/{name}"].tobytes() for name in FILES[:2]], dtype=object)
    request.inputs["image_bytes"].CopyFrom(tensor_util.make_tensor_proto(files))
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        predict = channel.unary_unary(
            "/tensorflow.serving.PredictionService/Predict",
            request_serializer=predict_pb2.PredictRequest.SerializeToString,
            response_deserializer=predict_pb2.PredictResponse.FromString)
        response = await predict(request)
    got = tensor_util.MakeNdarray(response.outputs["mean_rgb"])
    np.testing.assert_allclose(got, np.stack([expected_mean(n) for n in FILES[:2]]),
                               rtol=1e-6)
