"""CPU kernel of MatrixTriangularSolve (TF's matrix_triangular_solve_op_impl.h): solves
matrix @ x = rhs (or adjoint(matrix) @ x = rhs) for x, reading only the lower (or upper)
triangle of each matrix, with broadcast batch dimensions. A zero on the diagonal is not an
error (TF's Eigen solve divides by it: inf/nan), so the solve is plain substitution, one
row at a time over every batch and column at once."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.array.array_kernels import _invalid
from aioflow.kernels.math.cwise_kernels import shape_str


def _check(matrix: np.ndarray, rhs: np.ndarray, lower: bool, adjoint: bool) -> tuple:
    """The broadcast batch shape, after TF's checks in TF's order and words."""
    if matrix.ndim < 2:
        raise _invalid(f"In[0] ndims must be >= 2: {matrix.ndim}")
    if rhs.ndim < 2:
        raise _invalid(f"In[1] ndims must be >= 2: {rhs.ndim}")
    try:
        batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    except ValueError:
        raise _invalid(f"In[0] and In[1] must have compatible batch dimensions: "
                       f"{shape_str(matrix.shape)} vs. {shape_str(rhs.shape)}") from None
    m, n = matrix.shape[-2:]
    if m != n:
        raise _invalid(f"In[0] matrices in the last dimensions must be square ({n} =/= {m})")
    if rhs.shape[-2] != m:
        raise _invalid(f"In[0] mismatch In[1] shape: {m} vs. {rhs.shape[-2]}: "
                       f"{shape_str(matrix.shape)} {shape_str(rhs.shape)} {int(lower)} "
                       f"{int(adjoint)}")
    return batch


def triangular_solve(matrix: np.ndarray, rhs: np.ndarray, lower: bool,
                     adjoint: bool) -> np.ndarray:
    """x with matrix @ x = rhs (adjoint(matrix) @ x = rhs when `adjoint`), reading only
    the triangle `lower` names; batch dimensions broadcast."""
    if adjoint:
        matrix = np.conj(np.swapaxes(matrix, -1, -2))
        lower = not lower
    tri = np.tril(matrix) if lower else np.triu(matrix)
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    tri = np.broadcast_to(tri, batch + matrix.shape[-2:])
    x = np.array(np.broadcast_to(rhs, batch + rhs.shape[-2:]), dtype=rhs.dtype)
    m = matrix.shape[-1]
    rows = range(m) if lower else range(m - 1, -1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, m)
            acc = x[..., i, :] - np.einsum("...k,...kn->...n", tri[..., i, done],
                                           x[..., done, :])
            x[..., i, :] = acc / tri[..., i, i][..., None]
    return x


@register_kernel("MatrixTriangularSolve", "CPU",
                 T=[dtypes.float32, dtypes.float64, dtypes.complex64, dtypes.complex128,
                    dtypes.float16, dtypes.bfloat16])
class MatrixTriangularSolveOp(OpKernel):
    """x = matrix^-1 @ rhs for triangular matrices (batch dimensions broadcast)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.lower = bool(ctx.get_attr("lower"))
        self.adjoint = bool(ctx.get_attr("adjoint"))

    def compute(self, ctx, inputs):
        matrix, rhs = (np.asarray(v) for v in inputs)
        _check(matrix, rhs, self.lower, self.adjoint)
        if matrix.dtype in (np.float16,) or matrix.dtype.name == "bfloat16":
            out = triangular_solve(matrix.astype(np.float32), rhs.astype(np.float32),
                                   self.lower, self.adjoint)
            return (out.astype(rhs.dtype),)
        return (triangular_solve(matrix, rhs, self.lower, self.adjoint),)
