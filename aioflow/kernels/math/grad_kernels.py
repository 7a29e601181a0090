"""CPU kernels of the small math gradient ops: BroadcastGradientArgs (the axes a
broadcast input's gradient sums over) and the cwise gradients in terms of the forward
output y: SigmoidGrad, TanhGrad, RsqrtGrad, SqrtGrad, ReciprocalGrad (InvGrad).

For complex types TF multiplies dy by the conjugate of the derivative.
"""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BinaryKernel, via_float32
from aioflow.kernels.math.special_math_kernels import digamma


def _shape_text(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def broadcast_gradient_reduction(s0, s1):
    """(r0, r1): the axes of the broadcast shape each input was broadcast along (TF's
    BCast grad_reduce_idx): where an input's dim is 1 and the output's is not, and
    where every input's dim is 1."""
    rank = max(len(s0), len(s1))
    x = [1] * (rank - len(s0)) + list(s0)
    y = [1] * (rank - len(s1)) + list(s1)
    r0, r1 = [], []
    for i in range(rank):
        a, b = x[i], y[i]
        if a == b:
            if a == 1:
                r0.append(i)
                r1.append(i)
        elif a == 1:
            r0.append(i)
        elif b == 1:
            r1.append(i)
        else:
            return None
    return r0, r1


@register_kernel("BroadcastGradientArgs", "CPU")
class BroadcastGradientArgsOp(OpKernel):
    """r0, r1 for the shapes s0, s1; InvalidArgument when they do not broadcast."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        s0, s1 = inputs
        for i, s in enumerate((s0, s1)):
            if np.ndim(s) != 1:
                raise errors.InvalidArgumentError(
                    None, None, f"In[{i}] must be a vector.{_shape_text(np.shape(s))}")
        result = broadcast_gradient_reduction(s0.tolist(), s1.tolist())
        if result is None:
            raise errors.InvalidArgumentError(
                None, None, f"Incompatible shapes: {_shape_text(s0)} vs. {_shape_text(s1)}")
        dtype = s0.dtype
        return (np.array(result[0], dtype), np.array(result[1], dtype))


def _grad_kernel(op_type: str, formula):
    """A y/dy kernel: z = dy * formula(y), conjugated for complex types."""
    def make_fn(self, dtype):
        if dtype.is_floating:  # no conjugate; dy * formula(y) has y's type already
            return via_float32(lambda y, dy: dy * formula(y), dtype)

        def fn(y, dy):
            d = formula(y)
            if np.iscomplexobj(d):
                d = np.conj(d)
            return (dy * d).astype(y.dtype, copy=False)
        return via_float32(fn, dtype)

    cls = type(op_type + "Op", (BinaryKernel,), {
        "make_fn": make_fn, "__doc__": f"CPU kernel for {op_type}."})
    register_kernel(op_type, "CPU")(cls)
    return cls


_grad_kernel("SigmoidGrad", lambda y: y * (1 - y))
_grad_kernel("TanhGrad", lambda y: 1 - y * y)
_grad_kernel("RsqrtGrad", lambda y: -0.5 * (y * y * y))
_grad_kernel("SqrtGrad", lambda y: 0.5 / y)
_grad_kernel("ReciprocalGrad", lambda y: -(y * y))
_grad_kernel("InvGrad", lambda y: -(y * y))


class _SparseSegmentGrad(OpKernel):
    """output[indices[i]] += grad[segment_ids[i]] * scale(segment_ids[i]), of shape
    [output_dim0] + grad.shape[1:] (the gradient of SparseSegmentSum/Mean/SqrtN)."""

    def scale(self, counts):
        return None

    def compute(self, ctx, inputs):
        grad, indices, segment_ids, output_dim0 = inputs
        grad = np.asarray(grad)
        indices = np.asarray(indices).astype(np.int64).ravel()
        segment_ids = np.asarray(segment_ids).astype(np.int64).ravel()
        if np.ndim(output_dim0) != 0:  # TF's SparseSegmentGradOpBase
            raise errors.InvalidArgumentError(None, None, "output_dim0 should be a scalar.")
        dim0 = int(output_dim0)
        if indices.size != segment_ids.size:
            raise errors.InvalidArgumentError(
                None, None, "segment_ids and indices should have same size.")
        n = grad.shape[0] if grad.ndim else 0
        bad = (segment_ids < 0) | (segment_ids >= n)
        if np.any(bad):
            raise errors.InvalidArgumentError(
                None, None, f"Segment id {int(segment_ids[np.argmax(bad)])} out of range "
                f"[0, {n}).")
        bad = (indices < 0) | (indices >= dim0)
        if np.any(bad):
            raise errors.InvalidArgumentError(
                None, None, f"Index {int(indices[np.argmax(bad)])} out of range "
                f"[0, {dim0}).")
        # (a scalar grad has no rows: only no segment ids got past the range check)
        rows = grad[segment_ids] if grad.ndim else grad.reshape(1)[segment_ids]
        scale = self.scale(np.bincount(segment_ids, minlength=n).astype(np.float64))
        if scale is not None:
            rows = rows * scale[segment_ids].reshape((-1,) + (1,) * (grad.ndim - 1)).astype(
                grad.dtype)
        out = np.zeros((dim0,) + grad.shape[1:], grad.dtype)
        np.add.at(out, indices, rows)
        return (out,)


@register_kernel("SparseSegmentSumGrad", "CPU")
class SparseSegmentSumGradOp(_SparseSegmentGrad):
    """Each segment's gradient to each of its rows."""


@register_kernel("SparseSegmentMeanGrad", "CPU")
class SparseSegmentMeanGradOp(_SparseSegmentGrad):
    """Each segment's gradient over its size, to each of its rows."""

    def scale(self, counts):
        return 1.0 / np.maximum(counts, 1.0)


@register_kernel("SparseSegmentSqrtNGrad", "CPU")
class SparseSegmentSqrtNGradOp(_SparseSegmentGrad):
    """Each segment's gradient over the square root of its size, to each of its rows."""

    def scale(self, counts):
        return 1.0 / np.sqrt(np.maximum(counts, 1.0))


# Bernoulli numbers B_2j / (2j)! for the Euler-Maclaurin tail of the Hurwitz zeta.
_B2J_OVER_FACT = [1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160,
                  -691 / 1307674368000, 1 / 74724249600]


def hurwitz_zeta(s: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta(s, q) = sum_k (q + k)^-s for s > 1, q > 0 (Euler-Maclaurin: nine terms, then
    the integral and seven Bernoulli corrections, as Cephes' zeta)."""
    s = np.asarray(s, np.float64)
    q = np.asarray(q, np.float64)
    total = np.zeros(np.broadcast(s, q).shape)
    for k in range(9):
        total = total + (q + k) ** -s
    a = q + 9
    total = total + a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    factor = s * a ** (-s - 1)  # s (s+1) ... (s+2j-2) a^(-s-2j+1), j = 1
    for j, b in enumerate(_B2J_OVER_FACT, start=1):
        total = total + b * factor
        factor = factor * (s + 2 * j - 1) * (s + 2 * j) / (a * a)
    return total


def polygamma(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """psi^(n)(x) for integer n >= 0: digamma for n = 0, else
    (-1)^(n+1) n! zeta(n + 1, x); NaN for other n, and for x <= 0 with n >= 1."""
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    out = np.full(n.shape, np.nan)
    whole = (n >= 0) & (n == np.floor(n))
    zero = whole & (n == 0)
    if np.any(zero):
        out[zero] = digamma(x[zero])
    higher = whole & (n > 0) & (x > 0)
    if np.any(higher):
        nn = n[higher]
        # n! as Eigen's polygamma takes it, exp(lgamma(n + 1)): inf past 170 (and for an
        # infinite n), never an int() of infinity
        with np.errstate(over="ignore"):
            fact = np.exp(np.array([math.lgamma(v + 1.0) for v in nn], np.float64))
        out[higher] = (-1.0) ** (nn + 1) * fact * hurwitz_zeta(nn + 1, x[higher])
    return out


@register_kernel("Polygamma", "CPU")
class PolygammaOp(BinaryKernel):
    """psi^(a)(x), the a-th derivative of digamma (Digamma's gradient uses a = 1)."""

    def make_fn(self, dtype):
        return lambda a, x: polygamma(a, x).astype(dtype.as_numpy_dtype)
