"""ParallelConcatRemovePass (TF's parallel_concat_optimizer.cc), PRE_PLACEMENT phase 0:
each ParallelConcat node becomes a `_ParallelConcatStart` (the output buffer), one
`_ParallelConcatUpdate` per input writing that input's row into it, and an Identity of
the buffer, named as the ParallelConcat was, that runs after every update (control
edges) and takes over the ParallelConcat's consumers."""

from __future__ import annotations

from collections.abc import Sequence

from aioflow.graph.algorithm import fixup_source_and_sink_edges
from aioflow.graph.graph import Graph, Node
from aioflow.passes.pattern_util import make_node
from aioflow.passes.registry import Grouping, PassOptions, register_optimization

OP = "ParallelConcat"


def _new_name(graph: Graph, prefix: str) -> str:
    """TF's Graph::NewName: prefix/_<graph-wide counter>."""
    counter = getattr(graph, "_name_counter", 0)
    graph._name_counter = counter + 1
    return f"{prefix}/_{counter}"


def _copied(node: Node, *names: str) -> dict:
    """The node's attrs among `names` (those it has), as AttrValues for make_node."""
    return {name: node.attr(name) for name in names if node.attr(name) is not None}


def _type_attr(node: Node):
    """A setter of an AttrValue to the ParallelConcat's element type T."""
    dtype = node.attr("T").type
    return lambda a: setattr(a, "type", dtype)


def _rewrite(graph: Graph, node: Node) -> None:
    """Replace one ParallelConcat by Start + Updates + Identity, as TF does."""
    internal = node.name + "/Internal"
    start = make_node(graph, node, _new_name(graph, internal), "_ParallelConcatStart", [],
                      {**_copied(node, "shape", "_class"), "dtype": _type_attr(node)})
    for e in node.in_edges:
        if e.is_control_edge:
            graph.add_control_edge(e.src, start)
    updates = []
    for loc, e in enumerate(node.data_inputs()):
        updates.append(make_node(
            graph, node, _new_name(graph, internal), "_ParallelConcatUpdate",
            [(start, 0), (e.src, e.src_output)],
            {**_copied(node, "T", "_class"), "loc": lambda a, i=loc: setattr(a, "i", i)}))
    identity = make_node(graph, node, node.name, "Identity", [(start, 0)],
                         _copied(node, "T", "_class"))
    for update in updates:
        graph.add_control_edge(update, identity)
    for e in list(node.out_edges):
        if e.is_control_edge:
            graph.add_control_edge(identity, e.dst)
        else:
            graph.add_edge(identity, 0, e.dst, e.dst_input)
    graph.remove_node(node)


def has_parallel_concat(node_defs: Sequence) -> bool:
    """Whether any of `node_defs` is a ParallelConcat (the pass changes nothing else)."""
    return any(nd.op == OP for nd in node_defs)


@register_optimization(Grouping.PRE_PLACEMENT, 0, "ParallelConcatRemovePass",
                       applies=has_parallel_concat)
def parallel_concat_remove_pass(options: PassOptions) -> None:
    """Rewrite every ParallelConcat of the graph (no kernel computes it directly)."""
    graph = options.graph
    if graph is None:
        return
    matches = [n for n in graph.op_nodes() if n.type_string == OP]
    for node in matches:
        _rewrite(graph, node)
    if matches:
        fixup_source_and_sink_edges(graph)
