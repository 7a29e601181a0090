"""oneDNN's GEMM (dnnl_sgemm) called from numba: what matmul_onednn.lean_gemm calls in
compiled code once this module has compiled (matmul_onednn.py's `_Jit`), instead of the
ctypes call. A compiled LSTM step makes 150 such products of ~7 µs each; the ctypes path
(the operands' flags and leading dimensions, their addresses, 13 converted arguments)
added ~3.5 µs to each (32x96 @ 96x256: 10.8-11.2 against 7.3-7.7 µs a call, one
thread, load 2-3). The call is the same (the same flags, leading dimensions, alpha
and beta), so the products are the same.

Imported (numba with it) only by its background compile: one signature (float32
matrices of any layout, read-only or not, and a new C-order output), compiled at
import, cached on disk."""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from aioflow.kernels.warm_helper_jit import _call_sgemm

#: The GEMM's transpose flags ("N", "T"), as character codes.
_NO, _YES = ord("N"), ord("T")
#: float32 1.0's bits (alpha; beta is 0).
_ONE_BITS = 0x3F800000

_MATRIX = types.Array(types.float32, 2, "A", readonly=True)
_OUT = types.Array(types.float32, 2, "C")


@numba.njit(nogil=True, cache=True)
def _operand(m):
    """(flag, leading dimension) under which the GEMM reads the float32 matrix view m
    where it lies ((0, 0): its strides do not allow it); matmul_onednn._operand's rule."""
    s0, s1 = m.strides
    rows, cols = m.shape
    if s1 == 4 and s0 % 4 == 0 and s0 // 4 >= cols:
        return _NO, s0 // 4
    if s0 == 4 and s1 % 4 == 0 and s1 // 4 >= rows:
        return _YES, s1 // 4
    return 0, 0


@numba.njit(types.int64(types.int64, _MATRIX, _MATRIX, _OUT), nogil=True, cache=True)
def sgemm(address, x, y, out):
    """out = x @ y by the GEMM at `address` (dnnl_sgemm), x m x k, y k x n, out m x n;
    its status, or -1 (nothing called) when an operand's strides do not allow it."""
    fx, lx = _operand(x)
    fy, ly = _operand(y)
    if fx == 0 or fy == 0:
        return -1
    m, k = x.shape
    n = y.shape[1]
    words = np.empty(13, np.int64)
    words[0], words[1], words[2], words[3], words[4] = fx, fy, m, n, k
    words[5], words[6], words[7] = _ONE_BITS, x.ctypes.data, lx
    words[8], words[9], words[10] = y.ctypes.data, ly, 0
    words[11], words[12] = out.ctypes.data, n
    return _call_sgemm(address, words, 0)
