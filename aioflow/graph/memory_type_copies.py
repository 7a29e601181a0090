"""Copies between host and device memory inside one device's partition (TF's
EnsureMemoryTypes): where an edge joins an output in device memory to an input read
from host memory, or the other way round, the value goes through a
`_CopyFromGpuToHost` (device → host) or `_CopyFromHostToGpu` (host → device) node on
that device, as TF's memory optimizer names its copies. One copy per tensor and
direction, however many consumers read it. On a CPU nothing is done: all its memory is
host memory.

A transfer between devices uses the same copies: a GPU's _Send and _Recv move host
memory (the rendezvous carries host values), so a device value leaving a GPU is first
copied to the host on the device-to-host stream, and one arriving is copied to the
device on the host-to-device stream, as TF's rendezvous does with its device contexts.
"""

from __future__ import annotations

from collections.abc import Callable

from aioflow.framework import op_def_registry
from aioflow.framework.memory_types import host_memory
from aioflow.graph.graph import Graph, Node
from aioflow.proto import node_def_pb2

TO_HOST = "_CopyFromGpuToHost"
TO_DEVICE = "_CopyFromHostToGpu"


def ensure_memory_types(graph: Graph, device_type: str, new_name: Callable[[str], str]) -> int:
    """Insert the copies `graph` (one device's partition) needs; returns how many."""
    if device_type == "CPU":
        return 0
    kinds: dict[int, tuple[frozenset, frozenset]] = {}

    def kind(node: Node):
        found = kinds.get(node.id)
        if found is None:
            found = kinds[node.id] = host_memory(node.def_, node.op_def, device_type,
                                                 node.input_types, node.output_types)
        return found

    copies: dict[tuple[int, int, str], Node] = {}
    count = 0
    for node in list(graph.op_nodes()):
        for e in list(node.in_edges):
            if e.is_control_edge or not e.src.is_op:
                continue
            src_host = e.src_output in kind(e.src)[1]
            dst_host = e.dst_input in kind(node)[0]
            if src_host == dst_host:
                continue
            op = TO_DEVICE if src_host else TO_HOST
            key = (e.src.id, e.src_output, op)
            copy = copies.get(key)
            if copy is None:
                copy = copies[key] = _copy_node(graph, e.src, e.src_output, op, new_name)
                count += 1
            graph.remove_edge(e)
            graph.add_edge(copy, 0, node, e.dst_input)
    return count


def _copy_node(graph: Graph, src: Node, slot: int, op: str, new_name) -> Node:
    dtype = src.output_types[slot]
    dtype = dtype - 100 if dtype > 100 else dtype  # a ref is copied as its value
    node_def = node_def_pb2.NodeDef(name=new_name(src.name), op=op,
                                    device=src.assigned_device_name)
    node_def.input.append(src.name if slot == 0 else f"{src.name}:{slot}")
    node_def.attr["T"].type = dtype
    copy = graph.add_node(node_def, op_def_registry.get(op), [dtype], [dtype])
    copy.assigned_device_name = src.assigned_device_name
    graph.add_edge(src, slot, copy, 0)
    return copy
