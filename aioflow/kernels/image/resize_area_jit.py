"""ResizeArea's two passes, compiled by numba when it is installed (aioflow/kernels/jit.py):
the same float32 sums as the NumPy path of resize_area_kernels.py, in the same order,
without its per-tap passes over the whole batch (a gather, a multiply and an add per tap,
each a pass over memory: 2.2 ms against TF's 0.39 for 512x512 -> 300x200).

Columns first: for every input row, each output column's sum from +0 of its used taps'
pixels times their weights, in tap order (three channels, or four at a time of a
multiple of four, summed side by side: one running sum at a time waits on each add's
latency); then per output row the sum from +0 of those row sums times the rows'
weights, in tap order, times the scale. Unused taps are
skipped, as the NumPy path skips them (or adds them times 0, which leaves a sum that
started from +0 as it is when every pixel is finite). No fused multiply-add: numba
compiles without fast-math, so each product is rounded to float32 before it is added,
as NumPy's separate passes and TF's kernel round it.

The loops compile on a daemon thread (aioflow/kernels/background_jit.py): the kernel runs
NumPy until `ready()`."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _columns(img, idx, w, count, out):
    """out[b, y, x] = sum over k < count[x] of img[b, y, idx[x, k]] * w[x, k], per
    channel; img (N, H, W, C) float32, out (N, H, OW, C) float32; idx, w [out, taps]."""
    n, h, wd, ch = img.shape[0], img.shape[1], img.shape[2], img.shape[3]
    ow = out.shape[2]
    for b in range(n):
        for y in range(h):
            src = img[b, y].reshape(wd * ch)
            dst = out[b, y].reshape(ow * ch)
            for x in range(ow):
                ix = idx[x]
                wx = w[x]
                for c in range(ch):
                    acc = np.float32(0)
                    for k in range(count[x]):
                        acc += src[ix[k] * ch + c] * wx[k]
                    dst[x * ch + c] = acc


def _columns_quad(img, idx, w, count, out):
    """_columns for a multiple of 4 channels, four summed side by side."""
    n, h, wd, ch = img.shape[0], img.shape[1], img.shape[2], img.shape[3]
    ow = out.shape[2]
    for b in range(n):
        for y in range(h):
            src = img[b, y].reshape(wd * ch)
            dst = out[b, y].reshape(ow * ch)
            for x in range(ow):
                ix = idx[x]
                wx = w[x]
                for c in range(0, ch, 4):
                    s0 = np.float32(0)
                    s1 = np.float32(0)
                    s2 = np.float32(0)
                    s3 = np.float32(0)
                    for k in range(count[x]):
                        at = ix[k] * ch + c
                        wk = wx[k]
                        s0 += src[at] * wk
                        s1 += src[at + 1] * wk
                        s2 += src[at + 2] * wk
                        s3 += src[at + 3] * wk
                    d = x * ch + c
                    dst[d] = s0
                    dst[d + 1] = s1
                    dst[d + 2] = s2
                    dst[d + 3] = s3


def _columns_rgb(img, idx, w, count, out):
    """_columns for 3 channels, summed side by side (one running sum at a time waits on
    each add's latency: 2.5x slower at 512x512 -> 300x200)."""
    n, h, wd = img.shape[0], img.shape[1], img.shape[2]
    ow = out.shape[2]
    for b in range(n):
        for y in range(h):
            src = img[b, y].reshape(wd * 3)
            dst = out[b, y].reshape(ow * 3)
            for x in range(ow):
                ix = idx[x]
                wx = w[x]
                r = np.float32(0)
                g = np.float32(0)
                bl = np.float32(0)
                for k in range(count[x]):
                    at = ix[k] * 3
                    wk = wx[k]
                    r += src[at] * wk
                    g += src[at + 1] * wk
                    bl += src[at + 2] * wk
                dst[3 * x] = r
                dst[3 * x + 1] = g
                dst[3 * x + 2] = bl


def _rows(summed, idx, w, count, scale, out):
    """out[b, y] = (sum over k < count[y] of summed[b, idx[k, y]] * w[k, y]) * scale;
    summed (N, H, OW, C) float32, out (N, OH, OW, C) float32."""
    n, oh = out.shape[0], out.shape[1]
    size = out.shape[2] * out.shape[3]
    for b in range(n):
        for y in range(oh):
            dst = out[b, y].reshape(size)
            for i in range(size):
                dst[i] = 0
            for k in range(count[y]):
                src = summed[b, idx[k, y]].reshape(size)
                wk = w[k, y]
                for i in range(size):
                    dst[i] += src[i] * wk
            for i in range(size):
                dst[i] *= scale


_columns_compiled = njit(_columns)
_columns_rgb_compiled = njit(_columns_rgb)
_columns_quad_compiled = njit(_columns_quad)
_rows_compiled = njit(_rows)


def _warm_up() -> None:
    img = np.zeros((1, 1, 1, 1), np.float32)
    idx = np.zeros((1, 1), np.int64)
    w = np.ones((1, 1), np.float32)
    count = np.ones(1, np.int64)
    out = np.empty_like(img)
    _columns_compiled(img, idx, w, count, out)
    rgb = np.zeros((1, 1, 1, 3), np.float32)
    _columns_rgb_compiled(rgb, idx, w, count, np.empty_like(rgb))
    quad = np.zeros((1, 1, 1, 4), np.float32)
    _columns_quad_compiled(quad, idx, w, count, np.empty_like(quad))
    _rows_compiled(out, idx, w, count, np.float32(1), np.empty_like(img))


_group = BackgroundCompile("resize-area", _warm_up, _columns_compiled is not None)


def ready() -> bool:
    """Whether the loops run now (else the caller runs NumPy; the compile is started in
    the background, never waited for)."""
    if _group.ready():
        return True
    _group.start()
    return False


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def resize_area(img: np.ndarray, col_idx, col_w, col_count, row_idx, row_w, row_count,
                scale) -> np.ndarray:
    """The area resize of img (N, H, W, C), C-contiguous float32, through both loops;
    the taps as [taps, out] int64 indices and float32 weights, and each output index's
    count of used taps (its first `count`)."""
    n, h, _, c = img.shape
    ow = col_idx.shape[1]
    summed = np.empty((n, h, ow, c), np.float32)
    columns = _columns_rgb_compiled if c == 3 else \
        _columns_quad_compiled if c % 4 == 0 else _columns_compiled
    columns(img, np.ascontiguousarray(col_idx.T), np.ascontiguousarray(col_w.T), col_count,
            summed)
    out = np.empty((n, row_idx.shape[1], ow, c), np.float32)
    _rows_compiled(summed, row_idx, row_w, row_count, scale, out)
    return out
