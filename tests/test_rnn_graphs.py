"""tf.nn.dynamic_rnn / static_rnn / bidirectional_dynamic_rnn over TF 1's cells against
TF 2.21 (tests/data/rnn.*, made by tests/data/make_rnn_fixtures_tf.py): BasicLSTMCell,
LSTMCell with peepholes, projection and clipping, GRUCell, MultiRNNCell and DropoutWrapper,
with and without sequence lengths, built here with `aioflow.compat.v1`: TF's GraphDef node
for node (op types, names, inputs, attrs), TF's variables, and TF's outputs and states from
the same seeded initialization."""

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
import make_rnn_fixtures_tf as programs  # noqa: E402

FIXTURES = json.loads((DATA / "rnn.json").read_text())
ARRAYS = np.load(DATA / "rnn.npz")


@pytest.fixture(scope="module", params=sorted(programs.PROGRAMS))
def built(request):
    name = request.param
    g = tf.Graph()
    with g.as_default():
        fetches = programs.PROGRAMS[name](tf)
        variables = [v.op.name for v in tf.global_variables()]
    return name, g, fetches, variables


def test_rnn_graph_equals_tf(built):
    name, g, _, variables = built
    assert variables == FIXTURES[name]["variables"]
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(g.as_graph_def(), want)


def test_rnn_values_equal_tf(built):
    name, g, fetches, _ = built
    fetches = {k: v for k, v in fetches.items() if k != "graph_only"}
    assert sorted(fetches) == FIXTURES[name]["fetches"]
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(fetches, programs.feeds(g))
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS[f"{name}/{key}"], rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name} {key}")
