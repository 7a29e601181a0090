"""Kernels of DynamicPartition (data split by a partition id per leading slice),
DynamicStitch and ParallelDynamicStitch (slices put back at their indices; a later input
overwrites an earlier one, indices never named are zeros), with TF's checks and words."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _slice_str(shape, flat_index: int) -> str:
    """TF's SliceDebugString: the multi-index of a flat position, as "[i]" or "[i,j]"."""
    return shape_str(np.unravel_index(flat_index, shape)) if shape else "[]"


@register_kernel("DynamicPartition", "CPU")
class DynamicPartitionOp(OpKernel):
    """outputs[i] = data[partitions == i], in order."""

    expensive = None
    pool_above = BIG

    def __init__(self, ctx):
        super().__init__(ctx)
        self.num = int(ctx.get_attr("num_partitions"))

    def compute(self, ctx, inputs):
        data, parts = np.asarray(inputs[0]), np.asarray(inputs[1])
        if data.shape[:parts.ndim] != parts.shape:
            raise _invalid(f"data.shape must start with partitions.shape, got data.shape = "
                           f"{shape_str(data.shape)}, partitions.shape = "
                           f"{shape_str(parts.shape)}")
        flat = parts.reshape(-1)
        bad = np.flatnonzero((flat < 0) | (flat >= self.num))
        if bad.size:
            i = int(bad[0])
            raise _invalid(f"partitions{_slice_str(parts.shape, i)} = {int(flat[i])} is not "
                           f"in [0, {self.num})")
        rows = data.reshape((flat.size,) + data.shape[parts.ndim:])
        return [rows[flat == p] for p in range(self.num)]


class _StitchOp(OpKernel):
    expensive = None

    def is_expensive(self, inputs) -> bool:
        return sum(np.size(x) for x in inputs[len(inputs) // 2:]) > BIG

    def compute(self, ctx, inputs):
        n = len(inputs) // 2
        indices = [np.asarray(i) for i in inputs[:n]]
        data = [np.asarray(d) for d in inputs[n:]]
        rest = None
        for j, (idx, d) in enumerate(zip(indices, data, strict=True)):
            if d.shape[:idx.ndim] != idx.shape:
                raise _invalid(f"data[{j}].shape = {shape_str(d.shape)} does not start with "
                               f"indices[{j}].shape = {shape_str(idx.shape)}")
            tail = d.shape[idx.ndim:]
            if rest is None:
                rest = tail
            elif tail != rest:
                raise _invalid(f"Need data[0].shape[{indices[0].ndim}:] = {shape_str(rest)} to "
                               f"match data[{j}].shape[{idx.ndim}:] = {shape_str(tail)}")
        size = max((int(i.max()) + 1 for i in indices if i.size), default=0)
        out = np.zeros((size,) + tuple(rest or ()), dtype=data[0].dtype)
        for idx, d in zip(indices, data, strict=True):
            flat = idx.reshape(-1)
            bad = np.flatnonzero((flat < 0) | (flat >= size))
            if bad.size:
                raise _invalid(f"indices[{int(bad[0])}] is out of range")
            out[flat] = d.reshape((flat.size,) + out.shape[1:])
        return (out,)


@register_kernel("DynamicStitch", "CPU")
class DynamicStitchOp(_StitchOp):
    """merged[indices[m][i]] = data[m][i], later inputs winning."""

    compilable = True  # pure


@register_kernel("ParallelDynamicStitch", "CPU")
class ParallelDynamicStitchOp(_StitchOp):
    """DynamicStitch (TF leaves the winner among duplicates unspecified; here the last)."""
