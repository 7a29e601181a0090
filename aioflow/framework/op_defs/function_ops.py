"""OpDefs of the call-frame ops a session rewrites feeds and fetches into."""

from aioflow.framework import tensor_shape
from aioflow.framework.op_def_registry import register_op


def _arg_shape(op):
    return [tensor_shape.unknown_shape()]


register_op("_Arg").output("output: T").attr("T: type").attr("index: int >= 0") \
    .set_is_stateful().set_shape_fn(_arg_shape)
register_op("_Retval").input("input: T").attr("T: type").attr("index: int >= 0") \
    .set_is_stateful().set_shape_fn(lambda op: [])
