"""TF 1's tf.train optimizers against TF 2.21 (tests/data/optimizers.*, made by
tests/data/make_optimizer_fixtures_tf.py): the programs there, built here with
`aioflow.compat.v1`, write TF's GraphDef node for node, name and place their slots as TF's,
and reach TF's variables and slots after each step, on ref and resource variables, with
dense and IndexedSlices gradients."""

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
import make_optimizer_fixtures_tf as programs  # noqa: E402

FIXTURES = json.loads((DATA / "optimizers.json").read_text())
ARRAYS = np.load(DATA / "optimizers.npz")
CASES = {case: (program, name, res) for case, program, name, res in programs.cases()}


def _build(case: str):
    program, name, res = CASES[case]
    g = tf.Graph()
    with g.as_default():
        things = programs.PROGRAMS[program](tf, name, res)
    return g, things


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("apply_")])
def test_graph_equals_tf(case):
    """apply_gradients writes TF's nodes: names, ops, inputs, attrs, colocation."""
    g, _ = _build(case)
    want = graph_pb2.GraphDef.FromString(ARRAYS[f"{case}/graph_def"].tobytes())
    assert_same_graph(g.as_graph_def(), want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_slots_and_variables_as_tf(case):
    g, things = _build(case)
    want = FIXTURES[case]
    with g.as_default():
        got = programs.describe(things)
        got["global_variables"] = [v.op.name for v in tf.global_variables()]
        got["train_op_collection"] = [op.name for op in g.get_collection("train_op")]
    assert got == want


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_equal_tf(case):
    """Every global variable (weights, slots, beta powers, global step) after each step."""
    g, things = _build(case)
    with g.as_default(), tf.Session(graph=g) as sess:
        sess.run(tf.global_variables_initializer())
        for k in range(programs.STEPS):
            if "loss" in things:
                np.testing.assert_allclose(sess.run(things["loss"]),
                                           ARRAYS[f"{case}/step{k}/loss"], rtol=1e-5)
            sess.run(things["train"])
            for var in tf.global_variables():
                want = ARRAYS[f"{case}/step{k}/{var.op.name}"]
                np.testing.assert_allclose(sess.run(var.read_value()), want, rtol=1e-5,
                                           atol=1e-6, err_msg=f"{case} {var.op.name} step {k}")
