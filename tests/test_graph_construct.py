"""GraphDef -> runtime Graph: validation errors name the node; algorithms."""

from __future__ import annotations

import pytest
from google.protobuf import text_format

from aioflow.framework import errors
from aioflow.graph.algorithm import (
    copy_graph,
    prune_for_reverse_reachability,
    reverse_postorder,
    reverse_reachable,
)
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.proto import graph_pb2

CONST = """
node { name: "%s" op: "Const"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1.0 } } } }
"""
ADD = """
node { name: "%s" op: "AddV2" input: "%s" input: "%s"
  attr { key: "T" value { type: DT_FLOAT } } }
"""


def parse(text: str) -> graph_pb2.GraphDef:
    return text_format.Parse(text, graph_pb2.GraphDef())


def build(text: str):
    return convert_graph_def_to_graph(parse(text))


def test_valid_graph_has_source_sink_and_edges():
    g = build(CONST % "a" + CONST % "b" + ADD % ("c", "a", "b"))
    assert g.num_op_nodes == 3
    names = [n.name for n in reverse_postorder(g)]
    assert names[0] == "_SOURCE" and names[-1] == "_SINK"
    assert names.index("c") > names.index("a") and names.index("c") > names.index("b")
    c = next(n for n in g.op_nodes() if n.name == "c")
    assert [(e.src.name, e.src_output, e.dst_input) for e in c.data_inputs()] == \
        [("a", 0, 0), ("b", 0, 1)]
    assert any(e.dst.is_sink for e in c.out_edges)


@pytest.mark.parametrize("text, node, fragment", [
    (CONST % "a" + 'node { name: "b" op: "NoSuchOp" }', "b", "Op type not registered 'NoSuchOp'"),
    (CONST % "a" + ADD % ("c", "a", "missing"), "c", "Unknown input node 'missing'"),
    (CONST % "a" + ADD % ("c", "a", "a:3"), "c", "invalid output 3"),
    (CONST % "a" + CONST % "a", "a", "is not unique"),
    (CONST % "a" + 'node { name: "c" op: "AddV2" input: "a" input: "a" }', "c",
     "missing attr 'T'"),
    (CONST % "a" + 'node { name: "c" op: "AddV2" input: "a" input: "a" '
     'attr { key: "T" value { i: 3 } } }', "c", "'int' when 'type' expected"),
    (CONST % "a" + 'node { name: "c" op: "AddV2" input: "a" input: "a" '
     'attr { key: "T" value { type: DT_STRING } } }', "c", "not in the list of allowed values"),
    (CONST % "a" + 'node { name: "c" op: "AddV2" input: "a" input: "a" '
     'attr { key: "T" value { type: DT_INT32 } } }', "c", "incompatible with expected int32"),
    (CONST % "a" + 'node { name: "c" op: "AddV2" input: "a" '
     'attr { key: "T" value { type: DT_FLOAT } } }', "c", "do not match 1 inputs"),
    (ADD % ("x", "a", "y") + ADD % ("y", "x", "a") + CONST % "a", None, "cycle"),
])
def test_validation_errors_name_the_node(text, node, fragment):
    with pytest.raises(errors.InvalidArgumentError) as info:
        build(text)
    message = str(info.value)
    assert fragment in message
    if node is not None:
        assert node in message
    else:
        assert "'x'" in message or "'y'" in message


def test_cycle_through_next_iteration_is_allowed():
    text = CONST % "a" + """
node { name: "m" op: "Merge" input: "a" input: "n"
  attr { key: "T" value { type: DT_FLOAT } } attr { key: "N" value { i: 2 } } }
node { name: "n" op: "NextIteration" input: "m"
  attr { key: "T" value { type: DT_FLOAT } } }
"""
    g = build(text)
    assert g.num_op_nodes == 3


def test_reachability_prune_and_copy():
    g = build(CONST % "a" + CONST % "b" + ADD % ("c", "a", "a") + ADD % ("d", "b", "b"))
    c = next(n for n in g.op_nodes() if n.name == "c")
    reach = reverse_reachable([c])
    assert {g.nodes[i].name for i in reach} >= {"a", "c"}
    copy = copy_graph(g)
    prune_for_reverse_reachability(g, [c])
    assert sorted(n.name for n in g.op_nodes()) == ["a", "c"]
    assert sorted(n.name for n in copy.op_nodes()) == ["a", "b", "c", "d"]
    assert copy.to_graph_def().node[2].input == ["a", "a"]


def test_an_unknown_attr_is_ignored_with_a_warning_as_tf():
    """TF 2.21's ValidateNodeDef logs an attr its OpDef lacks (a newer TF's) and goes on."""
    text = (CONST % "a" + 'node { name: "d" op: "Identity" input: "a" '
            'attr { key: "T" value { type: DT_FLOAT } } attr { key: "bogus" value { i: 1 } } }')
    with pytest.warns(UserWarning, match="NodeDef mentions attribute bogus .* NodeDef: "
                                         r"\{\{node d\}\}"):
        g = build(text)
    assert "d" in {n.name for n in g.op_nodes()}
