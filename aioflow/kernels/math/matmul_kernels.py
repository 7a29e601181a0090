"""CPU kernels (NumPy) for MatMul, BatchMatMul and BatchMatMulV2.

Expensive (thread pool) once the product is worth more than the ~40 µs a pool round
trip costs: below about 2**21 multiply-adds (a 128x128x128 product) it runs inline.
half/bfloat16 multiply in float32 and round once, as
NumPy has no BLAS for them. MatMul's transpose_a/b transpose only; BatchMatMul's adj_x/y
take the adjoint (conjugate transpose), as TF's do. When BLAS runs single-threaded
(intra_op_parallelism_threads=1), a large float MatMul is cut into blocks of rows shared
with helper threads, as the convolutions' GEMMs are (conv_kernels.gemm_rows).
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors, intra_op_threads
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.nn.conv_kernels import blas_single_threaded, gemm_rows

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
#: Products of (lo, hi] multiply-adds run BLAS single-threaded when BLAS's workers are
#: idle since a convolution (at most ~0.3 ms on one core; below lo OpenBLAS threads
#: nothing anyway). Back to back, a chain of them keeps BLAS's threads (1.7x faster hot).
_ONE_THREAD_MACS = (1 << 20, 1 << 25)
#: Products of more multiply-adds than this are shared among helper threads when BLAS
#: runs single-threaded (conv_kernels.gemm_rows: its work, multiply-adds / 8, above
#: PARALLEL_WORK). Smaller ones are one np.matmul either way, and do not ask OpenBLAS
#: its thread count: a ctypes call, which lets go of the GIL. On the event loop a tiny
#: product then waited for the GIL behind pool threads, was timed as expensive and sent
#: to the pool (the Keras LSTM's Dense head at batch 4: 1.25x TF's latency, 1.0x at
#: batch 1, where a one-row product skipped the call).
_SHARED_MACS = 1 << 24


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
        if (macs > _SHARED_MACS and self._half is None and x.dtype == y.dtype
                and x.dtype.kind == "f" and blas_single_threaded()):
            out = np.empty((x.shape[0], y.shape[1]), x.dtype)
            gemm_rows(x, y, out)
            return (out,)
        if macs > _ONE_THREAD_MACS[0]:
            if intra_op_threads.threads_idle and macs <= _ONE_THREAD_MACS[1]:
                # A small product after convolutions (a classifier's head): BLAS's workers
                # are asleep and waking them cost more than the product (in the models:
                # 0.3 -> 13-47 ms at load 4-6); single-threaded, as the convolutions'.
                with intra_op_threads.own_threads():
                    return (self._matmul(x, y),)
            intra_op_threads.threads_idle = False  # BLAS's threads run (and spin) again
        return (self._matmul(x, y),)


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
