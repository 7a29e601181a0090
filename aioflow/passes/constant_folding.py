"""Constant folding, as TF's common_runtime/constant_folding.cc: evaluate the nodes whose
data inputs are all constant on CPU once, and replace the tensors they feed to the rest
of the graph with Const nodes.

Foldable (TF's IsConstantFoldable): a Const, or a stateless op that is not control flow,
Send/Recv, a call-frame or placeholder op, or a session-handle op, and that has a CPU
kernel; its data inputs must all come from foldable nodes (control inputs may come from
anywhere). The control inputs a folded tensor depended on, transitively through the
foldable nodes, become the control inputs of its replacement Const, so the Const still
runs in the same frame and after the same nodes. A replacement Const is named
``<node>/_<n>__cf__<m>`` (TF's ``graph->NewName(node) + "__cf__" + UniqueConstantId()``).
Folding never fails the graph: a node whose kernel raises is left as it is, so the run
reports the error as it would have without folding.
"""

from __future__ import annotations

import itertools

import numpy as np

from aioflow.framework import dtypes, op_def_registry, tensor_util
from aioflow.framework.op_kernel import create_kernel, find_kernel_class
from aioflow.graph.algorithm import reverse_postorder
from aioflow.graph.graph import Graph, Node
from aioflow.proto import node_def_pb2

# TF's ConstantFoldingOptions.max_constant_size_in_bytes default.
MAX_CONSTANT_SIZE_IN_BYTES = 10 * 1024 * 1024

# Never folded besides stateful and control-flow ops: call frames, feeds, transfers and
# session handles (TF's IsSend/IsRecv/IsGetSessionHandle/... tests).
_NOT_FOLDABLE_OPS = frozenset({
    "_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "Placeholder", "PlaceholderV2",
    "PlaceholderWithDefault", "_Send", "_Recv", "_HostSend", "_HostRecv",
    "GetSessionHandle", "GetSessionHandleV2", "GetSessionTensor", "DeleteSessionTensor",
})

# TF's UniqueConstantId(): one counter for the process.
_unique_constant_id = itertools.count()


class _FoldContext:
    """The little a kernel's compute may read while folding (no call frame, no step)."""

    __slots__ = ("step_id", "args", "retvals", "step_resources", "states", "session_handle")

    def __init__(self):
        self.step_id = 0
        self.args: list = []
        self.retvals: list = []
        self.step_resources: dict = {}
        self.states: list = []
        self.session_handle = ""


def is_constant_foldable(node: Node) -> bool:
    """TF's IsConstantFoldable, without the shape map: may this node be evaluated once?"""
    if not node.is_op:
        return False
    if node.type_string == "Const":
        return True
    if node.op_def is None or node.op_def.is_stateful:
        return False
    if node.is_control_flow or node.type_string in _NOT_FOLDABLE_OPS:
        return False
    cls = find_kernel_class(node.def_, "CPU")
    return cls is not None and not getattr(cls, "is_async", False)


def find_constant_foldable_nodes(graph: Graph, order: list[Node] | None = None,
                                 ) -> tuple[list[Node], dict[int, set[Node]]]:
    """The foldable nodes in topological order, and for each (by id) the non-foldable
    nodes it depends on through control edges, transitively through foldable inputs.
    Empty when only Consts qualify: then there is nothing to fold (as TF). `order`: the
    graph's reverse post-order, when the caller has it."""
    nodes: list[Node] = []
    control_deps: dict[int, set[Node]] = {}
    internal_node_inserted = False
    for node in order if order is not None else reverse_postorder(graph):
        # The inputs first: a cheap test that rules out most nodes of a graph that is
        # not constant, before the kernel registry is asked.
        if any(not e.is_control_edge and e.src.id not in control_deps for e in node.in_edges):
            continue
        if not is_constant_foldable(node):
            continue
        deps: set[Node] = set()
        for e in node.in_edges:
            if e.src.id in control_deps:
                deps |= control_deps[e.src.id]
            elif not e.src.is_source:
                deps.add(e.src)  # a control edge from a non-foldable node
        control_deps[node.id] = deps
        nodes.append(node)
        if node.type_string != "Const":
            internal_node_inserted = True
    if not internal_node_inserted:
        return [], {}
    return nodes, control_deps


def _evaluate(nodes: list[Node]) -> dict[int, list]:
    """Run the kernels of `nodes` (topologically ordered) on CPU; a node whose kernel
    fails, or whose inputs failed, gets no entry."""
    ctx = _FoldContext()
    values: dict[int, list] = {}
    for node in nodes:
        inputs = []
        ok = True
        for e in node.data_inputs():
            if e is None or e.src.id not in values:
                ok = False
                break
            inputs.append(values[e.src.id][e.src_output])
        if not ok:
            continue
        try:
            kernel = create_kernel(node.def_, node.op_def, "CPU",
                                   [dtypes.as_dtype(t) for t in node.input_types],
                                   [dtypes.as_dtype(t) for t in node.output_types])
            with np.errstate(all="ignore"):
                outputs = list(kernel.compute(ctx, inputs))
        except Exception:  # noqa: BLE001  (folding must never fail the graph)
            continue
        if len(outputs) != node.num_outputs or any(v is None for v in outputs):
            continue
        values[node.id] = outputs
    return values


def _new_name(graph: Graph, prefix: str, existing: set[str]) -> str:
    """TF's Graph::NewName(prefix) + "__cf__" + UniqueConstantId(), kept unique here."""
    while True:
        counter = getattr(graph, "_name_counter", 0)
        graph._name_counter = counter + 1
        name = f"{prefix}/_{counter}__cf__{next(_unique_constant_id)}"
        if name not in existing:
            existing.add(name)
            return name


def _make_const(graph: Graph, node: Node, slot: int, value, deps: set[Node],
                device_type: str, max_bytes: int, existing: set[str]) -> Node | None:
    """A Const node holding `value` (output `slot` of `node`), or None when TF would not
    replace the tensor: too large, not representable, or no Const kernel on the device."""
    dtype_enum = node.output_types[slot]
    try:
        dtype = dtypes.as_dtype(dtype_enum)
        if not dtype.is_numpy_compatible or dtype.is_ref_dtype:
            return None
        array = np.asarray(value)
        if array.dtype != object and array.nbytes > max_bytes:
            return None
        proto = tensor_util.make_tensor_proto(array, dtype)
    except Exception:  # noqa: BLE001
        return None
    if proto.ByteSize() > max_bytes:
        return None
    node_def = node_def_pb2.NodeDef(name=_new_name(graph, node.name, existing), op="Const",
                                    device=node.assigned_device_name or node.def_.device)
    node_def.attr["dtype"].type = dtype_enum
    node_def.attr["value"].tensor.CopyFrom(proto)
    if find_kernel_class(node_def, device_type) is None:
        return None
    const = graph.add_node(node_def, op_def_registry.get("Const"), [], [dtype_enum])
    const.assigned_device_name = node.assigned_device_name
    for dep in sorted(deps, key=lambda n: n.id):
        graph.add_control_edge(dep, const)
    if not deps:
        graph.add_control_edge(graph.source_node, const)
    return const


def constant_fold(graph: Graph, device_type: str = "CPU",
                  max_constant_size_in_bytes: int = MAX_CONSTANT_SIZE_IN_BYTES,
                  order: list[Node] | None = None) -> set[int]:
    """Fold in place. Returns the ids of the foldable nodes that may now be dead (those
    that had consumers other than the sink before), empty when nothing was replaced; pass
    them to `remove_dead_nodes`. `order`: the graph's reverse post-order, if known."""
    nodes, control_deps = find_constant_foldable_nodes(graph, order)
    if not nodes:
        return set()
    # Tensors that leave the foldable set through data edges (TF's tensors_to_fetch);
    # a Const's own outputs are never replaced.
    to_replace: dict[tuple[int, int], list] = {}
    for node in nodes:
        if node.type_string == "Const":
            continue
        for e in node.out_edges:
            if not e.is_control_edge and e.dst.id not in control_deps:
                to_replace.setdefault((node.id, e.src_output), []).append(e)
    if not to_replace:
        return set()
    values = _evaluate(nodes)
    candidates = {n.id for n in nodes if any(not e.dst.is_sink for e in n.out_edges)}
    existing = {n.name for n in graph.op_nodes()}
    replaced = False
    for (node_id, slot), edges in sorted(to_replace.items()):
        if node_id not in values:
            continue
        node = graph.nodes[node_id]
        const = _make_const(graph, node, slot, values[node_id][slot], control_deps[node_id],
                            device_type, max_constant_size_in_bytes, existing)
        if const is None:
            continue
        for e in edges:
            graph.add_edge(const, 0, e.dst, e.dst_input)
            graph.remove_edge(e)
        replaced = True
    return candidates if replaced else set()


def remove_dead_nodes(graph: Graph, candidate_ids: set[int]) -> bool:
    """Remove the candidates left without any consumer but the sink, and then those of
    their inputs that are candidates and are left so, until none is. (A sink edge on a
    node that had consumers is only fix-up: TF's partitions would not have it.)"""
    work = [graph.nodes[i] for i in sorted(candidate_ids) if graph.nodes[i] is not None]
    removed = False
    while work:
        node = work.pop()
        if graph.nodes[node.id] is None or any(not e.dst.is_sink for e in node.out_edges):
            continue
        srcs = [e.src for e in node.in_edges if e.src.id in candidate_ids]
        graph.remove_node(node)
        removed = True
        work.extend(srcs)
    return removed
