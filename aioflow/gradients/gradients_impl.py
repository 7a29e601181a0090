"""af.hessians: second derivatives, one while loop per x over the entries of the gradient
(TF 1.x's gradients_impl.hessians)."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.gradients.gradients_util import gradients
from aioflow.ops import array_ops, control_flow_ops, tensor_array_ops
from aioflow.ops.constant_op import constant


def hessians(ys, xs, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method=None) -> list:
    """For each x, the Hessian of sum(ys) with respect to x, of shape x.shape + x.shape."""
    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    kwargs = {"colocate_gradients_with_ops": colocate_gradients_with_ops,
              "gate_gradients": gate_gradients, "aggregation_method": aggregation_method}
    result = []
    for gradient, x in zip(gradients(ys, xs, **kwargs), xs, strict=True):
        gradient = array_ops.reshape(gradient, [-1])
        n = array_ops.size(x)
        loop_vars = [constant(0, dtypes.int32),
                     tensor_array_ops.TensorArray(x.dtype, n)]

        def body(j, acc, gradient=gradient, x=x):
            return j + 1, acc.write(j, gradients(gradient[j], x)[0])

        _, hessian = control_flow_ops.while_loop(lambda j, _, n=n: j < n, body, loop_vars)
        shape = array_ops.shape(x)
        result.append(array_ops.reshape(hessian.stack(), array_ops.concat((shape, shape), 0)))
    return result
