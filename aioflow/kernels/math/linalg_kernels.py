"""CPU kernels (NumPy) for Einsum, BatchMatMulV3, MatrixBandPart and the MatrixDiag,
MatrixDiagPart and MatrixSetDiag families (v1, V2, V3), with TF 2.21's checks and messages.

- Einsum: the equation is parsed once, at kernel construction (aioflow/framework/
  einsum_spec.py), with TF's kernel's messages, or its shape function's where TF's kernel
  has none (a stray period, an output label no input has). Named dimensions must agree
  exactly (no broadcasting of 1s, as TF); ellipsis dimensions broadcast. The product is
  np.einsum, with `optimize` (BLAS contractions) once the work is large enough to pay for
  the path search; half/bfloat16 compute in float32 and round once.
- BatchMatMulV3: BatchMatMulV2 with the operand and output types as attrs (int8/uint8
  operands multiply into int32).
- Diagonals (V2 and V3): k is one diagonal or a band [lo, hi]; a band's rows run from the
  highest diagonal down; diagonals shorter than the longest are padded, on the left or the
  right as `align` says for super- (d >= 0) and subdiagonals (V2: LEFT_LEFT).
- Qr: LAPACK's Householder QR through NumPy (TF's Eigen HouseholderQR has the same sign
  convention; values agree to a few ulps); half computes in float32 and rounds once.
"""

from __future__ import annotations

import math
import string

import numpy as np

from aioflow.framework import dtypes, einsum_spec, errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.array.array_kernels import OUTPUT_POOL_ABOVE, _fill_value
from aioflow.kernels.math.cwise_kernels import BIG, shape_str
from aioflow.kernels.math.matmul_kernels import POOL_FLOPS, _BatchMatMul

_HALF = (np.dtype(np.float16), np.dtype(dtypes.bfloat16.as_numpy_dtype))


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


# -- Einsum --------------------------------------------------------------------------------

_EINSUM_TYPES = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64,
                 dtypes.int32, dtypes.int64, dtypes.complex64, dtypes.complex128]


@register_kernel("Einsum", "CPU", T=_EINSUM_TYPES)
class EinsumOp(OpKernel):
    """Tensor contraction by an einsum equation (one or two inputs)."""

    expensive = None
    uses_blas = True
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        equation = ctx.get_attr("equation")
        equation = equation.decode("latin-1") if isinstance(equation, bytes) \
            else equation
        try:
            self._spec = einsum_spec.parse(equation)
        except einsum_spec.EquationError as e:
            raise _invalid(str(e)) from None
        labels = sorted({label for subs in self._spec.inputs for label in subs
                         if label is not None})
        if len(labels) > len(string.ascii_letters):
            raise _invalid(f"Einsum equation '{equation}' has more than "
                           f"{len(string.ascii_letters)} distinct labels")
        letter = dict(zip(labels, string.ascii_letters, strict=False))

        def text(subs, keep_ellipsis=True):
            return "".join("..." if label is None else letter[label] for label in subs
                           if keep_ellipsis or label is not None)

        any_ellipsis = any(None in subs for subs in self._spec.inputs)
        self._np_equation = (",".join(text(s) for s in self._spec.inputs) + "->"
                             + text(self._spec.output, keep_ellipsis=any_ellipsis))
        self._out_ellipsis = None in self._spec.output

    def is_expensive(self, inputs: list) -> bool:
        return self._work(inputs) > POOL_FLOPS

    def _work(self, inputs) -> int:
        """About the multiply-adds: the product of every label's size (and ellipsis dims)."""
        sizes: dict = {}
        extra = 1
        for subs, x in zip(self._spec.inputs, inputs, strict=False):
            shape = np.shape(x)
            named = [label for label in subs if label is not None]
            if None in subs:
                pos = subs.index(None)
                n_ell = len(shape) - len(named)
                if n_ell < 0:
                    return 0
                extra = max(extra, math.prod(shape[pos:pos + n_ell]))
                shape = shape[:pos] + shape[pos + n_ell:]
            if len(shape) != len(named):
                return 0
            for label, d in zip(named, shape, strict=False):
                sizes[label] = d
        return math.prod(sizes.values()) * extra

    def compute(self, ctx, inputs):
        spec = self._spec
        if len(inputs) != len(spec.inputs):
            raise _invalid(f"Expected {len(spec.inputs)} inputs but got: {len(inputs)}")
        arrays = [np.asarray(x) for x in inputs]
        label_dim: dict = {}
        ellipsis_shapes = []
        for i, (subs, x) in enumerate(zip(spec.inputs, arrays, strict=False)):
            named = spec.named(i)
            has_ell = None in subs
            if not has_ell and x.ndim != named:
                raise _invalid(f"Expected input {i} to have rank {named} but got: {x.ndim}")
            if has_ell and x.ndim < named:
                raise _invalid(f"Expected input {i} to have rank at least {named} but got: "
                               f"{x.ndim}")
            axis = 0
            for label in subs:
                if label is None:
                    n_ell = x.ndim - named
                    ellipsis_shapes.append(x.shape[axis:axis + n_ell])
                    axis += n_ell
                    continue
                d = x.shape[axis]
                expected = label_dim.setdefault(label, d)
                if expected != d:
                    raise _invalid(f"Expected dimension {expected} at axis {axis} of the input "
                                   f"shaped {shape_str(x.shape)} but got dimension {d}")
                axis += 1
        if ellipsis_shapes:
            try:
                broadcast = np.broadcast_shapes(*ellipsis_shapes)
            except ValueError:
                raise _invalid("Invalid broadcasting dimensions: " + " vs. ".join(
                    shape_str(x.shape) for x in arrays)) from None
            if broadcast and not self._out_ellipsis:
                raise _invalid(f"Output contains {len(broadcast)} broadcasting dimension(s) but "
                               "no ellipsis (...) was found in the output subscripts.")
        dtype = arrays[0].dtype
        if dtype in _HALF:
            arrays = [x.astype(np.float32) for x in arrays]
        optimize = len(arrays) > 1 and self._work(arrays) > BIG
        out = np.einsum(self._np_equation, *arrays, optimize=optimize)
        return (np.asarray(out, dtype=dtype),)


# -- BatchMatMulV3 -------------------------------------------------------------------------

class BatchMatMulV3Op(_BatchMatMul):
    """BatchMatMulV2 with typed operands (Ta, Tb) and output (Tout)."""

    def __init__(self, ctx):
        OpKernel.__init__(self, ctx)
        self._adj_x = ctx.get_attr("adj_x", False)
        self._adj_y = ctx.get_attr("adj_y", False)
        self._tout = ctx.get_attr("Tout").as_numpy_dtype
        self._half = None

    def _matmul(self, a, b):
        if a.dtype != b.dtype or a.dtype != self._tout:
            work = np.float32 if np.dtype(self._tout) in _HALF else self._tout
            a, b = a.astype(work), b.astype(work)
        elif a.dtype in _HALF:
            a, b = a.astype(np.float32), b.astype(np.float32)
        return np.matmul(a, b).astype(self._tout, copy=False)


for _t in (dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int16, dtypes.int32,
           dtypes.int64, dtypes.complex64, dtypes.complex128):
    register_kernel("BatchMatMulV3", "CPU", Ta=_t, Tb=_t, Tout=_t)(BatchMatMulV3Op)
register_kernel("BatchMatMulV3", "CPU", Ta=[dtypes.int8, dtypes.uint8],
                Tb=[dtypes.int8, dtypes.uint8], Tout=dtypes.int32)(BatchMatMulV3Op)


# -- MatrixBandPart ------------------------------------------------------------------------

@register_kernel("MatrixBandPart", "CPU")
class MatrixBandPartOp(OpKernel):
    """Keeps the band num_lower below and num_upper above the diagonal (negative: all)."""

    expensive = None
    pool_above = OUTPUT_POOL_ABOVE
    compilable = True

    def compute(self, ctx, inputs):
        x, lower, upper = (np.asarray(v) for v in inputs)
        if x.ndim < 2:
            raise _invalid(f"input must be at least 2-dim, received shape: {shape_str(x.shape)}")
        m, n = x.shape[-2:]
        for name, v, limit, what in (("num_lower", lower, m, "rows"),
                                     ("num_upper", upper, n, "columns")):
            if v.ndim != 0:
                raise _invalid(f"{name} must be scalar, got shape {shape_str(v.shape)}")
            if int(v) > limit:
                raise _invalid(f"{name} must be negative or less or equal to number of {what} "
                               f"({limit}) got: {int(v)}")
        lo, up = int(lower), int(upper)
        diff = np.arange(n)[None, :] - np.arange(m)[:, None]  # column - row
        keep = np.ones((m, n), dtype=bool)
        if lo >= 0:
            keep &= -diff <= lo
        if up >= 0:
            keep &= diff <= up
        return (np.where(keep, x, np.asarray(_fill_value(x.dtype), dtype=x.dtype)),)


# -- the MatrixDiag families ---------------------------------------------------------------

def _diag_range(k) -> tuple[int, int]:
    """(lower, upper) from k: a scalar, or a vector of one or two elements."""
    k = np.asarray(k)
    if k.ndim > 1:
        raise _invalid(f"diag_index must be a scalar or vector, received shape: "
                       f"{shape_str(k.shape)}")
    values = k.reshape(-1).tolist()
    if not 1 <= len(values) <= 2:
        raise _invalid(f"diag_index must have only one or two elements, received "
                       f"{len(values)} elements.")
    lo, hi = int(values[0]), int(values[-1])
    return lo, hi


def _check_order(lo: int, hi: int) -> None:
    if lo > hi:
        raise _invalid(f"lower_diag_index must not be larger than upper_diag_index: {lo} > {hi}")


def _align_flags(align: str) -> tuple[bool, bool]:
    """(superdiagonals right-aligned, subdiagonals right-aligned)."""
    sup, sub = align.split("_")
    return sup == "RIGHT", sub == "RIGHT"


def _diag_len(d, m: int, n: int):
    """The length of diagonal d of an m x n matrix."""
    return np.minimum(m + np.minimum(0, d), n - np.maximum(0, d))


def _offsets(d, max_len: int, m: int, n: int, align) -> np.ndarray:
    """Where diagonal d's first element sits in its padded row of max_len."""
    right_sup, right_sub = align
    right = np.where(d >= 0, right_sup, right_sub)
    return np.where(right, max_len - _diag_len(d, m, n), 0)


def _band_positions(lo: int, hi: int, m: int, n: int, align):
    """For the [num_diags, max_len] layout: row and column in the matrix of each slot, and
    whether the slot holds an element."""
    max_len = int(min(m + min(hi, 0), n - max(lo, 0)))
    d = (hi - np.arange(hi - lo + 1))[:, None]
    p = np.arange(max(max_len, 0))[None, :] - _offsets(d, max_len, m, n, align)
    valid = (p >= 0) & (p < _diag_len(d, m, n))
    rows = p - np.minimum(d, 0)
    cols = p + np.maximum(d, 0)
    rows = np.where(valid, rows, 0)
    cols = np.where(valid, cols, 0)
    return max(max_len, 0), rows, cols, valid


def _align_attr(ctx, default: str) -> tuple[bool, bool]:
    align = ctx.get_attr("align", default) if ctx.has_attr("align") else default
    return _align_flags(attr_text(align))


class _DiagBase(OpKernel):
    expensive = None
    pool_above = OUTPUT_POOL_ABOVE
    version = 3

    def __init__(self, ctx):
        super().__init__(ctx)
        self._align = _align_attr(ctx, "RIGHT_LEFT" if self.version == 3 else "LEFT_LEFT")


class _MatrixDiag(_DiagBase):
    """A batch of matrices with the given diagonals, padding elsewhere."""

    def compute(self, ctx, inputs):
        if self.version == 1:
            diagonal = np.asarray(inputs[0])
            if diagonal.ndim < 1:
                raise _invalid("diagonal must be at least 1-dim, received shape: "
                               f"{shape_str(diagonal.shape)}")
            lo = hi = 0
            num_rows = num_cols = -1
            pad = _fill_value(diagonal.dtype)
        else:
            diagonal, k, rows_t, cols_t, pad_t = (np.asarray(v) for v in inputs)
            lo, hi = _diag_range(k)
            _check_order(lo, hi)
            for what, value in (("num_rows", rows_t), ("num_cols", cols_t)):
                if value.ndim != 0:  # TF 2.21's words (checked)
                    raise _invalid(f"{what} must be a scalar")
            num_rows, num_cols = int(rows_t), int(cols_t)
            if pad_t.ndim != 0:
                raise _invalid("padding_value must be a scalar")
            pad = pad_t[()]
            if diagonal.ndim < (1 if lo == hi else 2):
                raise _invalid(f"diagonal must be at least {1 if lo == hi else 2}-dim, "
                               f"received shape: {shape_str(diagonal.shape)}")
        num_diags = hi - lo + 1
        if lo != hi and diagonal.shape[-2] != num_diags:
            raise _invalid("The number of diagonals provided in the input does not match the "
                           "lower_diag_index and upper_diag_index range.")
        max_len = diagonal.shape[-1]
        min_rows = max_len - min(hi, 0)
        min_cols = max_len + max(lo, 0)
        if num_rows == -1 and num_cols == -1:
            num_rows = num_cols = max(min_rows, min_cols)
        elif num_rows == -1:
            num_rows = min_rows
        elif num_cols == -1:
            num_cols = min_cols
        if num_rows < min_rows:
            raise _invalid("The number of rows is too small.")
        if num_cols < min_cols:
            raise _invalid("The number of columns is too small.")
        if num_rows != min_rows and num_cols != min_cols:
            raise _invalid("The number of rows or columns is not consistent with the specified "
                           "d_lower, d_upper, and diagonal.")
        batch = diagonal.shape[:-2] if lo != hi else diagonal.shape[:-1]
        diags = diagonal if lo != hi else diagonal[..., None, :]
        m, n = num_rows, num_cols
        d = np.arange(n)[None, :] - np.arange(m)[:, None]
        inside = (d >= lo) & (d <= hi)
        r = np.where(inside, hi - d, 0)
        p = np.minimum(np.arange(m)[:, None], np.arange(n)[None, :]) + _offsets(
            d, max_len, m, n, self._align)
        p = np.where(inside, p, 0)
        if max_len == 0 or diags.size == 0:
            return (np.full(batch + (m, n), pad, dtype=diagonal.dtype),)
        out = diags[..., r, p]
        return (np.where(inside, out, np.asarray(pad, dtype=diagonal.dtype)),)


class _MatrixDiagPart(_DiagBase):
    """The diagonals k of a batch of matrices, padded to the longest."""

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.ndim < 2:
            raise _invalid(f"input must be at least 2-dim, received shape: {shape_str(x.shape)}")
        m, n = x.shape[-2:]
        if self.version == 1:
            lo = hi = 0
            pad = _fill_value(x.dtype)
        else:
            k, pad_t = np.asarray(inputs[1]), np.asarray(inputs[2])
            lo, hi = _diag_range(k)
            if pad_t.ndim != 0:
                raise _invalid("padding_value must be a scalar")
            pad = pad_t[()]
            for name, v in (("lower", lo), ("upper", hi)):
                if not ((-m < v < n) or v == 0):
                    raise _invalid(f"{name}_diag_index is out of bound: {v}. It must be between "
                                   f"{-m} and {n}")
            _check_order(lo, hi)
        max_len, rows, cols, valid = _band_positions(lo, hi, m, n, self._align)
        if x.size == 0 or max_len == 0:
            shape = x.shape[:-2] + ((hi - lo + 1,) if lo != hi else ()) + (max_len,)
            return (np.full(shape, pad, dtype=x.dtype),)
        out = x[..., rows, cols]
        out = np.where(valid, out, np.asarray(pad, dtype=x.dtype))
        if lo == hi:
            out = out[..., 0, :]
        return (out,)


class _MatrixSetDiag(_DiagBase):
    """A copy of the input with its diagonals k replaced."""

    def compute(self, ctx, inputs):
        x, diagonal = np.asarray(inputs[0]), np.asarray(inputs[1])
        if x.ndim < 2:
            raise _invalid(f"input must be at least 2-dim, received shape: {shape_str(x.shape)}")
        m, n = x.shape[-2:]
        if self.version == 1:
            lo = hi = 0
        else:
            lo, hi = _diag_range(inputs[2])
            for name, v in (("lower", lo), ("upper", hi)):
                if not ((-m < v < n) or v == 0):
                    raise _invalid(f"{name}_diag_index is out of bound: {v} It must be between "
                                   f"{-m} and {n}")
            _check_order(lo, hi)
        max_len, rows, cols, valid = _band_positions(lo, hi, m, n, self._align)
        expected = x.shape[:-2] + ((hi - lo + 1,) if lo != hi else ()) + (max_len,)
        if diagonal.shape != expected:
            raise _invalid(
                "Either first dimensions of diagonal don't match input.shape[:-2], or "
                "diagonal.shape[:-1] is not equal to the longests diagonal in range "
                f"[lower_diag_index:upper_diag_index].\nInput shape: {shape_str(x.shape)}\n"
                f"Diagonal shape: {shape_str(diagonal.shape)}\nExpected diagonal shape: "
                f"{shape_str(expected)}")
        out = x.copy()
        if out.size == 0 or max_len == 0:
            return (out,)
        diags = diagonal if lo != hi else diagonal[..., None, :]
        out[..., rows[valid], cols[valid]] = diags[..., valid]
        return (out,)


for _version, _suffix in ((1, ""), (2, "V2"), (3, "V3")):
    for _base, _name in ((_MatrixDiag, "MatrixDiag"), (_MatrixDiagPart, "MatrixDiagPart"),
                         (_MatrixSetDiag, "MatrixSetDiag")):
        register_kernel(_name + _suffix, "CPU")(type(_name + _suffix + "Op", (_base,), {
            "version": _version, "__doc__": f"CPU kernel for {_name}{_suffix}."}))


# -- Qr ------------------------------------------------------------------------------------

@register_kernel("Qr", "CPU")
class QrOp(OpKernel):
    """q, r of each innermost [M, N] matrix: q [M, P] and r [P, N] with P = min(M, N), or
    q [M, M] and r [M, N] with full_matrices."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._mode = "complete" if ctx.get_attr("full_matrices", False) else "reduced"

    def is_expensive(self, inputs: list) -> bool:
        x = inputs[0]
        if x.ndim < 2:
            return False
        m, n = x.shape[-2:]
        return x.size * min(m, n) > POOL_FLOPS

    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        if x.ndim < 2:
            raise _invalid(f"Input tensor 0 must have rank >= 2, got {x.ndim}")
        work = x.astype(np.float32) if x.dtype in _HALF else x
        q, r = np.linalg.qr(work, mode=self._mode)
        return q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)
