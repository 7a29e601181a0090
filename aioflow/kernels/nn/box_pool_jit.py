"""Stride-1 average pooling as a separable box filter, compiled by numba
(aioflow/kernels/jit.py): channels-last float32/64, 2-D (a 3-D pooling of depth 1) or 3-D.

A window's sum is taken one axis at a time: each output plane first sums its window's
input planes (depth), each output row then sums that plane's window rows (height), and
each output pixel sums its window's pixels of that row (width): (kd - 1) + (kh - 1) +
(kw - 1) adds an output element instead of the kd * kh * kw - 1 of a direct window sum,
every pass a long contiguous loop over channels that LLVM vectorizes. Windows are
clipped to the input (the padding is never read) and the sum is scaled by the
reciprocal of the taps inside (TF's AvgPool counts only those under SAME padding; the
product is within a rounding of TF's quotient). Used for the stride-1 average
poolings that measure faster this way than on oneDNN's primitive
(aioflow/kernels/onednn/box_pool.py says which: 3x3x3 video pools).

The loop compiles on a daemon thread (aioflow/kernels/background_jit.py): callers keep
their other path until `ready()`."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _sum_slices(dst, src, first, step, taps, n, scale):
    """dst[:n] = scale * the sum of src[first + t * step:][:n] over t < taps (up to
    three taps in one pass; more in passes of one tap each, scaled in the last)."""
    a = src[first:first + n]
    if taps == 1:
        for i in range(n):
            dst[i] = a[i] * scale
        return
    b = src[first + step:first + step + n]
    if taps == 2:
        for i in range(n):
            dst[i] = (a[i] + b[i]) * scale
        return
    e = src[first + 2 * step:first + 2 * step + n]
    if taps == 3:
        for i in range(n):
            dst[i] = (a[i] + b[i] + e[i]) * scale
        return
    for i in range(n):
        dst[i] = a[i] + b[i] + e[i]
    for t in range(3, taps - 1):
        b = src[first + t * step:first + t * step + n]
        for i in range(n):
            dst[i] += b[i]
    b = src[first + (taps - 1) * step:first + taps * step + n - step]
    for i in range(n):
        dst[i] = (dst[i] + b[i]) * scale


def _box_planes(x, out, u0, u1, kd, kh, kw, front, top, left):
    """Output planes u0:u1 (unit u: batch u // OD, plane u % OD) of the stride-1 average
    pooling of x (N, D, H, W, C) into out (N, OD, OH, OW, C), window kd x kh x kw, the
    leading paddings front, top, left."""
    d, h, w, c = x.shape[1], x.shape[2], x.shape[3], x.shape[4]
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    plane_n, row_n = h * w * c, w * c
    flat = x.reshape(x.size)
    plane = np.empty(plane_n, x.dtype)
    row = np.empty(row_n, x.dtype)
    one = x.dtype.type(1.0)
    # Output columns whose window lies inside the input: one long pass per row.
    xa = min(max(left, 0), ow)
    xb = max(min(w - kw + 1 + left, ow), xa)
    for u in range(u0, u1):
        b = u // od
        z = u - b * od
        iz0 = z - front
        iz1 = min(iz0 + kd, d)
        iz0 = max(iz0, 0)
        # The window's planes summed (the input's own plane when there is one).
        src, first = flat, (b * d + iz0) * plane_n
        if iz1 - iz0 > 1:
            _sum_slices(plane, flat, first, plane_n, iz1 - iz0, plane_n, one)
            src, first = plane, 0
        dst = out[b, z].reshape(oh * ow * c)
        for y in range(oh):
            iy0 = y - top
            iy1 = min(iy0 + kh, h)
            iy0 = max(iy0, 0)
            _sum_slices(row, src, first + iy0 * row_n, row_n, iy1 - iy0, row_n, one)
            taps_dh = (iz1 - iz0) * (iy1 - iy0)
            o = y * ow * c
            if xb > xa:
                n = (xb - xa) * c
                scale = x.dtype.type(1.0 / (taps_dh * kw))
                _sum_slices(dst[o + xa * c:o + xb * c], row, (xa - left) * c, c, kw, n, scale)
            for xo in range(ow):
                if xa <= xo < xb:
                    continue
                ix0 = xo - left
                ix1 = min(ix0 + kw, w)
                ix0 = max(ix0, 0)
                scale = x.dtype.type(1.0 / (taps_dh * (ix1 - ix0)))
                _sum_slices(dst[o + xo * c:o + (xo + 1) * c], row, ix0 * c, c, ix1 - ix0,
                            c, scale)


_compiled = njit(_box_planes, helpers=(_sum_slices,), error_model="numpy")
TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _warm_up() -> None:
    for t in TYPES:
        x = np.zeros((1, 1, 1, 1, 1), t)
        _compiled(x, np.empty_like(x), 0, 1, 1, 1, 1, 0, 0, 0)


_group = BackgroundCompile("box-pool", _warm_up, _compiled is not None)


def available() -> bool:
    """Whether numba can compile the loop (else callers keep their other path)."""
    return _compiled is not None


def ready() -> bool:
    """Whether the loop is compiled (callers keep their other path until then, and call
    compile_in_background)."""
    return _group.ready()


def compile_in_background() -> None:
    """Compile the loop on a daemon thread, once (callers never wait for it)."""
    _group.start()


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def box_planes(x5, out5, u0: int, u1: int, ksizes, pads) -> None:
    """Output planes u0:u1 (over batch x output depth) of the stride-1 average pooling of
    x5 (N, D, H, W, C), C-contiguous float32/64, into out5 (N, OD, OH, OW, C); ksizes:
    3; pads: the 3 leading paddings (a window's out-of-input taps are not counted)."""
    (kd, kh, kw), (front, top, left) = ksizes, pads
    _compiled(x5, out5, u0, u1, kd, kh, kw, front, top, left)
