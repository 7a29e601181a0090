"""The depthwise convolution's loops, compiled by numba when it is installed
(aioflow/kernels/jit.py): a block of output rows in one pass instead of a NumPy multiply and add
pass over the block per tap. With column stride 1 (most depthwise layers) each output row
is accumulated in place, tap by tap, each tap one long contiguous multiply-add; otherwise
each output pixel's window taps are summed into a channel vector. Positions outside the
input are zeros (padding), read as skipped taps, so no padded copy is made. Plain
indexing on C-contiguous arrays, so that LLVM vectorizes the channel loop."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.jit import njit


def _rows_m1(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left):
    """out[b, r0:r1] for channel multiplier 1 and column stride > 1: x (N, H, W, C),
    w (kh, kw, C)."""
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


def _rows_m1_s1(x, wrow, out, b, r0, r1, sh, dh, dw, top, left):
    """out[b, r0:r1] for channel multiplier 1 and column stride 1: wrow (kh, kw, ow*C) holds
    each tap's weights tiled along an output row.

    Each output row is accumulated in place (it stays in cache), one tap at a time: the
    tap's input columns under the row are one contiguous run of (hi - lo)*C elements, so
    the tap is one long multiply-add loop over 0-based slices (which LLVM vectorizes;
    offset indexing and per-pixel loops of C elements were 2x slower)."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    kh, kw = wrow.shape[0], wrow.shape[1]
    ow = out.shape[2]
    for y in range(r0, r1):
        orow = out[b, y].reshape(-1)
        orow[:] = 0
        for i in range(kh):
            iy = y * sh + i * dh - top
            if iy < 0 or iy >= h:
                continue
            xrow = x[b, iy].reshape(-1)
            for j in range(kw):
                off = j * dw - left
                # Output columns [lo, hi) whose input column xo + off lies inside the row.
                lo = -off if off < 0 else 0
                hi = min(ow, wd - off)
                if hi <= lo:
                    continue
                n = (hi - lo) * c
                acc = orow[lo * c:lo * c + n]
                src = xrow[(lo + off) * c:(lo + off) * c + n]
                wv = wrow[i, j, lo * c:lo * c + n]
                for k in range(n):
                    acc[k] += src[k] * wv[k]


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
_compiled_m1_s1 = njit(_rows_m1_s1)
_compiled = njit(_rows)


def row_weights(w, ow: int):
    """The (kh, kw, ow*C) weights depthwise_rows wants for column stride 1 and channel
    multiplier 1 (each tap's weights tiled along an output row), else None."""
    if w.shape[3] != 1:
        return None
    kh, kw, c = w.shape[0], w.shape[1], w.shape[2]
    tiled = np.broadcast_to(w[:, :, None, :, 0], (kh, kw, ow, c))
    return np.ascontiguousarray(tiled).reshape(kh, kw, ow * c)


def depthwise_rows(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left, wrow=None) -> None:
    """out[b, r0:r1] of the depthwise convolution of x (N, H, W, C) with w (kh, kw, C, M),
    both C-contiguous, of out's dtype; wrow: row_weights(w, ow) when sw == 1 (made here
    when not given)."""
    if w.shape[3] == 1 and sw == 1:
        if wrow is None:
            wrow = row_weights(w, out.shape[2])
        _compiled_m1_s1(x, wrow, out, b, r0, r1, sh, dh, dw, top, left)
    elif w.shape[3] == 1:
        _compiled_m1(x, np.ascontiguousarray(w[:, :, :, 0]), out, b, r0, r1, sh, sw, dh, dw,
                     top, left)
    else:
        _compiled(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left)


def available() -> bool:
    """Whether numba can compile these loops (else the caller keeps its NumPy path)."""
    return _compiled is not None


def ready(multiplier: int, col_stride: int = 1) -> bool:
    """Whether a call with this channel multiplier and column stride runs without
    compiling first."""
    fn = (_compiled if multiplier != 1 else _compiled_m1_s1 if col_stride == 1
          else _compiled_m1)
    return fn is not None and fn.ready()
