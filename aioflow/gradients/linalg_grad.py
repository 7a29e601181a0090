"""Gradient functions of the linear-algebra ops aioflow registers (TF's linalg_grad.py):
Einsum (the gradient of each operand is an einsum of the output's gradient and the other
operand, summed over the labels only that operand had, broadcast back) and Qr (TF's
QR backpropagation, arXiv:2009.10071: square and deep matrices directly, wide ones by
splitting a = [x, y]; static shapes only, as TF)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.math_grad import broadcast_gradient_args, reduced_shape
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops, linalg_ops, math_ops

_ELLIPSIS = "..."


def _einsum(inputs, equation):
    return apply_op("Einsum", inputs=list(inputs), equation=equation)


def _axis_from_label(subscripts, label):
    """The axis of `label`: from the left before an ellipsis, from the right after it."""
    splits = subscripts.split(_ELLIPSIS)
    index = splits[0].find(label)
    if index != -1:
        return index
    if len(splits) < 2:
        return None
    index = splits[1].find(label)
    if index != -1:
        return index - len(splits[1])
    return None


def _bcast_subshape(subscripts):
    start = subscripts.find(_ELLIPSIS)
    if start == -1:
        return 0, 0
    remaining = len(subscripts) - (start + len(_ELLIPSIS))
    return start, (-remaining if remaining > 0 else None)


def _reduced_subscripts(reduced_label_set, input_shape, subscripts):
    reduced_subs = "".join(list(reduced_label_set))
    reduced_axes = [_axis_from_label(subscripts, s) for s in reduced_subs]
    reduced_dims = array_ops.stack([input_shape[ax] for ax in reduced_axes])
    return reduced_subs, reduced_dims, reduced_axes


def _grad_reduced(output_grad, output_subs, input_subs, input_shape, reduced_label_set):
    """The gradient of an operand whose labels `reduced_label_set` were summed away."""
    reduced_subs, reduced_dims, reduced_axes = _reduced_subscripts(
        reduced_label_set, input_shape, input_subs)
    has_repeated_labels = (len(set(input_subs)) + len(set(output_subs))
                           < len(input_subs) + len(output_subs))
    input_subs_without_reduced = "".join(s for s in input_subs if s not in reduced_label_set)
    if not has_repeated_labels and input_subs_without_reduced == output_subs:
        shape = reduced_shape(input_shape, ops.convert_to_tensor(reduced_axes))
        return array_ops.broadcast_to(array_ops.reshape(output_grad, shape), input_shape)
    grad_shape_with_reduced = array_ops.concat([reduced_dims, array_ops.shape(output_grad)],
                                               axis=0)
    shape = array_ops.concat([array_ops.ones(len(reduced_label_set), dtype=dtypes.int32),
                              array_ops.shape(output_grad)], axis=0)
    broadcasted = array_ops.broadcast_to(array_ops.reshape(output_grad, shape),
                                         grad_shape_with_reduced)
    return _einsum([broadcasted], f"{reduced_subs + output_subs}->{input_subs}")


def _grad_wrt(output_grad, other_operand, input_shape, input_subs, other_subs, output_subs):
    reduced_label_set = set(input_subs).difference(set(output_subs + other_subs + "."))
    left_subs = "".join(s for s in input_subs if s not in reduced_label_set)
    grad_reduced = _einsum([output_grad, other_operand],
                           f"{output_subs},{other_subs}->{left_subs}")
    if not reduced_label_set:
        return grad_reduced
    return _grad_reduced(grad_reduced, left_subs, input_subs, input_shape, reduced_label_set)


@RegisterGradient("Einsum")
def _einsum_grad(op, grad):
    equation = op.get_attr("equation")
    if isinstance(equation, bytes):
        equation = equation.decode()
    input_subs, output_subs = equation.split("->")
    if len(op.inputs) == 1:
        input_shape = array_ops.shape(op.inputs[0])
        reduced_label_set = set(input_subs).difference(set(output_subs + _ELLIPSIS))
        if not reduced_label_set:
            return _einsum([grad], f"{output_subs}->{input_subs}")
        return _grad_reduced(grad, output_subs, input_subs, input_shape, reduced_label_set)
    x_subs, y_subs = input_subs.split(",")
    if _ELLIPSIS in output_subs:
        if _ELLIPSIS not in x_subs:
            x_subs += _ELLIPSIS
        if _ELLIPSIS not in y_subs:
            y_subs += _ELLIPSIS
    x, y = op.inputs[0], op.inputs[1]
    if grad.dtype.is_complex:
        x = math_ops.conj(x)
        y = math_ops.conj(y)
    x_shape = array_ops.shape(x)
    y_shape = array_ops.shape(y)
    grad_x = _grad_wrt(grad, y, x_shape, x_subs, y_subs, output_subs)
    grad_y = _grad_wrt(grad, x, y_shape, y_subs, x_subs, output_subs)
    if _ELLIPSIS not in output_subs:
        return grad_x, grad_y
    bx_start, bx_end = _bcast_subshape(x_subs)
    by_start, by_end = _bcast_subshape(y_subs)
    xs, ys = x.shape, y.shape
    if (xs.is_fully_defined() and ys.is_fully_defined()
            and xs[bx_start:bx_end] == ys[by_start:by_end]):
        return grad_x, grad_y
    rx, ry = broadcast_gradient_args(x_shape[bx_start:bx_end], y_shape[by_start:by_end])
    grad_x = array_ops.reshape(math_ops.reduce_sum(grad_x, bx_start + rx), x_shape)
    grad_y = array_ops.reshape(math_ops.reduce_sum(grad_y, by_start + ry), y_shape)
    return grad_x, grad_y


def _triangular_solve(x, r):
    """matmul(x, adjoint(matrix_inverse(r))) for an upper-triangular r."""
    return linalg_ops.adjoint(linalg_ops.matrix_triangular_solve(
        r, linalg_ops.adjoint(x), lower=False, adjoint=False))


def _qr_grad_square_and_deep(q, r, dq, dr):
    """The gradient for num_rows >= num_cols and full_matrices false."""
    qdq = math_ops.matmul(q, dq, adjoint_a=True)
    qdq_ = qdq - linalg_ops.adjoint(qdq)
    rdr = math_ops.matmul(r, dr, adjoint_b=True)
    rdr_ = rdr - linalg_ops.adjoint(rdr)
    tril = linalg_ops.band_part(qdq_ + rdr_, -1, 0)
    grad_a = math_ops.matmul(q, dr + _triangular_solve(tril, r))
    grad_b = _triangular_solve(dq - math_ops.matmul(q, qdq), r)
    ret = grad_a + grad_b
    if q.dtype.is_complex:
        m = rdr - linalg_ops.adjoint(qdq)
        eyem = linalg_ops.set_diag(array_ops.zeros_like(m), linalg_ops.diag_part(m))
        correction = eyem - math_ops.cast(math_ops.real(eyem), q.dtype)
        ret = ret + _triangular_solve(math_ops.matmul(q, linalg_ops.adjoint(correction)), r)
    return ret


@RegisterGradient("Qr")
def _qr_grad(op, dq, dr):
    q, r = op.outputs
    if r.shape.ndims is None or r.shape.as_list()[-2] is None or r.shape.as_list()[-1] is None:
        raise NotImplementedError("QrGrad not implemented with dynamic shapes. "
                                  f"Received r.shape: {r.shape}")
    if (r.shape.dims[-2].value > r.shape.dims[-1].value
            and q.shape.dims[-2].value == q.shape.dims[-1].value):
        raise NotImplementedError("QrGrad not implemented when nrows > ncols and "
                                  "full_matrices is true. Received r.shape="
                                  f"{r.shape} with nrows={r.shape.dims[-2]}"
                                  f"and ncols={r.shape.dims[-1]}.")
    num_rows, num_cols = q.shape.dims[-2].value, r.shape.dims[-1]
    if num_rows >= num_cols:
        return _qr_grad_square_and_deep(q, r, dq, dr)
    a = op.inputs[0]
    y = a[..., :, num_rows:]
    u = r[..., :, :num_rows]
    dv = dr[..., :, num_rows:]
    du = dr[..., :, :num_rows]
    dy = math_ops.matmul(q, dv)
    dx = _qr_grad_square_and_deep(q, u, dq + math_ops.matmul(y, dv, adjoint_b=True), du)
    return array_ops.concat([dx, dy], axis=-1)
