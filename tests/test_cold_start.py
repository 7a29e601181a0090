"""The cold-start shortcuts keep their semantics: a session extends with import_graph_def's
own NodeDefs only while an op is as imported (the same NodeDefs `as_graph_def` writes,
TF's ToGraphDef: inputs "x" not "x:0", control inputs sorted), never with a stale one
after a mutation, never with the caller's message; the import's and the session's
cycle checks, which skip their search for graphs whose nodes come after their inputs."""

from __future__ import annotations

import numpy as np
import pytest
from google.protobuf import text_format

import aioflow as af
from aioflow.framework import errors
from aioflow.proto import graph_pb2

CONST = """
node { name: "%s" op: "Const" %s
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: %s } } } }
"""
ADD = """
node { name: "%s" op: "AddV2" input: "%s" input: "%s" %s
  attr { key: "T" value { type: DT_FLOAT } } }
"""


def parse(text: str) -> graph_pb2.GraphDef:
    return text_format.Parse(text, graph_pb2.GraphDef())


# a = 1, b = 2, c = a + b (with the inputs and control inputs written as given)
GRAPHS = {
    "canonical": CONST % ("a", "", 1.0) + CONST % ("b", "", 2.0) + ADD % ("c", "a", "b", ""),
    "explicit output 0": CONST % ("a", "", 1.0) + CONST % ("b", "", 2.0)
    + ADD % ("c", "a:0", "b", ""),
    "unsorted controls": CONST % ("a", "", 1.0) + CONST % ("b", "", 2.0)
    + CONST % ("z", "", 0.0) + CONST % ("m", "", 0.0)
    + ADD % ("c", "a", "b", 'input: "^z" input: "^m"'),
    "repeated control": CONST % ("a", "", 1.0) + CONST % ("b", "", 2.0)
    + CONST % ("m", "", 0.0) + ADD % ("c", "a", "b", 'input: "^m" input: "^m"'),
    "device": CONST % ("a", 'device: "/cpu:0"', 1.0) + CONST % ("b", "", 2.0)
    + ADD % ("c", "a", "b", 'device: "/device:CPU:0"'),
    "consumer first": ADD % ("c", "a", "b", "") + CONST % ("a", "", 1.0)
    + CONST % ("b", "", 2.0),
    "defaults left out": CONST % ("a", "", 1.0) + CONST % ("b", "", 2.0)
    + ADD % ("s", "a", "b", "")
    + 'node { name: "c" op: "Identity" input: "s" attr { key: "T" value { type: DT_FLOAT } } }'
    + 'node { name: "m" op: "Max" input: "c" input: "k" attr { key: "T" value { type: DT_FLOAT'
    + ' } } }' + """node { name: "k" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 0 } } } } } }
""",
}


def session_nodes(sess) -> dict:
    """The NodeDefs the session's runtime holds, by name."""
    return {n.name: n for n in sess._direct.graph_def.node}


def written_nodes(graph) -> dict:
    """The NodeDefs as_graph_def writes (TF's ToGraphDef), by name."""
    return {n.name: n for n in graph.as_graph_def().node}


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("prefix", ["", "p"])
async def test_the_session_holds_what_as_graph_def_writes(name, prefix):
    graph_def = parse(GRAPHS[name])
    before = graph_def.SerializeToString()
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name=prefix)
    assert graph_def.SerializeToString() == before  # the caller's GraphDef is untouched
    fetch = f"{prefix}/c:0" if prefix else "c:0"
    async with af.Session(graph=g) as sess:
        assert float(await sess.run(fetch)) == 3.0
        assert session_nodes(sess) == written_nodes(g)


async def test_input_map_and_a_mapped_control_are_written_as_the_ops_are():
    graph_def = parse(GRAPHS["unsorted controls"])
    g = af.Graph()
    with g.as_default():
        x = af.constant(10.0, name="x")
        first = af.no_op(name="first")
        af.import_graph_def(graph_def, input_map={"a:0": x, "^z": first}, name="")
    async with af.Session(graph=g) as sess:
        assert float(await sess.run("c:0")) == 12.0
        nodes = session_nodes(sess)
        assert nodes == written_nodes(g)
        assert list(nodes["c"].input) == ["x", "b", "^first", "^m"]


async def test_the_caller_changing_its_graph_def_later_changes_nothing():
    graph_def = parse(GRAPHS["canonical"])
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    graph_def.node[2].input[0] = "b"  # c = b + b, in the caller's message only
    graph_def.node[0].attr["value"].tensor.float_val[0] = 5.0
    async with af.Session(graph=g) as sess:
        assert float(await sess.run("c:0")) == 3.0


async def test_an_op_changed_after_import_is_sent_as_it_is_now():
    text = GRAPHS["canonical"] + CONST % ("d", "", 7.0) + CONST % ("e", "", 0.5)
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse(text), name="")
    c = g.get_operation_by_name("c")
    d = g.get_operation_by_name("d")
    c._update_input(1, d.outputs[0])          # c = a + d
    c._add_control_input(g.get_operation_by_name("e"))
    c._set_device("/cpu:0")
    e = g.get_operation_by_name("e")
    value = e.node_def.attr["value"]
    value.tensor.float_val[0] = 0.25
    e._set_attr("value", value)
    async with af.Session(graph=g) as sess:
        assert float(await sess.run("c:0")) == 8.0
        assert float(await sess.run("e:0")) == 0.25
        nodes = session_nodes(sess)
        assert nodes == written_nodes(g)
        assert list(nodes["c"].input) == ["a", "d", "^e"]
        assert nodes["c"].device == "/device:CPU:0"


async def test_a_cycle_made_after_import_is_refused_by_the_session():
    # The import's nodes come after their inputs; _update_input then closes a cycle,
    # which the session's check (no longer in id order) finds.
    text = CONST % ("a", "", 1.0) + ADD % ("b", "a", "a", "") + ADD % ("c", "b", "a", "")
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse(text), name="")
    g.get_operation_by_name("b")._update_input(1, g.get_tensor_by_name("c:0"))
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="cycle"):
            await sess.run("c:0")


async def test_a_cycle_made_by_builders_is_refused_by_the_session():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        b = af.identity(x, name="b")
        c = af.identity(b, name="c")
    b.op._update_input(0, c)
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="cycle"):
            await sess.run(c, feed_dict={x: 1.0})


def test_an_import_out_of_node_order_and_a_cycle():
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse(GRAPHS["consumer first"]), name="")
    assert [op.name for op in g.get_operations()] == ["c", "a", "b"]
    cycle = CONST % ("a", "", 1.0) + ADD % ("b", "a", "c", "") + ADD % ("c", "b", "a", "")
    with af.Graph().as_default(), pytest.raises(ValueError, match="2 nodes in a cycle"):
        af.import_graph_def(parse(cycle), name="")


async def test_a_chain_imported_and_run_once_gives_numpy_s_sum():
    # The cold-start workload in small: a chain of adds from a GraphDef, first run.
    n = 300
    text = 'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }'
    text += CONST % ("one", "", 1.0)
    prev = "x"
    for i in range(n):
        text += ADD % (f"add_{i}", prev, "one", "")
        prev = f"add_{i}"
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse(text), name="")
    async with af.Session(graph=g) as sess:
        value = await sess.run(f"{prev}:0", feed_dict={"x:0": np.float32(0.5)})
    assert value == np.float32(0.5) + np.float32(n)


@pytest.mark.parametrize("whole", [True, False])
async def test_the_import_s_copy_in_one_call_or_in_chunks(monkeypatch, whole):
    # A graph above _COPY_WHOLE_NODES is copied in chunks (no C call long enough to keep
    # the GIL from other threads): the same ops, NodeDefs and values either way.
    from aioflow.framework import importer

    if not whole:
        monkeypatch.setattr(importer, "_COPY_WHOLE_NODES", 2)
        monkeypatch.setattr(importer, "_COPY_CHUNK", 2)
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse(GRAPHS["defaults left out"]), name="")
    assert [op.name for op in g.get_operations()] == ["a", "b", "s", "c", "m", "k"]
    assert g.get_operation_by_name("m").get_attr("keep_dims") is False  # a default added
    async with af.Session(graph=g) as sess:
        assert float(await sess.run("m:0")) == 3.0
        assert session_nodes(sess) == written_nodes(g)


async def test_the_types_an_import_knows_are_the_session_s():
    # import_graph_def hands the session each op's (input, output) types with its
    # NodeDef: they are what the session computes itself, ref types included; a changed
    # op, and a direct call of a library function, have theirs computed again.
    from aioflow.client import session as session_mod
    from aioflow.framework import node_def_util, op_def_registry

    text = GRAPHS["defaults left out"] + """
node { name: "v" op: "VariableV2" attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape {} } } }
node { name: "r" op: "Identity" input: "v" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "asg" op: "Assign" input: "v" input: "a"
  attr { key: "T" value { type: DT_FLOAT } } }
"""
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(parse(text), name="")
    g.get_operation_by_name("c")._add_control_input(g.get_operation_by_name("a"))
    node_defs, checked, types = session_mod._node_defs_between(g, 0, g.version)
    assert checked
    by_name = dict(zip((n.name for n in node_defs), types, strict=True))
    assert by_name["c"] is None  # changed after the import
    for node_def, known in zip(node_defs, types, strict=True):
        if known is not None:
            op_def = op_def_registry.get(node_def.op)
            assert known == node_def_util.arg_types(node_def, op_def), node_def.name
    assert by_name["v"] == ([], [af.float32.as_datatype_enum + 100])
    assert by_name["asg"][0] == [af.float32.as_datatype_enum + 100, af.float32.as_datatype_enum]
    async with af.Session(graph=g) as sess:
        await sess.run("asg:0")
        assert float(await sess.run("r:0")) == 1.0
        assert float(await sess.run("m:0")) == 3.0
