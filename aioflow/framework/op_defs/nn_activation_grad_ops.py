"""OpDefs of the activation gradients, BiasAddGrad and the softmax cross-entropies
(tensorflow/core/ops/nn_ops.cc)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_REAL_NO_QUANT = ("{float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
                  "uint32, uint64}")


def _merged_inputs(op) -> list:
    return [op.inputs[0].shape.merge_with(op.inputs[1].shape)]


for _name in ("ReluGrad", "Relu6Grad"):
    (register_op(_name).input("gradients: T").input("features: T").output("backprops: T")
        .attr(f"T: {_REAL_NO_QUANT}").set_shape_fn(_merged_inputs))
for _name in ("EluGrad", "SeluGrad"):
    (register_op(_name).input("gradients: T").input("outputs: T").output("backprops: T")
        .attr("T: floatingtype").set_shape_fn(_merged_inputs))
(register_op("LeakyReluGrad").input("gradients: T").input("features: T")
    .output("backprops: T").attr("alpha: float = 0.2").attr("T: floatingtype = DT_FLOAT")
    .set_shape_fn(_merged_inputs))
for _name in ("SoftplusGrad", "SoftsignGrad"):
    (register_op(_name).input("gradients: T").input("features: T").output("backprops: T")
        .attr("T: floatingtype").set_shape_fn(_merged_inputs))


def _bias_add_grad_shape(op) -> list:
    shape = op.inputs[0].shape
    if shape.rank is None:
        return [TensorShape([None])]
    fmt = op.get_attr("data_format")
    fmt = fmt.decode() if isinstance(fmt, bytes) else fmt
    if shape.rank < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {shape.rank} for "
                         f"'{op.name}' (op: 'BiasAddGrad')")
    dim = shape.dims[1] if fmt == "NCHW" and shape.rank > 2 else shape.dims[-1]
    return [TensorShape([dim])]


(register_op("BiasAddGrad").input("out_backprop: T").output("output: T")
    .attr("T: numbertype").attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .set_shape_fn(_bias_add_grad_shape))


def _xent_shape(op) -> list:
    features = op.inputs[0].shape
    labels = op.inputs[1].shape
    if op.type == "SoftmaxCrossEntropyWithLogits":
        if features.rank is not None and labels.rank is not None and features.rank == 2 \
                and labels.rank == 2:
            both = cs.broadcast_shapes(features, labels)
        else:
            both = features if features.rank is not None else labels
        if both.rank is not None and both.rank != 2:  # TF: broadcast, then rank 2
            if features.rank is not None and labels.rank is not None:
                both = cs.broadcast_shapes(features, labels)
            if both.rank is not None and both.rank != 2:
                raise ValueError(f"Shape must be broadcasted with rank 2, but is rank "
                                 f"{both.rank}")
    else:
        both = features.with_rank(2) if features.rank is not None else features
        if labels.rank is not None and features.rank is not None:
            both = features.merge_with(labels.concatenate([None]))
    if both.rank is None:
        return [TensorShape([None]), TensorShape([None, None])]
    return [TensorShape([both.dims[0]]), both]


(register_op("SoftmaxCrossEntropyWithLogits").input("features: T").input("labels: T")
    .output("loss: T").output("backprop: T").attr("T: floatingtype")
    .set_shape_fn(_xent_shape))
(register_op("SparseSoftmaxCrossEntropyWithLogits").input("features: T")
    .input("labels: Tlabels").output("loss: T").output("backprop: T").attr("T: floatingtype")
    .attr("Tlabels: {int32, int64} = DT_INT64").set_shape_fn(_xent_shape))
