"""The session's cost model (TF's CostModel in costmodel.cc, one per partition graph),
filled from the step stats of the steps `GraphOptions.build_cost_model` selects and
written to RunMetadata.cost_graph as TF's CostGraphDef.

Per node it keeps what TF's StepStatsCollector::BuildCostModel records: per output the
largest allocation seen (bytes, shape, dtype) and the latest allocation id (an output
whose allocation is an input's aliases it), the node's temporary and persistent memory,
and its longest op time. AddToCostGraphDef then lists every node of the graph (the
source and sink too), ids offset by the nodes of the partitions listed before it.
"""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.proto import cost_graph_pb2, tensor_shape_pb2

_SEND_OPS = frozenset({"_Send", "_HostSend"})


class CostModel:
    """Measurements of one partition graph across the steps that updated it."""

    def __init__(self, graph):
        self.graph = graph
        self.by_name = {n.name: n for n in graph.all_nodes()}
        self.update_times = 0
        # node id -> per output slot [bytes, shape, dtype] (bytes -1: not seen yet)
        self.outputs: dict[int, list[list]] = {}
        self.alloc_ids: dict[int, list[int]] = {}  # node id -> per slot (-1: none)
        self.temp: dict[int, int] = {}
        self.persistent: dict[int, int] = {}
        self.max_time: dict[int, int] = {}  # node id -> longest op time, microseconds

    def _ensure(self, node) -> None:
        if node.id not in self.outputs:
            n = node.num_outputs
            self.outputs[node.id] = [[-1, _unknown_shape(), 0] for _ in range(n)]
            self.alloc_ids[node.id] = [-1] * n
            self.max_time[node.id] = 0

    def record(self, node_stats) -> None:
        """Fold one device's NodeExecStats of a step in (BuildCostModel)."""
        self.update_times += 1
        for ns in node_stats:
            node = self.by_name.get(ns.node_name)
            if node is None:
                continue
            self._ensure(node)
            outputs = self.outputs[node.id]
            for out in ns.output:
                slot = out.slot
                if slot >= node.num_outputs:
                    continue
                desc = out.tensor_description
                size = desc.allocation_description.allocated_bytes
                if size < 0:
                    size = _min_bytes(desc.shape, node.output_types[slot])
                if size > outputs[slot][0]:
                    outputs[slot] = [size, desc.shape, node.output_types[slot]]
                self.alloc_ids[node.id][slot] = desc.allocation_description.allocation_id
            self.temp[node.id] = ns.memory_stats.temp_memory_size
            self.persistent[node.id] = ns.memory_stats.persistent_memory_size
            self.max_time[node.id] = max(self.max_time[node.id],
                                         ns.op_end_rel_micros - ns.op_start_rel_micros)

    def _alloc_id(self, node, slot: int) -> int:
        ids = self.alloc_ids.get(node.id)
        return ids[slot] if ids is not None and slot < len(ids) else -1

    def add_to_cost_graph_def(self, cost_graph: cost_graph_pb2.CostGraphDef) -> None:
        """Append every node of the graph as TF's CostModel::AddToCostGraphDef does."""
        offset = len(cost_graph.node)
        for node in self.graph.all_nodes():
            cnode = cost_graph.node.add(name=node.name, device=node.assigned_device_name,
                                        id=node.id + offset)
            inputs = [None] * node.num_inputs
            controls = []
            for e in node.in_edges:
                if e.is_control_edge:
                    controls.append(e)
                elif e.dst_input < len(inputs):
                    inputs[e.dst_input] = e
            inputs = [e for e in inputs if e is not None]
            for e in inputs:
                cnode.input_info.add(preceding_node=e.src.id + offset,
                                     preceding_port=e.src_output)
            outputs = self.outputs.get(node.id)
            for slot in range(node.num_outputs):
                alloc_id = self._alloc_id(node, slot)
                alias = -1
                for e in inputs:
                    if self._alloc_id(e.src, e.src_output) == alloc_id:
                        alias = e.dst_input
                        break
                if outputs is None:
                    size, shape, dtype = 0, _unknown_shape(), 0
                else:
                    size, shape, dtype = outputs[slot]
                info = cnode.output_info.add(size=size, alias_input_port=alias, dtype=dtype)
                info.shape.CopyFrom(shape)
            for e in sorted(controls, key=lambda e: e.src.id):
                cnode.control_input.append(e.src.id + offset)
            cnode.temporary_memory_size = self.temp.get(node.id, 0)
            cnode.persistent_memory_size = self.persistent.get(node.id, 0)
            cnode.compute_cost = self.max_time.get(node.id, 0)
            cnode.is_final = node.type_string in _SEND_OPS and node.is_op


def update_cost_models(models: dict, executors, partition_graphs, collector) -> None:
    """Fold a step's stats into the cost model of each partition (made on first use)."""
    by_device = collector.device_stats()
    for i, (executor, graph) in enumerate(zip(executors, partition_graphs, strict=True)):
        stats = by_device.get(executor.device.name)
        if stats is None:
            continue
        model = models.get(i)
        if model is None:
            model = models[i] = CostModel(graph)
        model.record(stats.nodes)


def _unknown_shape() -> tensor_shape_pb2.TensorShapeProto:
    return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)


def _base(dtype: int) -> int:
    return dtype - 100 if dtype > 100 else dtype


def _min_bytes(shape, dtype: int) -> int:
    """TF's MinTensorMemoryUsage: unknown dims count 1; -1 for an unknown rank."""
    if shape.unknown_rank:
        return -1
    n = 1
    for d in shape.dim:
        n *= max(d.size, 1)
    return n * dtypes.as_dtype(_base(dtype)).size
