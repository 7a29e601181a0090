"""CPU kernels (NumPy) for TopKV2 and InTopKV2, to TF 2.21's values and checks.

TopKV2 gives the k largest entries of each row (last axis), largest first and, among
equal values, lower index first (TF's stable order); k == 1 is TF's max-then-first-index
(NaN only where the whole row is NaN). sorted=False returns the same order (TF leaves
the order unspecified). InTopKV2 is true where fewer than k classes score strictly above
the target's; a non-finite score in the row, or a target outside [0, num_classes), gives
false, as TF.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def top_k(x: np.ndarray, k: int, index_dtype) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the k largest entries along the last axis (checked k)."""
    n = x.shape[-1]
    lead = x.shape[:-1]
    if k == 0 or x.size == 0:
        return (np.zeros(lead + (k,), x.dtype), np.zeros(lead + (k,), index_dtype))
    if k == 1:
        with np.errstate(invalid="ignore"):
            best = np.fmax.reduce(x, axis=-1, keepdims=True) if x.dtype.kind == "f" \
                else np.max(x, axis=-1, keepdims=True)
            hit = x == best
        idx = np.where(hit.any(axis=-1, keepdims=True),
                       np.argmax(hit, axis=-1)[..., None], 0)
        return np.take_along_axis(x, idx, -1), idx.astype(index_dtype)
    # A stable ascending sort of the reversed row, reversed, is descending with ties in
    # increasing index (works for unsigned types, where negating would not).
    rev = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    idx = (n - 1) - rev
    return np.take_along_axis(x, idx, -1), idx.astype(index_dtype)


@register_kernel("TopKV2", "CPU")
class TopKV2Op(OpKernel):
    """values, indices of the k largest entries of each row."""

    expensive = None
    pool_above = BIG
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        index_type = ctx.get_attr("index_type", None)
        self.index_dtype = np.dtype(index_type.as_numpy_dtype) if index_type else np.int32

    def compute(self, ctx, inputs):
        x, k = inputs
        if np.ndim(k) != 0:
            raise _invalid(f"k must be scalar, got shape {shape_str(np.shape(k))}")
        k = int(k)
        if k < 0:
            raise _invalid(f"Need k >= 0, got {k}")
        x = np.asarray(x)
        if x.ndim < 1:
            raise _invalid(f"input must be >= 1-D, got shape {shape_str(x.shape)}")
        if x.shape[-1] < k:
            raise _invalid(f"input must have at least k columns. Had {x.shape[-1]}, "
                           f"needed {k}")
        return top_k(x, k, self.index_dtype)


@register_kernel("InTopKV2", "CPU")
class InTopKV2Op(OpKernel):
    """precision[b]: whether targets[b] is among the k best predictions of row b."""

    expensive = None
    pool_above = BIG
    compilable = True

    def compute(self, ctx, inputs):
        predictions, targets, k = (np.asarray(v) for v in inputs)
        if k.ndim != 0:
            raise _invalid(f"k must be 0-D, got shape {shape_str(k.shape)}")
        if predictions.ndim != 2:
            raise _invalid("predictions must be 2-dimensional")
        if targets.ndim != 1:
            raise _invalid("targets must be 1-dimensional")
        if predictions.shape[0] != targets.shape[0]:
            raise _invalid(f"First dimension of predictions {predictions.shape[0]} must "
                           f"match length of targets {targets.shape[0]}")
        num_classes = predictions.shape[1]
        in_range = (targets >= 0) & (targets < num_classes)
        safe = np.where(in_range, targets, 0).astype(np.intp)
        rows = np.arange(predictions.shape[0])
        if num_classes == 0:
            return (np.zeros(targets.shape, bool),)
        target_pred = predictions[rows, safe][:, None]
        with np.errstate(invalid="ignore"):
            more = np.count_nonzero(predictions > target_pred, axis=1)
        finite = np.isfinite(predictions).all(axis=1)
        return (in_range & finite & (more < int(k)),)
