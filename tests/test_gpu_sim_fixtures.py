"""TF-written GraphDefs without devices, run with a simulated GPU (AIOFLOW_SIMULATED_GPUS=1):
the placer puts every op with a GPU kernel on the GPU, as TF's would, the partitioner
adds the copies, and each graph still runs to TensorFlow's values (core ops, control
flow, functions, whole models)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

import aioflow as af
from aioflow.framework.importer import parse_graph_def

DATA = pathlib.Path(__file__).parent / "data"
MANIFEST = json.loads((DATA / "fixtures.json").read_text())
MODELS = {e["name"]: e for e in map(
    json.loads, (DATA / "models_manifest.jsonl").read_text().splitlines())}
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"

FIXTURES = sorted(n for n in MANIFEST if (DATA / f"{n}.npz").exists()
                  and (n.startswith(("core_", "cf_", "builder_"))))


@pytest.fixture(autouse=True)
def sim_gpu(monkeypatch):
    monkeypatch.setenv("AIOFLOW_SIMULATED_GPUS", "1")


async def _run(pb: str, npz: str, fetches: list, targets=()):
    values = np.load(DATA / npz, allow_pickle=True)
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse_graph_def((DATA / pb).read_bytes()), name="")
    feeds = {k[len("feed:"):]: values[k] for k in values.files if k.startswith("feed:")}
    md = af.RunMetadata()
    async with af.Session(graph=g) as sess:
        got = await sess.run(list(fetches) + list(targets), feed_dict=feeds,
                             options=af.RunOptions(output_partition_graphs=True),
                             run_metadata=md)
    on_gpu = [n.op for p in md.partition_graphs for n in p.node if n.device == GPU0]
    return got, values, on_gpu


def _check(fetches, got, values, rtol, atol):
    for fetch, value in zip(fetches, got, strict=False):
        want = values[f"fetch:{fetch}"]
        value = np.asarray(value)
        assert value.dtype == want.dtype, fetch
        assert value.shape == want.shape, fetch
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(value, want, rtol=rtol, atol=atol, err_msg=fetch)
        else:
            np.testing.assert_array_equal(value, want, err_msg=fetch)


@pytest.mark.parametrize("name", FIXTURES)
async def test_fixture_runs_to_tensorflow_values_with_a_gpu(name):
    entry = MANIFEST[name]
    got, values, _ = await _run(f"{name}.pb", f"{name}.npz", entry["fetches"],
                                entry.get("targets", []))
    _check(entry["fetches"], got, values, 2e-5, 1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
async def test_model_runs_to_tensorflow_values_with_a_gpu(name):
    entry = MODELS[name]
    got, values, on_gpu = await _run(entry["pb"], entry["npz"], entry["fetches"])
    for fetch, value in zip(entry["fetches"], got, strict=True):
        want = values[f"fetch:{fetch}"]
        scale = float(np.abs(want).max()) if want.size and want.dtype.kind == "f" else 1.0
        if want.dtype.kind == "f":
            np.testing.assert_allclose(value, want, rtol=1e-4, atol=2e-4 * scale, err_msg=fetch)
        else:
            np.testing.assert_array_equal(value, want, err_msg=fetch)
    compute = set(on_gpu) - {"_Send", "_Recv", "_HostSend", "_HostRecv", "_CopyFromGpuToHost",
                             "_CopyFromHostToGpu", "Const", "Identity", "NoOp"}
    assert compute, on_gpu  # its compute runs on the GPU


FUNCTIONS = json.loads((DATA / "function_fixtures.json").read_text())


@pytest.mark.parametrize("lowered", [True, False], ids=["lowered", "called"])
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
async def test_function_fixture_runs_to_tensorflow_values_with_a_gpu(name, lowered):
    """Functional control flow (If, While, Case, calls): lowered and inlined (the
    default: the bodies' ops are placed like any other), or kept as calls (a call has
    no GPU kernel: it and its body run on the CPU)."""
    from test_functions import called_config, run_fixture

    await run_fixture(name, None if lowered else called_config())
