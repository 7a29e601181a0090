"""af.nn's convolution, pooling and normalisation builders write the GraphDefs TensorFlow's
Python layer writes (tests/data/nn_conv_builder_*.pb, from make_nn_conv_fixtures.py), node
for node, and those graphs run in aioflow to TF's values (also imported from TF's bytes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import aioflow as af

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_nn_conv_fixtures as fixtures  # noqa: E402
from graph_compare import assert_same_graph  # noqa: E402

META = json.loads((DATA / "nn_conv_cases.json").read_text())["builders"]
VALUES = np.load(DATA / "nn_conv_builders.npz", allow_pickle=False)


@pytest.mark.parametrize("name", fixtures.BUILDERS)
def test_builder_writes_tensorflows_graph(name, load_graph_def):
    graph = af.Graph()
    with graph.as_default():
        fetches = getattr(fixtures, name)(af)
    assert [t.name for t in fetches] == META[name]["fetches"]
    assert_same_graph(graph.as_graph_def(), load_graph_def(f"nn_conv_{name}"))


def _check(name, values):
    for tname, got in zip(META[name]["fetches"], values, strict=True):
        want = VALUES[f"{name}:fetch:{tname}"]
        assert got.shape == want.shape, tname
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=tname)


@pytest.mark.parametrize("name", fixtures.BUILDERS)
def test_builder_graph_runs_to_tensorflows_values(name):
    graph = af.Graph()
    with graph.as_default():
        fetches = getattr(fixtures, name)(af)
    feeds = {graph.get_tensor_by_name(t): VALUES[f"{name}:feed:{t}"]
             for t in META[name]["feeds"]}
    with af.SyncSession(graph=graph) as sess:
        _check(name, sess.run(fetches, feeds))


@pytest.mark.parametrize("name", fixtures.BUILDERS)
def test_tensorflow_graph_imports_and_runs(name, load_graph_def):
    graph = af.Graph()
    with graph.as_default():
        af.import_graph_def(load_graph_def(f"nn_conv_{name}"), name="")
    feeds = {graph.get_tensor_by_name(t): VALUES[f"{name}:feed:{t}"]
             for t in META[name]["feeds"]}
    fetches = [graph.get_tensor_by_name(t) for t in META[name]["fetches"]]
    with af.SyncSession(graph=graph) as sess:
        _check(name, sess.run(fetches, feeds))


def test_padding_and_sequence_arguments_are_checked_as_tf():
    x = af.placeholder(af.float32, [1, 4, 4, 1])
    with pytest.raises(ValueError, match="'EXPLICIT' is not a valid value for `padding`"):
        af.nn.conv2d(x, np.ones((1, 1, 1, 1), np.float32), 1, "EXPLICIT")
    with pytest.raises(ValueError, match="strides should be of length 1, 2 or 4 but was 3"):
        af.nn.conv2d(x, np.ones((1, 1, 1, 1), np.float32), [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="`ksize` cannot be zero"):
        af.nn.max_pool(x, 0, 1, "SAME")
    with pytest.raises(ValueError, match="When padding is a list, it must be of size 4"):
        af.nn.max_pool(x, 2, 1, [[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D tensor"):
        af.nn.fused_batch_norm(x, [1.0], [0.0], is_training=False)
