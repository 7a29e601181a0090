"""CPU kernels (NumPy) that reorder elements: Roll, InvertPermutation and ReverseSequence,
with TF's checks and messages."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.array.array_kernels import OUTPUT_POOL_ABOVE
from aioflow.kernels.math.cwise_kernels import BIG, shape_str

_INDEX = [dtypes.int32, dtypes.int64]


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


# -- ReverseSequence -----------------------------------------------------------------------

@register_kernel("ReverseSequence", "CPU", Tlen=_INDEX)
class ReverseSequenceOp(OpKernel):
    """Reverses the first seq_lengths[b] entries along seq_dim of each slice b of
    batch_dim."""

    expensive = None
    pool_above = OUTPUT_POOL_ABOVE

    def __init__(self, ctx):
        super().__init__(ctx)
        self._seq_dim = ctx.get_attr("seq_dim")
        self._batch_dim = ctx.get_attr("batch_dim", 0)

    def compute(self, ctx, inputs):
        x, lengths = np.asarray(inputs[0]), np.asarray(inputs[1])
        seq_dim, batch_dim = self._seq_dim, self._batch_dim
        if batch_dim < 0:
            raise _invalid(f"Invalid batch_dim {batch_dim}")
        if seq_dim < 0:
            raise _invalid(f"Invalid seq_dim {seq_dim}")
        if batch_dim == seq_dim:
            raise _invalid(f"batch_dim == seq_dim == {seq_dim}")
        if seq_dim >= x.ndim:
            raise _invalid(f"seq_dim must be < input rank ( {seq_dim} vs. {x.ndim})")
        if batch_dim >= x.ndim:
            raise _invalid(f"batch_dim must be < input rank ( {batch_dim} vs. {x.ndim})")
        if lengths.ndim != 1:
            raise _invalid(f"seq_lengths must be 1-dim, not {lengths.ndim}")
        if lengths.shape[0] != x.shape[batch_dim]:
            raise _invalid(f"Length of seq_lengths != input.dims({batch_dim}), "
                           f"({lengths.shape[0]} vs. {x.shape[batch_dim]})")
        seq = x.shape[seq_dim]
        bad = (lengths < 0) | (lengths > seq)
        if bad.any():
            d = int(np.argmax(bad))
            if lengths[d] < 0:
                raise _invalid(f"seq_lens({d}) < 0")
            raise _invalid(f"seq_lens({d}) > input.dims({seq_dim})")
        if x.size == 0:
            return (x.copy(),)
        lens = lengths.astype(np.int64)[:, None]
        pos = np.arange(seq, dtype=np.int64)[None, :]
        src = np.where(pos < lens, lens - 1 - pos, pos)  # [batch, seq]
        # Lay the [batch, seq] index out along (batch_dim, seq_dim) of x.
        shape = [1] * x.ndim
        shape[batch_dim], shape[seq_dim] = src.shape[0], seq
        if batch_dim > seq_dim:
            src = src.T
        index = np.broadcast_to(src.reshape(shape), x.shape)
        return (np.take_along_axis(x, index, axis=seq_dim),)
