"""What surrounds TF 1's optimizers, against TF 2.21 (tests/data/training_util.*, made by
tests/data/make_training_util_fixtures_tf.py): the global step, the learning-rate
schedules, gradient clipping and ExponentialMovingAverage, built here with
`aioflow.compat.v1`: TF's GraphDef node for node, and TF's values."""

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
import make_training_util_fixtures_tf as programs  # noqa: E402

FIXTURES = json.loads((DATA / "training_util.json").read_text())
ARRAYS = np.load(DATA / "training_util.npz")


def _build(name: str):
    g = tf.Graph()
    with g.as_default():
        run = programs.PROGRAMS[name](tf)
    return g, run


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_graph_equals_tf(name):
    g, _ = _build(name)
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{name}/graph_def"].tobytes())
    assert_same_graph(g.as_graph_def(), want)


@pytest.mark.parametrize("name", sorted(programs.PROGRAMS))
def test_values_equal_tf(name):
    g, run = _build(name)
    with tf.Session(graph=g) as sess:
        got = run(sess)
    assert sorted(got) == FIXTURES[name]["values"]
    for key, value in got.items():
        np.testing.assert_allclose(value, ARRAYS[f"{name}/{key}"], rtol=1e-6, atol=1e-7,
                                   err_msg=f"{name} {key}")
    assert getattr(run, "names", {}) == FIXTURES[name]["names"]


def test_global_step_errors():
    g = tf.Graph()
    with g.as_default():
        assert tf.train.get_global_step() is None
        tf.train.create_global_step()
        with pytest.raises(ValueError, match='"global_step" already exists.'):
            tf.train.create_global_step()
    with tf.Graph().as_default():
        tf.Variable(1.5, name="global_step")
        with pytest.raises(TypeError, match="does not have integer type"):
            tf.train.get_global_step()
