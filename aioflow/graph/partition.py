"""Partition a placed graph by device (TF's graph_partition.cc): one graph per device,
and every edge that crosses devices cut into a `_Send` on the source's device and a
`_Recv` on the destination's. Each partition carries the functions its nodes call,
transitively (its part of the graph's function library).

As TF: a tensor crossing to one device is sent once however many nodes there read it;
a control edge that crosses devices sends an empty float `Const` (`{source}/ctrl/_{n}`)
that depends on the source, and on the other side an `Identity` of the `_Recv` becomes
the control input; transfer nodes are named `{source node}/_{n}` and carry
`tensor_name = edge_{edge id}_{source node}`. Edges that
cross devices inside a while loop need TF's distributed control loops, which aioflow
does not build: they are refused with UnimplementedError.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from aioflow.framework import dtypes, errors, op_def_registry
from aioflow.framework.function_library import graph_functions
from aioflow.graph.algorithm import fixup_source_and_sink_edges
from aioflow.graph.control_flow_info import ROOT_FRAME, build_control_flow_info
from aioflow.graph.graph import Graph, Node
from aioflow.proto import attr_value_pb2, node_def_pb2, tensor_pb2, tensor_shape_pb2


def partition_by_device(graph: Graph, incarnation_of: Callable[[str], int]) -> dict[str, Graph]:
    """{device name: its partition}; every op node must have an assigned device."""
    parts: dict[str, Graph] = {}
    copies: dict[int, Node] = {}
    for node in graph.op_nodes():
        device = node.assigned_device_name
        part = parts.get(device)
        if part is None:
            part = parts[device] = Graph(graph.versions)
        copies[node.id] = _add(part, node.def_, node.op_def, node.input_types,
                               node.output_types, device)
    _Cutter(graph, parts, copies, incarnation_of).cut()
    for part in parts.values():
        fixup_source_and_sink_edges(part)
        part.library = reachable_library(graph.library, part)
    return parts


def reachable_library(library, graph: Graph):
    """The functions of `library` that the nodes of `graph` call, transitively (None when
    there are none)."""
    if not library:
        return None
    found = library.reachable(graph_functions(n.def_ for n in graph.op_nodes()))
    return found if found else None


def _add(part: Graph, node_def, op_def, input_types, output_types, device: str) -> Node:
    node = part.add_node(node_def, op_def, input_types, output_types)
    node.assigned_device_name = device
    return node


class _Cutter:
    """Copies the edges into the partitions, cutting those that cross devices."""

    def __init__(self, graph: Graph, parts: dict[str, Graph], copies: dict[int, Node],
                 incarnation_of: Callable[[str], int]):
        self.graph = graph
        self.parts = parts
        self.copies = copies
        self.incarnation_of = incarnation_of
        self.frames = build_control_flow_info(graph).frame_names
        self.names = {n.name for n in graph.op_nodes()}
        self.counter = itertools.count()
        self.recvs: dict[tuple, Node] = {}  # (src id, src output or -1, dst device) -> _Recv

    def cut(self) -> None:
        for node in self.graph.op_nodes():
            device = node.assigned_device_name
            dst = self.copies[node.id]
            for e in node.in_edges:
                src = e.src
                if not src.is_op:
                    continue
                if src.assigned_device_name == device:
                    self.parts[device].add_edge(self.copies[src.id], e.src_output, dst,
                                                e.dst_input)
                    continue
                recv = self._recv_for(e, device)
                if e.is_control_edge:
                    self.parts[device].add_control_edge(recv, dst)
                else:
                    self.parts[device].add_edge(recv, 0, dst, e.dst_input)

    def _recv_for(self, edge, recv_device: str) -> Node:
        src = edge.src
        slot = -1 if edge.is_control_edge else edge.src_output
        key = (src.id, slot, recv_device)
        recv = self.recvs.get(key)
        if recv is None:
            self._check_frames(edge)
            recv = self._send_recv(edge, recv_device)
            if edge.is_control_edge:
                recv = self._identity_of(recv, src.name, recv_device)
            self.recvs[key] = recv
        return recv

    def _identity_of(self, recv: Node, prefix: str, device: str) -> Node:
        """The Identity a control edge's _Recv feeds; it is the control input (TF)."""
        node_def = node_def_pb2.NodeDef(name=self._new_name(prefix), op="Identity",
                                        device=device)
        dtype = dtypes.float32.as_datatype_enum
        node_def.attr["T"].type = dtype
        part = self.parts[device]
        identity = _add(part, node_def, op_def_registry.get("Identity"), [dtype], [dtype],
                        device)
        part.add_edge(recv, 0, identity, 0)
        return identity

    def _check_frames(self, edge) -> None:
        """The value on an edge lives in its destination's frame (an Exit's successors
        are outside the loop, an Enter is in the frame of its input)."""
        frame = self.frames[edge.dst.id]
        if frame != ROOT_FRAME:
            raise errors.UnimplementedError(
                edge.dst.def_, None,
                f"The edge {edge.src.name} -> {edge.dst.name} crosses from "
                f"{edge.src.assigned_device_name} to {edge.dst.assigned_device_name} inside "
                f"the while loop frame '{frame}': loops spanning devices are not supported; "
                f"place the loop's nodes on one device.")

    def _new_name(self, prefix: str) -> str:
        while True:
            name = f"{prefix}/_{next(self.counter)}"
            if name not in self.names:
                self.names.add(name)
                return name

    def _send_recv(self, edge, recv_device: str) -> Node:
        """Add the _Send (after a dummy Const for a control edge) and the _Recv."""
        src = edge.src
        send_device = src.assigned_device_name
        send_part, recv_part = self.parts[send_device], self.parts[recv_device]
        if edge.is_control_edge:
            send_from, slot = self._dummy_const(src, send_part), 0
            dtype = dtypes.float32.as_datatype_enum
        else:
            send_from, slot = self.copies[src.id], edge.src_output
            dtype = _base_type(src.output_types[slot])
        attrs = {
            "tensor_name": attr_value_pb2.AttrValue(
                s=f"edge_{edge.id}_{src.name}".encode()),
            "send_device": attr_value_pb2.AttrValue(s=send_device.encode()),
            "send_device_incarnation": attr_value_pb2.AttrValue(
                i=self.incarnation_of(send_device)),
            "recv_device": attr_value_pb2.AttrValue(s=recv_device.encode()),
            "client_terminated": attr_value_pb2.AttrValue(b=False),
        }
        send_def = node_def_pb2.NodeDef(name=self._new_name(src.name), op="_Send",
                                        device=send_device)
        send_def.attr["T"].type = dtype
        recv_def = node_def_pb2.NodeDef(name=self._new_name(src.name), op="_Recv",
                                        device=recv_device)
        recv_def.attr["tensor_type"].type = dtype
        for key, value in attrs.items():
            send_def.attr[key].CopyFrom(value)
            recv_def.attr[key].CopyFrom(value)
        send = _add(send_part, send_def, op_def_registry.get("_Send"), [dtype], [],
                    send_device)
        send_part.add_edge(send_from, slot, send, 0)
        return _add(recv_part, recv_def, op_def_registry.get("_Recv"), [], [dtype],
                    recv_device)

    def _dummy_const(self, src: Node, part: Graph) -> Node:
        """An empty float Const on the source's device that runs after the source."""
        node_def = node_def_pb2.NodeDef(name=self._new_name(f"{src.name}/ctrl"), op="Const",
                                        device=src.assigned_device_name)
        node_def.attr["dtype"].type = dtypes.float32.as_datatype_enum
        node_def.attr["value"].tensor.CopyFrom(tensor_pb2.TensorProto(
            dtype=dtypes.float32.as_datatype_enum,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=0)])))
        dummy = _add(part, node_def, op_def_registry.get("Const"), [],
                     [dtypes.float32.as_datatype_enum], src.assigned_device_name)
        part.add_control_edge(self.copies[src.id], dummy)
        return dummy


def _base_type(dtype: int) -> int:
    """The non-reference type of a DataType enum (ref types are the base + 100)."""
    return dtype - 100 if dtype > 100 else dtype
