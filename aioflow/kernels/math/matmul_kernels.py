"""CPU kernels (NumPy) for MatMul, BatchMatMul and BatchMatMulV2.

Expensive (thread pool) once the product is worth more than the ~40 µs a pool round
trip costs: below about 2**21 multiply-adds (a 128x128x128 product) it runs inline.
half/bfloat16 multiply in float32 and round once, as
NumPy has no BLAS for them. MatMul's transpose_a/b transpose only; BatchMatMul's adj_x/y
take the adjoint (conjugate transpose), as TF's do.

MatMul's threads are its own, as TF's Eigen/oneDNN products run on TF's intra-op pool and
as the convolutions' GEMMs do (aioflow/framework/intra_op_threads.py `own_threads`): a
float product large enough for OpenBLAS to thread runs with BLAS single-threaded, and
one worth a hand-off is cut into blocks of rows or columns shared with helper threads
(aioflow/kernels/element_threads.py: a helper that gets no core leaves its blocks to
the caller). OpenBLAS's own threads busy-wait for each other: on the 2-core machine at
load 6-8 an MLP step's products took 1.3-2.3 ms a call against 0.1-0.3 ms on one
thread, its helper thread burning 11 ms of CPU a step (docs/performance.md, 2026-11-29).
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors, intra_op_threads
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.element_threads import share_ranges
from aioflow.kernels.math.cwise_kernels import shape_str

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
# TF's CPU kernels have no unsigned matmul.
_MATMUL_TYPES = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32,
                 dtypes.int64, dtypes.complex64, dtypes.complex128]


def _size_error(a, b) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, None,
        f"Matrix size-incompatible: In[0]: {shape_str(a.shape)}, In[1]: {shape_str(b.shape)}")


# Multiply-adds above which a product goes to the thread pool.
POOL_FLOPS = 1 << 21
#: Multiply-adds up to which OpenBLAS runs a GEMM on the calling thread anyway (its
#: SMP threshold, 65536 * GEMM_MULTITHREAD_THRESHOLD 4): such a product is one
#: np.matmul, without the section's calls into OpenBLAS (ctypes calls let go of the GIL:
#: on the event loop a tiny product then waited behind pool threads).
_BLAS_SERIAL_MACS = 1 << 18
#: Multiply-adds above which a product is shared among the intra-op threads (~0.4 ms
#: on one core). Below, a helper's hand-off (a thread woken, the GIL passed) cost more
#: than it saved on the 2-core machine: the MLP step's 12.8M-multiply-add products cut
#: in two were 5-20% slower at load 8-10, and no faster at its quietest moments.
_SPLIT_MACS = 1 << 24
#: The fewest rows (columns) of a block when a product is cut.
_MIN_BLOCK = 16


def _gemm_shared(x, y, threads: int):
    """x @ y in blocks of output rows (or columns, whichever the output has more of),
    about two per thread, shared among `threads` threads; BLAS single-threaded."""
    m, n = x.shape[0], y.shape[1]
    out = np.empty((m, n), np.result_type(x, y))
    by_rows = m >= n
    count = m if by_rows else n
    step = max(_MIN_BLOCK, -(-count // (2 * threads)))
    ranges = [(lo, min(lo + step, count)) for lo in range(0, count, step)]
    if by_rows:
        share_ranges(ranges, lambda lo, hi: np.matmul(x[lo:hi], y, out=out[lo:hi]), threads)
    else:
        share_ranges(ranges, lambda lo, hi: np.matmul(x, y[:, lo:hi], out=out[:, lo:hi]),
                     threads)
    return out


class _MatMulBase(OpKernel):
    expensive = None
    uses_blas = True

    def is_expensive(self, inputs: list) -> bool:
        a, b = inputs
        return b.ndim > 0 and a.size * b.shape[-1] > POOL_FLOPS

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._half = dtype.as_numpy_dtype if dtype in _HALF_TYPES else None

    def _matmul(self, a, b):
        if self._half is not None:
            return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(self._half)
        return np.matmul(a, b)


@register_kernel("MatMul", "CPU", T=_MATMUL_TYPES)
class MatMulOp(_MatMulBase):
    """product = op(a) @ op(b) for matrices, op = transpose when asked."""

    compilable = True  # pure; small products run inline (a Keras RNN's While body)
    # Its BLAS calls run on one thread (own sections): two products may run at once on
    # the pool's threads, one a core (an MLP's two weight-sized gradients), without the
    # device's BLAS gate, which bounds kernels running BLAS's own threads (BatchMatMul).
    # A product it cuts (> _SPLIT_MACS) shares the cores' one helper with any other.
    uses_blas = False
    own_blas_threads = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._ta = ctx.get_attr("transpose_a", False)
        self._tb = ctx.get_attr("transpose_b", False)

    def compute(self, ctx, inputs):
        a, b = inputs
        if a.ndim != b.ndim:
            raise errors.InvalidArgumentError(
                None, None,
                f"In[0] and In[1] has different ndims: {shape_str(a.shape)} vs. "
                f"{shape_str(b.shape)}")
        if a.ndim != 2:
            raise errors.InvalidArgumentError(
                None, None, f"In[0] and In[1] ndims must be == 2: {a.ndim}")
        x = a.T if self._ta else a
        y = b.T if self._tb else b
        if x.shape[1] != y.shape[0]:
            raise _size_error(a, b)
        macs = x.shape[0] * x.shape[1] * y.shape[1]
        if macs <= _BLAS_SERIAL_MACS or self._half is not None or x.dtype.kind != "f" \
                or x.dtype != y.dtype:
            return (self._matmul(x, y),)
        with intra_op_threads.own_threads() as threads:
            if macs > _SPLIT_MACS and threads > 1:
                return (_gemm_shared(x, y, threads),)
            return (np.matmul(x, y),)


def _adjoint(m):
    m = np.swapaxes(m, -1, -2)
    return np.conj(m) if np.iscomplexobj(m) else m


class _BatchMatMul(_MatMulBase):
    broadcast = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._adj_x = ctx.get_attr("adj_x", False)
        self._adj_y = ctx.get_attr("adj_y", False)

    def compute(self, ctx, inputs):
        a, b = inputs
        if not self.broadcast and a.ndim != b.ndim:
            raise errors.InvalidArgumentError(
                None, None,
                f"In[0] and In[1] has different ndims: {shape_str(a.shape)} vs. "
                f"{shape_str(b.shape)}")
        for i, m in enumerate((a, b)):
            if m.ndim < 2:
                raise errors.InvalidArgumentError(
                    None, None, f"In[{i}] ndims must be >= 2: {m.ndim}")
        x = _adjoint(a) if self._adj_x else a
        y = _adjoint(b) if self._adj_y else b
        if self.broadcast:
            try:
                np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            except ValueError:
                raise errors.InvalidArgumentError(
                    None, None,
                    f"In[0] and In[1] must have compatible batch dimensions: "
                    f"{shape_str(a.shape)} vs. {shape_str(b.shape)}") from None
        else:
            for d in range(a.ndim - 2):
                if a.shape[d] != b.shape[d]:
                    raise errors.InvalidArgumentError(
                        None, None,
                        f"In[0].dim({d}) and In[1].dim({d}) must be the same: "
                        f"{shape_str(a.shape)} vs {shape_str(b.shape)}")
        if x.shape[-1] != y.shape[-2]:
            raise _size_error(a, b)
        return (self._matmul(x, y),)


@register_kernel("BatchMatMulV2", "CPU", T=_MATMUL_TYPES + [dtypes.int16])
class BatchMatMulV2Op(_BatchMatMul):
    """Batched matrix product with broadcast batch dimensions."""


@register_kernel("BatchMatMul", "CPU")
class BatchMatMulOp(_BatchMatMul):
    """Batched matrix product; batch dimensions must be equal."""

    broadcast = False
