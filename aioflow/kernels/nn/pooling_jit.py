"""Pooling's loops, compiled by numba when it is installed (aioflow/kernels/jit.py): each output
pixel the maximum, or the mean, of its window's taps inside the input, read straight from
the unpadded input (positions outside are skipped: padding never wins a max and is not
counted in a mean), instead of a padded, stride-split copy of the input and one NumPy pass
per tap. One loop serves 2-D and 3-D pooling: a 2-D input is the 3-D one with depth 1.
Channels are the inner loop over 0-based slices, which LLVM vectorizes. NaN wins a max,
as np.maximum's (the NumPy path's) does; a mean is the sum of the taps divided by their
count, as TF's CPU kernels divide.

The loops compile on a daemon thread (aioflow/kernels/background_jit.py): callers run NumPy until
`ready()`."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _window_rows(x, out, b, r0, r1, kd, kh, kw, sd, sh, sw, front, top, left, op):
    """out[b] rows r0:r1 (row r: plane r // OH, row r % OH) of the pooling of x
    (N, D, H, W, C), window kd x kh x kw; op 0: max, 1: mean.

    Separably: the window's kd x kh input rows are reduced into one row first (long
    contiguous passes), then each output pixel reduces kw pixels of that row; the window
    is clipped to the input, so the padding is never read."""
    d, h, wd, c = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    oh, ow = out.shape[2], out.shape[3]
    # Only the input columns some window covers are reduced.
    c0 = max(0, -left)
    c1 = min(wd, (ow - 1) * sw - left + kw)
    if c1 <= c0:
        c0 = c1 = 0
    row = np.empty(max(c1 - c0, 1) * c, out.dtype)
    pixels = row.reshape(max(c1 - c0, 1), c)
    for r in range(r0, r1):
        z = r // oh
        y = r - z * oh
        iz0 = z * sd - front
        iz1 = min(iz0 + kd, d)
        iz0 = max(iz0, 0)
        iy0 = y * sh - top
        iy1 = min(iy0 + kh, h)
        iy0 = max(iy0, 0)
        orow = out[b, z, y]
        if iz0 >= iz1 or iy0 >= iy1 or c1 <= c0:  # no tap inside: the padding's -inf
            for xo in range(ow):
                acc = orow[xo]
                for ch in range(c):
                    acc[ch] = -np.inf
            continue
        n = (c1 - c0) * c
        first = x[b, iz0, iy0, c0:c1].reshape(n)
        for i in range(n):
            row[i] = first[i]
        for iz in range(iz0, iz1):
            for iy in range(iy0, iy1):
                if iz == iz0 and iy == iy0:
                    continue
                src = x[b, iz, iy, c0:c1].reshape(n)
                if op == 0:
                    for i in range(n):
                        v = src[i]
                        a = row[i]
                        row[i] = v if (v > a or v != v) else a
                else:
                    for i in range(n):
                        row[i] += src[i]
        taps = (iz1 - iz0) * (iy1 - iy0)
        for xo in range(ow):
            ix0 = xo * sw - left
            ix1 = min(ix0 + kw, wd)
            ix0 = max(ix0, 0)
            acc = orow[xo]
            if ix0 >= ix1:
                for ch in range(c):
                    acc[ch] = -np.inf
                continue
            p = pixels[ix0 - c0]
            for ch in range(c):
                acc[ch] = p[ch]
            for ix in range(ix0 + 1, ix1):
                p = pixels[ix - c0]
                if op == 0:
                    for ch in range(c):
                        v = p[ch]
                        a = acc[ch]
                        acc[ch] = v if (v > a or v != v) else a
                else:
                    for ch in range(c):
                        acc[ch] += p[ch]
            if op == 1:
                count = acc.dtype.type(taps * (ix1 - ix0))
                for ch in range(c):
                    acc[ch] = np.divide(acc[ch], count)


_compiled = njit(_window_rows)
TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _warm_up() -> None:
    for t in TYPES:
        x = np.zeros((1, 1, 1, 1, 1), t)
        _compiled(x, np.empty_like(x), 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0)


_group = BackgroundCompile("pooling", _warm_up, _compiled is not None)


def available() -> bool:
    """Whether numba can compile the loops (else the caller keeps its NumPy path)."""
    return _compiled is not None


def ready() -> bool:
    """Whether the loops are compiled for float32 and float64 (callers run NumPy until
    then, and call compile_in_background)."""
    return _group.ready()


def compile_in_background() -> None:
    """Compile the loops on a daemon thread, once (callers never wait for it)."""
    _group.start()


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests); whether the loops compiled."""
    return _group.wait_ready(timeout)


def pool_rows(op: str, x, out, b, r0, r1, ksizes, strides, pads) -> None:
    """out[b] rows r0:r1 (over the flattened output depth x height) of the "max" or
    "avg" pooling of x (N, D, H, W, C), C-contiguous float32/64; out (N, OD, OH, OW, C);
    ksizes, strides: 3 each; pads: the 3 leading paddings."""
    (kd, kh, kw), (sd, sh, sw), (front, top, left) = ksizes, strides, pads
    _compiled(x, out, b, r0, r1, kd, kh, kw, sd, sh, sw, front, top, left,
              0 if op == "max" else 1)
