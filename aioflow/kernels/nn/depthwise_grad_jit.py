"""The depthwise convolution's gradient loops, compiled by numba when it is installed
(kernels/jit.py): one pass over a block of rows instead of one NumPy multiply-add pass
per window tap. Taps outside the input (the padding) are skipped, so no padded copy is
made. Channels are the inner loop over C-contiguous arrays, which LLVM vectorizes.

The loops compile on a daemon thread (kernels/background_jit.py): callers run NumPy until
`usable()` says they are compiled."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _input_rows(dy, w, out, b, r0, r1, sh, sw, top, left):
    """out[b, r0:r1] (input rows) of the input gradient: dy (N, oh, ow, C*M), w (kh, kw,
    C*M) (the filter's channels flattened), out (N, H, W, C). Each input row sums, over
    the taps whose rows reach it, each tap's outputs times its weights added at the
    input pixels they read (output ox, tap j: pixel ox * sw + j - left); M == 1: one
    multiply-add over the pixel's contiguous channels."""
    oh, ow = dy.shape[1], dy.shape[2]
    kh, kw, cm = w.shape[0], w.shape[1], w.shape[2]
    wd, c = out.shape[2], out.shape[3]
    m = cm // c
    for iy in range(r0, r1):
        orow = out[b, iy]
        orow[:, :] = 0
        for i in range(kh):
            t = iy + top - i
            if t < 0 or t % sh != 0:
                continue
            oy = t // sh
            if oy >= oh:
                continue
            grow = dy[b, oy]
            for j in range(kw):
                wt = w[i, j]
                lo = max(0, -((j - left) // sw))  # outputs whose pixel lies inside
                hi = min(ow, (wd - 1 - j + left) // sw + 1)
                for ox in range(lo, hi):
                    g = grow[ox]
                    acc = orow[ox * sw + j - left]
                    if m == 1:
                        for ch in range(c):
                            acc[ch] += g[ch] * wt[ch]
                    else:
                        for ch in range(c):
                            s = acc[ch]
                            for k in range(m):
                                s += g[ch * m + k] * wt[ch * m + k]
                            acc[ch] = s


def _filter_rows(x, dy, acc, b, r0, r1, sh, sw, top, left):
    """acc (kh, kw, C*M) += the filter gradient's share of output rows r0:r1 of image b:
    x (N, H, W, C), dy (N, oh, ow, C*M). M == 1: each (tap, pixel) one multiply-add over
    the channels (contiguous runs, vectorized)."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    ow = dy.shape[2]
    kh, kw, cm = acc.shape[0], acc.shape[1], acc.shape[2]
    m = cm // c
    for oy in range(r0, r1):
        grow = dy[b, oy]
        for i in range(kh):
            iy = oy * sh + i - top
            if iy < 0 or iy >= h:
                continue
            xrow = x[b, iy]
            for j in range(kw):
                a = acc[i, j]
                for ox in range(ow):
                    ix = ox * sw + j - left
                    if ix < 0 or ix >= wd:
                        continue
                    px = xrow[ix]
                    g = grow[ox]
                    if m == 1:
                        for ch in range(c):
                            a[ch] += px[ch] * g[ch]
                    else:
                        for ch in range(c):
                            v = px[ch]
                            for k in range(m):
                                a[ch * m + k] += v * g[ch * m + k]


def _filter_rows_by_pixel(x, dy, racc, b, r0, r1, sh, sw, top, left):
    """racc (kh, kw, ow*C) += for each tap, the products of output rows r0:r1 of image b
    of dy (N, oh, ow, C) with the input under them, x (N, H, W, C) (channel multiplier
    1): each output pixel's products land in a slot of their own (no multiply-add waits
    on the previous pixel's, as one (C,) accumulator per tap made them), and with column
    stride 1 each row and tap is one long multiply-add over contiguous 0-based runs
    (which LLVM vectorizes). Summing racc over its ow pixels gives the filter gradient."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    ow = dy.shape[2]
    kh, kw = racc.shape[0], racc.shape[1]
    for oy in range(r0, r1):
        grow = dy[b, oy].reshape(-1)
        for i in range(kh):
            iy = oy * sh + i - top
            if iy < 0 or iy >= h:
                continue
            xrow = x[b, iy].reshape(-1)
            for j in range(kw):
                # Output columns whose input column ox * sw + j - left lies inside.
                lo = max(0, -((j - left) // sw))
                hi = min(ow, (wd - 1 - j + left) // sw + 1)
                if hi <= lo:
                    continue
                r = racc[i, j]
                if sw == 1:
                    xs = xrow[(lo + j - left) * c:(hi + j - left) * c]
                    gs = grow[lo * c:hi * c]
                    rs = r[lo * c:hi * c]
                    for k in range(gs.shape[0]):
                        rs[k] += xs[k] * gs[k]
                else:
                    for ox in range(lo, hi):
                        xs = xrow[(ox * sw + j - left) * c:(ox * sw + j - left + 1) * c]
                        gs = grow[ox * c:(ox + 1) * c]
                        rs = r[ox * c:(ox + 1) * c]
                        for k in range(c):
                            rs[k] += xs[k] * gs[k]


_input_compiled = njit(_input_rows)
_filter_pixel_compiled = njit(_filter_rows_by_pixel)
_filter_compiled = njit(_filter_rows)
_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _warm_up() -> None:
    for t in _TYPES:
        dy = np.zeros((1, 1, 1, 1), t)
        w = np.zeros((1, 1, 1), t)
        _input_compiled(dy, w, np.zeros((1, 1, 1, 1), t), 0, 0, 1, 1, 1, 0, 0)
        _filter_compiled(np.zeros((1, 1, 1, 1), t), dy, w, 0, 0, 1, 1, 1, 0, 0)
        _filter_pixel_compiled(np.zeros((1, 1, 1, 1), t), dy, w, 0, 0, 1, 1, 1, 0, 0)


_group = BackgroundCompile("depthwise-grad", _warm_up, _input_compiled is not None)


def usable(dtype) -> bool:
    """Whether the compiled loops run now for this dtype (else the caller runs NumPy; the
    compile is started in the background, never waited for)."""
    if _input_compiled is None or np.dtype(dtype) not in _TYPES:
        return False
    if _group.ready():
        return True
    _group.start()
    return False


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def input_rows(dy, w, out, b, r0, r1, sh, sw, top, left) -> None:
    """Input rows r0:r1 of image b of the depthwise input gradient, into out; w (kh, kw,
    C*M)."""
    _input_compiled(dy, w, out, b, r0, r1, sh, sw, top, left)


def filter_rows(x, dy, acc, b, r0, r1, sh, sw, top, left) -> None:
    """Add output rows r0:r1 of image b's share of the depthwise filter gradient to acc
    (kh, kw, C*M)."""
    _filter_compiled(x, dy, acc, b, r0, r1, sh, sw, top, left)


def filter_rows_by_pixel(x, dy, racc, b, r0, r1, sh, sw, top, left) -> None:
    """Add output rows r0:r1 of image b's per-pixel tap products to racc (kh, kw, ow*C):
    channel multiplier 1."""
    _filter_pixel_compiled(x, dy, racc, b, r0, r1, sh, sw, top, left)
