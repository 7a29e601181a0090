"""Relu and Relu6's loops, compiled by numba when it is installed (aioflow/kernels/jit.py),
over a range of a flat float32/float64 array, so that a large tensor's ranges can be
shared among threads (aioflow/kernels/element_threads.py).

NumPy's maximum against a scalar takes its NaN-propagating path element by element: at
ResNet50's shapes it costs 2-4x a plain copy of the array (one core: 2.0 against 1.1 ms
for 8x56x56x256, 0.25 against 0.07 for 1x56x56x256); these loops run at a copy's
speed. They give what np.maximum gives, bit for bit (TF's values): NaN stays the same
NaN (sign and payload), -0.0 becomes +0.0; Relu6 also clamps at 6.

The loops compile on a daemon thread (aioflow/kernels/background_jit.py): callers run
NumPy until `ready()`."""

from __future__ import annotations

import numpy as np

from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.jit import njit


def _relu(x, out, lo, hi):
    """out[lo:hi] = max(x[lo:hi], 0), NaN kept, -0.0 to +0.0 (x, out 1-D)."""
    xs, ys = x[lo:hi], out[lo:hi]  # 0-based slices: LLVM vectorizes the loop
    zero = x.dtype.type(0)
    for i in range(xs.size):
        v = xs[i]
        ys[i] = v if not v <= zero else zero  # NaN compares false: kept


def _relu6(x, out, lo, hi):
    """out[lo:hi] = min(max(x[lo:hi], 0), 6), NaN kept, -0.0 to +0.0 (x, out 1-D)."""
    xs, ys = x[lo:hi], out[lo:hi]
    zero = x.dtype.type(0)
    six = x.dtype.type(6)
    for i in range(xs.size):
        v = xs[i]
        ys[i] = six if v > six else (v if not v <= zero else zero)


_relu_compiled = njit(_relu)
_relu6_compiled = njit(_relu6)
TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _warm_up() -> None:
    for t in TYPES:
        x = np.zeros(1, t)
        _relu_compiled(x, np.empty_like(x), 0, 1)
        _relu6_compiled(x, np.empty_like(x), 0, 1)


_group = BackgroundCompile("activation", _warm_up, _relu_compiled is not None)


def ready() -> bool:
    """Whether the loops run now for float32 and float64 (else the caller runs NumPy;
    the compile is started in the background, never waited for)."""
    if _group.ready():
        return True
    _group.start()
    return False


def wait_ready(timeout: float | None = None) -> bool:
    """Start the compile if needed and wait for it (tests, benchmarks)."""
    return _group.wait_ready(timeout)


def relu(x: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    _relu_compiled(x, out, lo, hi)


def relu6(x: np.ndarray, out: np.ndarray, lo: int, hi: int) -> None:
    _relu6_compiled(x, out, lo, hi)
