"""CPU kernels (NumPy) for the bitwise ops: and, or, xor, invert, left and right shift.

Results keep the operands' integer type. Shifts follow TF's functors: the shift amount is
clamped to [0, bits - 1] (TF documents amounts outside [0, bits) as implementation-defined
and clamps them so); left shifts run on the unsigned bit pattern, so they wrap; right shifts
of signed values are arithmetic.
"""

from __future__ import annotations

import operator

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import register_kernel
from aioflow.kernels.math.cwise_kernels import BinaryKernel, UnaryKernel

_INTS = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
         dtypes.uint32, dtypes.uint64]


@register_kernel("BitwiseAnd", "CPU", T=_INTS)
class BitwiseAndOp(BinaryKernel):
    """z = x & y."""

    def make_fn(self, dtype):
        return operator.and_


@register_kernel("BitwiseOr", "CPU", T=_INTS)
class BitwiseOrOp(BinaryKernel):
    """z = x | y."""

    def make_fn(self, dtype):
        return operator.or_


@register_kernel("BitwiseXor", "CPU", T=_INTS)
class BitwiseXorOp(BinaryKernel):
    """z = x ^ y."""

    def make_fn(self, dtype):
        return operator.xor


@register_kernel("Invert", "CPU", T=_INTS)
class InvertOp(UnaryKernel):
    """y = ~x (every bit flipped)."""

    def make_fn(self, dtype):
        return np.invert


def _clamp_shift(dtype: dtypes.DType):
    """A function clamping shift amounts to [0, bits - 1] in the operands' own type."""
    np_type = dtype.as_numpy_dtype
    lo, hi = np_type(0), np_type(np.dtype(np_type).itemsize * 8 - 1)
    return lambda y: np.minimum(np.maximum(y, lo), hi)


@register_kernel("LeftShift", "CPU", T=_INTS)
class LeftShiftOp(BinaryKernel):
    """z = x << clamp(y, 0, bits - 1), shifted as unsigned (so it wraps)."""

    def make_fn(self, dtype):
        clamp = _clamp_shift(dtype)
        np_type = dtype.as_numpy_dtype
        unsigned = np.dtype(f"u{np.dtype(np_type).itemsize}").type
        if np_type is unsigned:
            return lambda x, y: np.left_shift(x, clamp(y))

        def run(x, y):
            bits = np.left_shift(x.astype(unsigned), clamp(y).astype(unsigned))
            return bits.astype(np_type)
        return run


@register_kernel("RightShift", "CPU", T=_INTS)
class RightShiftOp(BinaryKernel):
    """z = x >> clamp(y, 0, bits - 1); arithmetic for signed x."""

    def make_fn(self, dtype):
        clamp = _clamp_shift(dtype)
        return lambda x, y: np.right_shift(x, clamp(y))
