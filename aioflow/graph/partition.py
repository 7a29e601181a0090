"""Partition a placed graph by device (TF's graph_partition.cc): one graph per device,
and every edge that crosses devices cut into a `_Send` on the source's device and a
`_Recv` on the destination's. Each partition carries the functions its nodes call,
transitively (its part of the graph's function library).

As TF: a tensor crossing to one device is sent once however many nodes there read it;
a control edge that crosses devices sends an empty float `Const` (`{source}/ctrl/_{n}`)
that depends on the source, and on the other side an `Identity` of the `_Recv` becomes
the control input; transfer nodes are named `{source node}/_{n}` and carry
`tensor_name = edge_{edge id}_{source node}`. A while loop whose nodes span devices
first gets TF's control loops (partition_control_flow.py); the control edges they add
from a control Merge to a node reading across devices are moved onto that node's new
_Recv (so the _Recv runs once per iteration), as TF's Partition does. A partition on a
GPU then gets its host/device copies where memory types differ (memory_type_copies.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

from aioflow.framework import dtypes, op_def_registry
from aioflow.framework.device_spec import DeviceSpec
from aioflow.framework.function_library import graph_functions
from aioflow.graph.algorithm import fixup_source_and_sink_edges
from aioflow.graph.graph import Graph, Node
from aioflow.graph.memory_type_copies import ensure_memory_types
from aioflow.graph.partition_control_flow import (
    add_control_flow,
    is_control_loop_merge,
    recv_op_for,
    send_op_for,
)
from aioflow.proto import attr_value_pb2, node_def_pb2, tensor_pb2, tensor_shape_pb2


def partition_by_device(graph: Graph, incarnation_of: Callable[[str], int],
                        counter: Iterator[int] | None = None) -> dict[str, Graph]:
    """{device name: its partition}; every op node must have an assigned device.
    `counter` numbers the new nodes (a session's, as TF's edge_name_counter_, so names
    go on counting across the session's steps); a fresh one by default."""
    names = _Names(graph, counter)
    add_control_flow(graph, names.new_name)
    parts: dict[str, Graph] = {}
    copies: dict[int, Node] = {}
    for node in graph.op_nodes():
        device = node.assigned_device_name
        part = parts.get(device)
        if part is None:
            part = parts[device] = Graph(graph.versions)
        copies[node.id] = _add(part, node.def_, node.op_def, node.input_types,
                               node.output_types, device)
    _Cutter(graph, parts, copies, incarnation_of, names).cut()
    for device, part in parts.items():
        ensure_memory_types(part, _device_type(device), names.new_name)
    for part in parts.values():
        fixup_source_and_sink_edges(part)
        part.library = reachable_library(graph.library, part)
    return parts


def _device_type(device: str) -> str:
    return DeviceSpec.from_string(device).device_type or "CPU"


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


class _Names:
    """New node names "prefix/_N" from one counter (TF's PartitionOptions.new_name),
    shared by the control loops and the transfer nodes."""

    def __init__(self, graph: Graph, counter: Iterator[int] | None = None):
        self.names = {n.name for n in graph.op_nodes()}
        self.counter = itertools.count() if counter is None else counter

    def new_name(self, prefix: str) -> str:
        while True:
            name = f"{prefix}/_{next(self.counter)}"
            if name not in self.names:
                self.names.add(name)
                return name


class _Cutter:
    """Copies the edges into the partitions, cutting those that cross devices."""

    def __init__(self, graph: Graph, parts: dict[str, Graph], copies: dict[int, Node],
                 incarnation_of: Callable[[str], int], names: _Names):
        self.graph = graph
        self.parts = parts
        self.copies = copies
        self.incarnation_of = incarnation_of
        self._new_name = names.new_name
        # (src id, src output or -1, dst device, recv op) -> _Recv (or its Identity)
        self.recvs: dict[tuple, Node] = {}

    def cut(self) -> None:
        for node in self.graph.op_nodes():
            device = node.assigned_device_name
            dst = self.copies[node.id]
            part = self.parts[device]
            # As TF: data inputs in slot order, then control inputs; the control edges
            # from a control loop's Merge are held back for the new _Recvs.
            data, control, loop_merge, loop_edges = [], [], None, 0
            for e in node.in_edges:
                if not e.is_control_edge:
                    data.append(e)
                elif is_control_loop_merge(e.src):
                    loop_merge, loop_edges = e.src, loop_edges + 1
                else:
                    control.append(e)
            data.sort(key=lambda e: e.dst_input)
            for e in data + control:
                src = e.src
                if not src.is_op:
                    continue
                if src.assigned_device_name == device:
                    part.add_edge(self.copies[src.id], e.src_output, dst, e.dst_input)
                    continue
                recv, real_recv = self._recv_for(e, device)
                if real_recv is not None and loop_merge is not None:
                    loop_edges -= 1
                    part.add_control_edge(self.copies[loop_merge.id], real_recv)
                if e.is_control_edge:
                    part.add_control_edge(recv, dst)
                else:
                    part.add_edge(recv, 0, dst, e.dst_input)
            for _ in range(loop_edges):  # those no new _Recv took stay on the node
                part.add_control_edge(self.copies[loop_merge.id], dst, allow_duplicates=True)

    def _recv_for(self, edge, recv_device: str) -> tuple[Node, Node | None]:
        """(the node `edge`'s destination reads, the new _Recv or None when an earlier
        one carries the same tensor to this device)."""
        src = edge.src
        slot = -1 if edge.is_control_edge else edge.src_output
        recv_op = "_Recv" if edge.is_control_edge else recv_op_for(edge.dst, edge.dst_input)
        key = (src.id, slot, recv_device, recv_op)
        recv = self.recvs.get(key)
        if recv is not None:
            return recv, None
        real_recv = recv = self._send_recv(edge, recv_device, recv_op)
        if edge.is_control_edge:
            recv = self._identity_of(recv, src.name, recv_device)
        self.recvs[key] = recv
        return recv, real_recv

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

    def _send_recv(self, edge, recv_device: str, recv_op: str) -> Node:
        """Add the _Send (after a dummy Const for a control edge; a _HostSend where the
        source writes the output to host memory) and the _Recv (a _HostRecv where the
        destination reads the input from host memory)."""
        src = edge.src
        send_device = src.assigned_device_name
        send_part, recv_part = self.parts[send_device], self.parts[recv_device]
        if edge.is_control_edge:
            send_from, slot = self._dummy_const(src, send_part), 0
            dtype = dtypes.float32.as_datatype_enum
            send_op = "_Send"
        else:
            send_from, slot = self.copies[src.id], edge.src_output
            dtype = _base_type(src.output_types[slot])
            send_op = send_op_for(src, slot)
        attrs = {
            "tensor_name": attr_value_pb2.AttrValue(
                s=f"edge_{edge.id}_{src.name}".encode()),
            "send_device": attr_value_pb2.AttrValue(s=send_device.encode()),
            "send_device_incarnation": attr_value_pb2.AttrValue(
                i=self.incarnation_of(send_device)),
            "recv_device": attr_value_pb2.AttrValue(s=recv_device.encode()),
            "client_terminated": attr_value_pb2.AttrValue(b=False),
        }
        send_def = node_def_pb2.NodeDef(name=self._new_name(src.name), op=send_op,
                                        device=send_device)
        send_def.attr["T"].type = dtype
        recv_def = node_def_pb2.NodeDef(name=self._new_name(src.name), op=recv_op,
                                        device=recv_device)
        recv_def.attr["tensor_type"].type = dtype
        for key, value in attrs.items():
            send_def.attr[key].CopyFrom(value)
            recv_def.attr[key].CopyFrom(value)
        send = _add(send_part, send_def, op_def_registry.get(send_op), [dtype], [],
                    send_device)
        send_part.add_edge(send_from, slot, send, 0)
        return _add(recv_part, recv_def, op_def_registry.get(recv_op), [], [dtype],
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
