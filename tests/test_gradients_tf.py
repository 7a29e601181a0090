"""af.gradients against TF 2.21: for each program of gradient_programs.py, the nodes
tf.gradients adds are TF's node for node (op, inputs, attrs, names, in order), so are the
forward If / While nodes (which TF's gradient rewrites) and every function of the
library (node for node; the uid TF puts at the end of a gradient function's name,
`<forward>_grad_<uid>`, is normalized: graph_compare.normalize_function_uids), and the
gradients' values are TF's (fixtures: tests/data/make_gradient_fixtures_tf.py)."""

from __future__ import annotations

import json
from pathlib import Path

import gradient_programs
import numpy as np
import pytest
from graph_compare import assert_same_graph, assert_same_library, normalize_function_uids

import aioflow.compat.v1 as tf
from aioflow.proto import graph_pb2

DATA = Path(__file__).resolve().parent / "data" / "gradients_tf"
INDEX = json.loads((DATA / "index.json").read_text())
PROGRAMS = sorted(INDEX["programs"])


def _tf_graph_def(name: str) -> graph_pb2.GraphDef:
    graph_def = graph_pb2.GraphDef()
    graph_def.ParseFromString((DATA / f"{name}.pb").read_bytes())
    return graph_def


def _tail(graph_def, start: int) -> graph_pb2.GraphDef:
    out = graph_pb2.GraphDef()
    out.node.extend(graph_def.node[start:])
    return out


_FUNCTIONAL = ("If", "StatelessIf", "While", "StatelessWhile")


def _functional_forward(graph_def, n_forward: int) -> graph_pb2.GraphDef:
    """The forward If / While nodes (TF's gradient rewrites them to output more)."""
    return graph_pb2.GraphDef(node=[n for n in graph_def.node[:n_forward]
                                    if n.op in _FUNCTIONAL])


@pytest.fixture(scope="module", params=PROGRAMS)
def built(request):
    name = request.param
    return name, gradient_programs.build(tf, gradient_programs.PROGRAMS[name])


def test_gradient_nodes_are_tfs(built):
    name, (graph, n_forward, spec, _) = built
    if spec.get("values_only"):
        pytest.skip(f"values only: {spec['values_only']}")
    info = INDEX["programs"][name]
    assert n_forward == info["n_forward"]
    ref = normalize_function_uids(_tf_graph_def(name))
    mine = normalize_function_uids(graph.as_graph_def())
    assert_same_graph(_tail(mine, n_forward), _tail(ref, n_forward))
    assert_same_graph(_functional_forward(mine, n_forward), _functional_forward(ref, n_forward))
    assert_same_library(mine, ref)


def test_gradient_values_are_tfs(built):
    name, (graph, _, spec, grads) = built
    if spec.get("nodes_only"):
        pytest.skip(f"nodes only: {spec['nodes_only']}")
    info = INDEX["programs"][name]
    assert [i for i, g in enumerate(grads) if g is None] == info["none"]
    fetches = gradient_programs.fetchable(tf, grads)
    with tf.Session(graph=graph) as sess:
        if spec.get("init"):
            sess.run(spec["init"])
        values = sess.run([f for f in fetches if f is not None], spec["feeds"])
    want = np.load(DATA / f"{name}.npz")
    got = iter(gradient_programs.densify(v) for v in values)
    for i, f in enumerate(fetches):
        if f is not None:
            np.testing.assert_allclose(next(got), want[str(i)], rtol=2e-5, atol=2e-6,
                                       err_msg=f"gradient {i} of {name}")
