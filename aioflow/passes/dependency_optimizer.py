"""Nodes whose values nobody reads become NoOps, as TF's grappler DependencyOptimizer
does on every graph a default TF session runs: a side-effect-free node whose outputs
feed only control edges (the other half of a gradient `tuple` TF gates with a group:
the first convolution's input gradient, the Shape that fed it) is computed for nothing,
so it is replaced by a NoOp with the same name that waits for the same inputs (its data
inputs become control inputs) and releases the same control edges. Its inputs are then
looked at again (a Shape feeding only that node now feeds a control edge too).

Kept as they are, as TF's SafeToConvertToNoOp keeps them: a node with no consumer at all
(a run target: what the client asked to run), stateful ops and ops with a ref input,
queue, Send and in-place ops, Placeholders, Switch/Merge and the frame ops
(Enter/Exit/NextIteration), ops without outputs, Assert, CheckNumerics, _Arg, _Retval,
_ParallelConcatUpdate and ControlTrigger, and an Identity reading a variable or a Recv.
Also kept, where TF anchors the new control edge on an Identity of the Switch's output: a
node reading a Switch's output (a control edge from the Switch itself would fire whichever
branch is taken, and after partitioning that output may be in host memory).

After the remapper (as TF's meta optimizer runs its DependencyOptimizer after the
remapper), `simplify_dependencies` runs that conversion again (a frozen weight's read,
`Const -> Identity`, feeds only a control edge once its convolution took the folded
weights) and then TF's OptimizeNode rewrites of constants and NoOps:
- a Const without inputs is ready when the step starts, so a control edge from it orders
  nothing: its control edges are dropped, and a Const left without consumers is removed
  (one that had none is a run target and stays);
- a NoOp some node waits for is bypassed when that does not add edges (inputs x outputs
  at most inputs + outputs): each consumer waits for the NoOp's inputs itself (deadness
  flows as through the NoOp, which is dead when an input is), and the NoOp is removed.
  A NoOp nothing waits for is a run target and stays.
So a Keras model frozen by TF (every weight read `Identity` gathered by the function's
control-output NoOp, which the fetched Identity waits for) runs none of those ~2 nodes per
weight, as in TF (MobileNetV2: 184 Identities, 182 Consts and the NoOp per run).

Part of the graph optimizer (graph_optimizer.optimize_graph) for a session's partitions
(their fetches and targets are known); RewriterConfig.dependency_optimization ON/OFF (or
disable_meta_optimizer) decides, DEFAULT follows the optimizer level (on at L1, the
default; off at L0), as the other grappler passes here; graphs of fewer than
min_graph_nodes nodes are left alone, as grappler leaves them.
"""

from __future__ import annotations

from aioflow.framework import op_def_registry
from aioflow.graph.graph import Graph, Node
from aioflow.passes.div_to_reciprocal_mul import DEFAULT_MIN_GRAPH_NODES
from aioflow.proto import config_pb2, node_def_pb2, rewriter_config_pb2

#: TF's do-not-rewrite list, and what its optimizer handles apart (NoOps, constants).
_DO_NOT_REWRITE = frozenset({"Assert", "CheckNumerics", "_Retval", "_Arg",
                             "_ParallelConcatUpdate", "ControlTrigger", "NoOp", "Const",
                             "HostConst"})
_FRAME_OPS = frozenset({"Enter", "RefEnter", "Exit", "RefExit", "NextIteration",
                        "RefNextIteration"})
_SENDS = frozenset({"_Send", "_HostSend"})
_RECVS = frozenset({"_Recv", "_HostRecv"})
_VARIABLES = frozenset({"Variable", "VariableV2", "AutoReloadVariable", "VarHandleOp",
                        "_VarHandlesOp"})
_PLACEHOLDERS = frozenset({"Placeholder", "PlaceholderV2", "PlaceholderWithDefault"})
#: Ops that write a resource or tensor input (TF's ModifiesInputsInPlace names them).
_WRITES_INPUT = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                           "ResourceScatterUpdate", "ResourceScatterAdd",
                           "ResourceScatterSub", "ResourceScatterMul", "ResourceScatterDiv",
                           "ResourceScatterMin", "ResourceScatterMax"})


def enabled(optimizer_options: config_pb2.OptimizerOptions | None,
            rewrite_options: rewriter_config_pb2.RewriterConfig | None,
            graph_nodes: int) -> bool:
    """dependency_optimization ON/OFF (or the meta optimizer off) decides; DEFAULT
    follows the optimizer level; a graph of fewer than min_graph_nodes is left alone."""
    least = rewrite_options.min_graph_nodes if rewrite_options is not None else 0
    if graph_nodes < (least or DEFAULT_MIN_GRAPH_NODES):
        return False
    if rewrite_options is not None:
        toggle = rewrite_options.dependency_optimization
        if rewrite_options.disable_meta_optimizer or \
                toggle == rewriter_config_pb2.RewriterConfig.OFF:
            return False
        if toggle == rewriter_config_pb2.RewriterConfig.ON:
            return True
    level = optimizer_options.opt_level if optimizer_options is not None else 0
    return level >= config_pb2.OptimizerOptions.L1


def convert_unread_to_noops(graph: Graph) -> bool:
    """Replace every node whose values nobody reads by a NoOp; True when one was."""
    work = [n for n in graph.op_nodes() if _only_control_consumers(n)]
    changed = False
    while work:
        node = work.pop()
        if graph.nodes[node.id] is not node or not _safe_to_convert(node):
            continue
        work.extend(e.src for e in node.in_edges
                    if not e.is_control_edge and e.src.is_op)
        _replace_with_noop(graph, node)
        changed = True
    return changed


def _only_control_consumers(node: Node) -> bool:
    """Some control edge leaves the node (to a node, not the sink) and no data edge."""
    controls = False
    for e in node.out_edges:
        if not e.is_control_edge:
            return False
        if not e.dst.is_sink:
            controls = True
    return controls


def _safe_to_convert(node: Node) -> bool:
    op = node.type_string
    if not _only_control_consumers(node) or op in _DO_NOT_REWRITE or op in _FRAME_OPS:
        return False
    if node.is_switch or node.is_merge or not _free_of_side_effects(node):
        return False
    if not node.op_def.output_arg:
        return False
    if any(e.src.is_switch for e in node.in_edges if not e.is_control_edge):
        return False  # (below)
    if op in ("Identity", "IdentityN"):
        edges = node.data_inputs()
        src = edges[0].src if edges and edges[0] is not None else None
        if src is None or src.type_string in _VARIABLES or src.type_string in _RECVS:
            return False
    return True


def _free_of_side_effects(node: Node) -> bool:
    """TF's IsFreeOfSideEffect: stateless, no ref input, no queue, no Send, no in-place."""
    op = node.type_string
    op_def = node.op_def
    if op in _PLACEHOLDERS or op in _SENDS or op in _WRITES_INPUT or op_def.is_stateful:
        return False
    if any(arg.is_ref for arg in op_def.input_arg) or "Queue" in op:
        return False
    if "inplace" in op.lower():
        return False
    return not any(_attr_true(node, key) for key in ("in_place", "inplace"))


def _attr_true(node: Node, key: str) -> bool:
    value = node.attr(key)
    return value is not None and value.WhichOneof("value") == "b" and value.b


def _replace_with_noop(graph: Graph, node: Node) -> None:
    """A NoOp of the same name and device: every input a control input, the same
    control consumers."""
    node_def = node_def_pb2.NodeDef(name=node.name, op="NoOp", device=node.def_.device)
    if "_class" in node.def_.attr:  # colocation carries over; the op's own attrs do not
        node_def.attr["_class"].CopyFrom(node.def_.attr["_class"])
    noop = graph.add_node(node_def, op_def_registry.get("NoOp"), [], [])
    noop.assigned_device_name = node.assigned_device_name
    sources = [e.src for e in node.in_edges]
    consumers = [e.dst for e in node.out_edges]
    graph.remove_node(node)
    for src in sources:
        graph.add_control_edge(src, noop)
    for dst in consumers:
        graph.add_control_edge(noop, dst)


def simplify_dependencies(graph: Graph) -> bool:
    """convert_unread_to_noops, then TF's constant and NoOp rewrites (module docstring)
    until nothing changes; True when the graph changed. The caller fixes the source and
    sink edges afterwards."""
    changed = convert_unread_to_noops(graph)
    work = [n for n in graph.op_nodes() if _is_free_constant(n) or n.type_string == "NoOp"]
    while work:
        node = work.pop()
        if graph.nodes[node.id] is not node:
            continue
        if _is_free_constant(node):
            changed = _drop_constant_controls(graph, node) or changed
        elif node.type_string == "NoOp" and _bypass_noop(graph, node, work):
            changed = True
    return changed


def _is_free_constant(node: Node) -> bool:
    """A Const with no input at all (TF's IsConstant with input_size 0)."""
    return node.type_string in ("Const", "HostConst") and \
        all(e.src.is_source for e in node.in_edges)


def _drop_constant_controls(graph: Graph, node: Node) -> bool:
    """Remove the constant's control edges to other nodes; remove the constant when that
    left it without consumers."""
    controls = [e for e in node.out_edges if e.is_control_edge and not e.dst.is_sink]
    for e in controls:
        graph.remove_edge(e)
    if controls and not any(not e.dst.is_sink for e in node.out_edges):
        graph.remove_node(node)
    return bool(controls)


def _bypass_noop(graph: Graph, node: Node, work: list) -> bool:
    """Make the NoOp's consumers wait for its inputs and remove it, when it has some
    consumer and that adds no edge; its inputs and consumers are looked at again."""
    inputs = list(dict.fromkeys(e.src for e in node.in_edges if not e.src.is_source))
    outputs = list(dict.fromkeys(e.dst for e in node.out_edges if not e.dst.is_sink))
    if not outputs or len(inputs) * len(outputs) > len(inputs) + len(outputs):
        return False
    for dst in outputs:
        sources = {e.src for e in dst.in_edges}
        for src in inputs:
            if src not in sources:
                graph.add_control_edge(src, dst)
    graph.remove_node(node)
    work.extend(n for n in inputs + outputs
                if _is_free_constant(n) or n.type_string == "NoOp")
    return True
