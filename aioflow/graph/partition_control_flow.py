"""Control loops for while loops whose nodes span devices (TF's AddControlFlow in
graph_partition.cc), run on the placed graph just before it is partitioned.

Every device that runs part of a loop frame must know, per iteration, whether the loop
goes on. TF's encoding, followed here: the frame's leader (the device of its LoopCond)
broadcasts the predicate; each other device taking part gets a *control loop* of dummy
nodes in that frame, `Enter -> Merge <- NextIteration <- Switch:1`, its Switch fed by
the LoopCond (cut into a _Send/_Recv pair when partitioned). The control loop's Merge
fires once per iteration; every node that receives a value across devices inside the
frame gets a control edge from it, which the partitioner moves onto the _Recv: that is
what starts a frame's _Recv once per iteration. Nested frames stack: the outer frame's
control Merge feeds the inner control Enter; the outermost control Enter reads an empty
Const in the root frame.

First, as TF, control-flow nodes are moved next to their data (OptimizeControlFlowColocation):
a Switch to its data input's device, an Exit to its input's, a (non-ref) Enter and a
NextIteration to the device of their first data consumer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aioflow.framework import dtypes, errors, op_def_registry
from aioflow.framework.device_spec import DeviceSpec
from aioflow.framework.memory_types import host_memory
from aioflow.framework.op_kernel import host_memory_args
from aioflow.graph.control_flow_info import ROOT_FRAME, build_control_flow_info, enter_frame_name
from aioflow.graph.graph import Graph, Node
from aioflow.proto import node_def_pb2, tensor_pb2, tensor_shape_pb2

#: Control-loop nodes are named "_cloop" + a new name (TF's ControlLoopName).
CONTROL_LOOP_PREFIX = "_cloop"
_FLOAT = dtypes.float32.as_datatype_enum
_BOOL = dtypes.bool.as_datatype_enum


def is_control_loop_merge(node: Node) -> bool:
    """A Merge of a control loop: its control edges are moved onto _Recvs (TF's test)."""
    return node.is_merge and node.name.startswith(CONTROL_LOOP_PREFIX)


@dataclass
class _ControlLoop:
    enter: Node
    merge: Node


def add_control_flow(graph: Graph, new_name: Callable[[str], str]) -> None:
    """Colocate control-flow nodes with their data, then add a control loop per (frame,
    device) for every frame with an edge between devices, in place. `new_name(prefix)`
    is the partitioner's "prefix/_N"."""
    _colocate_control_flow(graph)
    _ControlFlowAdder(graph, new_name).add()


def _colocate_control_flow(graph: Graph) -> None:
    """TF's OptimizeControlFlowColocation, in TF's depth-first order from the source."""
    for node in _dfs_preorder(graph):
        if node.is_switch:
            for e in node.in_edges:
                if e.dst_input == 0:
                    node.assigned_device_name = e.src.assigned_device_name
                    break
        elif node.is_exit:
            for e in node.in_edges:
                if not e.is_control_edge:
                    node.assigned_device_name = e.src.assigned_device_name
                    break
        elif (node.is_enter and node.input_types[0] < 100) or node.is_next_iteration:
            for e in node.out_edges:
                if not e.is_control_edge:
                    node.assigned_device_name = e.dst.assigned_device_name
                    break


def _dfs_preorder(graph: Graph):
    """Op nodes in TF's DFS order: a stack, a node's successors pushed in edge order."""
    visited = [False] * graph.num_node_ids
    stack = [graph.source_node]
    while stack:
        node = stack.pop()
        if visited[node.id]:
            continue
        visited[node.id] = True
        if node.is_op:
            yield node
        stack.extend(e.dst for e in node.out_edges if not visited[e.dst.id])


class _ControlFlowAdder:
    """One pass of AddControlFlow over a placed graph."""

    def __init__(self, graph: Graph, new_name: Callable[[str], str]):
        self.graph = graph
        self.new_name = new_name
        info = build_control_flow_info(graph)
        # aioflow's convention: an Enter is in the frame of its input, an Exit in its loop.
        self.frame_of: dict[int, str] = {n.id: info.frame_names[n.id] for n in graph.op_nodes()}
        self.parent_of: dict[str, str] = dict(info.frame_parents)
        self.enter_of: dict[str, Node] = {}  # frame -> an Enter of it (its attrs)
        self.cond_of: dict[str, Node] = {}   # frame -> its LoopCond
        for node in graph.op_nodes():
            if node.is_enter:
                self.enter_of.setdefault(enter_frame_name(node.def_), node)
            elif node.is_loop_cond:
                self.cond_of[self.frame_of[node.id]] = node
        self.loops: dict[tuple[str, str], _ControlLoop] = {}

    def output_frame(self, node: Node) -> str:
        """The frame of the values `node` outputs."""
        if node.is_enter:
            return enter_frame_name(node.def_)
        frame = self.frame_of[node.id]
        return self.parent_of[frame] if node.is_exit else frame

    def input_frame(self, node: Node) -> str:
        """The frame of the values `node` reads (an Enter reads its parent frame's)."""
        return self.frame_of[node.id]

    def _loop_edges(self):
        """Edges between devices inside one non-root frame, in edge-id order (TF's)."""
        edges = sorted((e for n in self.graph.op_nodes() for e in n.out_edges
                        if e.dst.is_op), key=lambda e: e.id)
        for e in edges:
            if e.src.assigned_device_name == e.dst.assigned_device_name:
                continue
            frame = self.output_frame(e.src)
            if frame != ROOT_FRAME and frame == self.input_frame(e.dst):
                yield e, frame

    def add(self) -> None:
        for edge, frame in list(self._loop_edges()):
            self._add_loops_for(edge, frame)
        # Then every such edge (the new LoopCond -> control Switch ones too) gets a control
        # edge from its device's control Merge; the partitioner moves it onto the _Recv.
        for edge, frame in list(self._loop_edges()):
            loop = self.loops[(frame, edge.dst.assigned_device_name)]
            self.graph.add_control_edge(loop.merge, edge.dst, allow_duplicates=True)

    def _add_loops_for(self, edge, frame: str) -> None:
        """The control loop of (frame, dst device), and of its outer frames as needed."""
        device = edge.dst.assigned_device_name
        child: _ControlLoop | None = None
        while True:
            if frame == ROOT_FRAME:
                if child is not None:
                    const = self._add_const(edge.dst.name, device)
                    self.graph.add_edge(const, 0, child.enter, 0)
                return
            existing = self.loops.get((frame, device))
            if existing is not None:
                if child is not None:
                    self.graph.add_edge(existing.merge, 0, child.enter, 0)
                return
            cond = self.cond_of.get(frame)
            if cond is None:
                raise errors.InvalidArgumentError(
                    None, None, f"A cross-device loop must have a pivot predicate: {frame}")
            loop = self._add_loop(edge.dst.name, device, frame, cond)
            self.loops[(frame, device)] = loop
            if child is not None:
                self.graph.add_edge(loop.merge, 0, child.enter, 0)
            frame = self.parent_of[frame]
            child = loop

    def _add_loop(self, dst_name: str, device: str, frame: str, cond: Node) -> _ControlLoop:
        """Enter -> Merge <- NextIteration <- Switch(Merge, cond):1 on `device` in `frame`
        (TF's AddControlLoop; its names taken in TF's order)."""
        names = [CONTROL_LOOP_PREFIX + self.new_name(dst_name) for _ in range(4)]
        enter_name, merge_name, switch_name, next_name = names
        parent = self.parent_of[frame]
        parallel = self.enter_of[frame].def_.attr["parallel_iterations"].i
        enter = self._node(enter_name, "Enter", device, [_FLOAT], [_FLOAT], parent,
                           T=("type", _FLOAT), frame_name=("s", frame.encode(
                               "utf-8", "surrogateescape")), is_constant=("b", False),
                           parallel_iterations=("i", parallel))
        merge = self._node(merge_name, "Merge", device, [_FLOAT, _FLOAT],
                           [_FLOAT, dtypes.int32.as_datatype_enum], frame,
                           T=("type", _FLOAT), N=("i", 2))
        switch = self._node(switch_name, "Switch", device, [_FLOAT, _BOOL],
                            [_FLOAT, _FLOAT], frame, T=("type", _FLOAT))
        nxt = self._node(next_name, "NextIteration", device, [_FLOAT], [_FLOAT], frame,
                         T=("type", _FLOAT))
        g = self.graph
        g.add_edge(merge, 0, switch, 0)
        g.add_edge(cond, 0, switch, 1)
        g.add_edge(switch, 1, nxt, 0)
        g.add_edge(enter, 0, merge, 0)
        g.add_edge(nxt, 0, merge, 1)
        return _ControlLoop(enter, merge)

    def _add_const(self, dst_name: str, device: str) -> Node:
        """The empty float Const in the root frame that starts the outermost control loop."""
        value = tensor_pb2.TensorProto(
            dtype=_FLOAT, tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=0)]))
        node = self._node(self.new_name(dst_name), "Const", device, [], [_FLOAT], ROOT_FRAME,
                          dtype=("type", _FLOAT))
        node.def_.attr["value"].tensor.CopyFrom(value)
        return node

    def _node(self, name: str, op: str, device: str, input_types, output_types,
              frame: str, **attrs) -> Node:
        node_def = node_def_pb2.NodeDef(name=name, op=op, device=device)
        for key, (kind, value) in attrs.items():
            setattr(node_def.attr[key], kind, value)
        node = self.graph.add_node(node_def, op_def_registry.get(op), input_types,
                                   output_types)
        node.assigned_device_name = device
        self.frame_of[node.id] = frame
        return node



def recv_op_for(dst: Node, dst_input: int) -> str:
    """"_HostRecv" when `dst`'s kernel reads input `dst_input` from host memory (its
    registered host-memory args; TF's MemoryTypesForNode), else "_Recv"."""
    host = _in_host_memory(dst, dst_input, "input_arg")
    return "_HostRecv" if host else "_Recv"


def send_op_for(src: Node, src_output: int) -> str:
    """"_HostSend" when `src`'s kernel writes output `src_output` to host memory (TF's
    AddSend: a Shape's or a Rank's output on CPU, say), else "_Send"."""
    return "_HostSend" if _in_host_memory(src, src_output, "output_arg") else "_Send"


def _in_host_memory(node: Node, index: int, args: str) -> bool:
    """Whether input or output `index` of `node` (`args`: "input_arg" / "output_arg") is
    one of its kernel's host-memory args."""
    device_type = DeviceSpec.from_string(node.assigned_device_name).device_type or "CPU"
    if device_type != "CPU":  # TF's MemoryTypesForNode (types always on the host too)
        inputs, outputs = host_memory(node.def_, node.op_def, device_type, node.input_types,
                                      node.output_types)
        return index in (inputs if args == "input_arg" else outputs)
    host = host_memory_args(node.def_, device_type)
    if not host or node.op_def is None:
        return False
    slot = 0
    for arg in getattr(node.op_def, args):
        if arg.number_attr:
            count = node.def_.attr[arg.number_attr].i
        elif arg.type_list_attr:
            count = len(node.def_.attr[arg.type_list_attr].list.type)
        else:
            count = 1
        if slot <= index < slot + count:
            return arg.name in host
        slot += count
    return False
