"""CPU kernels of the two ops ParallelConcatRemovePass writes (TF's inplace_ops.cc):
`_ParallelConcatStart` allocates the output, uninitialized; each `_ParallelConcatUpdate`
writes its input into row `loc` of that buffer in place and passes the buffer on. The
pass orders an Identity after every update, so the Identity's output is the whole
concatenation. ParallelConcat itself has no kernel (as in TF): the pass removes it."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, oom_error, register_kernel


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _dbg(shape) -> str:
    """A shape as TF's TensorShape::DebugString writes it: [2,3]."""
    return "[" + ",".join(str(d) for d in shape) + "]"


@register_kernel("_ParallelConcatStart")
class ParallelConcatStartOp(OpKernel):
    """A fresh, uninitialized buffer of the `shape` attr per run."""

    expensive = False

    def __init__(self, ctx):
        super().__init__(ctx)
        shape = ctx.get_attr("shape")
        if shape.rank is None or not shape.is_fully_defined():
            raise _invalid(f"Attr shape has unknown dimensions: {shape}")
        self.shape = tuple(shape.as_list())
        self.dtype = ctx.get_attr("dtype").as_numpy_dtype

    def compute(self, ctx, inputs):
        try:
            return (np.empty(self.shape, dtype=self.dtype),)
        except (MemoryError, ValueError):  # ValueError: "array is too big" for NumPy
            raise oom_error(self.shape, self.dtype) from None


def check_update(value: np.ndarray, update: np.ndarray) -> None:
    """TF's checks: same rank, same trailing dims, and one row in `update`."""
    if value.ndim != update.ndim:
        raise _invalid(f"value and update shape doesn't match: {_dbg(value.shape)} vs. "
                       f"{_dbg(update.shape)}")
    if value.shape[1:] != update.shape[1:]:
        raise _invalid(f"value and update shape doesn't match {_dbg(value.shape)} vs. "
                       f"{_dbg(update.shape)}")
    if update.ndim == 0 or update.shape[0] != 1:
        raise _invalid(f"update shape doesn't match: {_dbg(value.shape)} vs. "
                       f"{_dbg(update.shape)}")


@register_kernel("_ParallelConcatUpdate")
class ParallelConcatUpdateOp(OpKernel):
    """Writes `update` (one row) into row `loc` of `value` (wrapped into range as TF
    does) in place; the output aliases `value`."""

    expensive = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.loc = ctx.get_attr("loc")

    def compute(self, ctx, inputs):
        value, update = np.asarray(inputs[0]), np.asarray(inputs[1])
        check_update(value, update)
        if not value.flags.writeable:  # not _ParallelConcatStart's buffer (a Const, a
            value = value.copy()       # fed value): written in a copy, the input left as is
        rows = value.shape[0]
        if rows:
            value[self.loc % rows] = update[0]
        return (value,)
