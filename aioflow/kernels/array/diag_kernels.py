"""DiagPart (TF's diag_op.cc): the diagonal [D1..Dk] of a [D1..Dk, D1..Dk] tensor, with
TF 2.21's checks and messages."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.array.array_kernels import _invalid
from aioflow.kernels.math.cwise_kernels import shape_str

_DIAG_T = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32,
           dtypes.int64, dtypes.complex64, dtypes.complex128]


@register_kernel("DiagPart", "CPU", T=_DIAG_T)
class DiagPartOp(OpKernel):
    """output[i1..ik] = input[i1..ik, i1..ik]."""

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.ndim == 0 or x.ndim % 2:
            raise _invalid(f"The rank of the tensor should be                                 "
                           f"         even and positive, got shape {shape_str(x.shape)}")
        half = x.ndim // 2
        for i in range(half):
            if x.shape[i] != x.shape[i + half]:
                raise _invalid(f"Invalid shape {shape_str(x.shape)}: dimensions {i} and "
                               f"{i + half} do not match.")
        size = int(np.prod(x.shape[:half], dtype=np.int64))
        flat = x.reshape(size, size)
        return (np.ascontiguousarray(np.diagonal(flat)).reshape(x.shape[:half]),)
