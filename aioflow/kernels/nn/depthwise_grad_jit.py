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
    C, M), out (N, H, W, C); each input pixel sums the taps whose window covers it."""
    oh, ow = dy.shape[1], dy.shape[2]
    kh, kw, c, m = w.shape[0], w.shape[1], w.shape[2], w.shape[3]
    wd = out.shape[2]
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
            for ix in range(wd):
                acc = orow[ix]
                for j in range(kw):
                    u = ix + left - j
                    if u < 0 or u % sw != 0:
                        continue
                    ox = u // sw
                    if ox >= ow:
                        continue
                    g = grow[ox]
                    wt = w[i, j]
                    if m == 1:
                        for ch in range(c):
                            acc[ch] += g[ch] * wt[ch, 0]
                    else:
                        for ch in range(c):
                            s = acc[ch]
                            for k in range(m):
                                s += g[ch * m + k] * wt[ch, k]
                            acc[ch] = s


def _filter_rows(x, dy, acc, b, r0, r1, sh, sw, top, left):
    """acc (kh, kw, C, M) += the filter gradient's share of output rows r0:r1 of image b:
    x (N, H, W, C), dy (N, oh, ow, C*M)."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    ow = dy.shape[2]
    kh, kw, m = acc.shape[0], acc.shape[1], acc.shape[3]
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
                            a[ch, 0] += px[ch] * g[ch]
                    else:
                        for ch in range(c):
                            v = px[ch]
                            for k in range(m):
                                a[ch, k] += v * g[ch * m + k]


_input_compiled = njit(_input_rows)
_filter_compiled = njit(_filter_rows)
_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _warm_up() -> None:
    for t in _TYPES:
        dy = np.zeros((1, 1, 1, 1), t)
        w = np.zeros((1, 1, 1, 1), t)
        _input_compiled(dy, w, np.zeros((1, 1, 1, 1), t), 0, 0, 1, 1, 1, 0, 0)
        _filter_compiled(np.zeros((1, 1, 1, 1), t), dy, w, 0, 0, 1, 1, 1, 0, 0)


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
    """Input rows r0:r1 of image b of the depthwise input gradient, into out."""
    _input_compiled(dy, w, out, b, r0, r1, sh, sw, top, left)


def filter_rows(x, dy, acc, b, r0, r1, sh, sw, top, left) -> None:
    """Add output rows r0:r1 of image b's share of the depthwise filter gradient to acc."""
    _filter_compiled(x, dy, acc, b, r0, r1, sh, sw, top, left)
