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
    """TF's shape function: [batch] and [batch, classes] from rank-2 features and labels
    that merge; else their broadcast, which must have rank 2."""
    features, labels = op.inputs[0].shape, op.inputs[1].shape
    if features.rank in (None, 2):
        try:
            both = features.with_rank(2).merge_with(labels)
        except ValueError:
            pass
        else:
            return [TensorShape([both.dims[0]]), both]
    both = cs.broadcast_shapes(features, labels)
    if both.rank is None:
        raise ValueError(f"Shape must be broadcasted with rank 2, but is rank is unknown. "
                         f"for '{op.name}' (op: '{op.type}')")
    if both.rank != 2:
        raise ValueError(f"Shape must be broadcasted with rank 2, but is rank {both.rank} "
                         f"for '{op.name}' (op: '{op.type}')")
    return [TensorShape([both.dims[0]]), both]


def _sparse_xent_shape(op) -> list:
    """TF's shape function: features [batch, classes], labels [batch]."""
    features, labels = op.inputs[0].shape, op.inputs[1].shape
    for shape, rank in ((features, 2), (labels, 1)):
        if shape.rank not in (None, rank):
            raise ValueError(f"Shape must be rank {rank} but is rank {shape.rank} for "
                             f"'{op.name}' (op: '{op.type}')")
    (batch, classes), (label_batch,) = (features.with_rank(2).as_list(),
                                        labels.with_rank(1).as_list())
    if batch is not None and label_batch is not None and batch != label_batch:
        raise ValueError(f"Dimensions must be equal, but are {batch} and {label_batch} for "
                         f"'{op.name}' (op: '{op.type}') with input shapes: "
                         f"{features.as_list()}, {labels.as_list()}.")
    batch = batch if batch is not None else label_batch
    return [TensorShape([batch]), TensorShape([batch, classes])]


(register_op("SoftmaxCrossEntropyWithLogits").input("features: T").input("labels: T")
    .output("loss: T").output("backprop: T").attr("T: floatingtype")
    .set_shape_fn(_xent_shape))
(register_op("SparseSoftmaxCrossEntropyWithLogits").input("features: T")
    .input("labels: Tlabels").output("loss: T").output("backprop: T").attr("T: floatingtype")
    .attr("Tlabels: {int32, int64} = DT_INT64").set_shape_fn(_sparse_xent_shape))
