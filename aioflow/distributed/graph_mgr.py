"""GraphMgr: the graphs a master registered on one task, and their executors (TF's
GraphMgr). A registered graph is the task's share of a step's graph, every node
assigned to one of the task's devices and every edge between devices already cut into a
_Send/_Recv pair by the master; here it is split by device, each part optimized (TF's
GraphOptimizer) and given one executor. Registering returns a handle; RunGraph runs all
of a handle's executors as one step."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

from aioflow.framework import errors
from aioflow.framework.function_library import FunctionLibraryDefinition
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.passes.graph_optimizer import optimize_graph
from aioflow.proto import config_pb2, graph_pb2
from aioflow.runtime import executor_factory
from aioflow.runtime.function_runtime import FunctionLibraryRuntime
from aioflow.runtime.segments import segments_default


@dataclass
class Item:
    """One registered graph: its executors, one per device it uses."""

    handle: str
    executors: list = field(default_factory=list)
    partitions: list = field(default_factory=list)  # the Graphs, by executor


class GraphMgr:
    """The registered graphs of one task (its DeviceMgr's devices)."""

    def __init__(self, device_mgr, config: config_pb2.ConfigProto | None = None):
        self.device_mgr = device_mgr
        self.config = config if config is not None else config_pb2.ConfigProto()
        self._items: dict[str, Item] = {}
        self._handles = itertools.count(1)
        self._lock = threading.Lock()

    def register(self, graph, config: config_pb2.ConfigProto | None = None) -> str:
        """Build the executors of `graph` (a GraphDef whose nodes name their devices, or
        {device name: Graph}); its handle. A node on a device this task does not have is
        InvalidArgumentError."""
        config = config if config is not None else self.config
        parts = split_by_device(graph) if isinstance(graph, graph_pb2.GraphDef) else graph
        factory = executor_factory.get_factory(config.experimental.executor_type)
        graph_nodes = sum(part.num_node_ids for part in parts.values())
        deadness = len(parts) > 1 or any(
            n.is_control_flow for part in parts.values() for n in part.op_nodes())
        segments = segments_default()
        with self._lock:
            handle = f"{next(self._handles):016x}"
        item = Item(handle)
        for device_name, part in parts.items():
            device = self.device_mgr.lookup(device_name)
            optimize_graph(part, config.graph_options.optimizer_options, device.device_type,
                           config.graph_options.rewrite_options, graph_nodes,
                           fetches_known=True)
            library = part.library if part.library is not None else FunctionLibraryDefinition()
            flr = FunctionLibraryRuntime(library, device, self.device_mgr, config,
                                         segments=segments)
            item.executors.append(factory.new_executor(
                part, device, inline_all=False, deadness=deadness, segments=segments,
                function_library=flr))
            item.partitions.append(part)
        with self._lock:
            self._items[handle] = item
        return handle

    def get(self, handle: str) -> Item:
        item = self._items.get(handle)
        if item is None:
            raise errors.AbortedError(None, None, f"Graph handle is not found: {handle}. "
                                                  f"Possibly, this worker just restarted.")
        return item

    def deregister(self, handle: str) -> None:
        with self._lock:
            if self._items.pop(handle, None) is None:
                raise errors.AbortedError(None, None, f"Graph handle is not found: {handle}")

    def __len__(self) -> int:
        return len(self._items)


def split_by_device(graph_def: graph_pb2.GraphDef) -> dict:
    """{device: Graph} of a task's GraphDef, whose edges between devices are cut already
    (each device's nodes only read each other)."""
    by_device: dict[str, graph_pb2.GraphDef] = {}
    for node in graph_def.node:
        part = by_device.get(node.device)
        if part is None:
            part = by_device[node.device] = graph_pb2.GraphDef()
            part.versions.CopyFrom(graph_def.versions)
        part.node.append(node)
    library = (FunctionLibraryDefinition(graph_def.library)
               if graph_def.library.function or graph_def.library.gradient else None)
    parts = {}
    for device, part_def in by_device.items():
        graph = convert_graph_def_to_graph(part_def, library)
        for node in graph.op_nodes():
            node.assigned_device_name = node.def_.device
        parts[device] = graph
    return parts
