"""`assert_graph_equal`: two GraphDefs hold the same graph, whatever the order of their
nodes and of each node's attrs (TF's EqualGraphDef): the same node names, and per node
the same op, device, data inputs in order, control inputs as a set and attr values
(tensors by value); internal attrs ("_output_shapes", "_class", ...) ignored unless asked.
A failure lists every difference, one line each, naming the node and the field."""

from __future__ import annotations

import numpy as np
from google.protobuf import text_format

from aioflow.framework import tensor_util
from aioflow.proto import attr_value_pb2, graph_pb2

_MAX_VALUE_CHARS = 120


def _as_graph_def(value, what: str) -> graph_pb2.GraphDef:
    """A Graph, an aioflow GraphDef, or any GraphDef-like message (TF's) as a GraphDef."""
    if isinstance(value, graph_pb2.GraphDef):
        return value
    if hasattr(value, "as_graph_def"):
        return value.as_graph_def()
    if type(value).__name__ == "GraphDef" and hasattr(value, "SerializeToString"):
        return graph_pb2.GraphDef.FromString(value.SerializeToString())
    if isinstance(value, bytes):
        return graph_pb2.GraphDef.FromString(value)
    raise TypeError(f"Expected a Graph or a GraphDef for {what}, got {type(value).__name__}")


def _show(attr: attr_value_pb2.AttrValue) -> str:
    text = text_format.MessageToString(attr, as_one_line=True)
    return text if len(text) <= _MAX_VALUE_CHARS else text[:_MAX_VALUE_CHARS - 3] + "..."


def _attrs_equal(a: attr_value_pb2.AttrValue, b: attr_value_pb2.AttrValue) -> bool:
    """Equal AttrValues; two tensors are equal when their dtype, shape and values are
    (however each is encoded: tensor_content, float_val, one repeated value)."""
    if a == b:
        return True
    if a.WhichOneof("value") == b.WhichOneof("value") == "tensor":
        if a.tensor.dtype != b.tensor.dtype:
            return False
        try:
            x, y = tensor_util.make_ndarray(a.tensor), tensor_util.make_ndarray(b.tensor)
        except (TypeError, ValueError):
            return False
        return x.shape == y.shape and x.dtype == y.dtype and bool(
            np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
    return False


def _split_inputs(node) -> tuple[list[str], set[str]]:
    data = [i for i in node.input if not i.startswith("^")]
    return data, {i for i in node.input if i.startswith("^")}


def _node_diffs(a, b, ignore_internal_attrs: bool) -> list[str]:
    name = a.name
    out = []
    if a.op != b.op:
        out.append(f"node '{name}': op '{a.op}' != '{b.op}'")
    if a.device != b.device:
        out.append(f"node '{name}': device '{a.device}' != '{b.device}'")
    (a_data, a_ctrl), (b_data, b_ctrl) = _split_inputs(a), _split_inputs(b)
    if a_data != b_data:
        if len(a_data) != len(b_data):
            out.append(f"node '{name}': inputs [{', '.join(a_data)}] != "
                       f"[{', '.join(b_data)}]")
        else:
            out.extend(f"node '{name}': input {i} '{x}' != '{y}'"
                       for i, (x, y) in enumerate(zip(a_data, b_data, strict=True)) if x != y)
    for ctrl in sorted(a_ctrl - b_ctrl):
        out.append(f"node '{name}': control input '{ctrl}' only in the first graph")
    for ctrl in sorted(b_ctrl - a_ctrl):
        out.append(f"node '{name}': control input '{ctrl}' only in the second graph")
    keys = sorted(set(a.attr) | set(b.attr))
    for key in keys:
        if ignore_internal_attrs and key.startswith("_"):
            continue
        if key not in b.attr:
            out.append(f"node '{name}': attr '{key}' only in the first graph: "
                       f"{_show(a.attr[key])}")
        elif key not in a.attr:
            out.append(f"node '{name}': attr '{key}' only in the second graph: "
                       f"{_show(b.attr[key])}")
        elif not _attrs_equal(a.attr[key], b.attr[key]):
            out.append(f"node '{name}': attr '{key}': {_show(a.attr[key])} != "
                       f"{_show(b.attr[key])}")
    return out


def graph_diff(a, b, ignore_internal_attrs: bool = True) -> list[str]:
    """The differences between graphs `a` and `b`, one readable line each ([] if equal)."""
    a, b = _as_graph_def(a, "the first graph"), _as_graph_def(b, "the second graph")
    a_nodes, b_nodes = {n.name: n for n in a.node}, {n.name: n for n in b.node}
    out = []
    for name in a_nodes.keys() - b_nodes.keys():
        out.append(f"node '{name}' ({a_nodes[name].op}) only in the first graph")
    for name in b_nodes.keys() - a_nodes.keys():
        out.append(f"node '{name}' ({b_nodes[name].op}) only in the second graph")
    out.sort()
    for name in sorted(a_nodes.keys() & b_nodes.keys()):
        out.extend(_node_diffs(a_nodes[name], b_nodes[name], ignore_internal_attrs))
    a_funcs = {f.signature.name: f for f in a.library.function}
    b_funcs = {f.signature.name: f for f in b.library.function}
    for fname in sorted(a_funcs.keys() ^ b_funcs.keys()):
        which = "first" if fname in a_funcs else "second"
        out.append(f"function '{fname}' only in the {which} graph")
    for fname in sorted(a_funcs.keys() & b_funcs.keys()):
        if a_funcs[fname] != b_funcs[fname]:
            out.append(f"function '{fname}' differs")
    return out


def assert_graph_equal(a, b, ignore_internal_attrs: bool = True) -> None:
    """AssertionError listing every difference unless `a` and `b` (Graphs, GraphDefs,
    TF's GraphDefs) hold the same graph; node order and attr order do not matter."""
    diffs = graph_diff(a, b, ignore_internal_attrs)
    if diffs:
        shown = diffs[:50] + ([f"... and {len(diffs) - 50} more"] if len(diffs) > 50 else [])
        raise AssertionError(f"graphs differ ({len(diffs)} difference"
                             f"{'s' if len(diffs) != 1 else ''}):\n  " + "\n  ".join(shown))
