"""The stride-1 average poolings the oneDNN kernels hand to the separable box filter
(aioflow/kernels/nn/box_pool_jit.py) instead of oneDNN's pooling primitive: windows of
at least 9 taps over at least 64 channels and rows at least 4 windows wide, where the
filter's (kd-1)+(kh-1)+(kw-1) adds an output measured faster than oneDNN 3.2's
primitive (InceptionV3's 3x3 SAME pool on 35x35x192 at batch 8: 1.05x TF's time against
the primitive's 1.45x; a 3x3x3 AvgPool3D on 8x28x28x64 0.8x against 1.6x;
docs/performance.md, 2026-11-29). Elsewhere the primitive measured as fast or faster:
few channels (its blocked loops; the filter runs along a pixel's channels), small
windows (2x2, 2x2x2), narrow rows (8x8: most pixels are a border pixel, pooled one at
a time).

Above SPLIT_ABOVE output elements the box filter runs on the session's intra-op threads
(aioflow/kernels/element_threads.py), its work cut into whole output planes (batch x
output depth); below, on the calling thread. InceptionV3's pool at batch 8 (1.9M
outputs, ~0.4 ms on one thread), ABAB against TF on the quiet development machine
(2 cores, load 0.5): split 0.93-0.99x TF's time, on one thread 1.36-1.52x (TF splits it
too); on 2 cores loaded by other processes the split took 1.8-1.9x against 1.05x (a
helper preempted mid-range holds the call up; docs/performance.md, 2026-11-29)."""

from __future__ import annotations

import math

import numpy as np

from aioflow.kernels.element_threads import for_ranges
from aioflow.kernels.nn import box_pool_jit

#: The fewest channels for the box filter: its passes run along the channels of a pixel
#: (a window's border pixels one at a time), which oneDNN's blocked loops beat when few
#: (3x3 on 35x35x16: the primitive faster).
MIN_CHANNELS = 64
#: Output elements above which the planes are shared among the intra-op threads
#: (about 0.2 ms of one thread's work).
SPLIT_ABOVE = 1 << 20
#: The fewest window taps (2x2 and 2x2x2 windows: the primitive as fast or faster).
MIN_TAPS = 9
#: The narrowest input rows, in windows (8x8x2048 3x3: the primitive faster).
MIN_WIDTH_WINDOWS = 4


def suits(x: np.ndarray, ksizes, strides) -> bool:
    """Whether the box filter pools x (channels-last float32, contiguous): stride 1 on
    every spatial axis, at least MIN_TAPS taps, MIN_CHANNELS channels and
    MIN_WIDTH_WINDOWS windows across a row, and the loop compiled (its compile is
    started in the background otherwise)."""
    if x.dtype != np.float32 or x.shape[-1] < MIN_CHANNELS:
        return False
    if x.shape[-2] < MIN_WIDTH_WINDOWS * ksizes[-1]:
        return False
    if any(s != 1 for s in strides) or math.prod(ksizes) < MIN_TAPS:
        return False
    if not box_pool_jit.available():
        return False
    if box_pool_jit.ready():
        return True
    box_pool_jit.compile_in_background()
    return False


def average(x: np.ndarray, ksizes, pads, outs) -> np.ndarray:
    """The stride-1 average pooling of x (N, *spatial, C), C-contiguous, window ksizes,
    (before, after) paddings pads, output spatial sizes outs (none zero): each window's
    taps inside x summed and scaled by 1 / their count (TF's AvgPool counts only those)."""
    n, c = x.shape[0], x.shape[-1]
    out = np.empty((n, *outs, c), x.dtype)
    lead = 5 - x.ndim  # a 2-D pooling is a 3-D one of depth 1
    x5 = x.reshape((n,) + (1,) * lead + x.shape[1:])
    out5 = out.reshape((n,) + (1,) * lead + out.shape[1:])
    k3 = (1,) * lead + tuple(ksizes)
    p3 = (0,) * lead + tuple(before for before, _ in pads)
    plane = math.prod(out5.shape[2:])

    def planes(lo: int, hi: int) -> None:
        box_pool_jit.box_planes(x5, out5, lo, hi, k3, p3)

    for_ranges(n * out5.shape[1], planes, unit=plane,
               threads=None if out.size > SPLIT_ABOVE else 1)
    return out
