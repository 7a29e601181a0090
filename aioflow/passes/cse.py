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
    if any(t > _REF_OFFSET for t in node.input_types):
        return False
    return not any(t > _REF_OFFSET or t == types_pb2.DT_RESOURCE for t in node.output_types)


def _key(node: Node) -> tuple:
    """Everything Equivalent compares, as one hashable value."""
    inputs = [(e.src.id, e.src_output) if e is not None else (-1, -1)
              for e in node.data_inputs()]
    if node.op_def.is_commutative:
        inputs.sort()
    controls = frozenset(e.src.id for e in node.in_edges if e.is_control_edge)
    attrs = tuple(sorted((name, value.SerializeToString(deterministic=True))
                         for name, value in node.def_.attr.items()))
    return (node.type_string, node.assigned_device_name, tuple(inputs), controls, attrs)


def optimize_cse(graph: Graph) -> bool:
    """Merge equivalent nodes in place; True when any was removed."""
    available: dict[tuple, Node] = {}
    changed = False
    for node in reverse_postorder(graph):
        if not _considered(node):
            continue
        key = _key(node)
        kept = available.get(key)
        if kept is None:
            available[key] = node
            continue
        for e in list(node.out_edges):
            if e.is_control_edge:
                graph.add_control_edge(kept, e.dst)
            else:
                graph.add_edge(kept, e.src_output, e.dst, e.dst_input)
        graph.remove_node(node)
        changed = True
    return changed
