"""What the fusion passes (fold_batch_norm.py, remapper.py) share: reading a pattern off
the runtime graph (constants, the single consumer of a tensor) and rewriting it (new
nodes with their OpDef's defaults, outputs moved over, what is left dead removed)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, op_def_registry, tensor_util
from aioflow.graph.graph import Graph, Node
from aioflow.proto import node_def_pb2

#: The element types the fused kernels compute.
FLOAT_TYPES = frozenset({dtypes.float16.as_datatype_enum, dtypes.float32.as_datatype_enum,
                         dtypes.float64.as_datatype_enum})


def attr_s(node: Node, name: str, default: str = "") -> str:
    value = node.attr(name)
    return value.s.decode() if value is not None else default


def attr_b(node: Node, name: str, default: bool = False) -> bool:
    value = node.attr(name)
    return value.b if value is not None else default


def attr_f(node: Node, name: str, default: float = 0.0) -> float:
    value = node.attr(name)
    return value.f if value is not None else default


def const_value(node: Node) -> np.ndarray | None:
    """A Const node's value (None for any other node, one in a loop frame, or a value that
    is not a valid tensor: the Const's own kernel reports that when the node runs)."""
    if node.type_string != "Const":
        return None
    if any(e.is_control_edge and not e.src.is_source for e in node.in_edges):
        return None  # ordered after something: not a plain weight
    value = node.attr("value")
    if value is None:
        return None
    try:
        return tensor_util.make_ndarray(value.tensor)
    except (ValueError, TypeError):
        return None


def input_node(node: Node, index: int) -> tuple[Node, int] | None:
    """(source node, its output slot) of data input `index`."""
    edges = node.data_inputs()
    e = edges[index] if index < len(edges) else None
    return None if e is None else (e.src, e.src_output)


def sole_consumer(node: Node) -> Node | None:
    """The one node consuming this node's outputs, when output 0 is the only one used,
    it is used exactly once, and no control edge leaves the node (a fused node would
    change what those edges wait for). Edges to the sink are fix-up and do not count."""
    consumers = [e for e in node.out_edges if not e.dst.is_sink]
    if len(consumers) != 1:
        return None
    e = consumers[0]
    if e.is_control_edge or e.src_output != 0:
        return None
    return e.dst


def make_node(graph: Graph, like: Node, name: str, op: str, inputs: list[tuple[Node, int]],
              attrs: dict) -> Node:
    """A new node of `op` on `like`'s device, named `name`, its data inputs wired from
    `inputs`; `attrs` are AttrValues (or setters: fn(AttrValue)); the rest of the OpDef's
    attrs take their defaults, as a NodeDef that was validated carries them."""
    op_def = op_def_registry.get(op)
    node_def = node_def_pb2.NodeDef(name=name, op=op, device=like.def_.device)
    for key, value in attrs.items():
        if callable(value):
            value(node_def.attr[key])
        else:
            node_def.attr[key].CopyFrom(value)
    for attr in op_def.attr:
        if attr.name not in node_def.attr and attr.HasField("default_value"):
            node_def.attr[attr.name].CopyFrom(attr.default_value)
    for src, slot in inputs:
        node_def.input.append(src.name if slot == 0 else f"{src.name}:{slot}")
    in_types = [src.output_types[slot] for src, slot in inputs]
    out_types = _output_types(op_def, node_def)
    node = graph.add_node(node_def, op_def, in_types, out_types)
    node.assigned_device_name = like.assigned_device_name
    for i, (src, slot) in enumerate(inputs):
        graph.add_edge(src, slot, node, i)
    return node


def _output_types(op_def, node_def) -> list[int]:
    """The types of the op's outputs (each argument's type_attr or type; none here is a
    list or repeated)."""
    return [node_def.attr[arg.type_attr].type if arg.type_attr else arg.type
            for arg in op_def.output_arg]


def make_const(graph: Graph, like: Node, name: str, value: np.ndarray,
               after: Node | None = None) -> Node:
    """A Const node holding `value`, on `like`'s device, run at the start of the step; or,
    given `after` (a Const it replaces), after what `after` waits for (a loop frame's
    pivot keeps the new Const in that frame)."""
    dtype = dtypes.as_dtype(value.dtype)
    proto = tensor_util.make_tensor_proto(value, dtype)
    node = make_node(graph, like, name, "Const", [], {
        "dtype": lambda a: setattr(a, "type", dtype.as_datatype_enum),
        "value": lambda a: a.tensor.CopyFrom(proto)})
    sources = [graph.source_node] if after is None else \
        [e.src for e in after.in_edges if e.is_control_edge]
    for src in sources:
        graph.add_control_edge(src, node)
    return node


def take_over(graph: Graph, old: Node, new: Node, absorbed: list[Node]) -> None:
    """`new` replaces `old`: it gets old's consumers and the control inputs of every node
    in `absorbed` (what the replaced nodes waited for, the new one waits for)."""
    for e in list(old.out_edges):
        if e.is_control_edge:
            graph.add_control_edge(new, e.dst)
        else:
            graph.add_edge(new, 0, e.dst, e.dst_input)
        graph.remove_edge(e)
    for node in absorbed:
        for e in node.in_edges:
            if e.is_control_edge and not e.src.is_source:
                graph.add_control_edge(e.src, new)


def remove_dead(graph: Graph, nodes: list[Node]) -> None:
    """Remove `nodes` (and then their Const or Identity inputs) once nothing but the sink
    consumes them."""
    work = list(nodes)
    while work:
        node = work.pop()
        if graph.nodes[node.id] is None or any(not e.dst.is_sink for e in node.out_edges):
            continue
        srcs = [e.src for e in node.in_edges
                if e.src.is_op and e.src.type_string in ("Const", "Identity")]
        graph.remove_node(node)
        work.extend(srcs)


def unique_name(names: set[str], base: str) -> str:
    """`base`, or `base_<n>` when `names` (the graph's node names, kept up to date here)
    already has it."""
    name, i = base, 0
    while name in names:
        i += 1
        name = f"{base}_{i}"
    names.add(name)
    return name
