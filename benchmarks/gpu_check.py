#!/usr/bin/env python
"""The real-GPU check of aioflow's GPU device (issue 28); prints one JSON object.

On a machine with a CUDA GPU and CuPy (the `aioflow[gpu]` extra) it installs nothing and:
1. runs the real-CuPy tests (`pytest -m gpu tests/test_gpu_cupy.py`);
2. times MobileNetV2 and ResNet50 at batch 32 on the GPU against aioflow on the CPU
   (and ONNX Runtime's CUDA provider when onnxruntime-gpu is installed and an .onnx of
   the model lies next to its .pb), medians of a few runs taken in turns;
3. measures the loop's heartbeat (p50/p99 lag of a 1 ms sleep) while 64 GPU runs are
   in flight;
4. measures one launch's latency through each event manager (host callback, polling).

The models are the frozen GraphDefs of benchmarks/models.py (--models-dir, default
~/.cache/aioflow-bench: mobilenetv2_224.pb, resnet50_224.pb, written with TF's Python),
else the generated fixtures tests/data/models/{mobilenet_v2_1.0_224,resnet50}.pb, else
the committed small MobileNetV2 (alpha 0.35, 96x96), reported as such.

Without a GPU (or without CuPy) it says so and exits 0. `--simulated` runs the same
steps on the simulated GPU instead (a dry run of this script; its numbers are not a
GPU's).

Usage: python benchmarks/gpu_check.py [--models-dir DIR] [--rounds 3] [--no-tests]
           [--simulated]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def _no_gpu_message() -> str | None:
    from aioflow.gpu import cupy_gpu

    if cupy_gpu.cupy is None:
        return "CuPy is not installed (pip install 'aioflow[gpu]'): no GPU check to run"
    if cupy_gpu.device_count() == 0:
        return "CuPy sees no CUDA GPU on this machine: no GPU check to run"
    return None


def _run_tests() -> dict:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-m", "gpu", str(ROOT / "tests" / "test_gpu_cupy.py")],
                          capture_output=True, text=True, cwd=ROOT)
    lines = proc.stdout.strip().splitlines()
    return {"returncode": proc.returncode, "summary": lines[-1] if lines else proc.stderr[-500:]}


def _models(models_dir: str) -> list[dict]:
    """(name, pb path, input name, output name, input shape) of each model to time."""
    found = []
    for name, cached, fixture in (("mobilenetv2", "mobilenetv2_224.pb", "mobilenet_v2_1.0_224"),
                                  ("resnet50", "resnet50_224.pb", "resnet50")):
        path = Path(models_dir) / cached
        if path.exists() and Path(str(path) + ".json").exists():
            meta = json.loads(Path(str(path) + ".json").read_text())
            found.append({"name": name, "pb": path, "input": meta["input"],
                          "output": meta["output"], "shape": (224, 224, 3)})
            continue
        manifest = DATA / "models" / "manifest.jsonl"
        if (DATA / "models" / f"{fixture}.pb").exists() and manifest.exists():
            entries = {e["name"]: e for e in map(json.loads, manifest.read_text().splitlines())}
            entry = entries.get(fixture)
            if entry:
                feed, spec = next(iter(entry["feeds"].items()))
                found.append({"name": name, "pb": DATA / "models" / entry["pb"], "input": feed,
                              "output": entry["fetches"][0],
                              "shape": tuple(spec["shape"][1:])})
    if not found:
        found.append({"name": "mobilenet_v2_0.35_96 (committed stand-in)",
                      "pb": DATA / "models_mobilenet_v2_0.35_96.pb", "input": "images:0",
                      "output": "Identity:0", "shape": (96, 96, 3)})
    return found


def _graph(pb: Path):
    import aioflow as af
    from aioflow.proto import graph_pb2

    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString(pb.read_bytes())
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    return g


async def _time_models(rounds: int) -> list[dict]:
    import aioflow as af

    results = []
    for model in _models(os.environ.get("AIOFLOW_BENCH_MODELS", "")):
        batch = np.random.default_rng(0).standard_normal((32,) + tuple(model["shape"])).astype(
            np.float32)
        feeds = {model["input"]: batch}
        sessions = {
            "gpu": af.Session(graph=_graph(model["pb"])),
            "cpu": af.Session(graph=_graph(model["pb"]),
                              config=af.ConfigProto(device_count={"GPU": 0})),
        }
        times: dict[str, list[float]] = {k: [] for k in sessions}
        outs = {}
        for key, sess in sessions.items():  # warm-up: build, upload constants
            outs[key] = await sess.run(model["output"], feeds)
        for _ in range(rounds):
            for key, sess in sessions.items():
                start = time.perf_counter()
                await sess.run(model["output"], feeds)
                times[key].append(time.perf_counter() - start)
        for sess in sessions.values():
            await sess.close()
        row = {"model": model["name"], "batch": 32,
               "gpu_ms": 1e3 * statistics.median(times["gpu"]),
               "cpu_ms": 1e3 * statistics.median(times["cpu"]),
               "max_abs_diff_gpu_vs_cpu": float(np.max(np.abs(outs["gpu"] - outs["cpu"])))}
        row["cpu_over_gpu"] = row["cpu_ms"] / row["gpu_ms"]
        row["onnxruntime_cuda_ms"] = _onnxruntime_ms(model, batch, rounds)
        results.append(row)
    return results


def _onnxruntime_ms(model: dict, batch, rounds: int):
    """ONNX Runtime's CUDA provider on model.onnx next to the .pb, or why not."""
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime not installed"
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return "onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)"
    onnx_path = Path(model["pb"]).with_suffix(".onnx")
    if not onnx_path.exists():
        return f"no {onnx_path.name} next to the model (convert it with tf2onnx)"
    sess = ort.InferenceSession(str(onnx_path), providers=["CUDAExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: batch})
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        sess.run(None, {name: batch})
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


async def _heartbeat(in_flight: int = 64) -> dict:
    import aioflow as af

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [256, 256], name="x")
        y = x
        for _ in range(20):
            y = af.tanh(af.matmul(y, x) * 0.01)
        af.identity(y, name="y")
    feeds = {"x:0": np.ones((256, 256), np.float32)}
    lags: list[float] = []
    async with af.Session(graph=g) as sess:
        await sess.run("y:0", feeds)
        done = False

        async def beat():
            while not done:
                start = time.perf_counter()
                await asyncio.sleep(0.001)
                lags.append(time.perf_counter() - start - 0.001)

        task = asyncio.ensure_future(beat())
        start = time.perf_counter()
        await asyncio.gather(*(sess.run("y:0", feeds) for _ in range(in_flight)))
        elapsed = time.perf_counter() - start
        done = True
        await task
    return {"runs_in_flight": in_flight, "wall_s": elapsed, "samples": len(lags),
            "lag_p50_ms": 1e3 * float(np.percentile(lags, 50)),
            "lag_p99_ms": 1e3 * float(np.percentile(lags, 99))}


async def _event_managers(simulated: bool, launches: int = 2000) -> dict:
    """The latency of one small launch, resolved by each event manager."""
    from aioflow.framework.kernel_context import OpKernelContext
    from aioflow.gpu.event_manager import HostCallbackEvents, PollingEvents

    if simulated:
        from aioflow.gpu.simulated import SimulatedGpu as Device
    else:
        from aioflow.gpu.cupy_gpu import CupyGpu as Device
    result = {}
    for kind, events in (("callback", HostCallbackEvents()), ("poll", PollingEvents())):
        device = Device(0, events)
        x = device.upload(np.ones(1024, np.float32))
        ctx = OpKernelContext(0, [], 0)
        times = []
        for _ in range(launches):
            future = asyncio.get_running_loop().create_future()
            start = time.perf_counter()
            device.launch(ctx, "bench", lambda xp, a: (a + 1,), [x], frozenset(), frozenset(),
                          lambda o, e, f=future: f.set_result(o))
            await future
            times.append(time.perf_counter() - start)
        result[kind] = {"launch_p50_us": 1e6 * float(np.percentile(times, 50)),
                        "launch_p99_us": 1e6 * float(np.percentile(times, 99))}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", default=os.path.expanduser("~/.cache/aioflow-bench"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-tests", action="store_true")
    parser.add_argument("--simulated", action="store_true",
                        help="a dry run on the simulated GPU (not a GPU's numbers)")
    args = parser.parse_args()
    os.environ["AIOFLOW_BENCH_MODELS"] = args.models_dir
    if args.simulated:
        os.environ["AIOFLOW_SIMULATED_GPUS"] = "1"
        report: dict = {"gpu": "simulated", "note": "a dry run: not a GPU's numbers"}
    else:
        os.environ.pop("AIOFLOW_SIMULATED_GPUS", None)  # the real device
        message = _no_gpu_message()
        if message is not None:
            print(message, file=sys.stderr)
            print(json.dumps({"gpu": False, "message": message}))
            return 0
        from aioflow.gpu import cupy_gpu

        props = cupy_gpu.cupy.cuda.runtime.getDeviceProperties(0)
        report = {"gpu": True, "device": props["name"].decode(errors="replace")}
        if not args.no_tests:
            report["tests"] = _run_tests()
    report["models"] = asyncio.run(_time_models(args.rounds))
    report["heartbeat"] = asyncio.run(_heartbeat())
    report["event_managers"] = asyncio.run(_event_managers(args.simulated))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
