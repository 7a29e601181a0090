"""Every gradient function against the numeric gradient checker (tf.test.compute_gradient,
central differences) on random inputs, as TF's own gradient tests do. Each case builds a
small graph around one op (float64 where its kernel has it); the last test checks that the
cases together run the gradient function of every op listed in COVERED."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import aioflow.compat.v1 as tf
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import get_gradient_function

F64 = tf.float64
RNG = np.random.default_rng(42)


def _r(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, size=shape)


def _pos(*shape):
    return _r(*shape, low=0.5, high=1.5)


def _distinct(*shape):
    """Values far apart (max/min/top_k/pooling ties would be non-differentiable)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 - n * 0.15).reshape(shape)


def _list_of(x):
    return apply_op("TensorListFromTensor", tensor=x, element_shape=[2])


def _list_stack(handle):
    return apply_op("TensorListStack", input_handle=handle, element_shape=[2],
                    element_dtype=F64)


def _max_pool_grad(g):
    orig = tf.constant(_distinct(1, 4, 4, 1))
    pooled = tf.nn.max_pool(orig, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
    return apply_op("MaxPoolGrad", orig_input=orig, orig_output=pooled, grad=g,
                    ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")


def _qr_flat(x):
    """q and r of a QR decomposition, flattened into one vector."""
    q, r = tf.linalg.qr(x)
    return tf.concat([tf.reshape(q, [-1]), tf.reshape(r, [-1])], 0)


# name: (function of the inputs, [input values]) — inputs become float64 placeholders
CASES = {
    # unary math
    "Abs": (lambda x: tf.abs(x), [_pos(3) * np.array([1, -1, 1])]),
    "Neg": (lambda x: -x, [_r(3)]),
    "Square": (lambda x: tf.square(x), [_r(3)]),
    "Sqrt": (lambda x: tf.sqrt(x), [_pos(3)]),
    "Rsqrt": (lambda x: tf.rsqrt(x), [_pos(3)]),
    "Reciprocal": (lambda x: tf.reciprocal(x), [_pos(3)]),
    "Inv": (lambda x: apply_op("Inv", x=x), [_pos(3)]),
    "Exp": (lambda x: tf.exp(x), [_r(3)]),
    "Expm1": (lambda x: tf.expm1(x), [_r(3)]),
    "Log": (lambda x: tf.log(x), [_pos(3)]),
    "Log1p": (lambda x: tf.log1p(x), [_pos(3)]),
    "Sin": (lambda x: tf.sin(x), [_r(3)]),
    "Cos": (lambda x: tf.cos(x), [_r(3)]),
    "Tan": (lambda x: tf.tan(x), [_r(3)]),
    "Asin": (lambda x: tf.asin(x), [_r(3) * 0.8]),
    "Acos": (lambda x: tf.acos(x), [_r(3) * 0.8]),
    "Atan": (lambda x: tf.atan(x), [_r(3)]),
    "Sinh": (lambda x: tf.sinh(x), [_r(3)]),
    "Cosh": (lambda x: tf.cosh(x), [_r(3)]),
    "Asinh": (lambda x: tf.asinh(x), [_r(3)]),
    "Acosh": (lambda x: tf.acosh(x), [_pos(3) + 1.0]),
    "Atanh": (lambda x: tf.atanh(x), [_r(3) * 0.8]),
    "Tanh": (lambda x: tf.tanh(x), [_r(3)]),
    "Sigmoid": (lambda x: tf.sigmoid(x), [_r(3)]),
    "Erf": (lambda x: tf.erf(x), [_r(3)]),
    "Erfc": (lambda x: apply_op("Erfc", x=x), [_r(3)]),
    "Lgamma": (lambda x: tf.lgamma(x), [_pos(3) + 1.0]),
    "Sign": (lambda x: tf.sign(x) * x, [_pos(3)]),
    "Floor": (lambda x: tf.floor(x) + x, [_pos(3)]),
    "Ceil": (lambda x: tf.ceil(x) + x, [_pos(3)]),
    "Round": (lambda x: tf.round(x) + x, [_pos(3)]),
    "Rint": (lambda x: tf.rint(x) + x, [_pos(3)]),
    "Cast": (lambda x: tf.cast(tf.cast(x, tf.float32), F64), [_r(3)]),
    # binary math
    "Add": (lambda x, y: apply_op("Add", x=x, y=y), [_r(2, 3), _r(3)]),
    "AddV2": (lambda x, y: x + y, [_r(2, 3), _r(2, 1)]),
    "Sub": (lambda x, y: x - y, [_r(2, 3), _r(3)]),
    "Mul": (lambda x, y: x * y, [_r(2, 3), _r(1, 3)]),
    "Div": (lambda x, y: apply_op("Div", x=x, y=y), [_r(2, 3), _pos(3)]),
    "RealDiv": (lambda x, y: tf.realdiv(x, y), [_r(2, 3), _pos(2, 1)]),
    "DivNoNan": (lambda x, y: tf.div_no_nan(x, y), [_r(2, 3), _pos(3)]),
    "Pow": (lambda x, y: tf.pow(x, y), [_pos(2, 3), _r(3)]),
    "Maximum": (lambda x, y: tf.maximum(x, y), [_distinct(2, 3), _distinct(3) + 0.1]),
    "Minimum": (lambda x, y: tf.minimum(x, y), [_distinct(2, 3), _distinct(3) + 0.1]),
    "SquaredDifference": (lambda x, y: tf.squared_difference(x, y), [_r(2, 3), _r(3)]),
    "Atan2": (lambda y, x: tf.atan2(y, x), [_r(3), _pos(3)]),
    "Xlogy": (lambda x, y: tf.math.xlogy(x, y), [_pos(3), _pos(3)]),
    "Xlog1py": (lambda x, y: tf.math.xlog1py(x, y), [_pos(3), _pos(3)]),
    "Xdivy": (lambda x, y: tf.math.xdivy(x, y), [_pos(3), _pos(3)]),
    "FloorMod": (lambda x, y: tf.floormod(x, y), [_pos(3) * 3, _pos(3)]),
    "AddN": (lambda x, y: tf.add_n([x, y, x]), [_r(2, 2), _r(2, 2)]),
    "Select": (lambda x, y: tf.where(tf.constant([True, False, True]), x, y), [_r(3), _r(3)]),
    "SelectV2": (lambda x, y: tf.where_v2(tf.constant([[True], [False]]), x, y),
                 [_r(2, 3), _r(3)]),
    # reductions and scans
    "Sum": (lambda x: tf.reduce_sum(x, axis=1), [_r(2, 3)]),
    "Mean": (lambda x: tf.reduce_mean(x, axis=0), [_r(2, 3)]),
    "Max": (lambda x: tf.reduce_max(x, axis=1), [_distinct(2, 3)]),
    "Min": (lambda x: tf.reduce_min(x, axis=0), [_distinct(2, 3)]),
    "Prod": (lambda x: tf.reduce_prod(x, axis=1), [_r(2, 3)]),
    "Cumsum": (lambda x: tf.cumsum(x, axis=1, reverse=True), [_r(2, 3)]),
    "Cumprod": (lambda x: tf.cumprod(x, axis=1), [_pos(2, 3)]),
    "SegmentSum": (lambda x: tf.math.segment_sum(x, [0, 0, 1]), [_r(3, 2)]),
    "SegmentMean": (lambda x: apply_op("SegmentMean", data=x, segment_ids=[0, 0, 1]),
                    [_r(3, 2)]),
    "SegmentMax": (lambda x: apply_op("SegmentMax", data=x, segment_ids=[0, 0, 1]),
                   [_distinct(3, 2)]),
    "SegmentMin": (lambda x: apply_op("SegmentMin", data=x, segment_ids=[0, 0, 1]),
                   [_distinct(3, 2)]),
    "UnsortedSegmentSum": (lambda x: tf.math.unsorted_segment_sum(x, [1, 0, 1], 2),
                           [_r(3, 2)]),
    "UnsortedSegmentMax": (lambda x: tf.math.unsorted_segment_max(x, [1, 0, 1], 2),
                           [_distinct(3, 2)]),
    "UnsortedSegmentMin": (lambda x: tf.math.unsorted_segment_min(x, [1, 0, 1], 2),
                           [_distinct(3, 2)]),
    "UnsortedSegmentProd": (lambda x: tf.math.unsorted_segment_prod(x, [1, 0, 1], 2),
                            [_pos(3, 2)]),
    # matrix products
    "MatMul": (lambda a, b: tf.matmul(a, b, transpose_b=True), [_r(2, 3), _r(4, 3)]),
    "BatchMatMulV2": (lambda a, b: tf.matmul(a, b), [_r(2, 2, 3), _r(3, 2)]),
    "BatchMatMul": (lambda a, b: apply_op("BatchMatMul", x=a, y=b, adj_y=True),
                    [_r(2, 2, 3), _r(2, 2, 3)]),
    # array
    "Identity": (lambda x: tf.identity(x) * 2.0, [_r(3)]),
    "IdentityN": (lambda x, y: apply_op("IdentityN", input=[x, y])[1] * x, [_r(3), _r(3)]),
    "Snapshot": (lambda x: apply_op("Snapshot", input=x) * 2.0, [_r(3)]),
    "PlaceholderWithDefault": (lambda x: tf.placeholder_with_default(x, [3]) * x, [_r(3)]),
    "CheckNumerics": (lambda x: tf.check_numerics(x, "bad") * x, [_r(3)]),
    "Reshape": (lambda x: tf.reshape(x, [3, 2]) * 2.0, [_r(2, 3)]),
    "ExpandDims": (lambda x: tf.expand_dims(x, 0) * 2.0, [_r(2, 3)]),
    "Squeeze": (lambda x: tf.squeeze(x) * 2.0, [_r(2, 1, 3)]),
    "Transpose": (lambda x: tf.transpose(x, [2, 0, 1]), [_r(2, 3, 2)]),
    "Pack": (lambda x, y: tf.stack([x, y], axis=1), [_r(2, 3), _r(2, 3)]),
    "Unpack": (lambda x: tf.unstack(x, axis=1)[1] * tf.unstack(x, axis=1)[0], [_r(2, 3)]),
    "ConcatV2": (lambda x, y: tf.concat([x, y, x], axis=1), [_r(2, 3), _r(2, 1)]),
    "Slice": (lambda x: tf.slice(x, [0, 1], [2, 2]), [_r(3, 3)]),
    "StridedSlice": (lambda x: x[1:, ::2], [_r(3, 4)]),
    "Split": (lambda x: tf.split(x, 2, axis=1)[1] * 2.0, [_r(2, 4)]),
    "SplitV": (lambda x: tf.split(x, [1, 3], axis=1)[1] * 2.0, [_r(2, 4)]),
    "Tile": (lambda x: tf.tile(x, [2, 3]), [_r(2, 2)]),
    "Pad": (lambda x: tf.pad(x, [[1, 0], [0, 2]]), [_r(2, 2)]),
    "PadV2": (lambda x: tf.pad(x, [[1, 1], [0, 1]], constant_values=3.0), [_r(2, 2)]),
    "MirrorPad": (lambda x: tf.pad(x, [[1, 1], [2, 1]], mode="REFLECT"), [_r(3, 3)]),
    "ReverseV2": (lambda x: tf.reverse(x, [0]), [_r(3, 2)]),
    "Gather": (lambda x: apply_op("Gather", params=x, indices=[2, 0, 2]), [_r(3, 2)]),
    "GatherV2": (lambda x: tf.gather(x, [1, 1, 0], axis=1), [_r(2, 3)]),
    "GatherNd": (lambda x: tf.gather_nd(x, [[0, 1], [1, 0], [0, 1]]), [_r(2, 2)]),
    "ScatterNd": (lambda x: tf.scatter_nd([[1], [0]], x, [3, 2]), [_r(2, 2)]),
    "BroadcastTo": (lambda x: tf.broadcast_to(x, [3, 2]), [_r(1, 2)]),
    "Fill": (lambda x: tf.fill([2, 2], x), [_r()]),
    "ReverseSequence": (lambda x: tf.reverse_sequence(x, [2, 3], seq_axis=1, batch_axis=0),
                        [_r(2, 3)]),
    "SpaceToBatchND": (lambda x: tf.space_to_batch_nd(x, [2, 2], [[0, 0], [0, 0]]),
                       [_r(1, 4, 4, 1)]),
    "BatchToSpaceND": (lambda x: tf.batch_to_space_nd(x, [2, 2], [[0, 0], [0, 0]]),
                       [_r(4, 2, 2, 1)]),
    "SpaceToDepth": (lambda x: tf.space_to_depth(x, 2), [_r(1, 4, 4, 1)]),
    "DepthToSpace": (lambda x: tf.depth_to_space(x, 2), [_r(1, 2, 2, 4)]),
    "MatrixBandPart": (lambda x: apply_op("MatrixBandPart", input=x, num_lower=1, num_upper=0),
                       [_r(3, 3)]),
    "Roll": (lambda x: tf.roll(x, 1, 0), [_r(3, 2)]),
    "TensorScatterUpdate": (lambda x, u: apply_op("TensorScatterUpdate", tensor=x,
                                                  indices=[[1]], updates=u),
                            [_r(3, 2), _r(1, 2)]),
    "TensorScatterAdd": (lambda x, u: apply_op("TensorScatterAdd", tensor=x, indices=[[1]],
                                               updates=u), [_r(3, 2), _r(1, 2)]),
    "ClipByValue": (lambda x, lo: apply_op("ClipByValue", t=x, clip_value_min=lo,
                                           clip_value_max=0.5),
                    [_distinct(2, 3) * 0.2, [[-0.3, 0.1, -0.7], [0.2, -0.1, 0.05]]]),
    "DynamicStitch": (lambda x, y: apply_op("DynamicStitch", indices=[[0, 2], [1]],
                                            data=[x, y]), [_r(2, 2), _r(1, 2)]),
    "DynamicPartition": (lambda x: apply_op("DynamicPartition", data=x, partitions=[1, 0, 1],
                                            num_partitions=2)[1], [_r(3, 2)]),
    # nn
    "Relu": (lambda x: tf.nn.relu(x), [_distinct(2, 3) + 0.05]),
    "Relu6": (lambda x: tf.nn.relu6(x * 4.0), [_distinct(2, 3) + 0.05]),
    "Elu": (lambda x: tf.nn.elu(x), [_distinct(2, 3) + 0.05]),
    "Selu": (lambda x: tf.nn.selu(x), [_distinct(2, 3) + 0.05]),
    "LeakyRelu": (lambda x: tf.nn.leaky_relu(x, 0.3), [_distinct(2, 3) + 0.05]),
    "Softplus": (lambda x: tf.nn.softplus(x), [_r(2, 3)]),
    "Softsign": (lambda x: tf.nn.softsign(x), [_r(2, 3)]),
    "Softmax": (lambda x: tf.nn.softmax(x), [_r(2, 3)]),
    "LogSoftmax": (lambda x: tf.nn.log_softmax(x), [_r(2, 3)]),
    "BiasAdd": (lambda x, b: tf.nn.bias_add(x, b), [_r(2, 3), _r(3)]),
    "BiasAddV1": (lambda x, b: apply_op("BiasAddV1", value=x, bias=b), [_r(2, 3), _r(3)]),
    "L2Loss": (lambda x: tf.nn.l2_loss(x), [_r(2, 3)]),
    "SoftmaxCrossEntropyWithLogits": (
        lambda x, y: tf.nn.softmax_cross_entropy_with_logits_v2(labels=tf.nn.softmax(y),
                                                                 logits=x),
        [_r(2, 3), _r(2, 3)]),
    "SparseSoftmaxCrossEntropyWithLogits": (
        lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0], logits=x),
        [_r(2, 3)]),
    "TopKV2": (lambda x: tf.nn.top_k(x, 2)[0], [_distinct(2, 4)]),
    "Conv2D": (lambda x, f: tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME"),
               [_r(1, 3, 3, 2), _r(2, 2, 2, 2)]),
    "DepthwiseConv2dNative": (lambda x, f: tf.nn.depthwise_conv2d_native(x, f, [1, 1, 1, 1],
                                                                         "VALID"),
                              [_r(1, 3, 3, 2), _r(2, 2, 2, 1)]),
    "Conv3D": (lambda x, f: tf.nn.conv3d(x, f, [1, 1, 1, 1, 1], "VALID"),
               [_r(1, 2, 3, 3, 1), _r(1, 2, 2, 1, 2)]),
    "MaxPool": (lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
                [_distinct(1, 4, 4, 1)]),
    "AvgPool": (lambda x: tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
                [_r(1, 3, 3, 2)]),
    "MaxPool3D": (lambda x: tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID"),
                  [_distinct(1, 2, 4, 4, 1)]),
    "AvgPool3D": (lambda x: tf.nn.avg_pool3d(x, [1, 2, 2, 2, 1], [1, 1, 1, 1, 1], "VALID"),
                  [_r(1, 2, 3, 3, 1)]),
    "LRN": (lambda x: tf.nn.lrn(x, depth_radius=1), [_r(1, 2, 2, 3)]),
    "ResizeBilinear": (lambda x: tf.image.resize_bilinear(x, [3, 5]), [_r(1, 2, 3, 1)]),
    "ResizeNearestNeighbor": (lambda x: tf.image.resize_nearest_neighbor(x, [4, 6]),
                              [_r(1, 2, 3, 1)]),
    # gradients of gradient ops (second order)
    "ReluGrad": (lambda g, x: apply_op("ReluGrad", gradients=g, features=x),
                 [_r(2, 3), _distinct(2, 3) + 0.05]),
    "Relu6Grad": (lambda g, x: apply_op("Relu6Grad", gradients=g, features=x),
                  [_r(2, 3), _distinct(2, 3) + 0.05]),
    "EluGrad": (lambda g, y: apply_op("EluGrad", gradients=g, outputs=y),
                [_r(2, 3), _distinct(2, 3) * 0.1 + 0.05]),
    "SeluGrad": (lambda g, y: apply_op("SeluGrad", gradients=g, outputs=y),
                 [_r(2, 3), _distinct(2, 3) * 0.1 + 0.05]),
    "LeakyReluGrad": (lambda g, x: apply_op("LeakyReluGrad", gradients=g, features=x,
                                            alpha=0.2), [_r(2, 3), _distinct(2, 3) + 0.05]),
    "SoftplusGrad": (lambda g, x: apply_op("SoftplusGrad", gradients=g, features=x),
                     [_r(2, 3), _r(2, 3)]),
    "TanhGrad": (lambda y, dy: apply_op("TanhGrad", y=y, dy=dy), [_r(3), _r(3)]),
    "SigmoidGrad": (lambda y, dy: apply_op("SigmoidGrad", y=y, dy=dy), [_r(3), _r(3)]),
    "SqrtGrad": (lambda y, dy: apply_op("SqrtGrad", y=y, dy=dy), [_pos(3), _r(3)]),
    "RsqrtGrad": (lambda y, dy: apply_op("RsqrtGrad", y=y, dy=dy), [_pos(3), _r(3)]),
    "ReciprocalGrad": (lambda y, dy: apply_op("ReciprocalGrad", y=y, dy=dy), [_r(3), _r(3)]),
    "InvGrad": (lambda y, dy: apply_op("InvGrad", y=y, dy=dy), [_r(3), _r(3)]),
    "BiasAddGrad": (lambda g: apply_op("BiasAddGrad", out_backprop=g), [_r(2, 3)]),
    "StridedSliceGrad": (lambda dy: apply_op("StridedSliceGrad", shape=[3, 4], begin=[1, 0],
                                             end=[3, 4], strides=[1, 2], dy=dy), [_r(2, 2)]),
    "Conv2DBackpropInput": (lambda f, g: apply_op("Conv2DBackpropInput",
                                                  input_sizes=[1, 3, 3, 2], filter=f,
                                                  out_backprop=g, strides=[1, 1, 1, 1],
                                                  padding="SAME"),
                            [_r(2, 2, 2, 2), _r(1, 3, 3, 2)]),
    "Conv2DBackpropFilter": (lambda x, g: apply_op("Conv2DBackpropFilter", input=x,
                                                   filter_sizes=[2, 2, 2, 2], out_backprop=g,
                                                   strides=[1, 1, 1, 1], padding="SAME"),
                             [_r(1, 3, 3, 2), _r(1, 3, 3, 2)]),
    "Concat": (lambda x, y: apply_op("Concat", concat_dim=1, values=[x, y]),
               [_r(2, 3), _r(2, 1)]),
    "TruncateDiv": (lambda x: apply_op("TruncateDiv", x=x, y=x + 1.0) + x, [_pos(3)]),
    "FloorDiv": (lambda x: apply_op("FloorDiv", x=x, y=x + 1.0) + x, [_pos(3)]),
    "AvgPoolGrad": (lambda g: apply_op("AvgPoolGrad", orig_input_shape=[1, 3, 3, 1], grad=g,
                                       ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                                       padding="VALID"), [_r(1, 2, 2, 1)]),
    "AvgPool3DGrad": (lambda g: apply_op("AvgPool3DGrad", orig_input_shape=[1, 2, 3, 3, 1],
                                         grad=g, ksize=[1, 1, 2, 2, 1],
                                         strides=[1, 1, 1, 1, 1], padding="VALID"),
                      [_r(1, 2, 2, 2, 1)]),
    "MaxPoolGrad": (lambda g: _max_pool_grad(g), [_r(1, 2, 2, 1)]),
    "MaxPoolV2": (lambda x: apply_op("MaxPoolV2", input=x, ksize=[1, 2, 2, 1],
                                     strides=[1, 2, 2, 1], padding="VALID"),
                  [_distinct(1, 4, 4, 1)]),
    "MaxPoolWithArgmax": (lambda x: tf.nn.max_pool_with_argmax(
        x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")[0] if hasattr(tf.nn, "max_pool_with_argmax")
        else apply_op("MaxPoolWithArgmax", input=x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1],
                      padding="VALID")[0], [_distinct(1, 4, 4, 1)]),
    "Conv3DBackpropInputV2": (lambda f, g: apply_op(
        "Conv3DBackpropInputV2", input_sizes=[1, 2, 3, 3, 1], filter=f, out_backprop=g,
        strides=[1, 1, 1, 1, 1], padding="SAME"), [_r(1, 2, 2, 1, 2), _r(1, 2, 3, 3, 2)]),
    "Conv3DBackpropFilterV2": (lambda x, g: apply_op(
        "Conv3DBackpropFilterV2", input=x, filter_sizes=[1, 2, 2, 1, 2], out_backprop=g,
        strides=[1, 1, 1, 1, 1], padding="SAME"), [_r(1, 2, 3, 3, 1), _r(1, 2, 3, 3, 2)]),
    "DepthwiseConv2dNativeBackpropInput": (lambda f, g: apply_op(
        "DepthwiseConv2dNativeBackpropInput", input_sizes=[1, 3, 3, 2], filter=f,
        out_backprop=g, strides=[1, 1, 1, 1], padding="SAME"),
        [_r(2, 2, 2, 1), _r(1, 3, 3, 2)]),
    "DepthwiseConv2dNativeBackpropFilter": (lambda x, g: apply_op(
        "DepthwiseConv2dNativeBackpropFilter", input=x, filter_sizes=[2, 2, 2, 1],
        out_backprop=g, strides=[1, 1, 1, 1], padding="SAME"),
        [_r(1, 3, 3, 2), _r(1, 3, 3, 2)]),
    "ResizeBicubic": (lambda x: tf.image.resize_bicubic(x, [3, 5]), [_r(1, 2, 3, 1)]),
    "BatchMatMulV3": (lambda a, b: apply_op("BatchMatMulV3", x=a, y=b, Tout=F64),
                      [_r(2, 2, 3), _r(2, 3, 2)]),
    "EnsureShape": (lambda x: apply_op("EnsureShape", input=x, shape=[2, 3]) * x, [_r(2, 3)]),
    "Print": (lambda x: apply_op("Print", input=x, data=[x], message="") * x, [_r(3)]),
    "MatrixDiag": (lambda x: apply_op("MatrixDiag", diagonal=x), [_r(2, 3)]),
    "MatrixDiagV3": (lambda x: apply_op("MatrixDiagV3", diagonal=x, k=0, num_rows=-1,
                                        num_cols=-1, padding_value=0.0), [_r(2, 3)]),
    "MirrorPadGrad": (lambda g: apply_op("MirrorPadGrad", input=g, paddings=[[1, 1], [0, 1]],
                                         mode="SYMMETRIC"), [_r(4, 3)]),
    "ParallelDynamicStitch": (lambda x, y: apply_op("ParallelDynamicStitch",
                                                    indices=[[0, 2], [1]], data=[x, y]),
                              [_r(2, 2), _r(1, 2)]),
    "ScatterNdNonAliasingAdd": (lambda x, u: apply_op("ScatterNdNonAliasingAdd", input=x,
                                                      indices=[[1]], updates=u),
                                [_r(3, 2), _r(1, 2)]),
    "TensorScatterSub": (lambda x, u: apply_op("TensorScatterSub", tensor=x, indices=[[1]],
                                               updates=u), [_r(3, 2), _r(1, 2)]),
    "SegmentProd": (lambda x: apply_op("SegmentProd", data=x, segment_ids=[0, 0, 1]),
                    [_pos(3, 2)]),
    "SpaceToBatch": (lambda x: apply_op("SpaceToBatch", input=x, paddings=[[0, 0], [0, 0]],
                                        block_size=2), [_r(1, 4, 4, 1)]),
    "BatchToSpace": (lambda x: apply_op("BatchToSpace", input=x, crops=[[0, 0], [0, 0]],
                                        block_size=2), [_r(4, 2, 2, 1)]),
    "Digamma": (lambda x: apply_op("Digamma", x=x), [_pos(3) + 1.0]),
    "SparseSegmentSum": (lambda x: tf.sparse.segment_sum(x, [0, 2, 2], [0, 0, 1])
                         if hasattr(tf.sparse, "segment_sum") else
                         apply_op("SparseSegmentSum", data=x, indices=[0, 2, 2],
                                  segment_ids=[0, 0, 1]), [_r(3, 2)]),
    "SparseSegmentMean": (lambda x: apply_op("SparseSegmentMean", data=x, indices=[0, 2, 1],
                                             segment_ids=[0, 0, 1]), [_r(3, 2)]),
    "SparseSegmentSqrtN": (lambda x: apply_op("SparseSegmentSqrtN", data=x, indices=[0, 2, 1],
                                              segment_ids=[0, 0, 1]), [_r(3, 2)]),
    "SparseSegmentSumWithNumSegments": (lambda x: apply_op(
        "SparseSegmentSumWithNumSegments", data=x, indices=[0, 2], segment_ids=[0, 2],
        num_segments=4), [_r(3, 2)]),
    "MatrixDiagPart": (lambda x: apply_op("MatrixDiagPart", input=x), [_r(2, 3, 3)]),
    "MatrixDiagPartV3": (lambda x: tf.linalg.diag_part(x), [_r(2, 3, 4)]),
    "MatrixSetDiag": (lambda x, d: apply_op("MatrixSetDiag", input=x, diagonal=d),
                      [_r(2, 3, 3), _r(2, 3)]),
    "MatrixSetDiagV3": (lambda x, d: tf.linalg.set_diag(x, d), [_r(2, 3, 3), _r(2, 3)]),
    "TensorScatterMax": (lambda x, u: apply_op("TensorScatterMax", tensor=x, indices=[[1]],
                                               updates=u), [_distinct(3, 2), _distinct(1, 2)]),
    "TensorScatterMin": (lambda x, u: apply_op("TensorScatterMin", tensor=x, indices=[[1]],
                                               updates=u), [_distinct(3, 2), _distinct(1, 2)]),
    "Einsum": (lambda a, b: tf.einsum("ij,jk->ik", a, b) + tf.einsum("ij,kj->i", a, b)[:, None]
               * 0.0 + tf.einsum("ij->j", a)[None, :1], [_r(2, 3), _r(3, 3)]),
    "ScaleAndTranslate": (lambda x: apply_op("ScaleAndTranslate", images=x, size=[3, 5],
                                             scale=[1.5, 1.7], translation=[0.1, -0.2]),
                          [_r(1, 2, 3, 1)]),
    "CropAndResize": (lambda im, bx: tf.image.crop_and_resize(im, bx, [0, 1], [3, 3]),
                      [_r(2, 4, 5, 1), [[0.13, 0.21, 0.77, 0.86], [0.05, 0.11, 0.62, 0.93]]]),
    # sparse
    "SparseTensorDenseMatMul": (lambda v, b: apply_op(
        "SparseTensorDenseMatMul", a_indices=tf.constant([[0, 1], [2, 3], [1, 0]], tf.int64),
        a_values=v, a_shape=tf.constant([3, 4], tf.int64), b=b), [_r(3), _r(4, 2)]),
    "SparseToDense": (lambda v, d: apply_op("SparseToDense",
                                            sparse_indices=tf.constant([[0, 1], [2, 0]]),
                                            output_shape=[3, 2], sparse_values=v,
                                            default_value=d), [_r(2), _r()]),
    "SparseReduceSum": (lambda v: apply_op("SparseReduceSum",
                                           input_indices=tf.constant([[0, 1], [2, 3], [1, 0]],
                                                                     tf.int64),
                                           input_values=v,
                                           input_shape=tf.constant([3, 4], tf.int64),
                                           reduction_axes=[1]), [_r(3)]),
    "SparseReorder": (lambda v: apply_op("SparseReorder",
                                         input_indices=tf.constant([[2, 0], [0, 1], [1, 1]],
                                                                   tf.int64),
                                         input_values=v,
                                         input_shape=tf.constant([3, 2], tf.int64))[1] * v,
                      [_r(3)]),
    "SparseAdd": (lambda a, b: apply_op(
        "SparseAdd", a_indices=tf.constant([[0, 0], [1, 2], [2, 1]], tf.int64), a_values=a,
        a_shape=tf.constant([3, 4], tf.int64),
        b_indices=tf.constant([[0, 0], [1, 1], [2, 3]], tf.int64), b_values=b,
        b_shape=tf.constant([3, 4], tf.int64), thresh=0.0)[1] * 2.0, [_r(3), _r(3)]),
    "SparseSlice": (lambda v: apply_op(
        "SparseSlice", indices=tf.constant([[0, 0], [1, 2], [2, 1], [2, 3]], tf.int64),
        values=v, shape=tf.constant([3, 4], tf.int64), start=tf.constant([1, 1], tf.int64),
        size=tf.constant([2, 2], tf.int64))[1] * 3.0, [_r(4)]),
    "SparseFillEmptyRows": (lambda v, d: apply_op(
        "SparseFillEmptyRows", indices=tf.constant([[3, 1], [0, 2], [3, 0]], tf.int64),
        values=v, dense_shape=tf.constant([5, 3], tf.int64), default_value=d)[1] ** 2,
                            [_r(3), _r()]),
    # linalg
    "Qr": (lambda x: _qr_flat(x), [_r(4, 3)]),
    # tensor lists
    "TensorListFromTensor": (lambda x: _list_stack(_list_of(x)) * 2.0, [_r(3, 2)]),
    "TensorListStack": (lambda x: _list_stack(_list_of(x * x)), [_r(3, 2)]),
    "TensorListGetItem": (lambda x: apply_op("TensorListGetItem", input_handle=_list_of(x),
                                             index=1, element_shape=[2], element_dtype=F64),
                          [_r(3, 2)]),
    "TensorListGather": (lambda x: apply_op("TensorListGather", input_handle=_list_of(x),
                                            indices=[2, 0], element_shape=[2],
                                            element_dtype=F64), [_r(3, 2)]),
    "TensorListSetItem": (lambda x: _list_stack(apply_op(
        "TensorListSetItem", input_handle=_list_of(x), index=0, item=x[2] * 3.0)), [_r(3, 2)]),
    "TensorListPushBack": (lambda x: apply_op(
        "TensorListPopBack", input_handle=apply_op("TensorListPushBack",
                                                   input_handle=_list_of(x),
                                                   tensor=x[0] * 3.0),
        element_shape=[2], element_dtype=F64)[1], [_r(3, 2)]),
    # control flow
    "Switch": (lambda x: tf.cond(tf.constant(True), lambda: x * x, lambda: x), [_r(3)]),
    "Merge": (lambda x: tf.cond(tf.constant(False), lambda: x * x, lambda: tf.sin(x)),
              [_r(3)]),
    "Enter": (lambda x: tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * x),
                                      [tf.constant(0), x])[1], [_pos(2)]),
    "Exit": (lambda x: tf.while_loop(lambda i, v: i < 2, lambda i, v: (i + 1, tf.sin(v)),
                                     [tf.constant(0), x])[1], [_r(2)]),
}

# Ops whose kernels are float32 (and half) only: checked in float32, more loosely.
FLOAT32 = {"LRN", "MaxPool3D", "AvgPool3D", "AvgPool3DGrad", "ScaleAndTranslate",
           "CropAndResize"}

# gradient functions of these ops run in the cases above (beyond each case's own op).
COVERED = set(CASES) | {"NextIteration", "LoopCond", "FusedBatchNormV3", "TensorArrayReadV3",
                        "TensorArrayWriteV3", "TensorArrayScatterV3", "TensorArrayGatherV3",
                        "TensorArraySplitV3", "TensorArrayConcatV3"}


def _check(fn, values, dtype=F64, tolerance=1e-4):
    values = [np.asarray(v, dtype.as_numpy_dtype) for v in values]
    with tf.Graph().as_default():
        xs = [tf.placeholder(dtype, np.shape(v)) for v in values]
        y = fn(*xs)
        feeds = dict(zip(xs, values, strict=True))  # the other inputs' values
        with tf.Session() as sess:
            y_shape = list(np.shape(sess.run(y, feeds)))
            err = tf.test.compute_gradient_error(
                xs, [list(np.shape(v)) for v in values], y, y_shape,
                x_init_value=values, extra_feed_dict=feeds)
    assert err < tolerance, err


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_numeric(name):
    fn, values = CASES[name]
    if name in FLOAT32:
        _check(fn, values, tf.float32, tolerance=2e-2)
    else:
        _check(fn, values)


def test_fused_batch_norm_training_and_inference():
    def train(x, scale, offset):
        return tf.nn.fused_batch_norm(x, scale, offset, is_training=True)[0]

    def infer(x, scale, offset):
        return tf.nn.fused_batch_norm(x, scale, offset, mean=[0.1, -0.2], variance=[1.5, 0.5],
                                      is_training=False)[0]

    values = [_r(2, 2, 2, 2).astype(np.float32), _pos(2).astype(np.float32),
              _r(2).astype(np.float32)]
    _check(train, values, tf.float32, tolerance=2e-2)
    _check(infer, values, tf.float32, tolerance=2e-2)


def test_tensor_array_in_loop():
    def fn(x):
        ta = tf.TensorArray(F64, size=3).unstack(x)
        out = tf.TensorArray(F64, size=3)
        _, out = tf.while_loop(lambda i, o: i < 3,
                               lambda i, o: (i + 1, o.write(i, tf.sin(ta.read(i)) * 2.0)),
                               [tf.constant(0), out])
        return out.stack()

    _check(fn, [_r(3, 2)])


def test_tensor_array_scatter_gather_split_concat():
    def fn(x):
        ta = tf.TensorArray(F64, size=3).scatter([2, 0, 1], x)
        gathered = ta.gather([1, 2])
        pieces = tf.TensorArray(F64, size=2).split(tf.reshape(x, [6]), [3, 3])
        return gathered * 2.0 + tf.reshape(pieces.concat()[:4], [2, 2])

    _check(fn, [_r(3, 2)])


def test_cases_cover_the_gradient_functions():
    with tf.Graph().as_default() as g:
        for fn, values in CASES.values():
            dtype = tf.float32 if any(n in FLOAT32 for n in CASES if CASES[n][0] is fn) \
                else F64
            fn(*[tf.placeholder(dtype, np.shape(v)) for v in values])
        present = {op.type for op in g.get_operations()}
    missing = sorted(t for t in COVERED if t not in present and t != "FusedBatchNormV3"
                     and not t.startswith("TensorArray"))
    assert not missing
    assert all(get_gradient_function(op) is not None for op in g.get_operations()
               if op.type in CASES and op.inputs)
    assert len(COVERED) >= 215


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (2, 3, 3)])
def test_qr_square_wide_and_batched(shape):
    _check(_qr_flat, [_r(*shape)])


def _gamma_cdf(a: float, x: float) -> float:
    """P(a, x) by Simpson's rule on the density (independent of the kernel's series)."""
    t = np.linspace(0.0, x, 40001)[1:]
    log_density = (a - 1.0) * np.log(t) - t - math.lgamma(a)
    f = np.concatenate([[0.0], np.exp(log_density)])
    h = x / 40000
    return float(h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum()))


def test_random_gamma_grad_is_the_implicit_derivative_of_the_cdf():
    """RandomGamma's gradient is d sample / d alpha with the CDF held fixed (TF's implicit
    reparameterization), not the sampler's own path derivative, so it is checked against
    central differences of the CDF: -(dP/dalpha) / density."""
    alpha = np.array([1.5, 3.0, 7.0])
    sample = np.array([0.8, 3.5, 5.0])
    with tf.Graph().as_default(), tf.Session() as sess:
        got = sess.run(apply_op("RandomGammaGrad", alpha=tf.constant(alpha),
                                sample=tf.constant(sample)))
    h = 1e-4
    for a, x, g in zip(alpha, sample, got, strict=True):
        dp = (_gamma_cdf(a + h, x) - _gamma_cdf(a - h, x)) / (2 * h)
        density = math.exp((a - 1.0) * math.log(x) - x - math.lgamma(a))
        assert g == pytest.approx(-dp / density, rel=1e-5)


def test_random_gamma_gradient_sums_over_the_sample_dimensions():
    """d/dalpha of sum(samples * w) is sum over the sample dimensions of w * RandomGammaGrad
    (the gradient function's graph, run against the kernel's value directly)."""
    with tf.Graph().as_default(), tf.Session() as sess:
        alpha = tf.constant([0.5, 2.0, 9.0], F64)
        sample = tf.random.gamma([4, 2], alpha, dtype=F64, seed=3)
        w_value = _r(4, 2, 3)
        w = tf.constant(w_value)
        (grad,) = tf.gradients(tf.reduce_sum(sample * w), [alpha])
        s_value, g_value = sess.run([sample, grad])
        partial = sess.run(apply_op("RandomGammaGrad", alpha=alpha,
                                    sample=tf.constant(s_value)))
    np.testing.assert_allclose(g_value, (partial * w_value).sum(axis=(0, 1)), rtol=1e-10)


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_partitioned_embedding_lookup(strategy):
    ids = np.array([[0, 6, 2], [5, 3, 3]], np.int32)

    def fn(p0, p1, p2):
        return tf.nn.embedding_lookup([p0, p1, p2], ids, partition_strategy=strategy) * 2.0

    _check(fn, [_r(3, 2), _r(2, 2), _r(2, 2)])


def test_partitioned_embedding_lookup_gradients_are_indexed_slices():
    """Each params tensor's gradient is IndexedSlices of its own rows (TF's)."""
    with tf.Graph().as_default():
        params = [tf.placeholder(F64, [3, 2]), tf.placeholder(F64, [2, 2])]
        out = tf.nn.embedding_lookup(params, [4, 1, 0], partition_strategy="div")
        grads = tf.gradients(out, params)
        assert all(isinstance(g, tf.IndexedSlices) for g in grads)
        with tf.Session() as sess:
            g0, g1 = sess.run([(g.values, g.indices) for g in grads],
                              {params[0]: _r(3, 2), params[1]: _r(2, 2)})
    assert g0[1].tolist() == [1, 0] and g1[1].tolist() == [1]
    np.testing.assert_array_equal(g0[0], np.ones((2, 2)))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_fused_batch_norm_second_order(training, data_format):
    """The gradient of FusedBatchNormGradV3 (x -> d sum(y^3)/dx) against central
    differences, in training and inference, both layouts."""
    shape = (2, 2, 2, 3) if data_format == "NHWC" else (2, 3, 2, 2)

    def first_order(x, scale):
        mean = None if training else [0.1, -0.2, 0.3]
        variance = None if training else [1.5, 0.5, 0.8]
        y, _, _ = tf.nn.fused_batch_norm(x, scale, tf.zeros([3]), mean=mean,
                                         variance=variance, is_training=training,
                                         data_format=data_format)
        return tf.gradients(tf.reduce_sum(y * y * y), [x, scale])[0]

    _check(first_order, [_r(*shape).astype(np.float32), _pos(3).astype(np.float32)],
           tf.float32, tolerance=2e-2)


_FORWARD = Path(__file__).resolve().parent / "data" / "gradients_tf"


def _check_imported(name: str, outputs: list[str], feeds: dict, tolerance=1e-3):
    """The gradients of the imported TF forward graph `name` with respect to x and w
    against central differences (float32 graphs: a looser tolerance)."""
    graph_def = tf.GraphDef()
    graph_def.ParseFromString((_FORWARD / f"{name}.pb").read_bytes())
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        x, w = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("w:0")
        values = {x: _r(3).astype(np.float32), w: _r(3).astype(np.float32)}
        extra = {g.get_tensor_by_name(k): v for k, v in feeds.items()}
        with tf.Session():
            for out in outputs:
                y = g.get_tensor_by_name(out)
                err = tf.test.compute_gradient_error(
                    [x, w], [[3], [3]], y, [3], x_init_value=[values[x], values[w]],
                    extra_feed_dict={**values, **extra}, delta=1e-3)
                assert err < tolerance, (out, err)


def test_function_call_gradients_numeric():
    """SymbolicGradient of a PartitionedCall (calling another) and of a Defun call."""
    _check_imported("forward_function_calls", ["y:0", "z:0", "v:0"], {})


@pytest.mark.parametrize("p", [True, False])
def test_functional_if_gradient_numeric(p):
    _check_imported("forward_functional_control_flow", ["cond_y:0"], {"p:0": p})


def test_functional_while_gradient_numeric():
    _check_imported("forward_functional_control_flow", ["while_v:0", "while_u:0"], {})


def test_function_with_if_and_while_inside_gradient_numeric():
    """SymbolicGradient of a tf.function whose body holds an If and a While: the gradient
    function built from the body takes their gradients too."""
    _check_imported("forward_functional_control_flow", ["nested_y:0"], {})


@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize(("output", "wrt"), [
    ("unknown_shape_y", "x"), ("cond_in_while_y", "w"), ("while_in_cond_y", "w"),
    ("two_outputs_y1", "w"), ("two_outputs_y2", "w"), ("max_iterations_y", "w"),
    ("case_y", "w"), ("gather_y", "w"), ("while_gather_loop_var_y", "w"),
    ("while_in_while_y", "w")])
def test_nested_functional_control_flow_gradient_numeric(output, wrt, p):
    """TF's cond_v2 / while_v2 gradients (forward ops rewritten to output optionals and
    accumulators) of a loop of unknown shape, a cond in a loop, a loop in a cond, a cond
    with a constant output, a loop cut by maximum_iterations, a Case, gathers (IndexedSlices
    gradients), a loop in a loop, against central
    differences with respect to the one input the output depends on."""
    graph_def = tf.GraphDef()
    graph_def.ParseFromString((_FORWARD / "forward_functional_nested.pb").read_bytes())
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        x, w = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("w:0")
        values = {x: _r(3).astype(np.float32), w: _r(3).astype(np.float32)}
        feeds = {**values, g.get_tensor_by_name("p:0"): p,
                 g.get_tensor_by_name("k:0"): np.int32(1 if p else 2)}
        wrt = {"x": x, "w": w}[wrt]
        with tf.Session():
            y = g.get_tensor_by_name(f"{output}:0")
            err = tf.test.compute_gradient_error(
                wrt, [3], y, [2] if output == "gather_y" else [3],
                x_init_value=values[wrt], extra_feed_dict=feeds, delta=1e-3)
    assert err < 1e-3, err
