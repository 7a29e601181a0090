"""Common subexpression elimination, as TF's OptimizerCSE (graph/optimizer_cse.cc): of
two nodes computing the same thing, keep the first in reverse post-order and move the
other's consumers onto it.

Equivalent (TF's Equivalent): same op, not stateful, no ref input, equal attrs, the same
data inputs in order (sorted first for ops whose OpDef is commutative, as TF's
FillInputs does, so AddV2(a, b) matches AddV2(b, a)) and the same set of control inputs.
TF also never merges placeholders; here call-frame ops, control-flow ops and nodes with
ref or resource outputs are left alone as well, and the assigned device must match.
"""

from __future__ import annotations

from aioflow.graph.algorithm import reverse_postorder
from aioflow.graph.graph import Graph, Node
from aioflow.proto import types_pb2

_NEVER_MERGED = frozenset({
    "Placeholder", "PlaceholderV2", "PlaceholderWithDefault", "_Arg", "_Retval",
    "_DeviceArg", "_DeviceRetval", "_Send", "_Recv", "_HostSend", "_HostRecv",
})
_REF_OFFSET = 100  # TF's DT_*_REF = DT_* + 100


def _considered(node: Node) -> bool:
    if not node.is_op or node.op_def is None or node.op_def.is_stateful:
        return False
    if node.is_control_flow or node.type_string in _NEVER_MERGED:
        return False
    ins, outs = node.input_types, node.output_types
    if ins and max(ins) > _REF_OFFSET:
        return False
    return not (outs and (max(outs) > _REF_OFFSET or types_pb2.DT_RESOURCE in outs))


def _key(node: Node) -> tuple:
    """What Equivalent compares, but the attrs, as one hashable value (the attrs, which
    take serializing, are compared only between nodes that match on all of this)."""
    inputs = [(e.src.id, e.src_output) if e is not None else (-1, -1)
              for e in node.data_inputs()]
    if node.op_def.is_commutative:
        inputs.sort()
    controls = frozenset(e.src.id for e in node.in_edges if e.is_control_edge)
    return (node.type_string, node.assigned_device_name, tuple(inputs), controls)


def _attrs(node: Node) -> tuple:
    return tuple(sorted((name, value.SerializeToString(deterministic=True))
                        for name, value in node.def_.attr.items()))


def optimize_cse(graph: Graph, order: list[Node] | None = None) -> bool:
    """Merge equivalent nodes in place; True when any was removed. `order`: the
    graph's reverse post-order, when the caller has it."""
    available: dict[tuple, list[tuple[Node, tuple | None]]] = {}
    changed = False
    for node in order if order is not None else reverse_postorder(graph):
        if not _considered(node):
            continue
        key = _key(node)
        seen = available.get(key)
        if seen is None:
            available[key] = [(node, None)]
            continue
        kept = _equal_attrs(seen, node)
        if kept is None:
            continue
        for e in list(node.out_edges):
            if e.is_control_edge:
                graph.add_control_edge(kept, e.dst)
            else:
                graph.add_edge(kept, e.src_output, e.dst, e.dst_input)
        graph.remove_node(node)
        changed = True
    return changed


def _equal_attrs(seen: list, node: Node) -> Node | None:
    """The first node of `seen` whose attrs equal `node`'s; else None, and `node` joins
    `seen` (its attrs serialized once)."""
    attrs = _attrs(node)
    for i, (other, other_attrs) in enumerate(seen):
        if other_attrs is None:
            other_attrs = _attrs(other)
            seen[i] = (other, other_attrs)
        if other_attrs == attrs:
            return other
    seen.append((node, attrs))
    return None
