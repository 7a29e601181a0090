"""CPU kernels of the gradient ops of the sparse ops (TF's sparse_add_grad_op.cc,
sparse_slice_grad_op.cc, sparse_fill_empty_rows_op.cc): SparseAddGrad, SparseSliceGrad and
SparseFillEmptyRowsGrad, which route the gradient of an output SparseTensor's values back to
the input values each output entry came from. Checks, error classes and words are TF 2.21's;
the walks are TF's too (entries matched in order), so inputs that are not in the order the
forward kernel wrote give TF's answer."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.array.array_kernels import _invalid
from aioflow.kernels.math.cwise_kernels import shape_str


def _cmp(a: np.ndarray, i: int, b: np.ndarray, k: int) -> int:
    """-1, 0 or 1: row i of `a` against row k of `b`, lexicographically (TF's
    DimComparator)."""
    for x, y in zip(a[i].tolist(), b[k].tolist(), strict=True):
        if x != y:
            return -1 if x < y else 1
    return 0


@register_kernel("SparseAddGrad", "CPU")
class SparseAddGradOp(OpKernel):
    """The sum's value gradient split onto A's and B's entries: an entry of A (or B)
    whose index is in the sum gets that entry's gradient, every other entry 0."""

    def compute(self, ctx, inputs):
        grad, a, b, s = (np.asarray(v) for v in inputs)
        if a.ndim != 2 or b.ndim != 2 or s.ndim != 2:
            raise _invalid(f"Input indices should be matrices but received shapes: "
                           f"{shape_str(a.shape)} and {shape_str(b.shape)} and "
                           f"{shape_str(s.shape)}")
        if grad.ndim != 1:
            raise _invalid(f"Input backprop_val_grad should be a vector but received shape: "
                           f"{shape_str(grad.shape)}")
        if not a.shape[1] == b.shape[1] == s.shape[1]:
            raise _invalid(f"The densified operands should have the same ndims; for A, B, "
                           f"sum got: {a.shape[1]}{b.shape[1]}{s.shape[1]}")
        if grad.shape[0] != s.shape[0]:
            raise _invalid(f"# elements of backprop_val_grad and # rows of sum_indices should "
                           f"match (#nnz of sum): got {grad.shape[0]} and {s.shape[0]}")
        a_grad = np.zeros(a.shape[0], grad.dtype)
        b_grad = np.zeros(b.shape[0], grad.dtype)
        ids = _row_ids(a, b, s)
        if ids is None:
            _split_sum_grad(grad, a, b, s, a_grad, b_grad)
        else:  # all three strictly ordered (as SparseAdd writes them): match equal rows
            a_ids, b_ids, s_ids = ids
            _take_matching(grad, s_ids, a_ids, a_grad)
            _take_matching(grad, s_ids, b_ids, b_grad)
        return a_grad, b_grad


def _row_ids(*mats):
    """Each matrix's rows as integers ordered as the rows are lexicographically (one
    numbering for all), or None when a matrix's rows are not strictly increasing (then
    only TF's walk gives TF's answer)."""
    rows = np.concatenate([m.astype(np.int64, copy=False) for m in mats])
    if rows.shape[0] == 0:
        return [np.zeros(0, np.int64) for _ in mats]
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    out, start = [], 0
    for m in mats:
        ids = inverse[start:start + m.shape[0]]
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():
            return None
        out.append(ids)
        start += m.shape[0]
    return out


def _take_matching(grad, s_ids, x_ids, x_grad) -> None:
    """x_grad[i] = grad[k] where row k of the sum is row i of x (both strictly ordered)."""
    if not s_ids.size or not x_ids.size:
        return
    k = np.minimum(np.searchsorted(s_ids, x_ids), s_ids.size - 1)
    hit = s_ids[k] == x_ids
    x_grad[hit] = grad[k[hit]]


def _split_sum_grad(grad, a, b, s, a_grad, b_grad) -> None:
    """TF's merge walk: i over A, j over B, k over the sum; k moves on once neither A's
    nor B's current entry is below the sum's."""
    i = j = k = 0
    na, nb, ns = a.shape[0], b.shape[0], s.shape[0]
    while k < ns and (i < na or j < nb):
        a_geq = b_geq = True
        if i < na:
            c = _cmp(a, i, s, k)
            if c == 0:
                a_grad[i] = grad[k]
                i += 1
            elif c < 0:
                i += 1
                a_geq = False
        if j < nb:
            c = _cmp(b, j, s, k)
            if c == 0:
                b_grad[j] = grad[k]
                j += 1
            elif c < 0:
                j += 1
                b_geq = False
        if a_geq and b_geq:
            k += 1


@register_kernel("SparseSliceGrad", "CPU")
class SparseSliceGradOp(OpKernel):
    """The slice's value gradient put back at the input entries it came from (in order:
    input entry i is output entry j when its index is output j's plus `input_start`)."""

    def compute(self, ctx, inputs):
        grad, indices, start, out = (np.asarray(v) for v in inputs)
        if indices.ndim != 2 or out.ndim != 2:
            raise _invalid(f"Input and output indices should be matrices but received "
                           f"shapes: {shape_str(indices.shape)} and {shape_str(out.shape)}")
        if grad.ndim != 1:
            raise _invalid(f"Input backprop_val_grad should be a vector but received shape: "
                           f"{shape_str(grad.shape)}")
        if indices.shape[1] != out.shape[1]:
            raise _invalid(f"The input and output should have the same ndims: got: "
                           f"{indices.shape[1]} and {out.shape[1]}")
        if out.shape[0] > indices.shape[0]:
            raise _invalid(f"# rows of output_indices should be not greater than of "
                           f"input_indices, got {out.shape[0]} and {indices.shape[0]}")
        if grad.shape[0] != out.shape[0]:
            raise _invalid(f"# elements of backprop_val_grad and # rows of output_indices "
                           f"should match (#nnz of sum): got {grad.shape[0]} and "
                           f"{out.shape[0]}")
        if start.ndim != 1:
            raise _invalid(f"The input_start should be a vector but received shape "
                           f"{shape_str(start.shape)}")
        if start.shape[0] != indices.shape[1]:
            raise _invalid(f"Expected input_start to be a vector of length {indices.shape[1]} "
                           f"but got length {start.shape[0]}")
        val_grad = np.zeros(indices.shape[0], grad.dtype)
        shifted = out + start
        n = grad.shape[0]
        ids = _row_ids(indices, shifted)
        if ids is not None:  # both strictly ordered: output j is the input row equal to it
            in_ids, out_ids = ids
            k = np.minimum(np.searchsorted(in_ids, out_ids), max(in_ids.size - 1, 0))
            hit = in_ids[k] == out_ids if in_ids.size else np.zeros(n, bool)
            if hit.all():
                val_grad[k] = grad
                return (val_grad,)
            raise errors.InternalError(
                None, None, f"Elements of backprop_val_grad aren't all propagated. Num "
                            f"elements:{n}, used: {int(np.argmin(hit))}")
        j = 0
        for i in range(indices.shape[0]):
            if j >= n:
                break
            if (indices[i] == shifted[j]).all():
                val_grad[i] = grad[j]
                j += 1
        if j != n:
            raise errors.InternalError(
                None, None, f"Elements of backprop_val_grad aren't all propagated. Num "
                            f"elements:{n}, used: {j}")
        return (val_grad,)


@register_kernel("SparseFillEmptyRowsGrad", "CPU")
class SparseFillEmptyRowsGradOp(OpKernel):
    """d_values[i] = grad_values[reverse_index_map[i]]; the default value's gradient is the
    sum of the gradients of the entries no input entry went to (the filled rows)."""

    def compute(self, ctx, inputs):
        reverse, grad = (np.asarray(v) for v in inputs)
        if reverse.ndim != 1:
            raise _invalid(f"reverse_index_map must be a vector, saw: "
                           f"{shape_str(reverse.shape)}")
        if grad.ndim != 1:
            raise _invalid(f"grad_values must be a vector, saw: {shape_str(grad.shape)}")
        n_full = grad.shape[0]
        bad = (reverse < 0) | (reverse >= n_full)
        if bad.any():
            raise _invalid(f"Elements in reverse index must be in [0, {n_full}) but got "
                           f"{int(reverse[int(bad.argmax())])}")
        visited = np.zeros(n_full, bool)
        visited[reverse] = True
        return grad[reverse], np.asarray(grad[~visited].sum(dtype=grad.dtype), grad.dtype)
