"""The depthwise convolution's loops, compiled by numba when it is installed
(kernels/jit.py): a block of output rows in one pass, each output pixel's window taps
summed into a channel vector, instead of a NumPy multiply and add pass over the block per
tap. Positions outside the input are zeros (padding), read as skipped taps, so no padded
copy is made. Plain indexing on C-contiguous arrays, so that LLVM vectorizes the channel
loop."""

from __future__ import annotations

import numpy as np

from .jit import njit


def _rows_m1(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left):
    """out[b, r0:r1] for channel multiplier 1: x (N, H, W, C), w (kh, kw, C)."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = w.shape[0], w.shape[1]
    ow = out.shape[2]
    acc = np.empty(c, out.dtype)
    for y in range(r0, r1):
        for xo in range(ow):
            acc[:] = 0
            for i in range(kh):
                iy = y * sh + i * dh - top
                if iy < 0 or iy >= h:
                    continue
                for j in range(kw):
                    ix = xo * sw + j * dw - left
                    if ix < 0 or ix >= wd:
                        continue
                    for ch in range(c):
                        acc[ch] += x[b, iy, ix, ch] * w[i, j, ch]
            for ch in range(c):
                out[b, y, xo, ch] = acc[ch]


def _rows(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left):
    """out[b, r0:r1] for any channel multiplier M: x (N, H, W, C), w (kh, kw, C, M);
    output channel c*M + q reads input channel c."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    kh, kw, m = w.shape[0], w.shape[1], w.shape[3]
    ow = out.shape[2]
    acc = np.empty(c * m, out.dtype)
    for y in range(r0, r1):
        for xo in range(ow):
            acc[:] = 0
            for i in range(kh):
                iy = y * sh + i * dh - top
                if iy < 0 or iy >= h:
                    continue
                for j in range(kw):
                    ix = xo * sw + j * dw - left
                    if ix < 0 or ix >= wd:
                        continue
                    for ch in range(c):
                        v = x[b, iy, ix, ch]
                        for q in range(m):
                            acc[ch * m + q] += v * w[i, j, ch, q]
            for k in range(c * m):
                out[b, y, xo, k] = acc[k]


_compiled_m1 = njit(_rows_m1)
_compiled = njit(_rows)


def depthwise_rows(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left) -> None:
    """out[b, r0:r1] of the depthwise convolution of x (N, H, W, C) with w (kh, kw, C, M),
    both C-contiguous, of out's dtype."""
    if w.shape[3] == 1:
        _compiled_m1(x, np.ascontiguousarray(w[:, :, :, 0]), out, b, r0, r1, sh, sw, dh, dw,
                     top, left)
    else:
        _compiled(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left)


def available() -> bool:
    """Whether numba can compile these loops (else the caller keeps its NumPy path)."""
    return _compiled is not None


def ready(multiplier: int) -> bool:
    """Whether a call with this channel multiplier runs without compiling first."""
    fn = _compiled_m1 if multiplier == 1 else _compiled
    return fn is not None and fn.ready()
