"""OpDefs of TF's convolution, pooling and normalisation ops (tensorflow/core/ops/nn_ops.cc):
Conv2D, Conv2DBackpropInput, Conv3D, DepthwiseConv2dNative, MaxPool(V2), AvgPool,
MaxPool3D, AvgPool3D, FusedBatchNorm(V2/V3), BiasAddV1, LRN, L2Loss.

Shape functions give the output shape where the input shapes and attrs determine it
(unknown dims stay unknown); the kernels do TF's full checks at run time.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import common_shapes as cs
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _out_dim(size, k, stride, dilation, padding, before=0, after=0):
    if size is None or k is None or stride is None or stride <= 0:
        return None
    eff = (k - 1) * max(1, dilation) + 1
    if padding == "VALID":
        out = (size - eff + stride) // stride
    elif padding == "SAME":
        out = (size + stride - 1) // stride
    else:
        out = (size + before + after - eff + stride) // stride
    return out if out >= 0 else None


def _layout(fmt: str, rank: int):
    """(batch axis, spatial axes, channel axis) for a data_format."""
    if fmt.startswith("NC"):
        return 0, list(range(2, rank)), 1
    return 0, list(range(1, rank - 1)), rank - 1


def _attr(op, name, default):
    try:
        return op.get_attr(name)
    except (ValueError, KeyError):
        return default


def _conv_shape(rank: int, depthwise: bool = False):
    def fn(op):
        x = op.inputs[0].shape
        w = op.inputs[1].shape
        fmt = _s(_attr(op, "data_format", "NHWC" if rank == 4 else "NDHWC"))
        if x.rank is not None and x.rank != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {x.rank} for "
                             f"'{op.name}' (op: '{op.type}')")
        if w.rank is not None and w.rank != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {w.rank} for "
                             f"'{op.name}' (op: '{op.type}')")
        strides = list(_attr(op, "strides", []))
        dilations = list(_attr(op, "dilations", [1] * rank))
        if len(strides) != rank or len(dilations) != rank:
            return [TensorShape([None] * rank)]
        xd = x.as_list() if x.rank is not None else [None] * rank
        wd = w.as_list() if w.rank is not None else [None] * rank
        b, spatial, c = _layout(fmt, rank)
        padding = _s(op.get_attr("padding"))
        explicit = list(_attr(op, "explicit_paddings", []))
        out = [None] * rank
        out[b] = xd[b]
        if depthwise:
            out[c] = None if xd[c] is None or wd[3] is None else xd[c] * wd[3]
            if out[c] is None and wd[2] is not None and wd[3] is not None:
                out[c] = wd[2] * wd[3]
        else:
            out[c] = wd[-1]
        for i, ax in enumerate(spatial):
            before, after = ((explicit[2 * ax], explicit[2 * ax + 1])
                             if padding == "EXPLICIT" and len(explicit) == 2 * rank else (0, 0))
            out[ax] = _out_dim(xd[ax], wd[i], strides[ax], dilations[ax], padding, before,
                               after)
        return [TensorShape(out)]
    return fn


def _pool_shape(rank: int, v2: bool = False):
    def fn(op):
        x = op.inputs[0].shape
        if x.rank is not None and x.rank != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {x.rank} for "
                             f"'{op.name}' (op: '{op.type}')")
        if v2:
            ksize, strides = (cs._const_ints(op.inputs[1]), cs._const_ints(op.inputs[2]))
        else:
            ksize, strides = list(op.get_attr("ksize")), list(op.get_attr("strides"))
        if ksize is None or strides is None or len(ksize) != rank or len(strides) != rank:
            return [TensorShape([None] * rank)]
        fmt = _s(_attr(op, "data_format", "NHWC" if rank == 4 else "NDHWC"))
        xd = x.as_list() if x.rank is not None else [None] * rank
        b, spatial, c = _layout(fmt, rank)
        padding = _s(op.get_attr("padding"))
        explicit = list(_attr(op, "explicit_paddings", []))
        out = list(xd)
        for ax in spatial + [c]:
            before, after = ((explicit[2 * ax], explicit[2 * ax + 1])
                             if padding == "EXPLICIT" and len(explicit) == 2 * rank else (0, 0))
            out[ax] = _out_dim(xd[ax], ksize[ax], strides[ax], 1, padding, before, after)
        return [TensorShape(out)]
    return fn


def _backprop_input_shape(op):
    sizes = constant_value(op.inputs[0])
    if sizes is None or np.ndim(sizes) != 1 or len(sizes) != 4:
        return [TensorShape([None] * 4)]
    return [TensorShape([int(v) for v in sizes])]


def _batch_norm_shape(op):
    x = op.inputs[0].shape
    channels = None
    if x.rank is not None:
        fmt = _s(_attr(op, "data_format", "NHWC"))
        rank = 5 if fmt in ("NDHWC", "NCDHW") else 4  # TF's FusedBatchNorm shape function
        if x.rank != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {x.rank} for "
                             f"'{op.name}' (op: '{op.type}')")
        channels = x.as_list()[1 if fmt.startswith("NC") else -1]
    for t in op.inputs[1:]:
        if t.shape.rank is not None and t.shape.rank != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {t.shape.rank} for "
                             f"'{op.name}' (op: '{op.type}')")
        if channels is None and t.shape.rank == 1:
            channels = t.shape.as_list()[0]
    vec = TensorShape([channels])
    outs = [x] + [vec] * 4
    if len(op.outputs) == 6:
        outs.append(_UNKNOWN)
    return outs


_FLOATS = "{half, bfloat16, float, double}"
_CONV_T = "{half, bfloat16, float, double, int32}"

(register_op("Conv2D").input("input: T").input("filter: T").output("output: T")
    .attr(f"T: {_CONV_T}").attr("strides: list(int)").attr("use_cudnn_on_gpu: bool = true")
    .attr("padding: {'SAME', 'VALID', 'EXPLICIT'}").attr("explicit_paddings: list(int) = []")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("dilations: list(int) = [1, 1, 1, 1]")
    .set_shape_fn(_conv_shape(4)))
(register_op("Conv2DBackpropInput").input("input_sizes: int32").input("filter: T")
    .input("out_backprop: T").output("output: T")
    .attr(f"T: {_CONV_T}").attr("strides: list(int)").attr("use_cudnn_on_gpu: bool = true")
    .attr("padding: {'SAME', 'VALID', 'EXPLICIT'}").attr("explicit_paddings: list(int) = []")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("dilations: list(int) = [1, 1, 1, 1]")
    .set_shape_fn(_backprop_input_shape))
(register_op("Conv3D").input("input: T").input("filter: T").output("output: T")
    .attr(f"T: {_FLOATS}").attr("strides: list(int) >= 5").attr("padding: {'SAME', 'VALID'}")
    .attr("data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'")
    .attr("dilations: list(int) = [1, 1, 1, 1, 1]").set_shape_fn(_conv_shape(5)))
(register_op("DepthwiseConv2dNative").input("input: T").input("filter: T").output("output: T")
    .attr(f"T: {_FLOATS}").attr("strides: list(int)")
    .attr("padding: {'SAME', 'VALID', 'EXPLICIT'}").attr("explicit_paddings: list(int) = []")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("dilations: list(int) = [1, 1, 1, 1]")
    .set_shape_fn(_conv_shape(4, depthwise=True)))

_POOL_T = ("{half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16, qint8}"
           " = DT_FLOAT")
(register_op("MaxPool").input("input: T").output("output: T").attr(f"T: {_POOL_T}")
    .attr("ksize: list(int) >= 4").attr("strides: list(int) >= 4")
    .attr("padding: {'SAME', 'VALID', 'EXPLICIT'}").attr("explicit_paddings: list(int) = []")
    .attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'")
    .set_shape_fn(_pool_shape(4)))
(register_op("MaxPoolV2").input("input: T").input("ksize: int32").input("strides: int32")
    .output("output: T").attr(f"T: {_POOL_T}").attr("padding: {'SAME', 'VALID'}")
    .attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'")
    .set_shape_fn(_pool_shape(4, v2=True)))
(register_op("AvgPool").input("value: T").output("output: T")
    .attr("ksize: list(int) >= 4").attr("strides: list(int) >= 4")
    .attr("padding: {'SAME', 'VALID'}").attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .attr(f"T: {_FLOATS}").set_shape_fn(_pool_shape(4)))
(register_op("MaxPool3D").input("input: T").output("output: T")
    .attr("ksize: list(int) >= 5").attr("strides: list(int) >= 5")
    .attr("padding: {'SAME', 'VALID'}").attr("data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'")
    .attr("T: {half, bfloat16, float}").set_shape_fn(_pool_shape(5)))
(register_op("AvgPool3D").input("input: T").output("output: T")
    .attr("ksize: list(int) >= 5").attr("strides: list(int) >= 5")
    .attr("padding: {'SAME', 'VALID'}").attr("data_format: {'NDHWC', 'NCDHW'} = 'NDHWC'")
    .attr(f"T: {_FLOATS}").set_shape_fn(_pool_shape(5)))

(register_op("FusedBatchNorm").input("x: T").input("scale: T").input("offset: T")
    .input("mean: T").input("variance: T").output("y: T").output("batch_mean: T")
    .output("batch_variance: T").output("reserve_space_1: T").output("reserve_space_2: T")
    .attr("T: {float}").attr("epsilon: float = 0.0001")
    .attr("exponential_avg_factor: float = 1.0")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("is_training: bool = true")
    .set_shape_fn(_batch_norm_shape))
(register_op("FusedBatchNormV2").input("x: T").input("scale: U").input("offset: U")
    .input("mean: U").input("variance: U").output("y: T").output("batch_mean: U")
    .output("batch_variance: U").output("reserve_space_1: U").output("reserve_space_2: U")
    .attr("T: {half, bfloat16, float}").attr("U: {float}").attr("epsilon: float = 0.0001")
    .attr("exponential_avg_factor: float = 1.0")
    .attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").attr("is_training: bool = true")
    .set_shape_fn(_batch_norm_shape))
(register_op("FusedBatchNormV3").input("x: T").input("scale: U").input("offset: U")
    .input("mean: U").input("variance: U").output("y: T").output("batch_mean: U")
    .output("batch_variance: U").output("reserve_space_1: U").output("reserve_space_2: U")
    .output("reserve_space_3: U")
    .attr("T: {half, bfloat16, float}").attr("U: {bfloat16, float}")
    .attr("epsilon: float = 0.0001").attr("exponential_avg_factor: float = 1.0")
    .attr("data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'")
    .attr("is_training: bool = true").set_shape_fn(_batch_norm_shape))

(register_op("BiasAddV1").input("value: T").input("bias: T").output("output: T")
    .attr("T: numbertype").set_shape_fn(cs.unchanged_shape))
(register_op("LRN").input("input: T").output("output: T").attr("depth_radius: int = 5")
    .attr("bias: float = 1.0").attr("alpha: float = 1.0").attr("beta: float = 0.5")
    .attr("T: {half, bfloat16, float} = DT_FLOAT").set_shape_fn(cs.unchanged_shape))
(register_op("L2Loss").input("t: T").output("output: T").attr(f"T: {_FLOATS}")
    .set_shape_fn(cs.scalar))
