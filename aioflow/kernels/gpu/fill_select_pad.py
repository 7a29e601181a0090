"""More array ops on the GPU in array-module form: filling, broadcasting, selecting,
padding, tiling, unstacking, one-hot, argmax/argmin, L2Loss. Dimensions, paddings,
multiples and depths stay in host memory (TF's HostMemory args)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors

from .base import FLOATS, GpuKernel, register_gpu

_TYPES = list(FLOATS) + ["int64", "bool"]


def _ints(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


class FillOp(GpuKernel):
    def work(self, xp, dims, value):
        if np.ndim(dims) > 1 or value.size != 1 or value.ndim > 1:  # xp.full would take them
            raise self.refuse((dims, value))
        return (xp.full(_ints(dims), value.reshape(()), dtype=value.dtype),)


class ZerosLikeOp(GpuKernel):
    def work(self, xp, x):
        return (xp.zeros_like(x),)


class OnesLikeOp(GpuKernel):
    def work(self, xp, x):
        return (xp.ones_like(x),)


class BroadcastToOp(GpuKernel):
    def work(self, xp, x, shape):
        try:
            return (xp.ascontiguousarray(xp.broadcast_to(x, _ints(shape))),)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Incompatible shapes: {list(x.shape)} vs. {_ints(shape)}") from None


class SelectV2Op(GpuKernel):
    def work(self, xp, cond, a, b):
        return (xp.where(cond, a, b),)


class SelectOp(GpuKernel):
    """v1 Select: a vector condition picks rows of matrices."""

    def work(self, xp, cond, a, b):
        if cond.ndim == 1 and a.ndim > 1:
            cond = cond.reshape((-1,) + (1,) * (a.ndim - 1))
        return (xp.where(cond, a, b),)


class PadOp(GpuKernel):
    def work(self, xp, x, paddings, *constant):
        pads = np.asarray(paddings).reshape(-1, 2).tolist()
        value = constant[0] if constant else 0
        return (xp.pad(x, pads, constant_values=value),)


class TileOp(GpuKernel):
    def work(self, xp, x, multiples):
        return (xp.tile(x, _ints(multiples)),)


class UnpackOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.axis = ctx.get_attr("axis", 0)
        self.num = ctx.get_attr("num")

    def work(self, xp, x):
        ndim = x.ndim
        if not -ndim <= self.axis < ndim or x.shape[self.axis % ndim] != self.num:
            raise self.refuse((x,))  # (outputs other than `num` would fail the step)
        axis = self.axis % ndim
        return tuple(xp.ascontiguousarray(xp.take(x, i, axis=axis)) for i in range(x.shape[axis]))


class ArgMaxOp(GpuKernel):
    find = "argmax"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = np.dtype(ctx.get_attr("output_type").as_numpy_dtype)

    def work(self, xp, x, dimension):
        axis = int(dimension)
        return (getattr(xp, self.find)(x, axis=axis).astype(self.dtype),)


class ArgMinOp(ArgMaxOp):
    find = "argmin"


class L2LossOp(GpuKernel):
    def work(self, xp, t):
        return (xp.asarray(xp.sum(xp.square(t)) / 2, dtype=t.dtype),)


class OneHotOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.axis = ctx.get_attr("axis", -1)

    def work(self, xp, indices, depth, on_value, off_value):
        depth = int(depth)
        hot = xp.arange(depth).reshape((1,) * indices.ndim + (depth,)) == indices[..., None]
        out = xp.where(hot, on_value, off_value).astype(on_value.dtype)
        if self.axis != -1 and self.axis != indices.ndim:
            out = xp.moveaxis(out, -1, self.axis)
        return (xp.ascontiguousarray(out),)


def _register_all() -> None:
    register_gpu("Fill", host_memory=("dims",), T=_TYPES)(FillOp)
    register_gpu("ZerosLike", T=_TYPES)(ZerosLikeOp)
    register_gpu("OnesLike", T=_TYPES)(OnesLikeOp)
    register_gpu("BroadcastTo", host_memory=("shape",), T=_TYPES)(BroadcastToOp)
    register_gpu("Select", T=_TYPES)(SelectOp)
    register_gpu("SelectV2", T=_TYPES)(SelectV2Op)
    register_gpu("Pad", host_memory=("paddings",), T=_TYPES)(PadOp)
    register_gpu("PadV2", host_memory=("paddings",), T=_TYPES)(PadOp)
    register_gpu("Tile", host_memory=("multiples",), T=_TYPES)(TileOp)
    register_gpu("Unpack", T=_TYPES)(UnpackOp)
    register_gpu("ArgMax", host_memory=("dimension",), T=list(FLOATS))(ArgMaxOp)
    register_gpu("ArgMin", host_memory=("dimension",), T=list(FLOATS))(ArgMinOp)
    register_gpu("L2Loss", T=list(FLOATS))(L2LossOp)
    register_gpu("OneHot", host_memory=("depth",), T=list(FLOATS))(OneHotOp)


_register_all()
