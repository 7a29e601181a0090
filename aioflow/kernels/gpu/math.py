"""Reductions, MatMul and BatchMatMul on the GPU (cuBLAS through CuPy's matmul on a
GPU). A reduction's axes stay in host memory (TF: HostMemory("reduction_indices"))."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.kernels.math.matmul_kernels import _size_error

from .base import FLOATS, GpuKernel, register_gpu


def _axes(indices, ndim: int) -> tuple:
    axes = np.asarray(indices).reshape(-1).tolist()
    for a in axes:
        if not -ndim <= a < max(ndim, 1):
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension ({a} for input with {ndim} "
                            f"dimension(s)")
    return tuple(sorted({a % ndim for a in axes})) if ndim else ()


class ReductionOp(GpuKernel):
    reduce = None
    empty = None  # what an empty reduction gives, where the array module raises (Max/Min)

    def __init__(self, ctx):
        super().__init__(ctx)
        self.keep_dims = ctx.get_attr("keep_dims", False)

    def work(self, xp, x, indices):
        axes = _axes(indices, x.ndim)
        if x.size == 0 and self.empty is not None:  # the reducer's identity, as TF's
            out = xp.full([d for i, d in enumerate(x.shape) if i not in axes], self.empty,
                          dtype=x.dtype)
        else:
            out = type(self).reduce(xp, x, axes)
        out = xp.asarray(out, dtype=x.dtype)
        if self.keep_dims:
            out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        return (out,)


_REDUCTIONS = {
    "Sum": lambda xp, x, axes: xp.sum(x, axis=axes),
    "Mean": lambda xp, x, axes: xp.mean(x, axis=axes),
    "Max": lambda xp, x, axes: xp.max(x, axis=axes),
    "Min": lambda xp, x, axes: xp.min(x, axis=axes),
    "Prod": lambda xp, x, axes: xp.prod(x, axis=axes),
}


_EMPTY = {"Max": -np.inf, "Min": np.inf}  # (float types only on the GPU)


class MatMulOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.transpose_a = ctx.get_attr("transpose_a", False)
        self.transpose_b = ctx.get_attr("transpose_b", False)

    def work(self, xp, a, b):
        if a.ndim != 2 or b.ndim != 2:  # xp.matmul would take other ranks
            raise self.refuse((a, b))
        x = a.T if self.transpose_a else a
        y = b.T if self.transpose_b else b
        if x.shape[1] != y.shape[0]:
            raise _size_error(a, b)
        return (xp.matmul(x, y),)


class BatchMatMulOp(GpuKernel):
    """BatchMatMulV2/V3: batch dimensions broadcast (BatchMatMul: equal)."""

    broadcast = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.adj_x = ctx.get_attr("adj_x", False)
        self.adj_y = ctx.get_attr("adj_y", False)

    def work(self, xp, x, y):
        if x.ndim < 2 or y.ndim < 2 or (not self.broadcast and x.shape[:-2] != y.shape[:-2]):
            raise self.refuse((x, y))  # xp.matmul would take vectors, and broadcast
        a = xp.conj(xp.swapaxes(x, -1, -2)) if self.adj_x else x
        b = xp.conj(xp.swapaxes(y, -1, -2)) if self.adj_y else y
        return (xp.matmul(a, b),)


class BatchMatMulV1Op(BatchMatMulOp):
    broadcast = False


def _register_all() -> None:
    for op, fn in _REDUCTIONS.items():
        register_gpu(op, host_memory=("reduction_indices",), T=list(FLOATS))(
            type(f"Gpu{op}Op", (ReductionOp,), {"reduce": staticmethod(fn),
                                                 "empty": _EMPTY.get(op)}))
    register_gpu("MatMul", T=list(FLOATS))(MatMulOp)
    register_gpu("BatchMatMul", T=list(FLOATS))(BatchMatMulV1Op)
    for op in ("BatchMatMulV2", "BatchMatMulV3"):
        register_gpu(op, T=list(FLOATS))(BatchMatMulOp)


_register_all()
