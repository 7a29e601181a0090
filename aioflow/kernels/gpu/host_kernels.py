"""GPU registrations whose every argument is in host memory: the int32 arithmetic,
shapes and indices TF registers on its GPU device with HostMemory on all args (a
while loop's counter, a Reshape's shape, a StridedSlice's bounds). The CPU's kernel
runs them, on the host, as TF runs the CPU functor for these registrations; they are
"on the GPU" for the placer, so the graph around them stays on the GPU without
copies."""

from __future__ import annotations

from aioflow.framework import op_def_registry
from aioflow.framework.op_kernel import registered_kernels

from .base import register_gpu

# op -> its type attr: TF's GPU int32 (host memory) registrations.
_INT32_OPS = {
    **dict.fromkeys((
        "Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "FloorDiv", "FloorMod",
        "TruncateDiv", "Neg", "Abs", "Square", "Sign", "Less", "LessEqual", "Greater",
        "GreaterEqual", "Equal", "NotEqual", "Sum", "Prod", "Max", "Min", "Identity",
        "StridedSlice", "Slice", "Pack", "Unpack", "ConcatV2", "Fill", "ExpandDims",
        "Squeeze", "Tile", "Transpose", "Reshape", "Snapshot", "ZerosLike", "OnesLike",
        "BroadcastTo", "Cumsum"), "T"),
    "Range": "Tidx",
    "GatherV2": "Tparams",
    "Const": "dtype",
}
# Registered for every type with their outputs in host memory (TF: Shape, Size, Rank).
_HOST_OUTPUT_OPS = ("Shape", "ShapeN", "Size", "Rank", "BroadcastArgs")


def _all_args(op: str) -> tuple:
    op_def = op_def_registry.get(op)
    return tuple(a.name for a in op_def.input_arg) + tuple(a.name for a in op_def.output_arg)


# Registered for the types that always live on the host (a resource handle, a string).
_HOST_TYPE_OPS = ("Identity", "Snapshot")


def _register_all() -> None:
    kernels = registered_kernels()
    for op in _HOST_TYPE_OPS:
        register_gpu(op, host_memory=_all_args(op), T=["resource", "string"])(
            kernels[(op, "CPU")][0])
    for op, type_attr in _INT32_OPS.items():
        cpu = kernels.get((op, "CPU"))
        if cpu:
            register_gpu(op, host_memory=_all_args(op), **{type_attr: ["int32"]})(cpu[0])
    for op in _HOST_OUTPUT_OPS:
        cpu = kernels.get((op, "CPU"))
        if cpu:
            register_gpu(op, host_memory=_all_args(op))(cpu[0])


_register_all()
