"""tf.layers against TF 2.21's tf.compat.v1.layers (tests/data/layers.*, made by
tests/data/make_layers_fixtures_tf.py): the programs there, built here with
`aioflow.compat.v1` under the same graph seed, name their variables as TF's (so TF's
checkpoints restore), fill UPDATE_OPS and REGULARIZATION_LOSSES as TF's, and compute TF's
outputs and variables (moving statistics after one run of the update ops)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from graph_compare import assert_same_graph

import aioflow.compat.v1 as tf
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_layers_fixtures_tf as programs  # noqa: E402

FIXTURES = json.loads((DATA / "layers.json").read_text())
ARRAYS = np.load(DATA / "layers.npz")


def _build(name: str):
    g = tf.Graph()
    with g.as_default():
        tf.set_random_seed(25)
        outputs, feeds = programs.PROGRAMS[name](tf)
    return g, outputs, feeds


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_variables_and_collections_as_tf(name):
    g, _, _ = _build(name)
    with g.as_default():
        assert programs.describe(tf, g) == FIXTURES[name]


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_equal_tf(name):
    g, outputs, feeds = _build(name)
    with g.as_default(), tf.Session(graph=g) as sess:
        got = programs.run(tf, sess, g, outputs, feeds)
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS[f"{name}/{key}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {key}")


# Node for node, every program: dense, conv1d/2d/3d, separable and transposed
# convolutions, fused and non-fused batch norm (bool and tensor training), the poolings,
# dropout, flatten, layer objects called twice, batch renormalization.
@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_equals_tf(name):
    g, _, _ = _build(name)
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(g.as_graph_def(), want)
