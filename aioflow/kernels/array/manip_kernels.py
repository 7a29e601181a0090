"""Kernels of Roll, InvertPermutation, ListDiff, LinSpace and Bincount, with TF's checks
and messages. LinSpace computes start + i * step in the output type with the last value
exactly `stop`, as TF's kernel (not NumPy's linspace)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


@register_kernel("Roll", "CPU")
class RollOp(OpKernel):
    """Elements shifted along axes (shifts on one axis add up), wrapping around."""

    expensive = None
    pool_above = BIG

    def compute(self, ctx, inputs):
        x, shift, axis = np.asarray(inputs[0]), np.asarray(inputs[1]), np.asarray(inputs[2])
        if shift.ndim > 1:
            raise _invalid(f"shift must be a scalar or a 1-D vector. Found: "
                           f"{shape_str(shift.shape)}")
        if axis.ndim > 1:
            raise _invalid(f"axis must be a scalar or a 1-D vector. Found: "
                           f"{shape_str(axis.shape)}")
        if shift.shape != axis.shape:
            raise _invalid("shift and axis must have the same size")
        totals = [0] * x.ndim
        for s, a in zip(shift.reshape(-1).tolist(), axis.reshape(-1).tolist(), strict=True):
            a2 = a + x.ndim if a < 0 else a
            if not 0 <= a2 < x.ndim:
                raise _invalid(f"axis {a} is out of range")
            totals[a2] += s
        axes = [i for i, t in enumerate(totals) if t and x.shape[i]]
        if not axes:
            return (x.copy(),)
        return (np.roll(x, [totals[i] for i in axes], axis=axes),)


@register_kernel("InvertPermutation", "CPU")
class InvertPermutationOp(OpKernel):
    """y[x[i]] = i for a permutation x of 0..n-1."""

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.ndim != 1:
            raise _invalid("invert_permutation expects a 1D vector.")
        n = x.size
        y = np.full(n, -1, dtype=x.dtype)
        for i, d in enumerate(x.tolist()):
            if not 0 <= d < n:
                raise _invalid(f"{d} is not between 0 and {n}")
            if y[d] != -1:
                raise _invalid(f"{d} is duplicated in the input.")
            y[d] = i
        return (y,)


@register_kernel("ListDiff", "CPU")
class ListDiffOp(OpKernel):
    """The elements of x not in y, in x's order, and their positions in x."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.idx_dtype = ctx.get_attr("out_idx").as_numpy_dtype

    def compute(self, ctx, inputs):
        x, y = np.asarray(inputs[0]), np.asarray(inputs[1])
        if x.ndim != 1:
            raise _invalid("x should be a 1D vector.")
        if y.ndim != 1:
            raise _invalid("y should be a 1D vector.")
        exclude = set(y.tolist())
        keep = [i for i, v in enumerate(x.tolist()) if v not in exclude]
        return x[keep], np.asarray(keep, dtype=self.idx_dtype)


@register_kernel("LinSpace", "CPU")
class LinSpaceOp(OpKernel):
    """num evenly spaced values from start to stop, both included."""

    def compute(self, ctx, inputs):
        start, stop, num = (np.asarray(v) for v in inputs)
        for name, v in (("start", start), ("stop", stop), ("num", num)):
            if v.ndim != 0:
                raise _invalid(f"{name} must be a scalar, not shape {shape_str(v.shape)}")
        n = int(num)
        if n <= 0:
            raise _invalid(f"Requires num > 0: {n}")
        t = start.dtype.type
        out = np.empty(n, dtype=start.dtype)
        if n == 1:
            out[0] = start
            return (out,)
        step = t((stop - start) / t(n - 1))
        out[:-1] = start + step * np.arange(n - 1).astype(start.dtype)
        out[-1] = stop
        return (out,)


@register_kernel("Bincount", "CPU")
class BincountOp(OpKernel):
    """bins[v] = count (or summed weight) of value v in arr, for v < size."""

    expensive = None
    pool_above = BIG

    def compute(self, ctx, inputs):
        arr, size, weights = np.asarray(inputs[0]), np.asarray(inputs[1]), np.asarray(inputs[2])
        if size.ndim != 0:
            raise _invalid(f"Shape must be rank 0 but is rank {size.ndim}")
        n = int(size)
        if n < 0:
            raise _invalid(f"size ({n}) must be non-negative")
        if arr.size and arr.min() < 0:
            raise _invalid("Input arr must be non-negative!")
        flat = arr.reshape(-1)
        keep = flat < n
        if weights.size:
            if weights.shape != arr.shape:
                raise _invalid(f"Input arr and weights must have the same shape: "
                               f"{shape_str(arr.shape)} vs. {shape_str(weights.shape)}")
            bins = np.zeros(n, dtype=weights.dtype)
            np.add.at(bins, flat[keep], weights.reshape(-1)[keep])
            return (bins,)
        counts = np.bincount(flat[keep], minlength=n)[:n]
        return (counts.astype(weights.dtype),)
