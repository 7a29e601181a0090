"""Gradient functions of the random ops (TF's random_grad.py): RandomGamma, whose sample
is differentiated with respect to alpha by implicit differentiation (Figurnov et al.,
2018): RandomGammaGrad gives d sample / d alpha, summed over the sample dimensions."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops, math_ops


def add_leading_unit_dimensions(x, num_dimensions):
    """x reshaped with `num_dimensions` dimensions of size 1 in front."""
    new_shape = array_ops.concat(
        [array_ops.ones([num_dimensions], dtype=dtypes.int32), array_ops.shape(x)], axis=0)
    return array_ops.reshape(x, new_shape)


@RegisterGradient("RandomGamma")
def _random_gamma_grad(op, grad):
    shape = op.inputs[0]
    alpha = op.inputs[1]
    sample = op.outputs[0]
    with ops.control_dependencies([grad]):
        num_sample_dimensions = array_ops.shape(shape)[0]
        alpha_broadcastable = add_leading_unit_dimensions(alpha, num_sample_dimensions)
        partial_a = apply_op("RandomGammaGrad", alpha=alpha_broadcastable, sample=sample)
        return None, math_ops.reduce_sum(grad * partial_a,
                                         axis=math_ops.range(num_sample_dimensions))
