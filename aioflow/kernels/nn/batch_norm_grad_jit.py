"""FusedBatchNormGrad's loops, compiled by numba when it is installed (kernels/jit.py):
one pass over a block of channels-last rows for the per-channel sums (sum(dy) and
sum(dy * x), float64 accumulators), one pass writing dx = dy * a + x * b + c, instead of
NumPy's temporaries (x - mean, dy * (x - mean), ...) and float64 reductions. Channels
are the inner loop over C-contiguous rows, which LLVM vectorizes.

The loops compile on a daemon thread (kernels/background_jit.py): callers run NumPy until
`usable()` says they are compiled."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _sums(x, dy, r0, r1, sum_dy, sum_dyx):
    """sum_dy[c] += sum of dy[r, c], sum_dyx[c] += sum of dy[r, c] * x[r, c] over rows
    r0:r1 of (rows, C) float32 arrays, in float64."""
    c = x.shape[1]
    for r in range(r0, r1):
        xr = x[r]
        gr = dy[r]
        for ch in range(c):
            g = np.float64(gr[ch])
            sum_dy[ch] += g
            sum_dyx[ch] += g * xr[ch]


def _apply(x, dy, dx, a, b, k, r0, r1):
    """dx[r] = dy[r] * a + x[r] * b + k per channel, rows r0:r1."""
    c = x.shape[1]
    for r in range(r0, r1):
        xr = x[r]
        gr = dy[r]
        out = dx[r]
        for ch in range(c):
            out[ch] = gr[ch] * a[ch] + xr[ch] * b[ch] + k[ch]


_sums_compiled = njit(_sums)
_apply_compiled = njit(_apply)


def _warm_up() -> None:
    x = np.zeros((1, 1), np.float32)
    acc = np.zeros(1, np.float64)
    _sums_compiled(x, x, 0, 1, acc, acc.copy())
    v = np.zeros(1, np.float32)
    _apply_compiled(x, x, np.empty_like(x), v, v, v, 0, 1)


_group = BackgroundCompile("batch-norm-grad", _warm_up, _sums_compiled is not None)


def usable() -> bool:
    """Whether the compiled loops run now (else the caller runs NumPy; the compile is
    started in the background, never waited for)."""
    if _sums_compiled is None:
        return False
    if _group.ready():
        return True
    _group.start()
    return False


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def sums(x, dy, r0, r1, sum_dy, sum_dyx) -> None:
    """Add rows r0:r1's per-channel sum(dy) and sum(dy * x) into the float64 vectors."""
    _sums_compiled(x, dy, r0, r1, sum_dy, sum_dyx)


def apply(x, dy, dx, a, b, k, r0, r1) -> None:
    """dx = dy * a + x * b + k (per-channel float32 vectors) on rows r0:r1."""
    _apply_compiled(x, dy, dx, a, b, k, r0, r1)
