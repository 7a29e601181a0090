"""Swish, x * sigmoid(x), as the remapper finds it (remapper.py fuses it into the
convolution before it as TF's "_MklSwish"), in the two shapes graphs write it:

* TF's: Mul(x, Sigmoid(x)) (either order);
* Keras 3's (keras.activations.silu, every EfficientNet activation): Mul(x, Sigmoid(
  Mul(beta, x))) with beta a Const 1.0, its result passed through an IdentityN
  (x * sigmoid(beta x), x, beta) that only carries the custom gradient: at inference
  the IdentityN forwards its inputs, so `forward_identity_n` first rewires its
  consumers to those inputs (as TF's grappler drops such an IdentityN), leaving the
  plain pattern.

Part of the remapper: it runs only where the remapper runs.
"""

from __future__ import annotations

from aioflow.graph.graph import Graph, Node
from aioflow.passes.pattern_util import const_value, input_node, sole_consumer


def forward_identity_n(graph: Graph) -> bool:
    """Consumers of a swish's IdentityN (its first input a Mul of a Sigmoid: Keras'
    custom-gradient wrapper) read its inputs instead, and the IdentityN goes, when it
    has no control edge in or out and every input is a data edge on its device; True
    on a change."""
    changed = False
    for node in list(graph.op_nodes()):
        if node.type_string != "IdentityN" or graph.nodes[node.id] is None or \
                not _wraps_swish(node):
            continue
        if any(e.is_control_edge and not e.src.is_source for e in node.in_edges) or any(
                e.is_control_edge and not e.dst.is_sink for e in node.out_edges):
            continue
        sources = [input_node(node, i) for i in range(len(node.data_inputs()))]
        if None in sources or any(src.assigned_device_name != node.assigned_device_name
                                  for src, _ in sources):
            continue
        for e in list(node.out_edges):
            if not e.is_control_edge:
                src, slot = sources[e.src_output]
                graph.add_edge(src, slot, e.dst, e.dst_input)
            graph.remove_edge(e)
        graph.remove_node(node)
        changed = True
    return changed


def _wraps_swish(node: Node) -> bool:
    first = input_node(node, 0) if node.data_inputs() else None
    if first is None or first[0].type_string != "Mul":
        return False
    return any(src is not None and src[0].type_string == "Sigmoid"
               for src in (input_node(first[0], 0), input_node(first[0], 1)))


def swish_of(value: Node) -> list[Node] | None:
    """The nodes computing value * sigmoid(value) from `value`'s output 0 when they are
    its only consumers (Sigmoid and Mul, or Keras' Mul by 1.0, Sigmoid and Mul), each
    feeding only the next, and no control edge leaves `value`; the final Mul last.
    Else None."""
    edges = [e for e in value.out_edges if not e.dst.is_sink]
    if len(edges) != 2 or any(e.is_control_edge or e.src_output != 0 for e in edges):
        return None
    first = {e.dst.type_string: e.dst for e in edges}
    if "Sigmoid" in first:
        scaled = []
        sigmoid = first["Sigmoid"]
        outer = first.get("Mul")
    else:  # Keras: both consumers are Muls, one by a Const 1.0 feeding the Sigmoid
        muls = [e.dst for e in edges if e.dst.type_string == "Mul"]
        if len(muls) != 2 or muls[0] is muls[1]:
            return None
        inner = next((m for m in muls if _scales_by_one(m, value)), None)
        if inner is None:
            return None
        sigmoid = sole_consumer(inner)
        if sigmoid is None or sigmoid.type_string != "Sigmoid":
            return None
        scaled = [inner]
        outer = muls[1] if inner is muls[0] else muls[0]
    if outer is None or sole_consumer(sigmoid) is not outer:
        return None
    if {input_node(outer, 0), input_node(outer, 1)} != {(value, 0), (sigmoid, 0)}:
        return None
    return scaled + [sigmoid, outer]


def _scales_by_one(mul: Node, value: Node) -> bool:
    """Whether `mul` is Mul(1.0, value) or Mul(value, 1.0), the 1.0 a scalar Const."""
    a, b = input_node(mul, 0), input_node(mul, 1)
    other = b if a == (value, 0) else a if b == (value, 0) else None
    if other is None or other[1] != 0:
        return False
    v = const_value(other[0])
    return v is not None and v.size == 1 and v.ndim == 0 and float(v) == 1.0
