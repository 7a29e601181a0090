"""Memory types of a node's inputs and outputs on a device (TF's MemoryTypesForNode).

On a CPU every tensor is in host memory. On another device an input or output is in
device memory unless its kernel registration lists the arg as HostMemory, or its type
always lives on the host (string, string ref, resource: TF's DataTypeAlwaysOnHost); a
node without a kernel there (or a function call) keeps its int32 values on the host
as well. The partitioner inserts a copy wherever an edge joins two memory types
(graph/memory_type_copies.py); a GPU kernel reads its HostMemory inputs on the host.
"""

from __future__ import annotations

from collections.abc import Sequence

from aioflow.framework import op_kernel

_INT32 = 3
_ALWAYS_ON_HOST = frozenset({7, 20, 107})  # DT_STRING, DT_RESOURCE, DT_STRING_REF
_FUNCTION_CALLS = frozenset({"SymbolicGradient", "PartitionedCall", "StatefulPartitionedCall",
                             "While"})


def arg_indices(node_def, op_def, args: str, names: Sequence[str]) -> frozenset:
    """The flat input (`args` "input_arg") or output ("output_arg") indices of the named
    args of `op_def` in this node (a list arg covers its N entries)."""
    if op_def is None or not names:
        return frozenset()
    found, slot = [], 0
    for arg in getattr(op_def, args):
        if arg.number_attr:
            count = node_def.attr[arg.number_attr].i
        elif arg.type_list_attr:
            count = len(node_def.attr[arg.type_list_attr].list.type)
        else:
            count = 1
        if arg.name in names:
            found.extend(range(slot, slot + count))
        slot += count
    return frozenset(found)


def host_memory(node_def, op_def, device_type: str, input_types: Sequence[int],
                output_types: Sequence[int]) -> tuple[frozenset, frozenset]:
    """(input indices, output indices) in host memory for this node on `device_type`;
    on a CPU every index (host memory is a CPU's device memory)."""
    if device_type == "CPU":
        return frozenset(range(len(input_types))), frozenset(range(len(output_types)))
    has_kernel = (op_kernel.find_kernel_class(node_def, device_type) is not None
                  and node_def.op not in _FUNCTION_CALLS)
    names = op_kernel.host_memory_args(node_def, device_type) if has_kernel else ()
    inputs = set(arg_indices(node_def, op_def, "input_arg", names))
    outputs = set(arg_indices(node_def, op_def, "output_arg", names))

    def on_host(dtype: int) -> bool:
        return dtype in _ALWAYS_ON_HOST or (dtype == _INT32 and not has_kernel)

    inputs.update(i for i, t in enumerate(input_types) if on_host(t))
    outputs.update(i for i, t in enumerate(output_types) if on_host(t))
    return frozenset(inputs), frozenset(outputs)
