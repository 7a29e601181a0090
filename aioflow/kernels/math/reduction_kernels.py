"""CPU kernels (NumPy) for reductions (Sum, Mean, Max, Min, Prod, All, Any), ArgMax/ArgMin
and the scans Cumsum/Cumprod.

Outputs keep the input dtype (NumPy would widen small ints): integer Mean sums in 64 bits
and truncates toward zero as TF's does; half/bfloat16 accumulate in float32; Max/Min of an
empty set give the reducer's identity; ArgMax/ArgMin skip NaN as TF's do.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, is_int, shape_str

_NON_QUANTIZED_NUMBERS = [
    dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
    dtypes.complex64, dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.complex128,
    dtypes.float16, dtypes.uint32, dtypes.uint64]
_NON_QUANTIZED_REAL = [t for t in _NON_QUANTIZED_NUMBERS if not t.is_complex]
_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
#: Reductions of more elements than this always go to the thread pool; smaller ones go
#: by their learned cost (at most ~0.8 ms a first, untimed-yet call: 3 ns an element).
POOL_ABOVE = 1 << 18


def reduction_axes(axes, ndim: int) -> tuple[int, ...]:
    """The reduction indices as a tuple of non-negative axes; TF's errors when out of range
    or repeated."""
    values = axes.tolist() if np.ndim(axes) <= 1 else np.ravel(axes).tolist()
    if type(values) is int:
        values = [values]
    out = []
    for a in values:
        if not -ndim <= a < ndim:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid reduction dimension ({a} for input with {ndim} dimension(s)")
        a = a + ndim if a < 0 else a
        if a in out:
            raise errors.InvalidArgumentError(
                None, None,
                f"Invalid reduction arguments: Axes contains duplicate dimension: {a}")
        out.append(a)
    return tuple(out)


class ReductionKernel(OpKernel):
    """Reduce input over reduction_indices; keep_dims keeps them as 1s."""

    expensive = None
    compilable = True  # pure, every output produced (map_fn bodies compile with them)
    #: The type of All / Any, whose OpDef has no T (a T attr a NodeDef adds is ignored).
    fixed_type = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._keep = ctx.get_attr("keep_dims", False)
        dtype = self.fixed_type or ctx.get_attr("T")
        self._np_type = dtype.as_numpy_dtype
        self._acc = np.float32 if dtype in _HALF_TYPES else self._np_type
        self._setup(dtype)

    def _setup(self, dtype) -> None:
        pass

    def is_expensive(self, inputs: list) -> bool:
        # Up to POOL_ABOVE elements the executor decides by the node's learned cost: a
        # reduction's cost per element varies 40-fold with its layout (summing a 1M
        # tensor over (1, 2) of (32, 32, 1024): 74 µs; over the last axis of (262144, 4):
        # 3 ms), and InceptionV3's final Mean of 8x8x2048 (131k elements, ~10 µs) went
        # to a pool thread and back on the run's critical path.
        return inputs[0].size > POOL_ABOVE

    def compute(self, ctx, inputs):
        x, axes = inputs
        axis = reduction_axes(axes, x.ndim)
        return (self.reduce(x, axis),)

    def reduce(self, x, axis):
        raise NotImplementedError

    def _cast(self, out):
        return out if self._acc is self._np_type else out.astype(self._np_type)


@register_kernel("Sum", "CPU", T=_NON_QUANTIZED_NUMBERS)
class SumOp(ReductionKernel):
    """Sum over the axes, in the input dtype (float32 accumulation for half types)."""

    def reduce(self, x, axis):
        # np.add.reduce is what np.sum calls, without its Python layer (~1.5 µs a call)
        return self._cast(np.add.reduce(x, axis=axis, dtype=self._acc, keepdims=self._keep))


@register_kernel("Prod", "CPU", T=_NON_QUANTIZED_NUMBERS)
class ProdOp(ReductionKernel):
    """Product over the axes, in the input dtype."""

    def reduce(self, x, axis):
        return self._cast(np.multiply.reduce(x, axis=axis, dtype=self._acc,
                                             keepdims=self._keep))


@register_kernel("Mean", "CPU", T=_NON_QUANTIZED_NUMBERS)
class MeanOp(ReductionKernel):
    """Mean over the axes. Integers: a 64-bit sum divided with truncation toward zero."""

    def _setup(self, dtype) -> None:
        self._int = is_int(dtype)
        self._complex = dtype.is_complex
        if self._int:
            self._acc = np.uint64 if np.dtype(self._np_type).kind == "u" else np.int64

    def reduce(self, x, axis):
        if not self._int:
            if x.size == 0:  # TF: NaN for real floats, 0 for complex
                out = np.sum(x, axis=axis, keepdims=self._keep)
                return out if self._complex else self._cast(out + self._np_type(np.nan))
            total = np.sum(x, axis=axis, dtype=self._acc, keepdims=self._keep)
            return self._cast(total / (x.size // total.size))
        total = np.sum(x, axis=axis, dtype=self._acc, keepdims=self._keep)
        count = 1
        for a in axis:
            count *= x.shape[a]
        if count == 0:
            return np.zeros_like(total, dtype=self._np_type)[()]
        count = self._acc(count)
        quotient = np.floor_divide(total, count)
        if self._acc is np.int64:  # floor -> truncation toward zero
            quotient = quotient + ((quotient < 0) & (quotient * count != total))
        return quotient.astype(self._np_type)


class _MinMax(ReductionKernel):
    """Max/Min; NaN propagates; an empty reduction gives the identity (-inf/lowest ...)."""

    ufunc = staticmethod(np.max)
    sign = -1

    def _setup(self, dtype) -> None:
        if is_int(dtype):
            info = np.iinfo(self._np_type)
            ident = info.min if self.sign < 0 else info.max
        else:
            ident = self.sign * np.inf
        self._initial = np.array(ident).astype(self._np_type)[()]

    def reduce(self, x, axis):
        return self.ufunc(x, axis=axis, keepdims=self._keep, initial=self._initial)


@register_kernel("Max", "CPU", T=_NON_QUANTIZED_REAL)
class MaxOp(_MinMax):
    """Maximum over the axes."""


@register_kernel("Min", "CPU", T=_NON_QUANTIZED_REAL)
class MinOp(_MinMax):
    """Minimum over the axes."""

    ufunc = staticmethod(np.min)
    sign = 1


@register_kernel("All", "CPU")
class AllOp(ReductionKernel):
    """Logical and over the axes."""

    fixed_type = dtypes.bool

    def reduce(self, x, axis):
        return np.all(x, axis=axis, keepdims=self._keep)


@register_kernel("Any", "CPU")
class AnyOp(ReductionKernel):
    """Logical or over the axes."""

    fixed_type = dtypes.bool

    def reduce(self, x, axis):
        return np.any(x, axis=axis, keepdims=self._keep)


# -- ArgMax / ArgMin -------------------------------------------------------------------------

class _ArgKernel(OpKernel):
    """Index of the max/min along a scalar `dimension`, as output_type; first of ties."""

    expensive = None
    ufunc = staticmethod(np.argmax)
    nan_fill = -np.inf

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._out = ctx.get_attr("output_type", dtypes.int64).as_numpy_dtype
        self._skip_nan = dtype.is_floating
        if self._skip_nan:
            self._fill = np.array(self.nan_fill).astype(dtype.as_numpy_dtype)

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size > BIG

    def compute(self, ctx, inputs):
        x, dim = inputs
        if np.ndim(dim) != 0:
            raise errors.InvalidArgumentError(
                None, None,
                f"dim must be a scalar, but received tensor of shape: {shape_str(np.shape(dim))}")
        axis, ndim = int(dim), x.ndim
        if not -ndim <= axis < ndim:
            raise errors.InvalidArgumentError(
                None, None,
                f"Expected dimension in the range [{-ndim}, {ndim}), but got {axis}")
        if x.shape[axis] == 0:
            raise errors.InvalidArgumentError(
                None, None,
                f"Reduction axis {axis} is empty in shape {shape_str(x.shape)}")
        if self._skip_nan:
            nan = np.isnan(x)
            if nan.any():
                x = np.where(nan, self._fill, x)
        return (self.ufunc(x, axis=axis).astype(self._out),)


_ARG_TYPES = _NON_QUANTIZED_REAL + [dtypes.bool]


@register_kernel("ArgMax", "CPU", T=_ARG_TYPES)
class ArgMaxOp(_ArgKernel):
    """Index of the largest value."""


@register_kernel("ArgMin", "CPU", T=_ARG_TYPES)
class ArgMinOp(_ArgKernel):
    """Index of the smallest value."""

    ufunc = staticmethod(np.argmin)
    nan_fill = np.inf


# -- scans -----------------------------------------------------------------------------------

class _ScanKernel(OpKernel):
    """Cumsum/Cumprod along a scalar axis, exclusive and/or reverse."""

    expensive = None
    ufunc = staticmethod(np.cumsum)
    identity = 0

    def __init__(self, ctx):
        super().__init__(ctx)
        self._exclusive = ctx.get_attr("exclusive", False)
        self._reverse = ctx.get_attr("reverse", False)
        self._np_type = ctx.get_attr("T").as_numpy_dtype

    def is_expensive(self, inputs: list) -> bool:
        return inputs[0].size > BIG

    def compute(self, ctx, inputs):
        x, axis = inputs
        ndim = np.ndim(x)
        if np.ndim(axis) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"ScanOp: axis must be a scalar, not {shape_str(np.shape(axis))}")
        axis = int(axis)
        if axis < 0:
            axis += ndim  # TF reports the axis so made non-negative
        if not 0 <= axis < ndim:
            raise errors.InvalidArgumentError(
                None, None,
                f"ScanOp: Expected scan axis in the range [{-ndim}, {ndim}), but got {axis}")
        x = np.asarray(x)
        if self._reverse:
            x = np.flip(x, axis)
        with np.errstate(all="ignore"):
            out = self.ufunc(x, axis=axis, dtype=self._np_type)
        if self._exclusive and x.shape[axis]:
            out = np.roll(out, 1, axis=axis)
            index = [slice(None)] * ndim
            index[axis] = 0
            out[tuple(index)] = self.identity
        if self._reverse:
            out = np.flip(out, axis)
        return (out,)


@register_kernel("Cumsum", "CPU", T=_NON_QUANTIZED_NUMBERS)
class CumsumOp(_ScanKernel):
    """Cumulative sum."""


@register_kernel("Cumprod", "CPU", T=_NON_QUANTIZED_NUMBERS)
class CumprodOp(_ScanKernel):
    """Cumulative product."""

    ufunc = staticmethod(np.cumprod)
    identity = 1
