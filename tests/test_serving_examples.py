"""examples/fastapi_service.py and examples/aiohttp_service.py serve real HTTP requests
on a free loopback port (uvicorn and aiohttp's runner), answers checked against NumPy."""

from __future__ import annotations

import asyncio
import importlib.util
import socket
from pathlib import Path

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
W = np.arange(6, dtype=np.float32).reshape(3, 2)
B = np.float32([0.1, -0.1])


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name[:-3], EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _probs(x):
    logits = np.float32(x) @ W + B
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


async def test_fastapi_service():
    pytest.importorskip("fastapi")
    uvicorn = pytest.importorskip("uvicorn")
    httpx = pytest.importorskip("httpx")
    example = _example("fastapi_service.py")
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(example.app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    task = asyncio.ensure_future(server.serve())
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.02)
        assert server.started
        rows = [[[1, 0, 0]], [[0, 0, 1]], [[0.5, -2, 3], [1, 1, 1]]]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            answers = await asyncio.gather(*(client.post("/predict", json={"x": x})
                                             for x in rows))
            bad = await client.post("/predict", json={"x": [[1, 2]]})
        for x, r in zip(rows, answers, strict=True):
            assert r.status_code == 200, r.text
            np.testing.assert_allclose(r.json()["probs"], _probs(x), rtol=1e-6)
            assert r.json()["label"] == _probs(x).argmax(axis=1).tolist()
        assert bad.status_code == 400 and "Cannot feed value of shape" in bad.json()["detail"]
    finally:
        server.should_exit = True
        await task


async def test_aiohttp_service(tmp_path):
    aiohttp = pytest.importorskip("aiohttp")
    from aiohttp import web

    example = _example("aiohttp_service.py")
    example.write_demo_model(str(tmp_path))
    runner = web.AppRunner(example.make_app(str(tmp_path)))
    await runner.setup()
    port = _free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(base + "/health") as r:
                assert await r.text() == "ok"
            x = [[1, 0, 0], [0, 0, 1]]
            async with http.post(base + "/tfserving/v1/models/demo:predict",
                                 json={"instances": x}) as r:
                assert r.status == 200
                preds = (await r.json())["predictions"]
            np.testing.assert_allclose([p["probs"] for p in preds], _probs(x), rtol=1e-6)
            assert [p["label"] for p in preds] == _probs(x).argmax(axis=1).tolist()

            async def label(row):
                async with http.post(base + "/label", json={"x": row}) as r:
                    return r.status, await r.json()

            rows = [[float(i), 0.0, float(-i)] for i in range(-4, 5)]
            got = await asyncio.gather(*(label(row) for row in rows))
            assert got == [(200, {"label": int(_probs([row]).argmax())}) for row in rows]
            async with http.get(base + "/tfserving/v1/models/demo") as r:
                assert (await r.json())["model_version_status"][0]["state"] == "AVAILABLE"
    finally:
        await runner.cleanup()
