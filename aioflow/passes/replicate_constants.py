"""ReplicateConstantsPass (TF's replicate_constants_pass.cc), POST_REWRITE_FOR_EXEC phase
3: a small constant (at most 16 elements) on a CPU whose consumers sit on several devices
becomes one copy per consumer device, so the value is not sent across devices every step.

As TF 2.21 (its `enable_aggressive_constant_replication` flag is on by default), a
consumer on a CPU gets a copy on its own device, a consumer on another device type a copy
on CPU:0 of its task. Constants with a control edge out, or one consumer, stay as they
are. Copies are named `<name>/replicate/_<n>` (the graph's NewName counter) in the order
of their device names, and keep the original's control inputs."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from aioflow.framework import device_spec
from aioflow.graph.graph import Graph, Node
from aioflow.passes.registry import Grouping, PassOptions, register_optimization

#: The largest constant (in elements) that is replicated.
MAX_SIZE = 16
_CONSTANTS = frozenset({"Const", "HostConst"})


def new_name(graph: Graph, prefix: str) -> str:
    """TF's Graph::NewName: prefix/_<graph-wide counter>."""
    counter = getattr(graph, "_name_counter", 0)
    graph._name_counter = counter + 1
    return f"{prefix}/_{counter}"


def _num_elements(node: Node) -> int | None:
    value = node.attr("value")
    if value is None:
        return None
    count = 1
    for dim in value.tensor.tensor_shape.dim:
        if dim.size < 0:
            return None
        count *= dim.size
    return count


def _cpu_of(device_name: str) -> str | None:
    """The CPU device a consumer on `device_name` reads a replicated constant from."""
    try:
        spec = device_spec.DeviceSpec.from_string(device_name)
    except ValueError:
        return None
    if spec.device_type == "CPU":
        return device_name
    return dataclasses.replace(spec, device_type="CPU", device_index=0).to_string()


def _replicable(node: Node) -> bool:
    if node.type_string not in _CONSTANTS:
        return False
    outs = [e for e in node.out_edges if not e.dst.is_sink]
    if len(outs) <= 1 or any(e.is_control_edge for e in outs):
        return False
    size = _num_elements(node)
    if size is None or size > MAX_SIZE or not node.assigned_device_name:
        return False
    return _cpu_of(node.assigned_device_name) == node.assigned_device_name


def _replicate(graph: Graph, node: Node) -> bool:
    """One copy of `node` per consumer device (False, and nothing changed, for one)."""
    by_device: dict[str, list] = defaultdict(list)
    for e in node.out_edges:
        if e.dst.is_sink:
            continue
        device = _cpu_of(e.dst.assigned_device_name)
        if device is None:
            return False
        by_device[device].append(e)
    if len(by_device) <= 1:
        return False
    controls = [e.src for e in node.in_edges if e.is_control_edge]
    for device in sorted(by_device):
        node_def = type(node.def_)()
        node_def.CopyFrom(node.def_)
        node_def.name = new_name(graph, f"{node.name}/replicate")
        copy = graph.add_node(node_def, node.op_def, list(node.input_types),
                              list(node.output_types))
        copy.assigned_device_name = device
        for e in by_device[device]:
            graph.add_edge(copy, e.src_output, e.dst, e.dst_input)
        for src in controls:
            graph.add_control_edge(src, copy, allow_duplicates=True)
    graph.remove_node(node)
    return True


@register_optimization(Grouping.POST_REWRITE_FOR_EXEC, 3, "ReplicateConstantsPass")
def replicate_constants_pass(options: PassOptions) -> None:
    """Replicate every small CPU constant whose consumers span devices."""
    graph = options.graph
    if graph is None:
        return
    for node in [n for n in graph.op_nodes() if _replicable(n)]:
        _replicate(graph, node)
