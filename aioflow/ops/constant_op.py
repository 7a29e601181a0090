"""af.constant: a Const op holding a TensorProto built from a Python or NumPy value."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape, tensor_util
from aioflow.proto import attr_value_pb2


def constant(value, dtype=None, shape=None, name: str = "Const") -> ops.Tensor:
    """A Const tensor of `value` (broadcast to `shape` when given), as tf.constant."""
    graph = ops.get_default_graph()
    proto = tensor_util.make_tensor_proto(value, dtype=dtype, shape=shape, allow_broadcast=True)
    dtype_value = attr_value_pb2.AttrValue(type=proto.dtype)
    tensor_value = attr_value_pb2.AttrValue()
    tensor_value.tensor.CopyFrom(proto)
    op = graph.create_op("Const", [], [dtypes.as_dtype(proto.dtype)], name=name,
                         attrs={"value": tensor_value, "dtype": dtype_value},
                         compute_shapes=False, checked=True)
    op.outputs[0]._shape = tensor_shape.TensorShape(proto.tensor_shape)
    return op.outputs[0]


ops.register_builder("constant", constant)
