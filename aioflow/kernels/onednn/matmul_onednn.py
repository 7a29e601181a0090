"""MatMul and _FusedMatMul (float32) on oneDNN's GEMM (dnnl_sgemm), as TF's own CPU
kernels run them on oneDNN (_MklMatMul, _MklNativeFusedMatMul).

The NumPy kernels (aioflow/kernels/math/matmul_kernels.py, nn/fused_kernels.py) check the
attrs and inputs with TF's messages and hand the two checked matrices, op(a) and op(b)
as NumPy views, to `product`; these kernels override it. A transposed operand
(transpose_a/b, or an input that is itself a transposed view) is passed to the GEMM as
it lies, with its transpose flag and leading dimension: no copy. _FusedMatMul's bias and
activation then run on the product as in the NumPy kernel (its compiled epilogue).

Why: on this machine's AVX-512 cores oneDNN's JIT GEMM is 1.6-1.9x OpenBLAS's (which
runs its Haswell/SkylakeX kernels) at an MLP's shapes: 64x784 @ 784x256 213-312 µs
against 333-583 µs a call, one thread each, load 4-7 (docs/performance.md, 2026-11-29).
Below ONEDNN_MACS multiply-adds the call's fixed cost (~4 µs: ctypes and oneDNN's
dispatch) exceeds what it saves, and NumPy runs the product.

Threads: a product of at least TEAM_MACS multiply-adds, when the backend's budget has
two cores free (backend.team), is cut in two (`split_gemm`: rows, or columns when it
has few) and the second half handed to the warm helper (aioflow/kernels/warm_helper.py)
as a native GEMM job, both halves single-threaded: equal bit for bit to the whole
product, and the caller takes the half back when the helper has not started it. A
64x784x256 product: 65-70 µs so against 115-120 on an OpenMP team of two, whose second
thread sleeps between products (passive waiting) and on a quiet VM takes 50-300 µs to
wake (docs/performance.md, 2026-11-29, helper spin). Without the helper (numba absent,
AIOFLOW_WARM_HELPER=0, another caller holding it), an OpenMP team of the intra-op
threads, as the convolutions do from backend.TEAM_WORK; smaller products on the calling
thread alone (a 64x256x128 product: 36-48 µs on one thread, 32 µs on two, which both
stay busy; load 7).
Other types, empty matrices and operands whose strides the GEMM cannot take run the
NumPy product.

In compiled code (segments, compiled while loops) MatMul's product is `lean_gemm`: the
same checks and the same GEMM call as `compute`, in the fewest Python steps (an LSTM's
loops make 150 such products a step, 16-20 µs each, of which `compute`'s layers took
4-6); the call itself goes through numba once gemm_jit.py has compiled (~3.5 µs less
than ctypes' a call). In a compiled loop a transposed operand that is the same array
every iteration (an LSTM gradient's kernel) is transposed once, before the loop
(`invariant_fn`), and the GEMM reads it untransposed: 32x256 @ (96x256)^T 15.7 µs a
call as "T", 9.1 µs on the transposed copy as "N" (the same products, equal bit for bit
at the LSTM's shapes).

Where: with intra-op threads covering the cores, a product up to backend.INLINE_WORK
multiply-adds is not expensive (`is_expensive`), as the oneDNN convolutions run inline:
the executor runs it on the event loop (its team the loop's thread and the other cores).
Its multiply-adds are its cost: the executor learns no per-element cost to overrule
that (`learns_cost`), as it does not for the convolutions; a product worth a team goes
to a free pool thread only while the loop has other such work (`worth_a_thread`). A
pool round trip cost the MLP's forward + backward step 150-200 µs of CPU for its two
64x784x256 products (load 10), and on a quiet machine, where each hand-off wakes an
idle core, the training step 1.13-1.54 against 0.73-0.78 ms (docs/performance.md,
2026-11-29, helper mlp_step). With fewer intra-op threads than cores (throughput), the
NumPy kernel's rule (over 2^21 multiply-adds: the pool).
"""

from __future__ import annotations

import ctypes
import importlib

import numpy as np

from aioflow.framework import dtypes
from aioflow.kernels import jit, warm_helper
from aioflow.kernels.background_jit import BackgroundCompile
from aioflow.kernels.element_threads import _CORES, intra_op_threads
from aioflow.kernels.math.matmul_kernels import POOL_FLOPS, MatMulOp
from aioflow.kernels.nn.fused_kernels import FusedMatMulOp
from aioflow.kernels.onednn import backend
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import onednn_kernel, team
from aioflow.kernels.onednn.primitives import address, set_threads

#: Multiply-adds from which a float32 product runs on oneDNN (NumPy below: a 64x64x64
#: product 5.6 µs in NumPy, 6.7 in oneDNN; 64x256x128 38 against 21 µs, CPU time).
ONEDNN_MACS = 1 << 18

#: Multiply-adds from which a product runs on a team (see the module docstring).
TEAM_MACS = 1 << 22
#: The fewest rows (or columns) of either part of a product split with the warm helper.
SPLIT_MIN = 8
#: dnnl_sgemm's address, and 1.0f's bits: a GEMM job's words for the warm helper.
_GEMM_ADDRESS = ctypes.cast(api._lib.dnnl_sgemm, ctypes.c_void_p).value \
    if api._lib is not None else 0
_ONE_BITS = int(np.float32(1.0).view(np.int32))

_F32 = np.dtype(np.float32)
_NO, _YES = b"N", b"T"


def _operand(m: np.ndarray):
    """(transpose flag, leading dimension) under which oneDNN's row-major GEMM reads the
    float32 matrix view `m` where it lies, or None when its strides do not allow it."""
    s0, s1 = m.strides
    rows, cols = m.shape
    if s1 == 4 and s0 % 4 == 0 and s0 // 4 >= cols:
        return _NO, s0 // 4
    if s0 == 4 and s1 % 4 == 0 and s1 // 4 >= rows:  # the transpose of a row-major matrix
        return _YES, s1 // 4
    return None


def sgemm(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """x @ y for float32 matrix views on oneDNN, or None where it cannot run it (the
    caller then runs NumPy's)."""
    ox, oy = _operand(x), _operand(y)
    if ox is None or oy is None:
        return None
    m, k = x.shape
    n = y.shape[1]
    out = np.empty((m, n), _F32)
    work = m * k * n
    with team(work if work >= TEAM_MACS else 0) as threads:
        status = None
        if threads > 1 and (m >= 2 * SPLIT_MIN or n >= 2 * SPLIT_MIN):
            helper = warm_helper.helper()
            if helper is not None:
                status = split_gemm(helper, ox, oy, m, n, k, address(x), address(y),
                                    address(out))
        if status is None:
            set_threads(threads)
            status = api._lib.dnnl_sgemm(ox[0], oy[0], m, n, k, 1.0, address(x), ox[1],
                                         address(y), oy[1], 0.0, address(out), n)
    return out if status == api.SUCCESS else None


def split_gemm(helper, ox, oy, m: int, n: int, k: int, x: int, y: int, out: int):
    """The product (the operands' flags and leading dimensions ox, oy, their addresses x
    and y, row-major out of n columns) cut in two, rows when it has 2 * SPLIT_MIN of
    them, else columns: the first part on this thread, the second handed to the warm
    helper (aioflow/kernels/warm_helper.py), both single-threaded GEMMs; the second
    also here when the helper has not taken it. oneDNN's status, or None when the
    helper is held by another caller (nothing ran)."""
    if m >= 2 * SPLIT_MIN:
        cut = m // 2
        a_step = ox[1] * 4 if ox[0] == _NO else 4
        first = (cut, n, x, y, out)
        second = (m - cut, n, x + cut * a_step, y, out + cut * n * 4)
    else:
        cut = n // 2
        b_step = 4 if oy[0] == _NO else oy[1] * 4
        first = (m, cut, x, y, out)
        second = (m, n - cut, x, y + cut * b_step, out + cut * 4)
    rows, cols, a, b, c = second
    ticket = helper.post_native(warm_helper.SGEMM, (_GEMM_ADDRESS, ox[0][0], oy[0][0], rows, cols,
                                             k, _ONE_BITS, a, ox[1], b, oy[1], 0, c, n))
    if ticket is None:
        return None
    set_threads(1)
    try:
        rows, cols, a, b, c = first
        status = api._lib.dnnl_sgemm(ox[0], oy[0], rows, cols, k, 1.0, a, ox[1], b, oy[1],
                                     0.0, c, n)
    finally:
        theirs = ticket.finish()
    if theirs is None:
        rows, cols, a, b, c = second
        theirs = api._lib.dnnl_sgemm(ox[0], oy[0], rows, cols, k, 1.0, a, ox[1], b, oy[1],
                                     0.0, c, n)
    return status or theirs


class _Jit:
    """gemm_jit.sgemm once compiled (None before: the ctypes call)."""

    sgemm = None


def _compile_gemm() -> None:
    module = importlib.import_module("aioflow.kernels.onednn.gemm_jit")
    a = np.ones((2, 2), _F32)
    out = np.empty((2, 2), _F32)
    if module.sgemm(_GEMM_ADDRESS, a, a, out) != api.SUCCESS or not (out == 2).all():
        raise RuntimeError("oneDNN's GEMM through numba gave a wrong product")
    _Jit.sgemm = module.sgemm


_gemm_compile = BackgroundCompile("onednn-gemm", _compile_gemm,
                                  jit.ENABLED and api._lib is not None)


def wait_compiled(timeout: float | None = None) -> bool:
    """Compile gemm_jit now and wait for it (tests, benchmarks' warm-ups)."""
    return _gemm_compile.wait_ready(timeout)


def lean_gemm(ta: bool, tb: bool, product):
    """fn(a, b) = op(a) @ op(b) (op: a transpose where asked) for float32 matrices, on
    oneDNN's GEMM on the calling thread when it takes them (one thread's size, strides
    it reads), else `product(x, y)`. It raises on what is not two matrices of matching
    inner sizes (compiled code then runs `compute`, which gives TF's error). The GEMM
    is called from numba once gemm_jit has compiled (its compile starts here), through
    ctypes until then: the same call."""
    gemm = api._lib.dnnl_sgemm if api._lib is not None else None
    _gemm_compile.start()

    def fn(a, b):
        x = a.T if ta else a
        y = b.T if tb else b
        m, k = x.shape
        k2, n = y.shape
        if k != k2:
            raise ValueError("inner sizes differ")
        work = m * k * n
        if ONEDNN_MACS <= work < TEAM_MACS and gemm is not None and backend.ACTIVE and \
                x.dtype == _F32 and y.dtype == _F32:
            jitted = _Jit.sgemm
            if jitted is not None:
                out = np.empty((m, n), _F32)
                with team(0) as threads:
                    set_threads(threads)
                    try:
                        status = jitted(_GEMM_ADDRESS, x, y, out)
                    except TypeError:  # an array type its one signature does not take
                        status = -1
                return out if status == api.SUCCESS else product(x, y)
            ox, oy = _operand(x), _operand(y)
            if ox is not None and oy is not None:
                out = np.empty((m, n), _F32)
                with team(0) as threads:
                    set_threads(threads)
                    status = gemm(ox[0], oy[0], m, n, k, 1.0, address(x), ox[1],
                                  address(y), oy[1], 0.0, address(out), n)
                if status == api.SUCCESS:
                    return out
        return product(x, y)
    return fn


def transposed(m: np.ndarray) -> np.ndarray:
    """m's transpose as a row-major copy (a loop invariant's, made once before the loop)."""
    return np.ascontiguousarray(m.T)


class _OneDnnProduct:
    """Mixed into a NumPy MatMul kernel (before its class): `product` on oneDNN, and
    where it runs (`is_expensive`, asked by the executor; see the module docstring)."""

    @property
    def learns_cost(self) -> bool:
        """False where `is_expensive` measures the work (multiply-adds: oneDNN active,
        intra-op threads covering the cores), as the backend's convolutions do: the
        executor then learns no cost per input element to overrule it. Else (the NumPy
        kernel's static rule) it learns, as the NumPy MatMul does (a serving model's
        intra_op_parallelism_threads=1 product of 2^22 multiply-adds: inline)."""
        return not (backend.ACTIVE and intra_op_threads() >= _CORES)

    def is_expensive(self, inputs: list) -> bool:
        a, b = inputs[0], inputs[1]
        if b.ndim < 2 or a.size * b.shape[-1] <= POOL_FLOPS:
            return False  # (the NumPy kernel's rule agrees; asked every call)
        if not backend.ACTIVE or intra_op_threads() < _CORES or \
                a.dtype != _F32 or b.dtype != _F32:
            return super().is_expensive(inputs)
        return a.size * b.shape[-1] > backend.INLINE_WORK

    def worth_a_thread(self, inputs: list) -> bool:
        """Where the multiply-adds decide (`learns_cost` False), a product worth a team
        is worth a free pool thread when other runs wait for the loop (the executor
        decides), as the backend's forward kernels (backend.LoopOrThread): with many
        runs in flight, the loop goes on with theirs. Under the NumPy rule, never (its
        learned cost decides, as before)."""
        a, b = inputs[0], inputs[1]
        return b.ndim == 2 and a.size * b.shape[-1] >= TEAM_MACS and not self.learns_cost

    def product(self, x, y):
        if backend.ACTIVE and x.dtype == _F32 and y.dtype == _F32 and \
                x.shape[0] * x.shape[1] * y.shape[1] >= ONEDNN_MACS and \
                x.shape[0] and y.shape[1] and x.shape[1]:
            out = sgemm(x, y)
            if out is not None:
                return out
        return super().product(x, y)


@onednn_kernel("MatMul", T=[dtypes.float32])
class OneDnnMatMulOp(_OneDnnProduct, MatMulOp):
    """MatMul, float32, on oneDNN's GEMM."""

    def compiled_fn(self):
        return lean_gemm(self._ta, self._tb, self.product)

    def invariant_fn(self, invariant: tuple):
        """For a compiled loop where input k is the same array every iteration when
        `invariant[k]`: (prepare, fn), `prepare(value)` of the transposed invariant
        input once before the loop and `fn(a, prepared)` (or `fn(prepared, b)`) each
        iteration; None when nothing is gained."""
        if self._tb and invariant[1] and not invariant[0]:
            return transposed, lean_gemm(self._ta, False, self.product)
        if self._ta and invariant[0] and not invariant[1]:
            return transposed, lean_gemm(False, self._tb, self.product)
        return None


@onednn_kernel("_FusedMatMul", T=[dtypes.float32])
class OneDnnFusedMatMulOp(_OneDnnProduct, FusedMatMulOp):
    """_FusedMatMul, float32: the product on oneDNN's GEMM, then the bias and activation
    as the NumPy kernel applies them."""

    def compiled_fn(self):
        product, finish = lean_gemm(self._ta, self._tb, self.product), self.finish
        return lambda a, b, *args: finish(product(a, b), (a, b, *args))
