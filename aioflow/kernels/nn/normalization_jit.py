"""Normalisation's loops, compiled by numba when it is installed (aioflow/kernels/jit.py):
FusedBatchNorm at inference as one pass (x * scale + shift per channel, instead of NumPy's
multiply into a new array and add in place: two passes and a temporary), and LRN as one
pass per pixel (the squares, the window's sum over neighbouring channels and the power, in
cache; NumPy's path makes a cumulative sum, a gather and a power of whole arrays). Same
float32 operations in the same order as the NumPy paths, up to the order of the window's
sum (here tap by tap, as TF's), and beta = 0.75 as two square roots.

FusedBatchNorm in training, channels last, as three passes over (rows, C) rows with the
channels as the inner, vectorized loop: the per-channel sum of x (float64), the sum of
the float32 squares of x - mean (float64), and y = (x - mean) * inv + offset (float32),
the NumPy path's operations (which reduce over the outer axes of an NHWC tensor with
float64 temporaries: 1.7 ms against ~0.2 here for 32x28x28x16).

The loops compile on a daemon thread (aioflow/kernels/background_jit.py): callers run NumPy until
`ready()`."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _scale_shift_rows(x, y, scale, shift, r0, r1):
    """y[r] = x[r] * scale + shift for rows r0:r1 of x (rows, C): channels last."""
    c = x.shape[1]
    for r in range(r0, r1):
        src = x[r]
        dst = y[r]
        for ch in range(c):
            dst[ch] = src[ch] * scale[ch] + shift[ch]


def _scale_shift_planes(x, y, scale, shift, p0, p1):
    """y[p] = x[p] * scale[p % C] + shift[p % C] for planes p0:p1 of x (N * C, spatial):
    channels first."""
    c = scale.shape[0]
    n = x.shape[1]
    for p in range(p0, p1):
        s = scale[p % c]
        b = shift[p % c]
        src = x[p]
        dst = y[p]
        for i in range(n):
            dst[i] = src[i] * s + b


def _lrn_rows(x, y, r0, r1, radius, bias, alpha, beta, mode):
    """y[r] for rows r0:r1 of x (pixels, depth): x / (bias + alpha * sum of squares over
    channels ch - radius .. ch + radius) ** beta; mode 0: beta 0.5, 1: beta 1, 2: beta
    0.75, 3: any other beta."""
    depth = x.shape[1]
    sq = np.empty(depth, x.dtype)
    win = np.empty(depth, x.dtype)
    reach = min(radius, depth - 1)
    for r in range(r0, r1):
        src = x[r]
        dst = y[r]
        for ch in range(depth):
            sq[ch] = src[ch] * src[ch]
            win[ch] = 0
        for d in range(-reach, reach + 1):
            lo = max(0, -d)
            hi = min(depth, depth - d)
            acc = win[lo:hi]
            add = sq[lo + d:hi + d]
            for i in range(hi - lo):
                acc[i] += add[i]
        # One loop per beta (a branch inside the loop would keep it from vectorizing;
        # so would `/`, which checks for a zero divisor: np.divide does not).
        if mode == 0:
            for ch in range(depth):
                dst[ch] = np.divide(src[ch], np.sqrt(bias + alpha * win[ch]))
        elif mode == 1:
            for ch in range(depth):
                dst[ch] = np.divide(src[ch], bias + alpha * win[ch])
        elif mode == 2:
            for ch in range(depth):
                root = np.sqrt(bias + alpha * win[ch])
                dst[ch] = np.divide(src[ch], root * np.sqrt(root))
        else:
            for ch in range(depth):
                dst[ch] = src[ch] * (bias + alpha * win[ch]) ** -beta


def _sum_rows(x, r0, r1, acc):
    """acc[c] += x[r, c] for rows r0:r1 of x (rows, C), acc float64."""
    c = x.shape[1]
    for r in range(r0, r1):
        src = x[r]
        for ch in range(c):
            acc[ch] += src[ch]


def _centered_squares_rows(x, mean, r0, r1, acc):
    """acc[c] += (x[r, c] - mean[c]) ** 2 (the square in float32, as NumPy's np.square
    of the float32 difference) for rows r0:r1, acc float64."""
    c = x.shape[1]
    for r in range(r0, r1):
        src = x[r]
        for ch in range(c):
            d = src[ch] - mean[ch]
            acc[ch] += d * d


def _normalize_rows(x, y, mean, inv, offset, r0, r1):
    """y[r] = (x[r] - mean) * inv + offset for rows r0:r1 (float32, channels last)."""
    c = x.shape[1]
    for r in range(r0, r1):
        src = x[r]
        dst = y[r]
        for ch in range(c):
            dst[ch] = (src[ch] - mean[ch]) * inv[ch] + offset[ch]


_compiled_rows = njit(_scale_shift_rows)
_compiled_sum = njit(_sum_rows)
_compiled_squares = njit(_centered_squares_rows)
_compiled_normalize = njit(_normalize_rows)
_compiled_planes = njit(_scale_shift_planes)
_compiled_lrn = njit(_lrn_rows)


def _warm_up() -> None:
    x = np.zeros((1, 1), np.float32)
    c = np.ones(1, np.float32)
    _compiled_rows(x, np.empty_like(x), c, c, 0, 1)
    _compiled_planes(x, np.empty_like(x), c, c, 0, 1)
    one = np.float32(1)
    _compiled_lrn(x, np.empty_like(x), 0, 1, 1, one, one, one, 0)
    acc = np.zeros(1)
    _compiled_sum(x, 0, 1, acc)
    _compiled_squares(x, c, 0, 1, acc)
    _compiled_normalize(x, np.empty_like(x), c, c, c, 0, 1)


_group = BackgroundCompile("normalization", _warm_up, _compiled_rows is not None)


def available() -> bool:
    """Whether numba can compile the loops (else the callers keep their NumPy paths)."""
    return _compiled_rows is not None


def ready() -> bool:
    """Whether the loops are compiled (for float32; callers run NumPy until then, and
    call compile_in_background)."""
    return _group.ready()


def compile_in_background() -> None:
    """Compile the loops on a daemon thread, once (callers never wait for it)."""
    _group.start()


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests); whether the loops compiled."""
    return _group.wait_ready(timeout)


def scale_shift(x, y, scale, shift, start, stop, channels_last: bool) -> None:
    """y = x * scale + shift over rows (channels last: x (rows, C)) or planes (channels
    first: x (N * C, spatial)) start:stop; float32, C-contiguous."""
    fn = _compiled_rows if channels_last else _compiled_planes
    fn(x, y, scale, shift, start, stop)


def lrn_rows(x, y, start, stop, radius: int, bias, alpha, beta) -> None:
    """LRN of rows start:stop of x (pixels, depth), float32, into y."""
    mode = 0 if beta == 0.5 else 1 if beta == 1.0 else 2 if beta == 0.75 else 3
    t = np.float32
    _compiled_lrn(x, y, start, stop, max(radius, -1), t(bias), t(alpha), t(beta), mode)


def channel_sum(x, start, stop, acc) -> None:
    """acc (float64, C) += the per-channel sum of rows start:stop of x (rows, C)."""
    _compiled_sum(x, start, stop, acc)


def centered_squares(x, mean, start, stop, acc) -> None:
    """acc (float64, C) += the per-channel sum of float32 (x - mean) ** 2 over rows
    start:stop of x (rows, C); mean float32."""
    _compiled_squares(x, mean, start, stop, acc)


def normalize(x, y, mean, inv, offset, start, stop) -> None:
    """y = (x - mean) * inv + offset over rows start:stop of x (rows, C), float32."""
    _compiled_normalize(x, y, mean, inv, offset, start, stop)
