"""CPU kernels (NumPy) that count values into bins: Bucketize (the boundaries <= x, an
upper bound; the boundaries are float32, the attr's type, compared as TF's C++ compares
them: in double for double input, else float) and Bincount, with TF's checks and messages."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str

_INDEX = [dtypes.int32, dtypes.int64]


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# -- Bucketize -----------------------------------------------------------------------------

@register_kernel("Bucketize", "CPU", T=[dtypes.int32, dtypes.int64, dtypes.float32,
                                       dtypes.float64])
class BucketizeOp(OpKernel):
    """output[i] = the number of boundaries <= input[i]."""

    expensive = None
    pool_above = BIG
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        bounds = np.asarray(ctx.get_attr("boundaries"), dtype=np.float32)
        if np.any(bounds[1:] < bounds[:-1]):
            raise _invalid("Expected sorted boundaries")
        self._bounds32 = bounds
        self._bounds64 = bounds.astype(np.float64)

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.dtype == np.float64:
            out = np.searchsorted(self._bounds64, x, side="right")
        else:
            out = np.searchsorted(self._bounds32, x.astype(np.float32, copy=False), side="right")
        return (np.asarray(out, dtype=np.int32).reshape(x.shape),)


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
