"""OpDefs of TF's convolution, pooling and normalisation gradient ops
(tensorflow/core/ops/nn_ops.cc): Conv2DBackpropFilter, DepthwiseConv2dNativeBackprop
Input/Filter, Conv3DBackpropInput/Filter (v1, deprecated) and V2, MaxPoolGrad(V2),
MaxPoolGradGrad(V2), AvgPoolGrad, MaxPool3DGrad, AvgPool3DGrad, MaxPool3DGradGrad,
MaxPoolWithArgmax, MaxPoolGradWithArgmax, MaxPoolGradGradWithArgmax,
FusedBatchNormGrad(V2/V3) and LRNGrad; Conv2DBackpropInput is in nn_conv_ops.py.

Shape functions give what TF's give where the inputs determine it: a gradient has the
shape of what it is the gradient of (a sizes input's constant value, or the original
input's shape); the kernels do TF's full checks at run time.
"""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

from .nn_conv_ops import _pool_shape


def _sizes_input(index: int, rank: int):
    """The shape given by the constant value of input `index` (unknown dims otherwise)."""
    def fn(op):
        sizes = cs._const_ints(op.inputs[index])
        if sizes is None or len(sizes) != rank:
            return [TensorShape([None] * rank)]
        return [TensorShape(sizes)]
    return fn


def _like_input(index: int):
    def fn(op):
        return [op.inputs[index].shape]
    return fn


def _depthwise_input_sizes(op):
    """DepthwiseConv2dNativeBackpropInput: input_sizes' value (4 values)."""
    return _sizes_input(0, 4)(op)


def _batch_norm_grad_shape(op):
    """x_backprop like x; scale/offset_backprop [C]; the reserve spaces [0]."""
    x = op.inputs[1].shape
    channels = None
    fmt = op.get_attr("data_format")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    rank = 5 if len(fmt) == 5 else 4  # TF's FusedBatchNormGradShape: 4-D (5-D for NDHWC)
    for i in (0, 1):
        got = op.inputs[i].shape.rank
        if got is not None and got != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {got} for '{op.name}' "
                             f"(op: '{op.type}')")
    for i in range(2, 5):
        got = op.inputs[i].shape.rank
        if got is not None and got != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {got} for '{op.name}' "
                             f"(op: '{op.type}')")
    if x.rank is not None:
        channels = x.as_list()[1 if fmt.startswith("NC") else -1]
    if channels is None and op.inputs[2].shape.rank == 1:
        channels = op.inputs[2].shape.as_list()[0]
    vec = TensorShape([channels])
    return [x, vec, vec, TensorShape([0]), TensorShape([0])]


def _argmax_shape(op):
    pooled = _pool_shape(4)(op)[0]
    return [pooled, pooled]


_FLOATS = "{half, bfloat16, float, double}"
_POOL_GRAD_T = ("{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
                "uint32, uint64}")
_PADDING3 = "padding: {'SAME', 'VALID', 'EXPLICIT'}"
_PADDING2 = "padding: {'SAME', 'VALID'}"
_NHWC = "data_format: {'NHWC', 'NCHW'} = 'NHWC'"
_NDHWC = "data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'"
_DIL4 = "dilations: list(int) = [1, 1, 1, 1]"
_DIL5 = "dilations: list(int) = [1, 1, 1, 1, 1]"

# -- convolutions -------------------------------------------------------------------------------

(register_op("Conv2DBackpropFilter").input("input: T").input("filter_sizes: int32")
    .input("out_backprop: T").output("output: T").attr(f"T: {_FLOATS}")
    .attr("strides: list(int)").attr("use_cudnn_on_gpu: bool = true").attr(_PADDING3)
    .attr("explicit_paddings: list(int) = []").attr(_NHWC).attr(_DIL4)
    .set_shape_fn(_sizes_input(1, 4)))
(register_op("DepthwiseConv2dNativeBackpropInput").input("input_sizes: int32")
    .input("filter: T").input("out_backprop: T").output("output: T").attr(f"T: {_FLOATS}")
    .attr("strides: list(int)").attr(_PADDING3).attr("explicit_paddings: list(int) = []")
    .attr(_NHWC).attr(_DIL4).set_shape_fn(_depthwise_input_sizes))
(register_op("DepthwiseConv2dNativeBackpropFilter").input("input: T")
    .input("filter_sizes: int32").input("out_backprop: T").output("output: T")
    .attr(f"T: {_FLOATS}").attr("strides: list(int)").attr(_PADDING3)
    .attr("explicit_paddings: list(int) = []").attr(_NHWC).attr(_DIL4)
    .set_shape_fn(_sizes_input(1, 4)))
(register_op("Conv3DBackpropInput").input("input: T").input("filter: T")
    .input("out_backprop: T").output("output: T").attr("T: {half, float, double}")
    .attr("strides: list(int) >= 5").attr(_PADDING2).attr(_DIL5)
    .deprecated(10, "Use Conv3DBackpropInputV2").set_shape_fn(_like_input(0)))
(register_op("Conv3DBackpropFilter").input("input: T").input("filter: T")
    .input("out_backprop: T").output("output: T").attr("T: {half, float, double}")
    .attr("strides: list(int) >= 5").attr(_PADDING2).attr(_DIL5)
    .deprecated(10, "Use Conv3DBackpropFilterV2").set_shape_fn(_like_input(1)))
(register_op("Conv3DBackpropInputV2").input("input_sizes: Tshape").input("filter: T")
    .input("out_backprop: T").output("output: T").attr(f"T: {_FLOATS}")
    .attr("strides: list(int) >= 5").attr(_PADDING2).attr(_NDHWC).attr(_DIL5)
    .attr("Tshape: {int32, int64} = DT_INT32").set_shape_fn(_sizes_input(0, 5)))
(register_op("Conv3DBackpropFilterV2").input("input: T").input("filter_sizes: int32")
    .input("out_backprop: T").output("output: T").attr(f"T: {_FLOATS}")
    .attr("strides: list(int) >= 5").attr(_PADDING2).attr(_NDHWC).attr(_DIL5)
    .set_shape_fn(_sizes_input(1, 5)))

# -- pooling ------------------------------------------------------------------------------------

(register_op("MaxPoolGrad").input("orig_input: T").input("orig_output: T").input("grad: T")
    .output("output: T").attr("ksize: list(int) >= 4").attr("strides: list(int) >= 4")
    .attr(_PADDING3).attr("explicit_paddings: list(int) = []").attr(_NHWC)
    .attr(f"T: {_POOL_GRAD_T} = DT_FLOAT").set_shape_fn(_like_input(0)))
(register_op("MaxPoolGradV2").input("orig_input: T").input("orig_output: T").input("grad: T")
    .input("ksize: int32").input("strides: int32").output("output: T").attr(_PADDING2)
    .attr(_NHWC).attr(f"T: {_POOL_GRAD_T} = DT_FLOAT").set_shape_fn(_like_input(0)))
(register_op("MaxPoolGradGrad").input("orig_input: T").input("orig_output: T")
    .input("grad: T").output("output: T").attr("ksize: list(int) >= 4")
    .attr("strides: list(int) >= 4").attr(_PADDING2).attr(_NHWC).attr(f"T: {_POOL_GRAD_T}")
    .set_shape_fn(_like_input(1)))
(register_op("MaxPoolGradGradV2").input("orig_input: T").input("orig_output: T")
    .input("grad: T").input("ksize: int32").input("strides: int32").output("output: T")
    .attr(_PADDING2).attr(_NHWC).attr(f"T: {_POOL_GRAD_T}").set_shape_fn(_like_input(1)))
(register_op("AvgPoolGrad").input("orig_input_shape: int32").input("grad: T")
    .output("output: T").attr("ksize: list(int) >= 4").attr("strides: list(int) >= 4")
    .attr(_PADDING2).attr(_NHWC).attr(f"T: {_FLOATS}").set_shape_fn(_sizes_input(0, 4)))
(register_op("MaxPool3DGrad").input("orig_input: TInput").input("orig_output: TInput")
    .input("grad: T").output("output: T").attr("ksize: list(int) >= 5")
    .attr("strides: list(int) >= 5").attr(_PADDING2).attr(_NDHWC)
    .attr("T: {half, bfloat16, float} = DT_FLOAT")
    .attr("TInput: {half, bfloat16, float} = DT_FLOAT").set_shape_fn(_like_input(0)))
(register_op("AvgPool3DGrad").input("orig_input_shape: int32").input("grad: T")
    .output("output: T").attr("ksize: list(int) >= 5").attr("strides: list(int) >= 5")
    .attr(_PADDING2).attr(_NDHWC).attr(f"T: {_FLOATS}").set_shape_fn(_sizes_input(0, 5)))
(register_op("MaxPool3DGradGrad").input("orig_input: T").input("orig_output: T")
    .input("grad: T").output("output: T").attr("ksize: list(int) >= 5")
    .attr("strides: list(int) >= 5").attr(_PADDING2).attr(_NDHWC)
    .attr(f"T: {_POOL_GRAD_T}").set_shape_fn(_like_input(1)))
(register_op("MaxPoolWithArgmax").input("input: T").output("output: T")
    .output("argmax: Targmax").attr("ksize: list(int) >= 4").attr("strides: list(int) >= 4")
    .attr("Targmax: {int32, int64} = DT_INT64").attr(_PADDING2)
    .attr("include_batch_in_index: bool = false").attr(f"T: {_POOL_GRAD_T}")
    .set_shape_fn(_argmax_shape))
(register_op("MaxPoolGradWithArgmax").input("input: T").input("grad: T")
    .input("argmax: Targmax").output("output: T").attr("ksize: list(int) >= 4")
    .attr("strides: list(int) >= 4").attr(_PADDING2)
    .attr("include_batch_in_index: bool = false").attr("Targmax: {int32, int64}")
    .attr(f"T: {_POOL_GRAD_T}").set_shape_fn(_like_input(0)))
(register_op("MaxPoolGradGradWithArgmax").input("input: T").input("grad: T")
    .input("argmax: Targmax").output("output: T").attr("ksize: list(int) >= 4")
    .attr("strides: list(int) >= 4").attr(_PADDING2)
    .attr("include_batch_in_index: bool = false").attr("Targmax: {int32, int64}")
    .attr(f"T: {_POOL_GRAD_T}").set_shape_fn(_like_input(2)))

# -- normalisation ------------------------------------------------------------------------------

(register_op("FusedBatchNormGrad").input("y_backprop: T").input("x: T").input("scale: T")
    .input("reserve_space_1: T").input("reserve_space_2: T").output("x_backprop: T")
    .output("scale_backprop: T").output("offset_backprop: T").output("reserve_space_3: T")
    .output("reserve_space_4: T").attr("T: {float}").attr("epsilon: float = 0.0001")
    .attr(_NHWC).attr("is_training: bool = true").set_shape_fn(_batch_norm_grad_shape))
(register_op("FusedBatchNormGradV2").input("y_backprop: T").input("x: T")
    .input("scale: float").input("reserve_space_1: U").input("reserve_space_2: U")
    .output("x_backprop: T").output("scale_backprop: U").output("offset_backprop: U")
    .output("reserve_space_3: U").output("reserve_space_4: U")
    .attr("T: {half, bfloat16, float}").attr("U: {float}").attr("epsilon: float = 0.0001")
    .attr(_NHWC).attr("is_training: bool = true").set_shape_fn(_batch_norm_grad_shape))
(register_op("FusedBatchNormGradV3").input("y_backprop: T").input("x: T")
    .input("scale: float").input("reserve_space_1: U").input("reserve_space_2: U")
    .input("reserve_space_3: U").output("x_backprop: T").output("scale_backprop: U")
    .output("offset_backprop: U").output("reserve_space_4: U").output("reserve_space_5: U")
    .attr("T: {half, bfloat16, float}").attr("U: {float}").attr("epsilon: float = 0.0001")
    .attr("data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'")
    .attr("is_training: bool = true").set_shape_fn(_batch_norm_grad_shape))
(register_op("LRNGrad").input("input_grads: T").input("input_image: T")
    .input("output_image: T").output("output: T").attr("depth_radius: int = 5")
    .attr("bias: float = 1.0").attr("alpha: float = 1.0").attr("beta: float = 0.5")
    .attr("T: {half, bfloat16, float} = DT_FLOAT").set_shape_fn(_like_input(0)))
