"""GraphOptimizer, as TF's common_runtime/graph_optimizer.cc: constant folding (then the
nodes it leaves dead are removed) and common subexpression elimination, repeated until
a round changes nothing (at most 10 rounds). Run on each partition before its Executor
is built; the caller runs fixup_source_and_sink_edges afterwards (done here too).
"""

from __future__ import annotations

from aioflow.graph.algorithm import fixup_source_and_sink_edges, reverse_postorder
from aioflow.graph.graph import Graph
from aioflow.passes.constant_folding import (
    MAX_CONSTANT_SIZE_IN_BYTES,
    constant_fold,
    remove_dead_nodes,
)
from aioflow.passes.cse import optimize_cse
from aioflow.passes.dependency_optimizer import convert_unread_to_noops, simplify_dependencies
from aioflow.passes.dependency_optimizer import enabled as dependency_enabled
from aioflow.passes.div_to_reciprocal_mul import enabled as reciprocal_mul_enabled
from aioflow.passes.div_to_reciprocal_mul import reduce_div_to_reciprocal_mul
from aioflow.passes.remapper import remap
from aioflow.proto import config_pb2

MAX_ROUNDS = 10


def optimizer_settings(options: config_pb2.OptimizerOptions | None) -> tuple[bool, bool]:
    """(do_constant_folding, do_cse): L1 (the default) turns both on, as TF's
    GraphOptimizer constructor; L0 leaves only what is set explicitly."""
    if options is None:
        options = config_pb2.OptimizerOptions()
    level_on = options.opt_level >= config_pb2.OptimizerOptions.L1
    return (level_on or options.do_constant_folding,
            level_on or options.do_common_subexpression_elimination)


def optimize_graph(graph: Graph, optimizer_options: config_pb2.OptimizerOptions | None = None,
                   device_type: str = "CPU", rewrite_options=None,
                   graph_nodes: int | None = None, fetches_known: bool = False) -> bool:
    """Optimize `graph` (one partition, on a device of `device_type`) in place; True when
    anything changed. After folding and CSE, two of TF's grappler rewrites as
    `rewrite_options` (RewriterConfig) and the level ask: division by a constant as
    multiplication by its reciprocal (div_to_reciprocal_mul.py), then the remapper
    (batch norms folded into constant weights, contraction + bias + activation fused).
    `graph_nodes`: the nodes of the whole graph `graph` was cut from (the session's: TF's
    grappler leaves a graph of fewer than RewriterConfig.min_graph_nodes alone); by
    default `graph`'s own. `fetches_known` (a session's partition, whose fetches and
    targets are all the outputs anyone reads): nodes whose values nobody reads become
    NoOps first, and after the remapper the constants' control edges and the NoOps
    nothing needs are dropped (dependency_optimizer.py)."""
    if graph_nodes is None:
        graph_nodes = sum(1 for _ in graph.op_nodes())
    changed = False
    depend = fetches_known and \
        dependency_enabled(optimizer_options, rewrite_options, graph_nodes)
    if depend and convert_unread_to_noops(graph):
        fixup_source_and_sink_edges(graph)
        changed = True
    changed = _fold_and_cse(graph, optimizer_options, device_type) or changed
    if reciprocal_mul_enabled(optimizer_options, rewrite_options, graph_nodes) and \
            reduce_div_to_reciprocal_mul(graph):
        fixup_source_and_sink_edges(graph)
        changed = True
    if remap(graph, optimizer_options, rewrite_options, device_type):
        fixup_source_and_sink_edges(graph)
        changed = True
    if depend and simplify_dependencies(graph):
        fixup_source_and_sink_edges(graph)
        changed = True
    return changed


def _fold_and_cse(graph: Graph, optimizer_options, device_type: str) -> bool:
    do_folding, do_cse = optimizer_settings(optimizer_options)
    if not (do_folding or do_cse):
        return False
    max_bytes = MAX_CONSTANT_SIZE_IN_BYTES
    if optimizer_options is not None and optimizer_options.max_folded_constant_in_bytes > 0:
        max_bytes = optimizer_options.max_folded_constant_in_bytes
    changed_any = False
    for _ in range(MAX_ROUNDS):
        changed = False
        order = reverse_postorder(graph)  # shared by both passes while nothing changes
        if do_folding:
            candidates = constant_fold(graph, device_type, max_bytes, order)
            if candidates:
                remove_dead_nodes(graph, candidates)
                changed = True
                order = None
        if do_cse and optimize_cse(graph, order):
            changed = True
        if not changed:
            break
        changed_any = True
    if changed_any:
        fixup_source_and_sink_edges(graph)
    return changed_any
