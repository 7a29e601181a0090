"""2-D max pooling's gradient loops, compiled by numba when it is installed
(kernels/jit.py): the argmax pass walks the input as TF's CPU kernel does (input rows,
then columns, each pixel offered to the outputs whose window holds it; an output takes
an offer strictly larger than what it holds, or its first one), so ties and NaNs pick
TF's position; the gradient then adds each output's gradient at its argmax. MaxPoolGradGrad
takes, per window and channel, the gradient at the first input equal to orig_output (TF's
rule). One image per call (images are shared among threads).

The loops compile on a daemon thread (kernels/background_jit.py): callers run NumPy until
`usable()` says they are compiled."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _argmax_image(x, b, kh, kw, sh, sw, top, left, out, arg):
    """out[b], arg[b] (N, oh, ow, C): the max of each window of image b of x (N, H, W, C)
    and its position in the image, (h * W + w) * C + c; arg -1 where no input is under
    the window."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    ob = out[b]
    ab = arg[b]
    for i in range(oh):
        for j in range(ow):
            for ch in range(c):
                ab[i, j, ch] = -1
    for y in range(h):
        hp = y + top
        p0 = 0 if hp < kh else (hp - kh) // sh + 1
        p1 = min(hp // sh + 1, oh)
        for xx in range(wd):
            wp = xx + left
            q0 = 0 if wp < kw else (wp - kw) // sw + 1
            q1 = min(wp // sw + 1, ow)
            src = x[b, y, xx]
            base = (y * wd + xx) * c
            for p in range(p0, p1):
                for q in range(q0, q1):
                    o = ob[p, q]
                    a = ab[p, q]
                    for ch in range(c):
                        v = src[ch]
                        if a[ch] < 0 or o[ch] < v:
                            o[ch] = v
                            a[ch] = base + ch


def _scatter_image(arg, grad, dx, b):
    """dx[b] (H, W, C) += grad[b] at arg[b] (positions in the image; -1 skipped)."""
    flat = dx[b].reshape(-1)
    a = arg[b].reshape(-1)
    g = grad[b].reshape(-1)
    for i in range(a.shape[0]):
        k = a[i]
        if k >= 0:
            flat[k] += g[i]


def _first_equal_image(x, y, gg, out, b, kh, kw, sh, sw, top, left):
    """out[b] (N, oh, ow, C): for each window of image b, gg at the first input position
    (row-major window order) equal to y, per channel; 0 where none is (MaxPoolGradGrad)."""
    h, wd, c = x.shape[1], x.shape[2], x.shape[3]
    oh, ow = out.shape[1], out.shape[2]
    found = np.empty(c, np.bool_)
    for p in range(oh):
        y0 = p * sh - top
        y1 = min(y0 + kh, h)
        y0 = max(y0, 0)
        for q in range(ow):
            x0 = q * sw - left
            x1 = min(x0 + kw, wd)
            x0 = max(x0, 0)
            o = out[b, p, q]
            want = y[b, p, q]
            for ch in range(c):
                o[ch] = 0
                found[ch] = False
            for iy in range(y0, y1):
                for ix in range(x0, x1):
                    src = x[b, iy, ix]
                    g = gg[b, iy, ix]
                    for ch in range(c):
                        if not found[ch] and src[ch] == want[ch]:
                            o[ch] = g[ch]
                            found[ch] = True


_argmax_compiled = njit(_argmax_image)
_first_equal_compiled = njit(_first_equal_image)
_scatter_compiled = njit(_scatter_image)
TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _warm_up() -> None:
    for t in TYPES:
        x = np.zeros((1, 1, 1, 1), t)
        arg = np.zeros((1, 1, 1, 1), np.int64)
        _argmax_compiled(x, 0, 1, 1, 1, 1, 0, 0, np.empty_like(x), arg)
        _scatter_compiled(arg, x, np.zeros_like(x), 0)
        _first_equal_compiled(x, x, x, np.empty_like(x), 0, 1, 1, 1, 1, 0, 0)


_group = BackgroundCompile("pooling-grad", _warm_up, _argmax_compiled is not None)


def usable(dtype) -> bool:
    """Whether the compiled loops run now for this dtype (else the caller runs NumPy; the
    compile is started in the background, never waited for)."""
    if _argmax_compiled is None or np.dtype(dtype) not in TYPES:
        return False
    if _group.ready():
        return True
    _group.start()
    return False


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def argmax_image(x, b, ksize, strides, pads, out, arg) -> None:
    """Image b's window maxima and their positions into out, arg (see _argmax_image)."""
    _argmax_compiled(x, b, ksize[0], ksize[1], strides[0], strides[1], pads[0], pads[1],
                     out, arg)


def scatter_image(arg, grad, dx, b) -> None:
    """dx[b] += grad[b] at the image positions arg[b]."""
    _scatter_compiled(arg, grad, dx, b)


def first_equal_image(x, y, gg, out, b, ksize, strides, pads) -> None:
    """out[b]: image b's MaxPoolGradGrad (see _first_equal_image)."""
    _first_equal_compiled(x, y, gg, out, b, ksize[0], ksize[1], strides[0], strides[1],
                          pads[0], pads[1])
