"""OpDefs of TF's fused ops that its grappler remapper writes (tensorflow/core/ops/nn_ops.cc,
math_ops.cc): _FusedConv2D, _FusedDepthwiseConv2dNative, _FusedMatMul and
_FusedBatchNormEx (a FusedBatchNorm, an optional side input added, and an activation:
aioflow/passes/batch_norm_activation.py writes it for a batch norm and its Relu).

aioflow's graph optimizer writes them too (aioflow/passes/remapper.py): a convolution or
matmul, its BiasAdd (or folded batch norm) and an activation computed by one kernel call.
`fused_ops` names the chain (e.g. ["BiasAdd", "Relu6"]); `args` are its operands (the bias,
or a batch norm's scale/offset/mean/variance); the shape is the convolution's or matmul's.
"""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

from .nn_conv_ops import _batch_norm_shape, _conv_shape

#: A private attr (TF's NodeDefs may carry attrs named with a leading underscore beyond
#: their OpDef's) of a _FusedDepthwiseConv2dNative with padding VALID: the zeros, as
#: explicit_paddings lists them (NHWC, 8 values), around the input before the VALID
#: window. The remapper writes it for a depthwise convolution with EXPLICIT padding (a
#: zero Pad folded into it: MobileNetV2's stride-2 blocks), since TF's fused op has no
#: explicit_paddings; the kernels read it as EXPLICIT padding.
FOLDED_PADDINGS = "_explicit_paddings"

_FUSION_ATTRS = ('fused_ops: list(string) = []', "epsilon: float = 0.0001",
                 "leakyrelu_alpha: float = 0.2")


def _with_fusion_attrs(builder):
    for spec in _FUSION_ATTRS:
        builder = builder.attr(spec)
    return builder


_with_fusion_attrs(
    register_op("_FusedConv2D").input("input: T").input("filter: T").input("args: TArgs")
    .input("host_args: num_host_args * float").output("output: T")
    .attr("T: {half, float, double, int8, qint8}").attr("TArgs: list(type) >= 1")
    .attr("num_args: int >= 0").attr("num_host_args: int >= 0 = 0")
    .attr("strides: list(int)").attr("padding: {'SAME', 'VALID', 'EXPLICIT'}")
    .attr("explicit_paddings: list(int) = []")
    .attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'")
    .attr("filter_format: {'HWIO', 'OIHW', 'OIHW_VECT_I'} = 'HWIO'")
    .attr("dilations: list(int) = [1, 1, 1, 1]").attr("use_cudnn_on_gpu: bool = true")
).set_shape_fn(_conv_shape(4))

_with_fusion_attrs(
    register_op("_FusedDepthwiseConv2dNative").input("input: T").input("filter: T")
    .input("args: num_args * T").output("output: T")
    .attr("T: {half, bfloat16, float, double}").attr("num_args: int >= 0")
    .attr("strides: list(int)").attr("padding: {'SAME', 'VALID'}")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("dilations: list(int) = [1, 1, 1, 1]")
).set_shape_fn(_conv_shape(4, depthwise=True))

_with_fusion_attrs(
    register_op("_FusedMatMul").input("a: T").input("b: T").input("args: num_args * T")
    .output("product: T").attr("transpose_a: bool = false").attr("transpose_b: bool = false")
    .attr("T: {bfloat16, half, float}").attr("num_args: int >= 0")
).set_shape_fn(cs.matmul)

(register_op("_FusedBatchNormEx").input("x: T").input("scale: U").input("offset: U")
    .input("mean: U").input("variance: U").input("side_input: num_side_inputs * T")
    .output("y: T").output("batch_mean: U").output("batch_variance: U")
    .output("reserve_space_1: U").output("reserve_space_2: U").output("reserve_space_3: U")
    .attr("T: {half, float, bfloat16}").attr("U: {float}").attr("epsilon: float = 0.0001")
    .attr("exponential_avg_factor: float = 1.0").attr("num_side_inputs: int >= 0 = 0")
    .attr("activation_mode: string = 'Identity'")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("is_training: bool = true")
    .set_shape_fn(_batch_norm_shape))
