"""2-D max pooling's loop, compiled by numba when it is installed (kernels/jit.py): each
output pixel the maximum of its window's taps inside the input, read straight from the
unpadded input (positions outside are skipped: padding never wins a max), instead of a
padded, stride-split copy and one NumPy maximum pass per tap. NaN wins, as np.maximum's
(the NumPy path's) does. Channels are the inner loop over 0-based slices, which LLVM
vectorizes."""

from __future__ import annotations

import numpy as np

from .jit import njit


def _max_rows(x, out, b, r0, r1, kh, kw, sh, sw, top, left):
    """out[b, r0:r1] = max pooling of x (N, H, W, C) with a kh x kw window."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    ow = out.shape[2]
    for y in range(r0, r1):
        iy0 = y * sh - top
        iy1 = min(iy0 + kh, h)
        iy0 = max(iy0, 0)
        for xo in range(ow):
            ix0 = xo * sw - left
            ix1 = min(ix0 + kw, wd)
            ix0 = max(ix0, 0)
            acc = out[b, y, xo]
            if iy0 >= iy1 or ix0 >= ix1:  # no tap inside: the padding's lowest value
                acc[:] = -np.inf
                continue
            first = x[b, iy0, ix0]
            for ch in range(c):
                acc[ch] = first[ch]
            for iy in range(iy0, iy1):
                for ix in range(ix0, ix1):
                    src = x[b, iy, ix]
                    for ch in range(c):
                        v = src[ch]
                        a = acc[ch]
                        acc[ch] = v if (v > a or v != v) else a


_compiled = njit(_max_rows)


def available() -> bool:
    """Whether numba can compile the loop (else the caller keeps its NumPy path)."""
    return _compiled is not None


def ready() -> bool:
    """Whether a call runs without compiling first."""
    return _compiled is not None and _compiled.ready()


def max_rows(x, out, b, r0, r1, kh, kw, sh, sw, top, left) -> None:
    """out[b, r0:r1] of the max pooling of x (N, H, W, C), C-contiguous, float32/64."""
    _compiled(x, out, b, r0, r1, kh, kw, sh, sw, top, left)
