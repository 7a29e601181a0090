"""CPU kernels of the small math gradient ops: BroadcastGradientArgs (the axes a
broadcast input's gradient sums over) and the cwise gradients in terms of the forward
output y: SigmoidGrad, TanhGrad, RsqrtGrad, SqrtGrad, ReciprocalGrad (InvGrad).

For complex types TF multiplies dy by the conjugate of the derivative.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BinaryKernel, via_float32


def _shape_text(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def broadcast_gradient_reduction(s0, s1):
    """(r0, r1): the axes of the broadcast shape each input was broadcast along (TF's
    BCast grad_reduce_idx): where an input's dim is 1 and the output's is not, and
    where every input's dim is 1."""
    rank = max(len(s0), len(s1))
    x = [1] * (rank - len(s0)) + list(s0)
    y = [1] * (rank - len(s1)) + list(s1)
    r0, r1 = [], []
    for i in range(rank):
        a, b = x[i], y[i]
        if a == b:
            if a == 1:
                r0.append(i)
                r1.append(i)
        elif a == 1:
            r0.append(i)
        elif b == 1:
            r1.append(i)
        else:
            return None
    return r0, r1


@register_kernel("BroadcastGradientArgs", "CPU")
class BroadcastGradientArgsOp(OpKernel):
    """r0, r1 for the shapes s0, s1; InvalidArgument when they do not broadcast."""

    def compute(self, ctx, inputs):
        s0, s1 = inputs
        for i, s in enumerate((s0, s1)):
            if np.ndim(s) != 1:
                raise errors.InvalidArgumentError(
                    None, None, f"In[{i}] must be a vector.{_shape_text(np.shape(s))}")
        result = broadcast_gradient_reduction(s0.tolist(), s1.tolist())
        if result is None:
            raise errors.InvalidArgumentError(
                None, None, f"Incompatible shapes: {_shape_text(s0)} vs. {_shape_text(s1)}")
        dtype = s0.dtype
        return (np.array(result[0], dtype), np.array(result[1], dtype))


def _grad_kernel(op_type: str, formula):
    """A y/dy kernel: z = dy * formula(y), conjugated for complex types."""
    def make_fn(self, dtype):
        def fn(y, dy):
            d = formula(y)
            if np.iscomplexobj(d):
                d = np.conj(d)
            return (dy * d).astype(y.dtype, copy=False)
        return via_float32(fn, dtype)

    cls = type(op_type + "Op", (BinaryKernel,), {
        "make_fn": make_fn, "__doc__": f"CPU kernel for {op_type}."})
    register_kernel(op_type, "CPU")(cls)
    return cls


_grad_kernel("SigmoidGrad", lambda y: y * (1 - y))
_grad_kernel("TanhGrad", lambda y: 1 - y * y)
_grad_kernel("RsqrtGrad", lambda y: -0.5 * (y * y * y))
_grad_kernel("SqrtGrad", lambda y: 0.5 / y)
_grad_kernel("ReciprocalGrad", lambda y: -(y * y))
_grad_kernel("InvGrad", lambda y: -(y * y))
