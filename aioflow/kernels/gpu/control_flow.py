"""Control flow on a GPU (TF's control_flow_ops.cc registrations): the kernels only
route values, so the CPU's serve both memories. Predicates and indices stay in host
memory (Switch's `pred`, Merge's `value_index`, LoopCond), and int32, bool, string and
resource values flow through host-memory registrations, so a while loop's counter and
predicate never visit the device; other types are routed in device memory."""

from __future__ import annotations

from aioflow.framework.op_kernel import registered_kernels

from ..control_flow import control_flow_kernels as cf
from .base import register_gpu

_HOST_TYPES = ("int32", "bool", "string", "resource")


def _register(op: str, cls, host_args: tuple, data_args: tuple, type_attr: str = "T") -> None:
    """A host-memory registration for _HOST_TYPES, then one for every other type."""
    register_gpu(op, host_memory=host_args + data_args, **{type_attr: list(_HOST_TYPES)})(cls)
    register_gpu(op, host_memory=host_args)(cls)


for _op in ("Switch", "RefSwitch"):
    _register(_op, cf.SwitchOp, ("pred",), ("data", "output_false", "output_true"))
_register("_SwitchN", cf.SwitchNOp, ("output_index",), ("data", "outputs"))
for _op in ("Merge", "RefMerge"):
    _register(_op, cf.MergeOp, ("value_index",), ("inputs", "output"))
for _op in ("Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration"):
    _register(_op, registered_kernels()[(_op, "CPU")][0], (), ("data", "output"))
register_gpu("LoopCond", host_memory=("input", "output"))(cf.LoopCondOp)
register_gpu("ControlTrigger")(cf.ControlTriggerOp)
