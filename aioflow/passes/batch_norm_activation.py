"""FusedBatchNorm / V2 / V3 + Relu -> _FusedBatchNormEx (activation_mode "Relu"), as TF's
grappler remapper fuses them on CPU with oneDNN (its FusedBatchNormEx pattern; TF 2.21
runs a training step's batch norms as _MklNativeFusedBatchNormEx).

The batch norm must be float32 NHWC/NCHW with no control edge in or out, its y read by
the Relu alone (its other outputs, the batch statistics the moving averages and the
gradient read, may have any consumers), all on one device. The fused node keeps the
batch norm's name and outputs (y now after the Relu: the Relu's consumers, ReluGrad
included, read it); the Relu is removed. Run by the remapper (remapper.py) after the
contraction chains are fused, so a batch norm folded into a convolution stays there.
The oneDNN kernel computes the Relu inside its batch norm (fuse_norm_relu, no extra
pass): a node and a pass over the activations fewer per batch norm (the gradient's
nodes are unchanged).
"""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.graph.graph import Graph, Node
from aioflow.passes.fold_batch_norm import BATCH_NORMS
from aioflow.passes.pattern_util import attr_s, input_node, make_node, unique_name

_FLOAT = dtypes.float32.as_datatype_enum
_ATTRS = ("T", "U", "epsilon", "exponential_avg_factor", "data_format", "is_training")


def _relu_of(bn: Node) -> Node | None:
    """The Relu that alone reads `bn`'s y, when the pair can be fused; else None."""
    if bn.attr("T") is None or bn.attr("T").type != _FLOAT:
        return None
    if attr_s(bn, "data_format", "NHWC") not in ("NHWC", "NCHW"):
        return None
    if any(e.is_control_edge and not e.src.is_source for e in bn.in_edges):
        return None
    if any(e.is_control_edge and not e.dst.is_sink for e in bn.out_edges):
        return None
    readers = [e for e in bn.out_edges if not e.is_control_edge and e.src_output == 0]
    if len(readers) != 1:
        return None
    relu = readers[0].dst
    if relu.type_string != "Relu" or relu.assigned_device_name != bn.assigned_device_name:
        return None
    return relu if input_node(relu, 0) == (bn, 0) else None


def _fuse(graph: Graph, bn: Node, relu: Node, names: set[str]) -> None:
    attrs = {k: v for k, v in bn.def_.attr.items() if k in _ATTRS}
    if "U" not in attrs:  # FusedBatchNorm: statistics of x's type
        attrs["U"] = lambda a: setattr(a, "type", _FLOAT)
    attrs["activation_mode"] = lambda a: setattr(a, "s", b"Relu")
    attrs["num_side_inputs"] = lambda a: setattr(a, "i", 0)
    inputs = [input_node(bn, i) for i in range(5)]
    fused = make_node(graph, bn, unique_name(names, bn.name + "/fused"), "_FusedBatchNormEx",
                      inputs, attrs)
    for e in list(relu.out_edges):
        if e.is_control_edge:
            graph.add_control_edge(fused, e.dst)
        else:
            graph.add_edge(fused, 0, e.dst, e.dst_input)
    for e in list(bn.out_edges):
        if e.dst is relu:
            continue
        if e.is_control_edge:  # the sink's
            graph.add_control_edge(fused, e.dst)
        else:
            graph.add_edge(fused, e.src_output, e.dst, e.dst_input)
    for e in relu.in_edges:
        if e.is_control_edge and not e.src.is_source:
            graph.add_control_edge(e.src, fused)
    graph.remove_node(relu)
    graph.remove_node(bn)
    names.discard(fused.name)
    fused.def_.name = bn.name


def fuse_batch_norm_relus(graph: Graph) -> bool:
    """Fuse every batch norm and its Relu; True on a change."""
    names = {n.name for n in graph.op_nodes()}
    changed = False
    for node in list(graph.op_nodes()):
        if graph.nodes[node.id] is None or node.type_string not in BATCH_NORMS:
            continue
        relu = _relu_of(node)
        if relu is not None and input_node(node, 4) is not None:
            _fuse(graph, node, relu, names)
            changed = True
    return changed
