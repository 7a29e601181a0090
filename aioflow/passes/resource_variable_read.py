"""ResourceVariableReadPass (TF 1.x's resource_variable_read_optimizer.cc; TF 2.21 no
longer registers it), POST_REWRITE_FOR_EXEC phase 0: a ReadVariableOp whose outputs go
only to `_Send`, `_Retval` or the sink (the value leaves the step: nothing in it can
write to it) becomes `_UnsafeReadVariable`, which lends the variable's buffer instead of
the copy a fetch makes (aioflow/kernels/state/unsafe_read_kernels.py: copy-on-write keeps a fetched
value from changing; the fetched array is read-only).

Off by default, since the arrays such fetches return are read-only where other fetches
are writable: set AIOFLOW_UNSAFE_READ_VARIABLE=1 to turn it on (read when a signature's
executors are built)."""

from __future__ import annotations

import os

from aioflow.graph.graph import Graph, Node
from aioflow.passes.pattern_util import make_node
from aioflow.passes.registry import Grouping, PassOptions, register_optimization

ENV = "AIOFLOW_UNSAFE_READ_VARIABLE"
_LEAVES_THE_STEP = frozenset({"_Send", "_Retval"})


def enabled() -> bool:
    """Whether the pass rewrites (AIOFLOW_UNSAFE_READ_VARIABLE is 1/true/yes/on)."""
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


def _only_leaves(node: Node) -> bool:
    """Every out-edge of `node` goes to a _Send, a _Retval or the sink."""
    return all(e.dst.is_sink or e.dst.type_string in _LEAVES_THE_STEP
               for e in node.out_edges)


def _rewrite(graph: Graph, read: Node) -> Node:
    """An _UnsafeReadVariable with the read's name, inputs, attrs and consumers; the read
    goes. (TF names it Graph::NewName(read); keeping the name keeps errors and traces
    naming the node the user built, and nothing else has that name once the read is
    removed.)"""
    (handle,) = [e for e in read.in_edges if not e.is_control_edge]
    unsafe = make_node(graph, read, read.name, "_UnsafeReadVariable",
                       [(handle.src, handle.src_output)],
                       {k: v for k, v in read.def_.attr.items()})
    for e in read.in_edges:
        if e.is_control_edge:
            graph.add_control_edge(e.src, unsafe)
    for e in list(read.out_edges):
        if e.is_control_edge:
            graph.add_control_edge(unsafe, e.dst)
        else:
            graph.add_edge(unsafe, e.src_output, e.dst, e.dst_input)
    graph.remove_node(read)
    return unsafe


@register_optimization(Grouping.POST_REWRITE_FOR_EXEC, 0, "ResourceVariableReadPass")
def resource_variable_read_pass(options: PassOptions) -> None:
    """Rewrite the reads whose value only leaves the step (when the pass is on)."""
    graph = options.graph
    if graph is None or not enabled():
        return
    for node in [n for n in graph.op_nodes() if n.type_string == "ReadVariableOp"]:
        if _only_leaves(node):
            _rewrite(graph, node)
