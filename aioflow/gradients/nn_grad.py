"""Gradient functions of the nn ops (TF's nn_grad.py): activations, softmax and the
cross-entropies, BiasAdd, convolutions, pooling, LRN, fused batch norm, L2Loss, TopK.

The convolution, pooling, LRN and batch-norm gradients emit the *Backprop*/*Grad ops whose
OpDefs and kernels live with the nn kernels (framework/op_defs/nn_grad_ops.py).
"""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops, math_ops


def _gen(op_type: str, name: str | None = None, **keywords):
    return apply_op(op_type, name=name, **keywords)


def _attrs(op, *names) -> dict:
    return {n: op.get_attr(n) for n in names}


_CONV2D_ATTRS = ("dilations", "strides", "padding", "explicit_paddings", "use_cudnn_on_gpu",
                 "data_format")
_DEPTHWISE_ATTRS = ("dilations", "strides", "padding", "explicit_paddings", "data_format")
_CONV3D_ATTRS = ("dilations", "strides", "padding", "data_format")


# -- convolutions -----------------------------------------------------------------------------

@RegisterGradient("Conv2D")
def _conv2d_grad(op, grad):
    attrs = _attrs(op, *_CONV2D_ATTRS)
    shape_0, shape_1 = array_ops.shape_n([op.inputs[0], op.inputs[1]])
    return [_gen("Conv2DBackpropInput", input_sizes=shape_0, filter=op.inputs[1],
                 out_backprop=grad, **attrs),
            _gen("Conv2DBackpropFilter", input=op.inputs[0], filter_sizes=shape_1,
                 out_backprop=grad, **attrs)]


@RegisterGradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    attrs = _attrs(op, *_CONV2D_ATTRS)
    return [None,
            _gen("Conv2DBackpropFilter", input=grad, filter_sizes=array_ops.shape(op.inputs[1]),
                 out_backprop=op.inputs[2], **attrs),
            _gen("Conv2D", input=grad, filter=op.inputs[1], **attrs)]


@RegisterGradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op, grad):
    attrs = _attrs(op, *_CONV2D_ATTRS)
    return [_gen("Conv2DBackpropInput", input_sizes=array_ops.shape(op.inputs[0]), filter=grad,
                 out_backprop=op.inputs[2], **attrs),
            None,
            _gen("Conv2D", input=op.inputs[0], filter=grad, **attrs)]


@RegisterGradient("DepthwiseConv2dNative")
def _depthwise_conv2d_native_grad(op, grad):
    attrs = _attrs(op, *_DEPTHWISE_ATTRS)
    return [_gen("DepthwiseConv2dNativeBackpropInput",
                 input_sizes=array_ops.shape(op.inputs[0]), filter=op.inputs[1],
                 out_backprop=grad, **attrs),
            _gen("DepthwiseConv2dNativeBackpropFilter", input=op.inputs[0],
                 filter_sizes=array_ops.shape(op.inputs[1]), out_backprop=grad, **attrs)]


@RegisterGradient("Conv3D")
def _conv3d_grad(op, grad):
    attrs = _attrs(op, *_CONV3D_ATTRS)
    shape_0, shape_1 = array_ops.shape_n([op.inputs[0], op.inputs[1]])
    return [_gen("Conv3DBackpropInputV2", input_sizes=shape_0, filter=op.inputs[1],
                 out_backprop=grad, **attrs),
            _gen("Conv3DBackpropFilterV2", input=op.inputs[0], filter_sizes=shape_1,
                 out_backprop=grad, **attrs)]


# -- pooling ----------------------------------------------------------------------------------

@RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    return _gen("AvgPoolGrad",
                orig_input_shape=array_ops.shape(op.inputs[0], out_type=dtypes.int32),
                grad=grad, **_attrs(op, "ksize", "strides", "padding", "data_format"))


@RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    return _gen("MaxPoolGrad", orig_input=op.inputs[0], orig_output=op.outputs[0], grad=grad,
                **_attrs(op, "ksize", "strides", "padding", "explicit_paddings",
                         "data_format"))


@RegisterGradient("MaxPoolV2")
def _max_pool_v2_grad(op, grad):
    return _gen("MaxPoolGradV2", orig_input=op.inputs[0], orig_output=op.outputs[0],
                grad=grad, ksize=op.inputs[1], strides=op.inputs[2],
                **_attrs(op, "padding", "data_format")), None, None


@RegisterGradient("MaxPoolGrad")
def _max_pool_grad_grad(op, grad):
    return (array_ops.zeros_like(op.inputs[0]), array_ops.zeros_like(op.inputs[1]),
            _gen("MaxPoolGradGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                 grad=grad, **_attrs(op, "ksize", "strides", "padding", "data_format")))


@RegisterGradient("AvgPool3D")
def _avg_pool3d_grad(op, grad):
    return _gen("AvgPool3DGrad", orig_input_shape=array_ops.shape(op.inputs[0]), grad=grad,
                **_attrs(op, "ksize", "strides", "padding", "data_format"))


@RegisterGradient("MaxPool3D")
def _max_pool3d_grad(op, grad):
    return _gen("MaxPool3DGrad", orig_input=op.inputs[0], orig_output=op.outputs[0],
                grad=grad, **_attrs(op, "ksize", "strides", "padding", "data_format"))


# -- softmax, cross-entropies, activations ------------------------------------------------------

@RegisterGradient("Softmax")
def _softmax_grad(op, grad_softmax):
    softmax = op.outputs[0]
    sum_channels = math_ops.reduce_sum(grad_softmax * softmax, -1, keepdims=True)
    return (grad_softmax - sum_channels) * softmax


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    softmax = math_ops.exp(op.outputs[0])
    return grad - math_ops.reduce_sum(grad, -1, keepdims=True) * softmax


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, received_grad):
    data_format = op.get_attr("data_format")
    return received_grad, _gen("BiasAddGrad", out_backprop=received_grad,
                               data_format=data_format)


@RegisterGradient("BiasAddGrad")
def _bias_add_grad_grad(op, received_grad):
    data_format = op.get_attr("data_format")
    shape = array_ops.shape(op.inputs[0])
    bias_shape = array_ops.shape(received_grad)
    if data_format in (b"NCHW", "NCHW"):
        expanded_shape = array_ops.concat(
            [array_ops.ones_like(shape[:1]), bias_shape, array_ops.ones_like(shape[2:])], 0)
        tile_mults = array_ops.concat([shape[:1], [1], shape[2:]], 0)
    else:
        expanded_shape = array_ops.concat([array_ops.ones_like(shape[:-1]), bias_shape], 0)
        tile_mults = array_ops.concat([shape[:-1], [1]], 0)
    expanded_grad = array_ops.reshape(received_grad, expanded_shape)
    return array_ops.tile(expanded_grad, tile_mults)


@RegisterGradient("BiasAddV1")
def _bias_add_v1_grad(unused_op, received_grad):
    reduction_dim_tensor = math_ops.range(array_ops.rank(received_grad) - 1)
    return received_grad, math_ops.reduce_sum(received_grad, reduction_dim_tensor)


@RegisterGradient("Relu")
def _relu_grad(op, grad):
    return _gen("ReluGrad", gradients=grad, features=op.outputs[0])


@RegisterGradient("ReluGrad")
def _relu_grad_grad(op, grad):
    x = op.inputs[1]
    return _gen("ReluGrad", gradients=grad, features=x), array_ops.zeros_like(x)


@RegisterGradient("Relu6")
def _relu6_grad(op, grad):
    return _gen("Relu6Grad", gradients=grad, features=op.outputs[0])


@RegisterGradient("Relu6Grad")
def _relu6_grad_grad(op, grad):
    x = op.inputs[1]
    return _gen("Relu6Grad", gradients=grad, features=x), array_ops.zeros_like(x)


@RegisterGradient("LeakyRelu")
def _leaky_relu_grad(op, grad):
    return _gen("LeakyReluGrad", gradients=grad, features=op.inputs[0],
                alpha=op.get_attr("alpha"))


@RegisterGradient("LeakyReluGrad")
def _leaky_relu_grad_grad(op, grad):
    x = op.inputs[1]
    return (_gen("LeakyReluGrad", gradients=grad, features=x, alpha=op.get_attr("alpha")),
            array_ops.zeros_like(x))


@RegisterGradient("Elu")
def _elu_grad(op, grad):
    return _gen("EluGrad", gradients=grad, outputs=op.outputs[0])


@RegisterGradient("EluGrad")
def _elu_grad_grad(op, grad):
    elu_x = op.inputs[1]
    return (_gen("EluGrad", gradients=grad, outputs=elu_x),
            array_ops.where(elu_x < 0, grad * op.inputs[0], array_ops.zeros_like(elu_x)))


@RegisterGradient("Selu")
def _selu_grad(op, grad):
    return _gen("SeluGrad", gradients=grad, outputs=op.outputs[0])


@RegisterGradient("SeluGrad")
def _selu_grad_grad(op, grad):
    selu_x = op.inputs[1]
    return (_gen("SeluGrad", gradients=grad, outputs=selu_x),
            array_ops.where(selu_x < 0.0, grad * op.inputs[0], array_ops.zeros_like(selu_x)))


@RegisterGradient("Softplus")
def _softplus_grad(op, grad):
    return grad * math_ops.sigmoid(op.inputs[0])


@RegisterGradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    dy, x = op.inputs
    with ops.control_dependencies([grad]):
        ddy = _gen("SoftplusGrad", gradients=grad, features=x)
        d2x = grad * dy / (math_ops.exp(-x) + 2.0 + math_ops.exp(x))
        return ddy, d2x


@RegisterGradient("Softsign")
def _softsign_grad(op, grad):
    return _gen("SoftsignGrad", gradients=grad, features=op.inputs[0])


def _broadcast_mul(vec, mat):
    vec = array_ops.expand_dims(vec, -1)
    return vec * mat


def _add_grad_grad(grad, grad_grad, logits):
    if grad_grad is not None and not getattr(grad_grad, "_is_zeros_tensor", False):
        softmax = _gen("Softmax", logits=logits)
        grad += ((grad_grad - array_ops.squeeze(
            math_ops.matmul(array_ops.expand_dims(grad_grad, 1),
                            array_ops.expand_dims(softmax, 2)), axis=1)) * softmax)
    return grad


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _softmax_cross_entropy_with_logits_grad(op, grad_loss, grad_grad):
    softmax_grad = op.outputs[1]
    grad = _broadcast_mul(grad_loss, softmax_grad)
    logits = op.inputs[0]
    grad = _add_grad_grad(grad, grad_grad, logits)
    return grad, _broadcast_mul(grad_loss, -_gen("LogSoftmax", logits=logits))


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_cross_entropy_with_logits_grad(op, grad_loss, grad_grad):
    softmax_grad = op.outputs[1]
    grad = _broadcast_mul(grad_loss, softmax_grad)
    grad = _add_grad_grad(grad, grad_grad, op.inputs[0])
    return grad, None


# -- normalisation ------------------------------------------------------------------------------

@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    return [_gen("LRNGrad", input_grads=grad, input_image=op.inputs[0],
                 output_image=op.outputs[0],
                 **_attrs(op, "depth_radius", "bias", "alpha", "beta"))]


def _base_fused_batch_norm_grad(op, version, *grad):
    x = op.inputs[0]
    grad_y = grad[0]
    scale = op.inputs[1]
    epsilon = op.get_attr("epsilon")
    data_format = op.get_attr("data_format")
    if isinstance(data_format, str):
        data_format = data_format.encode()
    is_training = op.get_attr("is_training")
    grad_op = ("FusedBatchNormGradV3", "FusedBatchNormGradV2", "FusedBatchNormGrad")[2 - version]
    if is_training:
        args = {"y_backprop": grad_y, "x": x, "scale": scale,
                "reserve_space_1": op.outputs[3], "reserve_space_2": op.outputs[4],
                "epsilon": epsilon, "data_format": data_format, "is_training": is_training}
        if version == 2:
            args["reserve_space_3"] = op.outputs[5]
        dx, dscale, doffset, _, _ = _gen(grad_op, **args)
    else:
        pop_mean = op.inputs[3]
        pop_var = op.inputs[4]
        if data_format == b"NCHW":
            x = array_ops.transpose(x, [0, 2, 3, 1])
            grad_y = array_ops.transpose(grad_y, [0, 2, 3, 1])
        elif data_format == b"NCDHW":
            x = array_ops.transpose(x, [0, 2, 3, 4, 1])
            grad_y = array_ops.transpose(grad_y, [0, 2, 3, 4, 1])
        target = "NHWC" if data_format in (b"NCHW", b"NHWC") else "NDHWC"
        args = {"y_backprop": grad_y, "x": x, "scale": scale, "reserve_space_1": pop_mean,
                "reserve_space_2": pop_var, "epsilon": epsilon, "data_format": target,
                "is_training": is_training}
        if version == 2:
            args["reserve_space_3"] = op.outputs[5]
        dx, dscale, doffset, _, _ = _gen(grad_op, **args)
        if data_format == b"NCHW":
            dx = array_ops.transpose(dx, [0, 3, 1, 2])
        elif data_format == b"NCDHW":
            dx = array_ops.transpose(dx, [0, 4, 1, 2, 3])
    return dx, dscale, doffset, None, None


@RegisterGradient("FusedBatchNorm")
def _fused_batch_norm_grad(op, *grad):
    return _base_fused_batch_norm_grad(op, 0, *grad)


@RegisterGradient("FusedBatchNormV2")
def _fused_batch_norm_v2_grad(op, *grad):
    return _base_fused_batch_norm_grad(op, 1, *grad)


@RegisterGradient("FusedBatchNormV3")
def _fused_batch_norm_v3_grad(op, *grad):
    return _base_fused_batch_norm_grad(op, 2, *grad)


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return op.inputs[0] * grad


def _top_k_grad(op, grad, _):
    in_shape = array_ops.shape(op.inputs[0])
    ind_shape = array_ops.shape(op.outputs[1])
    ind_lastdim = array_ops.gather(math_ops.cast(ind_shape, dtypes.int64),
                                   array_ops.size(ind_shape) - 1)
    ind_2d = array_ops.reshape(op.outputs[1], array_ops.stack([-1, ind_lastdim]))
    in_lastdim = array_ops.gather(math_ops.cast(in_shape, dtypes.int64),
                                  array_ops.size(in_shape) - 1)
    outerdim = array_ops.shape(ind_2d)[0]
    ind = array_ops.reshape(
        ind_2d + math_ops.cast(array_ops.expand_dims(
            math_ops.range(0, math_ops.cast(outerdim, dtypes.int64) * in_lastdim, in_lastdim),
            -1), dtypes.int32), [-1])
    return [array_ops.reshape(
        array_ops.scatter_nd(array_ops.expand_dims(ind, -1), array_ops.reshape(grad, [-1]),
                             [math_ops.reduce_prod(in_shape)]), in_shape),
            array_ops.zeros([], dtype=dtypes.int32)]


RegisterGradient("TopK")(_top_k_grad)
RegisterGradient("TopKV2")(_top_k_grad)


# -- second order and the other backprops ---------------------------------------------------------

@RegisterGradient("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input_grad(op, grad):
    attrs = _attrs(op, *_DEPTHWISE_ATTRS)
    return [None,
            _gen("DepthwiseConv2dNativeBackpropFilter", input=grad,
                 filter_sizes=array_ops.shape(op.inputs[1]), out_backprop=op.inputs[2],
                 **attrs),
            _gen("DepthwiseConv2dNative", input=grad, filter=op.inputs[1], **attrs)]


@RegisterGradient("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_backprop_filter_grad(op, grad):
    attrs = _attrs(op, *_DEPTHWISE_ATTRS)
    return [_gen("DepthwiseConv2dNativeBackpropInput",
                 input_sizes=array_ops.shape(op.inputs[0]), filter=grad,
                 out_backprop=op.inputs[2], **attrs),
            None,
            _gen("DepthwiseConv2dNative", input=op.inputs[0], filter=grad, **attrs)]


@RegisterGradient("Conv3DBackpropInputV2")
def _conv3d_backprop_input_grad(op, grad):
    attrs = _attrs(op, *_CONV3D_ATTRS)
    return [None,
            _gen("Conv3DBackpropFilterV2", input=grad, filter_sizes=array_ops.shape(op.inputs[1]),
                 out_backprop=op.inputs[2], **attrs),
            _gen("Conv3D", input=grad, filter=op.inputs[1], **attrs)]


@RegisterGradient("Conv3DBackpropFilterV2")
def _conv3d_backprop_filter_grad(op, grad):
    attrs = _attrs(op, *_CONV3D_ATTRS)
    return [_gen("Conv3DBackpropInputV2", input_sizes=array_ops.shape(op.inputs[0]),
                 filter=grad, out_backprop=op.inputs[2], **attrs),
            None,
            _gen("Conv3D", input=op.inputs[0], filter=grad, **attrs)]


@RegisterGradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    return (array_ops.stop_gradient(op.inputs[0]),
            _gen("AvgPool", value=grad, **_attrs(op, "ksize", "strides", "padding",
                                                   "data_format")))


@RegisterGradient("MaxPoolGradV2")
def _max_pool_grad_v2_grad(op, grad):
    return (array_ops.zeros_like(op.inputs[0]), array_ops.zeros_like(op.inputs[1]),
            _gen("MaxPoolGradGradV2", orig_input=op.inputs[0], orig_output=op.inputs[1],
                 grad=grad, ksize=op.inputs[3], strides=op.inputs[4],
                 **_attrs(op, "padding", "data_format")),
            None, None)


@RegisterGradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op, grad):
    return (array_ops.zeros_like(op.inputs[0]), array_ops.zeros_like(op.inputs[1]),
            _gen("MaxPoolGrad", orig_input=op.inputs[0], orig_output=op.inputs[1], grad=grad,
                 **_attrs(op, "ksize", "strides", "padding", "data_format")))


@RegisterGradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op, grad, unused_argmax_grad):
    return _gen("MaxPoolGradWithArgmax", input=op.inputs[0], grad=grad, argmax=op.outputs[1],
                **_attrs(op, "ksize", "strides", "padding", "include_batch_in_index"))


@RegisterGradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op, grad):
    return (array_ops.stop_gradient(op.inputs[0]),
            _gen("AvgPool3D", input=grad, **_attrs(op, "ksize", "strides", "padding",
                                                     "data_format")))


@RegisterGradient("MaxPool3DGrad")
def _max_pool3d_grad_grad(op, grad):
    return (array_ops.zeros_like(op.inputs[0]), array_ops.zeros_like(op.inputs[1]),
            _gen("MaxPool3DGradGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                 grad=grad, **_attrs(op, "ksize", "strides", "padding", "data_format")))


@RegisterGradient("MaxPool3DGradGrad")
def _max_pool3d_grad_grad_grad(op, grad):
    return (array_ops.zeros_like(op.inputs[0]), array_ops.zeros_like(op.inputs[1]),
            _gen("MaxPool3DGrad", orig_input=op.inputs[0], orig_output=op.inputs[1],
                 grad=grad, **_attrs(op, "ksize", "strides", "padding", "data_format")))
