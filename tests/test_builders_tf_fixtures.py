"""Graphs built with aioflow's Python API are node-for-node the GraphDefs TensorFlow's
Python layer wrote (tests/data): same node names in the same order, ops, inputs, devices
and attrs (compared as protos)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

import aioflow.api as af
from aioflow.framework.op_def_library import apply_op

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_fixtures  # noqa: E402
from graph_compare import assert_same_graph  # noqa: E402

MANIFEST = json.loads((DATA / "fixtures.json").read_text())
BUILDERS = sorted(name for name, entry in MANIFEST.items() if "builder" in entry)


@pytest.mark.parametrize("name", BUILDERS)
def test_builder_fixture(name, load_graph_def):
    graph = af.Graph()
    with graph.as_default():
        fetches = getattr(make_fixtures, MANIFEST[name]["builder"])(af)
    assert [t.name for t in fetches] == MANIFEST[name]["fetches"]
    assert_same_graph(graph.as_graph_def(), load_graph_def(name))
    assert len(graph.get_operations()) == MANIFEST[name]["num_nodes"]


# -- the core_* programs, rebuilt with af through the TF 2 names make_core uses -----------

class _RawOps:
    def __getattr__(self, op_type):
        return lambda name=None, **kw: apply_op(op_type, name=name, **kw)


def _tf_like_module():
    """`tf` as make_core sees it (TF 2 names, tf.compat.v1 for placeholders), backed by af."""
    tf = types.SimpleNamespace(**{k: getattr(af, k) for k in af.__all__})
    tf.where = af.where_v2
    tf.raw_ops = _RawOps()
    tf.compat = types.SimpleNamespace(v1=types.SimpleNamespace(
        placeholder=af.placeholder, placeholder_with_default=af.placeholder_with_default,
        where=af.where))
    return tf


class _ComparingMaker:
    """Stands in for make_fixtures.Maker: compares each built graph instead of saving it."""

    def __init__(self):
        self.tf = _tf_like_module()
        self.seen: dict[str, tuple] = {}

    def save(self, name, graph, feeds, fetches, description, control_flow, targets=(),
             extra=None):
        self.seen[name] = (graph.as_graph_def(), [t.name for t in fetches],
                           [t.name for t in targets])


@pytest.fixture(scope="module")
def core_graphs():
    maker = _ComparingMaker()
    make_fixtures.make_core(maker)
    return maker.seen


CORE = sorted(name for name in MANIFEST if name.startswith("core_"))


@pytest.mark.parametrize("name", CORE)
def test_core_program(core_graphs, name, load_graph_def):
    graph_def, fetches, targets = core_graphs[name]
    assert fetches == MANIFEST[name]["fetches"]
    assert targets == MANIFEST[name]["targets"]
    assert_same_graph(graph_def, load_graph_def(name))


def test_builder_import_twice_uniquifies_prefix():
    graph = af.Graph()
    with graph.as_default():
        o1, o2, out = make_fixtures.builder_import(af)
    assert (o1.name, o2.name, out.name) == ("imp/out:0", "imp_1/out:0", "out:0")
    # The mapped placeholder stays in the graph, unconnected.
    assert graph.get_operation_by_name("imp/x").outputs[0].consumers() == []
    assert graph.get_operation_by_name("imp/mul").inputs[0].name == "inp:0"
    assert graph.get_operation_by_name("imp_1/mul").inputs[0] is o1
