"""OpDefs of the small gradient ops of math (tensorflow/core/ops/math_ops.cc, array_ops.cc):
BroadcastGradientArgs and the cwise gradients that take the forward output y and dy."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
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

for _name in ("SparseSegmentSumGrad", "SparseSegmentMeanGrad", "SparseSegmentSqrtNGrad"):
    (register_op(_name).input("grad: T").input("indices: Tidx")
        .input("segment_ids: Tsegmentids").input("output_dim0: int32").output("output: T")
        .attr("T: {bfloat16, half, float, double}").attr("Tidx: {int32, int64} = DT_INT32")
        .attr("Tsegmentids: {int32, int64} = DT_INT32")
        .set_shape_fn(lambda op: [TensorShape([None]).concatenate(op.inputs[0].shape[1:])
                                  if op.inputs[0].shape.rank is not None
                                  else TensorShape(None)]))

# Digamma's gradient emits Polygamma(1, x).
(register_op("Polygamma").input("a: T").input("x: T").output("z: T").attr("T: {float, double}")
    .set_shape_fn(cs.broadcast_binary))
