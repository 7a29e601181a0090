"""Gradients of the Optional ops (TF's tensorflow/python/ops/optional_grad.py): an
Optional's gradient is an Optional of its components' gradients. cond_v2's gradient makes
the forward If output OptionalFromValue intermediates, so a later tf.gradients through
that If reaches them."""

from __future__ import annotations

from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import RegisterGradient


@RegisterGradient("OptionalFromValue")
def _optional_from_value_grad(op, grad):
    values = apply_op("OptionalGetValue", optional=grad,
                      output_types=[t.dtype for t in op.inputs],
                      output_shapes=[t.shape for t in op.inputs])
    return list(values) if isinstance(values, (list, tuple)) else [values]


@RegisterGradient("OptionalGetValue")
def _optional_get_value_grad(unused_op, *grads):
    return apply_op("OptionalFromValue", components=list(grads))
