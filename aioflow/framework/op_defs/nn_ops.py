"""OpDefs of TF's nn ops (tensorflow/core/ops/nn_ops.cc): activations, softmax, BiasAdd."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op


def _activation(name: str, types: str):
    """features: T -> activations: T, same shape."""
    return (register_op(name).input("features: T").output("activations: T")
            .attr(f"T: {types}").set_shape_fn(cs.unchanged_shape))


_activation("Relu", "{realnumbertype, qint8}")
_activation("Relu6", "realnumbertype")
for _name in ("Elu", "Selu", "Softplus", "Softsign"):
    _activation(_name, "floatingtype")
(register_op("LeakyRelu").input("features: T").output("activations: T")
    .attr("alpha: float = 0.2").attr("T: floatingtype = DT_FLOAT")
    .set_shape_fn(cs.unchanged_shape))
(register_op("Softmax").input("logits: T").output("softmax: T").attr("T: floatingtype")
    .set_shape_fn(cs.unchanged_shape))
(register_op("LogSoftmax").input("logits: T").output("logsoftmax: T").attr("T: floatingtype")
    .set_shape_fn(cs.unchanged_shape))
(register_op("BiasAdd").input("value: T").input("bias: T").output("output: T")
    .attr("T: numbertype").attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'")
    .set_shape_fn(cs.unchanged_shape))
