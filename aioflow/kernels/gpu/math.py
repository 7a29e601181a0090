"""Reductions, MatMul and BatchMatMul on the GPU (cuBLAS through CuPy's matmul on a
GPU). A reduction's axes stay in host memory (TF: HostMemory("reduction_indices"))."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors

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

    def __init__(self, ctx):
        super().__init__(ctx)
        self.keep_dims = ctx.get_attr("keep_dims", False)

    def work(self, xp, x, indices):
        axes = _axes(indices, x.ndim)
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


class MatMulOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.transpose_a = ctx.get_attr("transpose_a", False)
        self.transpose_b = ctx.get_attr("transpose_b", False)

    def work(self, xp, a, b):
        if self.transpose_a:
            a = a.T
        if self.transpose_b:
            b = b.T
        if a.shape[1] != b.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, f"Matrix size-incompatible: In[0]: [{a.shape[0]},{a.shape[1]}], "
                            f"In[1]: [{b.shape[0]},{b.shape[1]}]")
        return (xp.matmul(a, b),)


class BatchMatMulOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.adj_x = ctx.get_attr("adj_x", False)
        self.adj_y = ctx.get_attr("adj_y", False)

    def work(self, xp, x, y):
        if self.adj_x:
            x = xp.conj(xp.swapaxes(x, -1, -2))
        if self.adj_y:
            y = xp.conj(xp.swapaxes(y, -1, -2))
        return (xp.matmul(x, y),)


def _register_all() -> None:
    for op, fn in _REDUCTIONS.items():
        register_gpu(op, host_memory=("reduction_indices",), T=list(FLOATS))(
            type(f"Gpu{op}Op", (ReductionOp,), {"reduce": staticmethod(fn)}))
    register_gpu("MatMul", T=list(FLOATS))(MatMulOp)
    for op in ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"):
        register_gpu(op, T=list(FLOATS))(BatchMatMulOp)


_register_all()
