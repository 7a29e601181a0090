"""CPU kernels (NumPy) for unique values and set differences: Unique, UniqueV2,
UniqueWithCounts(V2) and ListDiff, with TF 2.21's checks and messages. Unique keeps
first-occurrence order; every NaN is its own value; -0.0 equals 0.0 (the first one seen is
kept). ListDiff keeps x's order."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG

_INDEX = [dtypes.int32, dtypes.int64]


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# -- Unique --------------------------------------------------------------------------------

def _unique_rows(x, axis: int | None):
    """(unique values in first-occurrence order, idx, counts) along `axis` (None: 1-D)."""
    if axis is None:
        flat = x
    else:  # the other dims' size spelled out: reshape(0, -1) is ambiguous
        rest = int(np.prod(x.shape, dtype=np.int64)) // max(1, x.shape[axis])
        flat = np.moveaxis(x, axis, 0).reshape(x.shape[axis], rest)
    n = flat.shape[0]
    if n == 0:
        return np.arange(0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    if flat.ndim == 2 and flat.dtype == object:  # strings: np.unique has no axis for them
        first_of: dict = {}
        inverse = np.array([first_of.setdefault(tuple(row), len(first_of)) for row in flat],
                           np.int64)
        first = np.unique(inverse, return_index=True)[1]  # ids are in first-seen order
        return first, inverse, np.bincount(inverse, minlength=len(first_of))
    if flat.ndim == 1:
        kw = {"equal_nan": False} if flat.dtype.kind in "fc" else {}
        _, first, inverse = np.unique(flat, return_index=True, return_inverse=True, **kw)
    else:
        if flat.shape[1] == 0:
            first, inverse = np.zeros(1, np.int64), np.zeros(n, np.int64)
        else:
            _, first, inverse = np.unique(flat, axis=0, return_index=True,
                                          return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")  # unique ids in first-occurrence order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse]
    counts = np.bincount(idx, minlength=order.size)
    return first[order], idx, counts


class _UniqueBase(OpKernel):
    """Unique values of a vector (or slices along an axis) and each element's position."""

    expensive = None
    pool_above = BIG
    with_axis = False
    with_counts = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self._out_idx = ctx.get_attr("out_idx", dtypes.int32).as_numpy_dtype

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        axis = None
        if self.with_axis:
            axis_t = np.asarray(inputs[1])
            if axis_t.size > 1:
                raise _invalid("axis does not support input tensors larger than 1 elements")
            if axis_t.size == 1:
                axis = int(axis_t.reshape(-1)[0])
                if axis < 0:
                    axis += x.ndim
                if not 0 <= axis < x.ndim:
                    raise _invalid(f"axis has to be between [0, {x.ndim})")
        if axis is None and x.ndim != 1:
            raise _invalid("unique expects a 1D vector.")
        if axis is not None and x.ndim == 1:
            axis = None
        first, idx, counts = _unique_rows(x, axis)
        if axis is None:
            y = x[first] if first.size else x[:0]
        else:
            y = np.take(x, first, axis=axis)
        out = [y, idx.astype(self._out_idx)]
        if self.with_counts:
            out.append(counts.astype(self._out_idx))
        return out


@register_kernel("Unique", "CPU")
class UniqueOp(_UniqueBase):
    pass


@register_kernel("UniqueWithCounts", "CPU")
class UniqueWithCountsOp(_UniqueBase):
    with_counts = True


@register_kernel("UniqueV2", "CPU")
class UniqueV2Op(_UniqueBase):
    with_axis = True


@register_kernel("UniqueWithCountsV2", "CPU")
class UniqueWithCountsV2Op(_UniqueBase):
    with_axis = True
    with_counts = True


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
