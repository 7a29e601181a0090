"""Constant padding (Pad, PadV2) in one pass over the output, shared among the intra-op
threads for large tensors.

Filling the whole output with the constant and then copying the input over its middle
writes the middle twice: at ResNet50's and MobileNetV2's shapes (a pixel or three of
border) nearly two passes where TF's kernel makes one. Here the constant is written only
into the border slabs (axis by axis, each slab once) and the input copied into the
middle. Above element_threads.SPLIT_ABOVE output elements the output's outermost axis of
more than one index (the batch, or the rows of one image) is cut into ranges of indices,
each range padded on a thread of its own (aioflow/kernels/element_threads.py).

Small outputs, and strings (object arrays), keep the plain fill-then-copy.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework.op_kernel import allocate, oom_error
from aioflow.kernels.element_threads import for_ranges

#: Output elements from which the border-only pass is used (below, NumPy's two calls
#: cost less than a slab's indexing per axis).
BORDER_FROM = 1 << 14


def _empty(shape, dtype) -> np.ndarray:
    """An uninitialized output; past memory or NumPy's reach, TF's OOM."""
    try:
        return np.empty(shape, dtype)
    except (MemoryError, ValueError):  # ValueError: past what NumPy can address
        raise oom_error(shape, dtype) from None


def pad_constant(x: np.ndarray, pads: list, constant) -> np.ndarray:
    """x padded by pads ([[before, after], ...], checked non-negative) with `constant`."""
    shape = [d + b + a for d, (b, a) in zip(x.shape, pads, strict=True)]
    size = int(np.prod(shape, dtype=np.int64))
    if size < BORDER_FROM or x.dtype == np.object_ or x.size == 0:
        out = allocate(shape, constant, x.dtype)
        out[tuple(slice(b, b + d) for d, (b, _) in zip(x.shape, pads, strict=True))] = x
        return out
    out = _empty(shape, x.dtype)
    o, xi = out, x
    while o.ndim > 1 and o.shape[0] == 1 and pads[0] == [0, 0]:
        o, xi, pads = o[0], xi[0], pads[1:]  # one image: cut its rows instead
    before, extent = pads[0][0], xi.shape[0]
    rest = pads[1:]

    def rows(lo: int, hi: int) -> None:
        in_lo, in_hi = max(lo, before), min(hi, before + extent)
        if in_lo >= in_hi:
            o[lo:hi] = constant
            return
        if lo < in_lo:
            o[lo:in_lo] = constant
        if in_hi < hi:
            o[in_hi:hi] = constant
        _fill_borders(o[in_lo:in_hi], xi[in_lo - before:in_hi - before], rest, constant)

    for_ranges(o.shape[0], rows, unit=o[0].size if o.ndim > 1 else 1)
    return out


def _fill_borders(out: np.ndarray, x: np.ndarray, pads: list, constant) -> None:
    """out (x's leading axis, then the padded ones) = x padded by pads (one per axis after
    the first): each axis's before and after slabs, within the middle of the axes before
    it, get the constant; the middle of every axis gets x."""
    middle = [slice(None)]
    for axis, (b, a) in enumerate(pads, start=1):
        n = out.shape[axis]
        if b:
            out[(*middle, slice(0, b))] = constant
        if a:
            out[(*middle, slice(n - a, n))] = constant
        middle.append(slice(b, n - a))
    out[tuple(middle)] = x
