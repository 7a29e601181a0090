"""Whole models as the acceptance test: frozen GraphDefs TensorFlow 2.21 wrote
(tests/data/make_model_fixtures.py) import into aioflow and run to TensorFlow's outputs.

Committed (small, run in CI): MobileNetV2 alpha 0.35 at 96x96, Keras LSTM and GRU text
classifiers frozen to v1 control flow two ways (built in a v1 graph: TensorArrayV3; frozen
as TF 2 does, convert_variables_to_constants_v2 lowering the While: TensorList ops), a
BERT-style encoder, an SSD-style post-processing graph, and a TF 1.x-style conv net
(FusedBatchNormV3, pooling, transposed conv, resize).
Generated (tests/data/models/, git-ignored; each test skips when its file is absent):
MobileNetV2 1.0 at 224x224, ResNet50, EfficientNetB0, InceptionV3, DenseNet121.

Tolerance. Integer outputs (NMS indices, counts, classes) must be equal. Float outputs
must satisfy ``|aioflow - tf| <= 1e-4 * |tf| + 2e-4 * max|tf|``: the absolute part is
relative to the output's largest magnitude, because a deep float32 network's rounding
error is a fraction of the scale of the values it sums, not of each element (a logit
near zero is the difference of large terms and carries their absolute error). Run in
float64 (TF, the same GraphDefs with every float made double), TF's own float32 outputs
are off by up to 4e-5 of that scale (ResNet50, InceptionV3; 1e-6 to 4e-6 for the others)
and aioflow's by the same amount; the two float32 results differ from each other by up to
5.3e-5 (InceptionV3). 2e-4 leaves a margin of about 4 for the generated models and 20 for
the committed ones, and a wrong kernel (a transposed filter, a missed padding row, a
wrong epsilon) shows up orders of magnitude above it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework.importer import parse_graph_def

DATA = Path(__file__).parent / "data"
LARGE_DIR = DATA / "models"
SMALL = {e["name"]: e for e in
         map(json.loads, (DATA / "models_manifest.jsonl").read_text().splitlines())}
#: The generated models (tests/data/make_model_fixtures.py --large), tested when present.
LARGE_NAMES = ["mobilenet_v2_1.0_224", "resnet50", "efficientnet_b0", "inception_v3",
               "densenet121"]
GENERATE = ("TF_CPP_MIN_LOG_LEVEL=3 python tests/data/make_model_fixtures.py --large "
            "(with TensorFlow 2.21)")

RTOL = 1e-4
SCALE_TOL = 2e-4


def _large_entry(name):
    manifest = LARGE_DIR / "manifest.jsonl"
    if not (LARGE_DIR / f"{name}.pb").exists() or not manifest.exists():
        pytest.skip(f"tests/data/models/{name}.pb absent: generate it with {GENERATE}")
    entries = {e["name"]: e for e in map(json.loads, manifest.read_text().splitlines())}
    if name not in entries:
        pytest.skip(f"{name} is not in tests/data/models/manifest.jsonl: regenerate with "
                    f"{GENERATE}")
    return entries[name]


def _load(entry, directory):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse_graph_def((directory / entry["pb"]).read_bytes()), name="")
    values = np.load(directory / entry["npz"], allow_pickle=False)
    feeds = {k[len("feed:"):]: values[k] for k in values.files if k.startswith("feed:")}
    want = [values[f"fetch:{f}"] for f in entry["fetches"]]
    return g, feeds, want


def _assert_matches(entry, got, want):
    for label, value, expected in zip(entry["outputs"], got, want, strict=True):
        value = np.asarray(value)
        where = f"{entry['name']}: {label}"
        assert value.dtype == expected.dtype, where
        assert value.shape == expected.shape, where
        if expected.dtype.kind in "fc":
            scale = float(np.max(np.abs(expected))) if expected.size else 0.0
            np.testing.assert_allclose(value, expected, rtol=RTOL, atol=SCALE_TOL * scale,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=where)


async def _run(entry, directory, **session_kw):
    g, feeds, want = _load(entry, directory)
    async with af.Session(graph=g, **session_kw) as sess:
        got = await sess.run(entry["fetches"], feed_dict=feeds)
    _assert_matches(entry, got, want)


def _config(opt_level):
    return af.ConfigProto(graph_options=af.GraphOptions(optimizer_options=af.OptimizerOptions(
        opt_level=getattr(af.OptimizerOptions, opt_level))))


@pytest.mark.usefixtures("segments_mode")
@pytest.mark.parametrize("opt_level", ["L1", "L0"])  # folded and CSE'd, and as frozen
@pytest.mark.parametrize("name", sorted(SMALL))
async def test_committed_model_runs_to_tensorflow_values(name, opt_level):
    await _run(SMALL[name], DATA, config=_config(opt_level))


@pytest.mark.parametrize("name", LARGE_NAMES)
async def test_generated_model_runs_to_tensorflow_values(name):
    await _run(_large_entry(name), LARGE_DIR)


async def test_concurrent_runs_of_one_model_each_get_tensorflow_values():
    entry = SMALL["mobilenet_v2_0.35_96"]
    g, feeds, want = _load(entry, DATA)
    async with af.Session(graph=g) as sess:
        results = await asyncio.gather(*(sess.run(entry["fetches"], feeds) for _ in range(4)))
    for got in results:
        _assert_matches(entry, got, want)


def test_manifest_describes_every_committed_fixture():
    on_disk = {p.name for p in DATA.glob("models_*") if p.suffix in (".pb", ".npz")}
    listed = {e[k] for e in SMALL.values() for k in ("pb", "npz")}
    assert on_disk == listed
    assert set(SMALL) == {"mobilenet_v2_0.35_96", "lstm_text", "gru_text", "lstm_text_tf2",
                          "gru_text_tf2", "bert_tiny", "ssd_postprocess", "tf1_convnet"}
    # committed fixtures stay small (CI clones them)
    assert sum((DATA / n).stat().st_size for n in listed) < 3_000_000


@pytest.mark.parametrize("name", ["lstm_text", "gru_text", "lstm_text_tf2", "gru_text_tf2"])
def test_rnn_classifiers_are_v1_control_flow(name):
    """Built in a v1 graph: TensorArrayV3; frozen the TF 2 way (the While lowered by
    convert_variables_to_constants_v2): TensorLists."""
    ops = SMALL[name]["ops"]
    for op in ("Enter", "Merge", "Switch", "NextIteration", "Exit", "LoopCond"):
        assert op in ops, op
    assert not {"While", "StatelessWhile"} & set(ops)
    lists = {"TensorListReserve", "TensorListFromTensor", "TensorListGetItem",
             "TensorListSetItem", "TensorListStack"}
    if name.endswith("_tf2"):
        assert lists <= set(ops) and "TensorArrayV3" not in ops
    else:
        assert "TensorArrayV3" in ops and not lists & set(ops)


def test_model_graphs_hold_the_ops_they_exist_to_test():
    ops = {name: set(e["ops"]) for name, e in SMALL.items()}
    assert {"Conv2D", "DepthwiseConv2dNative", "Relu6", "Rsqrt", "Pad"} <= ops[
        "mobilenet_v2_0.35_96"]
    assert {"GatherV2", "Einsum", "Erf", "Erfc", "Softmax", "SquaredDifference"} <= ops[
        "bert_tiny"]
    assert {"NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5", "TopKV2",
            "GatherV2"} <= ops["ssd_postprocess"]
    assert {"FusedBatchNormV3", "MaxPool", "AvgPool", "Conv2DBackpropInput",
            "ResizeBilinear", "ResizeNearestNeighbor"} <= ops["tf1_convnet"]
