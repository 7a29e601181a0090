#!/usr/bin/env python
"""Where one unbatched REST predict's CPU goes inside `aioflow serve`, without sockets:
benchmarks/serving.py's MLP served by the same ModelServer in this process (uvloop, one
intra-op thread), each part timed as the server runs it, in its own task. Prints one JSON
object of µs per call (the best of --repeats loops of --calls).

Parts: "predict" (RestApi.predict: route, JSON decode, checks, the run, JSON encode,
metrics; what the HTTP server awaits per request), "session" (the signature's run:
make_callable's call through the executor and kernels), "decode" (orjson + the request
format to arrays), "encode" (the response body), "metrics" (one request's counters and
latency), "acquire_release" (the model version and its in-flight gauge), "task" (an empty
task: the floor of each row).

Usage: python benchmarks/serving_parts.py [--calls 10000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from serving import write_mlp  # noqa: E402  (benchmarks/serving.py: the same MLP)


async def measure(base: str, calls: int, repeats: int) -> dict:
    from aioflow.proto import config_pb2
    from aioflow.serving import rest_codec
    from aioflow.serving.loader import LoadOptions
    from aioflow.serving.model_registry import ModelConfig
    from aioflow.serving.server import ModelServer

    config = config_pb2.ConfigProto(intra_op_parallelism_threads=1,
                                    inter_op_parallelism_threads=1)
    options = LoadOptions(inputs=(("x", "x:0"),), outputs=(("y", "probs:0"),),
                          session_config=config)
    server = ModelServer([ModelConfig("mlp", base, load_options=options)], port=None,
                         rest_api_port=None, poll_seconds=0, access_log=False)
    await server.registry.start()
    api, service = server._rest, server.service
    body = json.dumps({"instances": np.random.default_rng(1).standard_normal(
        (1, 64)).round(4).tolist()}).encode()
    mv = service.acquire("mlp")
    sig = mv.servable.signatures["serving_default"]
    inputs = rest_codec.parse_predict(rest_codec.loads(body), sig.inputs)[0]
    outputs = await sig.run(inputs, ("y",))

    async def predict():
        status, answer = await api.predict("mlp:predict", "/v1/models/mlp:predict", body,
                                           None)
        assert status == 200, answer

    async def session():
        await sig.run(inputs, ("y",))

    async def decode():
        rest_codec.parse_predict(rest_codec.loads(body), sig.inputs)

    async def encode():
        rest_codec.format_predict(outputs, "row")

    async def metrics():
        service.record("rest", "mlp", 1, "serving_default", time.perf_counter())

    async def acquire_release():
        service.release(service.acquire("mlp"))

    async def task():
        pass

    loop = asyncio.get_running_loop()
    for _ in range(2000):  # warm: the segment compiled, the epilogue's loop too
        await loop.create_task(predict())
    await asyncio.sleep(0.5)
    gc.freeze()  # as `aioflow serve` does after loading
    parts = {"predict": predict, "session": session, "decode": decode, "encode": encode,
             "metrics": metrics, "acquire_release": acquire_release, "task": task}
    result = {}
    for name, part in parts.items():
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                await loop.create_task(part())
            best = min(best, (time.perf_counter() - start) / calls)
        result[name] = round(best * 1e6, 2)
    service.release(mv)
    await server.registry.close()
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)  # as --tensorflow_intra_op_parallelism 1
    except ImportError:
        pass
    try:
        import uvloop
        run = uvloop.run
    except ImportError:
        run = asyncio.run
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "mlp")
        write_mlp(base)
        us = run(measure(base, args.calls, args.repeats))
    print(json.dumps({"benchmark": "serving_parts", "unit": "us_per_call", "calls": args.calls,
                      "repeats": args.repeats, "parts": us}))


if __name__ == "__main__":
    main()
