"""import_graph_def's devices and colocation groups as TF 2.21's importer gives them: a
colocated op takes the device of the first op of its group that has one (its own device
and the device scopes dropped), and a `colocate_with` scope around the import replaces
every imported op's groups with the scope's (tests/data/import_colocation_tf.json,
written by tests/data/make_import_colocation_tf.py)."""

from __future__ import annotations

import json

import aioflow as af
from aioflow.proto import graph_pb2
from tests.conftest import DATA

TF = json.loads((DATA / "import_colocation_tf.json").read_text())


def _graph_def(key: str) -> graph_pb2.GraphDef:
    return graph_pb2.GraphDef.FromString(bytes.fromhex(TF[key]))


def _described(graph: af.Graph) -> dict:
    out = {}
    for op in graph.get_operations():
        attr = op.node_def.attr
        groups = [s.decode() for s in attr["_class"].list.s] if "_class" in attr else None
        out[op.name] = {"device": op.device, "class": groups}
    return out


def test_colocated_ops_take_their_groups_device():
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(_graph_def("raw_graph_def"), name="")
        with af.device("/cpu:3"):
            af.import_graph_def(_graph_def("raw_graph_def"), name="s")
        af.import_graph_def(_graph_def("built_graph_def"), name="j")
    assert _described(g) == TF["plain"]


def test_colocate_with_scope_around_an_import():
    g = af.Graph()
    with g.as_default():
        with af.device("/cpu:2"):
            x = af.constant(0.0, name="x")
        y = af.constant(0.0, name="y")
        built = _graph_def("built_graph_def")
        with af.colocate_with(x):
            af.import_graph_def(built, name="i1")
        with af.colocate_with(y):
            af.import_graph_def(built, name="i2")
        with af.device("/cpu:3"):
            with af.colocate_with(x):
                af.import_graph_def(built, name="i3")
    assert _described(g) == TF["scoped"]


def test_session_sees_the_scoped_groups():
    """The NodeDefs the session extends with carry the scope's groups and device."""
    g = af.Graph()
    with g.as_default():
        with af.device("/cpu:1"):
            x = af.constant(0.0, name="x")
        with af.colocate_with(x):
            af.import_graph_def(_graph_def("built_graph_def"), name="i")
    written = {n.name: n for n in g.as_graph_def().node}
    for name in ("i/a", "i/b", "i/c", "i/d"):
        assert written[name].device == "/device:CPU:1"
        assert list(written[name].attr["_class"].list.s) == [b"loc:@x"]
        op = g.get_operation_by_name(name)
        assert op.node_def == written[name]
