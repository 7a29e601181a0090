"""OpDefs of the array gradient ops (tensorflow/core/ops/array_ops.cc): ConcatOffset,
StridedSliceGrad, MirrorPadGrad."""

from __future__ import annotations

from aioflow.framework.constant_value import constant_value_as_shape
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _concat_offset_shape(op) -> list:
    return [t.shape for t in op.inputs[1:]]


(register_op("ConcatOffset").input("concat_dim: int32").input("shape: N * shape_type")
    .output("offset: N * shape_type").attr("N: int >= 2")
    .attr("shape_type: {int32, int64} = DT_INT32").set_shape_fn(_concat_offset_shape))


def _strided_slice_grad_shape(op) -> list:
    return [constant_value_as_shape(op.inputs[0])]


(register_op("StridedSliceGrad").input("shape: Index").input("begin: Index")
    .input("end: Index").input("strides: Index").input("dy: T").output("output: T")
    .attr("T: type").attr("Index: {int32, int64}")
    .attr("begin_mask: int = 0").attr("end_mask: int = 0").attr("ellipsis_mask: int = 0")
    .attr("new_axis_mask: int = 0").attr("shrink_axis_mask: int = 0")
    .set_shape_fn(_strided_slice_grad_shape))


def _mirror_pad_grad_shape(op) -> list:
    rank = op.inputs[0].shape.rank
    return [TensorShape(None) if rank is None else TensorShape([None] * rank)]


(register_op("MirrorPadGrad").input("input: T").input("paddings: Tpaddings")
    .output("output: T").attr("T: type").attr("Tpaddings: {int32, int64} = DT_INT32")
    .attr("mode: {'REFLECT', 'SYMMETRIC'}").set_shape_fn(_mirror_pad_grad_shape))


def _fake_quant_vars_grad_shape(op) -> list:
    return [op.inputs[1].shape, op.inputs[2].shape, op.inputs[3].shape]


(register_op("FakeQuantWithMinMaxArgsGradient").input("gradients: float")
    .input("inputs: float").output("backprops: float").attr("min: float = -6.0")
    .attr("max: float = 6.0").attr("num_bits: int = 8").attr("narrow_range: bool = false")
    .set_shape_fn(lambda op: [op.inputs[0].shape.merge_with(op.inputs[1].shape)]))
for _name in ("FakeQuantWithMinMaxVarsGradient", "FakeQuantWithMinMaxVarsPerChannelGradient"):
    (register_op(_name).input("gradients: float").input("inputs: float").input("min: float")
        .input("max: float").output("backprops_wrt_input: float")
        .output("backprop_wrt_min: float").output("backprop_wrt_max: float")
        .attr("num_bits: int = 8").attr("narrow_range: bool = false")
        .set_shape_fn(_fake_quant_vars_grad_shape))
