"""The resizing gradients' loop, compiled by numba when it is installed
(kernels/jit.py): as TF's CPU kernels walk it, each gradient pixel adds itself, times
its taps' weights, into the original pixels it was interpolated from; channels are the
inner loop over contiguous pixels. One loop serves nearest (1 tap an axis), bilinear (2)
and bicubic (4); one image per call (images are shared among threads).

The loop compiles on a daemon thread (kernels/background_jit.py): callers run NumPy until
`usable()` says it is compiled."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _image(g, out, b, yi, yw, xi, xw):
    """out[b] += each pixel of g[b] (h, w, C) times yw[t, y] * xw[u, x] at (yi[t, y],
    xi[u, x]) for every tap pair (t, u); out float32 (N, H, W, C), zeroed by the caller."""
    h, w, c = g.shape[1], g.shape[2], g.shape[3]
    ty, tx = yi.shape[0], xi.shape[0]
    for y in range(h):
        for x in range(w):
            src = g[b, y, x]
            for t in range(ty):
                wy = yw[t, y]
                row = out[b, yi[t, y]]
                for u in range(tx):
                    weight = wy * xw[u, x]
                    dst = row[xi[u, x]]
                    for ch in range(c):
                        dst[ch] += src[ch] * weight


_compiled = njit(_image)


def _warm_up() -> None:
    g = np.zeros((1, 1, 1, 1), np.float32)
    idx = np.zeros((1, 1), np.int64)
    wgt = np.ones((1, 1), np.float32)
    _compiled(g, np.zeros_like(g), 0, idx, wgt, idx, wgt)


_group = BackgroundCompile("resize-grad", _warm_up, _compiled is not None)


def usable() -> bool:
    """Whether the compiled loop runs now (else the caller runs NumPy; the compile is
    started in the background, never waited for)."""
    if _compiled is None:
        return False
    if _group.ready():
        return True
    _group.start()
    return False


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def image(g, out, b, yi, yw, xi, xw) -> None:
    """out[b] += g[b]'s pixels spread over their taps (see _image)."""
    _compiled(g, out, b, yi, yw, xi, xw)
