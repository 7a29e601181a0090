"""OpDefs of the stack ops (tensorflow/core/ops/data_flow_ops.cc): StackV2, StackPushV2,
StackPopV2, StackCloseV2. While-loop gradients keep each iteration's forward values on
stacks (pushed by the loop, popped by its gradient loop)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _scalar_handle(op) -> list:
    return [TensorShape([])]


(register_op("StackV2").input("max_size: int32").output("handle: resource")
    .attr("elem_type: type").attr("stack_name: string = ''").set_is_stateful()
    .set_shape_fn(_scalar_handle))
(register_op("StackPushV2").input("handle: resource").input("elem: T").output("output: T")
    .attr("T: type").attr("swap_memory: bool = false").set_is_stateful()
    .set_shape_fn(lambda op: [op.inputs[1].shape]))
(register_op("StackPopV2").input("handle: resource").output("elem: elem_type")
    .attr("elem_type: type").set_is_stateful().set_shape_fn(cs.unknown))
(register_op("StackCloseV2").input("handle: resource").set_is_stateful()
    .set_shape_fn(cs.no_outputs))
