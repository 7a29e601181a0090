"""Division by a constant as multiplication by its reciprocal, as TF's grappler constant
folding does it (ConstantFolding::ReduceDivToReciprocalMul) on every graph a default TF
session runs: `x / c` (Div or RealDiv of a real floating type, `c` a Const) becomes
`x * (1 / c)`, the reciprocal computed once in `c`'s dtype.

So the values are TF's: x / 255.0 and x * (1 / 255.0) differ in the last bit for about a
third of the inputs, and TF's default session computes the second. The Mul takes the
Div's name (a fetch of it still works); a Const inside a loop frame keeps its control
inputs on the reciprocal. Part of the graph optimizer (graph_optimizer.optimize_graph):
on at OptimizerOptions L1 (the default), off at L0; RewriterConfig.constant_folding OFF,
or disable_meta_optimizer, turns it off whatever the level (TF: no grappler, true
division), and so does a session graph of fewer than RewriterConfig.min_graph_nodes
nodes (4 by default), which grappler leaves alone. Xdivy and complex types, which
grappler also rewrites, are left as they are.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, tensor_util
from aioflow.graph.graph import Graph, Node
from aioflow.passes.pattern_util import (
    input_node,
    make_const,
    make_node,
    take_over,
    unique_name,
)
from aioflow.proto import config_pb2, rewriter_config_pb2

_OPS = frozenset({"Div", "RealDiv"})
_REAL_FLOATS = frozenset(t.as_datatype_enum for t in (
    dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64))


#: RewriterConfig.min_graph_nodes when it is 0: grappler leaves smaller graphs alone.
DEFAULT_MIN_GRAPH_NODES = 4


def enabled(optimizer_options: config_pb2.OptimizerOptions | None,
            rewrite_options: rewriter_config_pb2.RewriterConfig | None,
            graph_nodes: int) -> bool:
    """Grappler's constant folding ON/OFF (or the meta optimizer off) decides; DEFAULT
    follows the optimizer level, as the other grappler passes here do. As grappler, a
    graph of fewer than min_graph_nodes nodes (`graph_nodes`: the session graph's) is
    left alone."""
    least = rewrite_options.min_graph_nodes if rewrite_options is not None else 0
    if graph_nodes < (least or DEFAULT_MIN_GRAPH_NODES):
        return False
    if rewrite_options is not None:
        if rewrite_options.disable_meta_optimizer or \
                rewrite_options.constant_folding == rewriter_config_pb2.RewriterConfig.OFF:
            return False
        if rewrite_options.constant_folding == rewriter_config_pb2.RewriterConfig.ON:
            return True
    level = optimizer_options.opt_level if optimizer_options is not None else 0
    return level >= config_pb2.OptimizerOptions.L1


def reduce_div_to_reciprocal_mul(graph: Graph) -> bool:
    """Rewrite every Div/RealDiv by a Const in `graph`; True when one was rewritten."""
    names = {n.name for n in graph.op_nodes()}
    changed = False
    for node in list(graph.op_nodes()):
        if node.type_string in _OPS and _rewrite(graph, node, names):
            changed = True
    return changed


def _reciprocal(denominator: Node) -> np.ndarray | None:
    """1 / the Const's value in its own dtype (what TF's Reciprocal kernel folds to)."""
    value = denominator.attr("value")
    if value is None:
        return None
    try:
        c = tensor_util.make_ndarray(value.tensor)
    except (ValueError, TypeError):
        return None
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return (np.ones((), c.dtype) / c).astype(c.dtype)


def _rewrite(graph: Graph, div: Node, names: set[str]) -> bool:
    t = div.attr("T")
    if t is None or t.type not in _REAL_FLOATS:
        return False
    x, denom = input_node(div, 0), input_node(div, 1)
    if x is None or denom is None or denom[0].type_string != "Const" or \
            denom[0].assigned_device_name != div.assigned_device_name:
        return False
    recip = _reciprocal(denom[0])
    if recip is None:
        return False
    const = make_const(graph, div, unique_name(names, f"{div.name}_recip"), recip,
                       after=denom[0])
    mul = make_node(graph, div, unique_name(names, f"{div.name}/mul"), "Mul", [x, (const, 0)],
                    {"T": lambda a: setattr(a, "type", t.type)})
    take_over(graph, div, mul, [div])
    graph.remove_node(div)
    names.discard(mul.name)
    mul.def_.name = div.name
    if not any(not e.dst.is_sink for e in denom[0].out_edges):
        graph.remove_node(denom[0])
    return True
