"""OpDefs of the small gradient ops of math (tensorflow/core/ops/math_ops.cc, array_ops.cc):
BroadcastGradientArgs and the cwise gradients that take the forward output y and dy."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _broadcast_gradient_args_shape(op) -> list:
    return [TensorShape([None]), TensorShape([None])]


(register_op("BroadcastGradientArgs").input("s0: T").input("s1: T").output("r0: T")
    .output("r1: T").attr("T: {int32, int64} = DT_INT32")
    .set_shape_fn(_broadcast_gradient_args_shape))


def _merged_y_dy(op) -> list:
    return [op.inputs[0].shape.merge_with(op.inputs[1].shape)]


for _name in ("SigmoidGrad", "TanhGrad", "RsqrtGrad", "SqrtGrad", "ReciprocalGrad", "InvGrad"):
    (register_op(_name).input("y: T").input("dy: T").output("z: T")
        .attr("T: {bfloat16, half, float, double, complex64, complex128}")
        .set_shape_fn(_merged_y_dy))
