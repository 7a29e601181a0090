"""Array ops on the GPU. Const lives on the device (uploaded once, when the kernel is
built); Identity, Reshape, ExpandDims and Squeeze are views (no stream work: device
metadata only); Cast, Transpose, Concat, Pack, Split, Slice and Gather run on the
compute stream. Shapes, axes and sizes stay in host memory (TF's HostMemory args)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, registered_kernels

from ..array import array_kernels  # (also registers the CPU kernels reused here)
from .base import (
    FLOATS,
    GpuKernel,
    cpu_kernel_error,
    device_context_of,
    refusal,
    register_gpu,
)

_DEVICE_TYPES = list(FLOATS) + ["int64", "bool", "uint8", "int8", "int16"]


class ConstOp(OpKernel):
    """The value on the device, uploaded once (TF's GPU Const copies it at construction)."""

    is_constant = True

    def __init__(self, ctx):
        super().__init__(ctx)
        cpu = registered_kernels()[("Const", "CPU")][0](ctx)
        host = cpu.compute(None, [])[0]
        self._value = (device_context_of(ctx).upload(np.asarray(host)),)

    def compute(self, ctx, inputs):
        return self._value


class _ViewOp(OpKernel):
    """A view of the input's device memory (no copy, no stream work)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.device = device_context_of(ctx)
        self._construction = ctx  # for TF's error of bad input (base.py's fallback)

    def raw(self, value, index: int = 0):
        device = self.device
        if not device.is_device_value(value):
            raise errors.InternalError(
                None, None, f"Input {index} of node {self.name} is in host memory, but its "
                            f"kernel on {device.device_name} reads it from device memory: a "
                            f"host-to-device copy is missing")
        return device.unwrap(value)

    def view(self, raw, inputs) -> object:
        raise NotImplementedError

    def compute(self, ctx, inputs):
        raw = self.raw(inputs[0])
        try:
            view = self.view(raw, inputs)
        except errors.OpError:
            raise
        except Exception:  # noqa: BLE001 - replaced by TF's error when there is one
            tf_error = cpu_kernel_error(self._construction, [raw, *inputs[1:]])
            if tf_error is None:
                raise
            raise tf_error from None
        return (self.device.wrap(view),)


class IdentityOp(_ViewOp):
    def view(self, raw, inputs):
        return raw


class ReshapeOp(_ViewOp):
    def view(self, raw, inputs):
        sizes = inputs[1]
        if np.ndim(sizes) > 1:
            raise refusal(self._construction, [raw, sizes])
        return raw.reshape(array_kernels.reshape_target(np.ravel(sizes).tolist(), raw.size,
                                                        raw.shape))


class ExpandDimsOp(_ViewOp):
    def view(self, raw, inputs):
        dim = inputs[1]
        if np.size(dim) != 1 or not -1 - raw.ndim <= int(np.ravel(dim)[0]) <= raw.ndim:
            raise refusal(self._construction, [raw, dim])
        axis = int(np.asarray(dim).reshape(-1)[0])
        if axis < 0:
            axis += raw.ndim + 1
        return raw.reshape(raw.shape[:axis] + (1,) + raw.shape[axis:])


class SqueezeOp(_ViewOp):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.dims = list(ctx.get_attr("squeeze_dims", []))

    def view(self, raw, inputs):
        dims = {d % raw.ndim for d in self.dims} if self.dims else {
            i for i, d in enumerate(raw.shape) if d == 1}
        return raw.reshape([d for i, d in enumerate(raw.shape) if i not in dims])


class CastOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = np.dtype(ctx.get_attr("DstT").as_numpy_dtype)

    def work(self, xp, x):
        return (x.astype(self.dtype),)


class TransposeOp(GpuKernel):
    def work(self, xp, x, perm):
        return (xp.ascontiguousarray(xp.transpose(x, [int(p) for p in np.asarray(perm)])),)


class ConcatV2Op(GpuKernel):
    def work(self, xp, *inputs):
        *values, axis = inputs
        return (xp.concatenate(values, axis=int(axis)),)


class PackOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.axis = ctx.get_attr("axis", 0)

    def work(self, xp, *values):
        return (xp.stack(values, axis=self.axis),)


class SplitOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_split = ctx.get_attr("num_split")

    def work(self, xp, axis, value):
        axis = int(axis)
        if value.shape[axis] % self.num_split:
            raise errors.InvalidArgumentError(
                None, None, f"Number of ways to split should evenly divide the split "
                            f"dimension, but got split_dim {axis} (size = "
                            f"{value.shape[axis]}) and num_split {self.num_split}")
        return tuple(xp.ascontiguousarray(p) for p in xp.split(value, self.num_split, axis))


class SplitVOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_split = ctx.get_attr("num_split")

    def work(self, xp, value, size_splits, axis):
        axis = int(axis)
        sizes = [int(s) for s in np.asarray(size_splits)]
        if -1 in sizes:
            sizes[sizes.index(-1)] = value.shape[axis] - (sum(sizes) + 1)
        if (len(sizes) != self.num_split or sum(sizes) != value.shape[axis]
                or min(sizes) < 0):  # np.split would split anyway
            raise self.refuse((value, size_splits, axis))
        bounds = np.cumsum(sizes)[:-1].tolist()
        return tuple(xp.ascontiguousarray(p) for p in xp.split(value, bounds, axis))


class SliceOp(GpuKernel):
    def work(self, xp, x, begin, size):
        index = []
        for b, s, d in zip(np.asarray(begin).tolist(), np.asarray(size).tolist(), x.shape,
                           strict=False):
            end = d if s == -1 else b + s
            if b < 0 or end > d or b > end:
                raise errors.InvalidArgumentError(
                    None, None, f"Expected begin and size arguments to be within the "
                                f"input's dimensions, got begin {b} and size {s} for "
                                f"dimension of size {d}")
            index.append(slice(b, end))
        return (xp.ascontiguousarray(x[tuple(index)]),)


class GatherV2Op(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.batch_dims = ctx.get_attr("batch_dims", 0)

    def work(self, xp, params, indices, axis):
        axis = int(axis) % params.ndim
        if self.batch_dims:
            raise errors.UnimplementedError(None, None, "GatherV2 with batch_dims on a GPU")
        if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= params.shape[axis]):
            raise errors.InvalidArgumentError(
                None, None, f"indices contains an index out of range [0, {params.shape[axis]})")
        return (xp.take(params, indices, axis=axis),)


def _register_all() -> None:
    register_gpu("Const", host_memory=(), dtype=_DEVICE_TYPES)(ConstOp)
    for op in ("Identity", "Snapshot", "StopGradient", "PreventGradient"):
        register_gpu(op, T=_DEVICE_TYPES)(IdentityOp)
    register_gpu("Reshape", host_memory=("shape",), T=_DEVICE_TYPES)(ReshapeOp)
    register_gpu("ExpandDims", host_memory=("dim",), T=_DEVICE_TYPES)(ExpandDimsOp)
    register_gpu("Squeeze", T=_DEVICE_TYPES)(SqueezeOp)
    register_gpu("Cast")(CastOp)
    register_gpu("Transpose", host_memory=("perm",), T=_DEVICE_TYPES)(TransposeOp)
    register_gpu("ConcatV2", host_memory=("axis",), T=_DEVICE_TYPES)(ConcatV2Op)
    register_gpu("Pack", T=_DEVICE_TYPES)(PackOp)
    register_gpu("Split", host_memory=("split_dim",), T=_DEVICE_TYPES)(SplitOp)
    register_gpu("SplitV", host_memory=("size_splits", "split_dim"), T=_DEVICE_TYPES)(SplitVOp)
    register_gpu("Slice", host_memory=("begin", "size"), T=_DEVICE_TYPES)(SliceOp)
    register_gpu("GatherV2", host_memory=("axis",), Tparams=_DEVICE_TYPES)(GatherV2Op)
    register_gpu("NoOp")(registered_kernels()[("NoOp", "CPU")][0])
    for op in ("Placeholder", "PlaceholderV2"):  # (a feed replaces it: no memory to read)
        cpu = registered_kernels().get((op, "CPU"))
        if cpu:
            register_gpu(op)(cpu[0])


_register_all()
