"""An aioflow graph inside a FastAPI service: the lifespan loads the model and builds its
executors (off the event loop), a dependency hands each request the Session, and the
endpoint awaits `sess.run` -- many requests run on the one loop, none blocks it.

    pip install 'aioflow[serve]' fastapi uvicorn
    python examples/fastapi_service.py --port 8000
    curl -s localhost:8000/predict -H 'Content-Type: application/json' \
         -d '{"x": [[1, 0, 0], [0, 0, 1]]}'

AIOFLOW_MODEL=path/to/frozen.pb serves your own frozen GraphDef instead of the demo
graph (its input tensor x:0, its outputs probs:0 and label:0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from contextlib import asynccontextmanager
from typing import Annotated

import numpy as np
from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel

import aioflow as af
from aioflow.framework import errors


def demo_graph() -> af.Graph:
    """x[?,3] -> softmax(x @ w + b) -> probs, label."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[None, 3], name="x")
        w = af.constant(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        probs = af.nn.softmax(af.matmul(x, w) + af.constant([0.1, -0.1]), name="probs")
        af.argmax(probs, axis=1, name="label")
    return g


def load_graph() -> af.Graph:
    """The model: a frozen GraphDef from AIOFLOW_MODEL, else the demo graph (blocking)."""
    path = os.environ.get("AIOFLOW_MODEL")
    if not path:
        return demo_graph()
    from aioflow.framework.importer import parse_graph_def

    g = af.Graph()
    with g.as_default():
        with open(path, "rb") as f:
            af.import_graph_def(parse_graph_def(f.read()), name="")
    return g


@asynccontextmanager
async def lifespan(app: FastAPI):
    graph = await asyncio.to_thread(load_graph)  # file reads and import off the loop
    async with af.Session(graph=graph) as sess:
        # The first run of a signature builds its executors (on a build thread).
        await sess.run(["probs:0", "label:0"], {"x:0": np.zeros((1, 3), np.float32)})
        app.state.session = sess
        yield


app = FastAPI(lifespan=lifespan)


def get_session(request: Request) -> af.Session:
    return request.app.state.session


SessionDep = Annotated[af.Session, Depends(get_session)]


class PredictRequest(BaseModel):
    x: list[list[float]]


@app.post("/predict")
async def predict(body: PredictRequest, sess: SessionDep):
    try:
        probs, label = await sess.run(["probs:0", "label:0"],
                                      {"x:0": np.asarray(body.x, np.float32)})
    except (errors.InvalidArgumentError, ValueError, TypeError) as e:
        raise HTTPException(status_code=400, detail=str(e)) from None
    return {"probs": probs.tolist(), "label": label.tolist()}


if __name__ == "__main__":
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port)
