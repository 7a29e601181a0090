"""The stride-1 average poolings the oneDNN kernels hand to the separable box filter
(aioflow/kernels/nn/box_pool_jit.py) instead of oneDNN's pooling primitive: 3-D windows of
at least 27 taps over at least 64 channels, where the filter's (kd-1)+(kh-1)+(kw-1) adds
an output beat the primitive's kd*kh*kw (a 3x3x3 SAME AvgPool3D on 8x28x28x64: 1.6x
TF's time on oneDNN 3.2's primitive, about 0.7x on the filter; docs/performance.md,
2026-11-29). Elsewhere the primitive measured as fast or faster: 2-D 3x3 windows (a
3x3 window's separable sums read a pixel as often as the direct sum does: on this
AVX-512 machine both are bound by loads and stores), few channels, small windows.

The box filter runs on the session's intra-op threads (aioflow/kernels/element_threads.py),
its work cut into whole output planes (batch x output depth)."""

from __future__ import annotations

import math

import numpy as np

from aioflow.kernels.element_threads import for_ranges
from aioflow.kernels.nn import box_pool_jit

#: The fewest channels for the box filter: its passes run along the channels of a pixel
#: (a window's border pixels one at a time), which oneDNN's blocked loops beat when few
#: (3x3x3 on 8x28x28x32: the primitive faster).
MIN_CHANNELS = 64
#: The fewest window taps (2x2x2 and 1x3x3 windows: the primitive as fast or faster).
MIN_TAPS = 27


def suits(x: np.ndarray, ksizes, strides) -> bool:
    """Whether the box filter pools x (channels-last float32, contiguous): a 3-D pooling,
    stride 1 on every spatial axis, at least MIN_TAPS taps and MIN_CHANNELS channels, and
    the loop compiled (its compile is started in the background otherwise)."""
    if x.dtype != np.float32 or x.ndim != 5 or x.shape[-1] < MIN_CHANNELS:
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

    for_ranges(n * out5.shape[1], planes, unit=plane)
    return out
