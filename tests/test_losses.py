"""tf.losses against TF 2.21 (tests/data/losses.*, made by
tests/data/make_losses_fixtures_tf.py): every loss under each reduction and kind of
weights, the sparse and pairwise losses, the loss collections and totals, built here with
`aioflow.compat.v1`: TF's GraphDef node for node, TF's values, TF's LOSSES collection."""

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
import make_losses_fixtures_tf as programs  # noqa: E402

FIXTURES = json.loads((DATA / "losses.json").read_text())
ARRAYS = np.load(DATA / "losses.npz")


def _build(name):
    g = tf.Graph()
    with g.as_default():
        outputs = programs.PROGRAMS[name](tf)
        losses = [t.name for t in tf.losses.get_losses()]
    return g, outputs, losses


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_loss_equals_tf(name):
    g, outputs, losses = _build(name)
    assert losses == FIXTURES[name]["losses"]
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(g.as_graph_def(), want)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(outputs)
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS[f"{name}/{key}"], rtol=1e-6, atol=1e-7)


def test_errors_as_tf():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="Argument `labels` must not be None."):
            tf.losses.mean_squared_error(None, tf.constant([1.0]))
        with pytest.raises(ValueError, match="Invalid Reduction Key"):
            tf.losses.mean_squared_error(tf.constant([1.0]), tf.constant([1.0]),
                                         reduction="mean")
        with pytest.raises(ValueError, match="weights can not be broadcast to values"):
            tf.losses.mean_squared_error(tf.constant([[1.0, 2.0]]),
                                         tf.constant([[1.0, 2.0]]),
                                         weights=tf.constant([[1.0, 2.0, 3.0]]))
