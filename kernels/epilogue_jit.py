"""The fused ops' epilogue (a bias or a folded batch norm, then Relu or Relu6), compiled by
numba when it is installed (kernels/jit.py): one pass over a block of output while it is
in cache, instead of one NumPy pass per step (multiply, add, maximum, minimum), which cost
more than the depthwise convolution itself (112x112x32: 0.18 ms convolution, +0.4 ms
epilogue). Same operations in the same order as the NumPy path, NaN kept as np.maximum
and np.minimum keep it."""

from __future__ import annotations

from .jit import njit


def _scale_bias_clip(y, scale, bias, lo, hi, use_scale):
    """y (rows, C) in place: (y * scale if use_scale) + bias, clipped to [lo, hi]."""
    rows, c = y.shape
    for r in range(rows):
        row = y[r]
        if use_scale:
            for ch in range(c):
                row[ch] = row[ch] * scale[ch]
        for ch in range(c):
            v = row[ch] + bias[ch]
            if v < lo:
                v = lo
            if v > hi:
                v = hi
            row[ch] = v


_compiled = njit(_scale_bias_clip)


def available() -> bool:
    """Whether numba can compile the loop (else the caller keeps its NumPy path)."""
    return _compiled is not None


def ready() -> bool:
    """Whether a call runs without compiling first."""
    return _compiled is not None and _compiled.ready()


def scale_bias_clip(y, scale, bias, lo: float, hi: float) -> None:
    """y (rows, C), C-contiguous, in place; scale None for a plain bias."""
    t = y.dtype.type  # bounds in the block's type: the loop stays in that type
    if scale is None:
        _compiled(y, bias, bias, t(lo), t(hi), False)
    else:
        _compiled(y, scale, bias, t(lo), t(hi), True)
