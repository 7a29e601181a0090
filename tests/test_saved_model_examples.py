"""A TF 1-style SavedModel as Estimators export them for TF Serving, written by TF 2.21
(tests/data/make_saved_model_examples.py): serialized tf.Example protos in,
ParseExampleV2, a vocabulary table from an asset file (initialized by the main op), an
embedding and a dense layer. aioflow loads it and answers TF's values; `aioflow serve`
serves it over REST with {"b64": ...} examples."""

from __future__ import annotations

import base64
import json
import shutil

import numpy as np
import pytest

import aioflow as af
from tests.conftest import DATA

MODEL = DATA / "saved_model_examples" / "model"
EXPECTED = np.load(DATA / "saved_model_examples" / "expected.npz")
EXAMPLES = [bytes.fromhex(h) for h in EXPECTED["examples"].tolist()]


async def test_loads_and_answers_tf_values():
    async with af.Session(graph=af.Graph()) as sess:
        meta = await af.saved_model.loader.load(sess, ["serve"], str(MODEL))
        sig = meta.signature_def["serving_default"]
        got = await sess.run({k: v.name for k, v in sig.outputs.items()},
                             {sig.inputs["examples"].name: EXAMPLES})
    np.testing.assert_array_equal(got["city_id"], EXPECTED["city_id"])
    np.testing.assert_allclose(got["scores"], EXPECTED["scores"], rtol=1e-5, atol=1e-6)


async def test_served_over_rest_with_b64_examples(tmp_path):
    aiohttp = pytest.importorskip("aiohttp")
    from aioflow.serving.model_registry import ModelConfig
    from aioflow.serving.server import ModelServer

    shutil.copytree(MODEL, tmp_path / "ex" / "1")
    body = {"signature_name": "serving_default",
            "inputs": {"examples": [{"b64": base64.b64encode(e).decode()} for e in EXAMPLES]}}
    server = ModelServer([ModelConfig("ex", str(tmp_path / "ex"))], host="127.0.0.1", port=0,
                         rest_api_port=0, access_log=False, grace_s=5.0, poll_seconds=0)
    await server.start()
    try:
        async with aiohttp.ClientSession() as http, http.post(
                f"http://127.0.0.1:{server.rest_port}/v1/models/ex:predict",
                data=json.dumps(body)) as response:
            assert response.status == 200, await response.text()
            outputs = json.loads(await response.read())["outputs"]
    finally:
        await server.stop()
    np.testing.assert_array_equal(outputs["city_id"], EXPECTED["city_id"])
    np.testing.assert_allclose(outputs["scores"], EXPECTED["scores"], rtol=1e-5, atol=1e-6)
