"""aioflow's serving core inside an existing aiohttp application: the app keeps its own
routes, mounts TF Serving's REST API under /tfserving (the same handlers `aioflow serve`
runs, with dynamic batching), and one of its own handlers calls the model through the
same PredictService, so its requests are batched with the API's.

    pip install 'aioflow[serve]'
    python examples/aiohttp_service.py --port 8080
    curl -s localhost:8080/tfserving/v1/models/demo:predict -d '{"instances": [[1, 0, 0]]}'
    curl -s localhost:8080/label -d '{"x": [0, 0, 1]}'

The model is the demo graph written as a frozen GraphDef under a temporary base path
(version 1); set MODEL_BASE_PATH to serve your own (numbered version directories holding
a SavedModel, or a frozen GraphDef with input x:0 and outputs probs:0, label:0).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import numpy as np
from aiohttp import web

import aioflow as af
from aioflow.serving.batching import BatchingOptions
from aioflow.serving.loader import LoadOptions
from aioflow.serving.model_registry import ModelConfig, ModelRegistry
from aioflow.serving.predict import PredictService
from aioflow.serving.rest_app import RestApi
from aioflow.serving.status import as_op_error, http_status

SERVICE = web.AppKey("service", PredictService)
SIGNATURE = LoadOptions(inputs=(("x", "x:0"),),
                        outputs=(("probs", "probs:0"), ("label", "label:0")))


def write_demo_model(base_path: str) -> None:
    """The demo graph (x[?,3] -> probs, label) as version 1 under base_path."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[None, 3], name="x")
        w = af.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        probs = af.nn.softmax(af.matmul(x, w) + af.constant([0.1, -0.1]), name="probs")
        af.argmax(probs, axis=1, name="label")
    os.makedirs(os.path.join(base_path, "1"), exist_ok=True)
    with open(os.path.join(base_path, "1", "model.pb"), "wb") as f:
        f.write(g.as_graph_def().SerializeToString())


async def label(request: web.Request) -> web.Response:
    """The app's own endpoint: one row in, its label out, through the serving core."""
    service = request.app[SERVICE]
    try:
        row = np.asarray((await request.json())["x"], np.float32)[None]
        with service.version("demo") as mv:
            sig = service.signature(mv, "serving_default")
            out = await service.run(mv, sig, {"x": row}, ("label",))
    except Exception as e:
        err = as_op_error(e)
        return web.json_response({"error": err.message}, status=http_status(err))
    return web.json_response({"label": int(out["label"][0])})


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def make_app(base_path: str | None = None) -> web.Application:
    base_path = base_path or os.environ.get("MODEL_BASE_PATH")
    if base_path is None:
        base_path = tempfile.mkdtemp(prefix="aioflow-demo-")
        write_demo_model(base_path)
    registry = ModelRegistry([ModelConfig("demo", base_path, load_options=SIGNATURE)],
                             poll_seconds=1.0)
    service = PredictService(registry, BatchingOptions(max_batch_size=32,
                                                       batch_timeout_micros=2000))
    app = web.Application()
    app[SERVICE] = service
    app.router.add_get("/health", health)
    app.router.add_post("/label", label)
    app.add_subapp("/tfserving", RestApi(service).app())

    async def models(app):
        await registry.start()  # loads version 1 (off the loop), then polls for more
        yield
        await registry.close()

    app.cleanup_ctx.append(models)
    return app


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    print(json.dumps({"serving": f"http://{args.host}:{args.port}/tfserving/v1/models/demo"}))
    web.run_app(make_app(), host=args.host, port=args.port, handler_cancellation=True)
