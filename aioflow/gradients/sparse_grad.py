"""Gradient functions of the sparse ops aioflow registers (TF's sparse_grad.py):
SparseReorder, SparseAdd, SparseSlice, SparseFillEmptyRows (through their gradient ops
SparseAddGrad, SparseSliceGrad, SparseFillEmptyRowsGrad), SparseReduceSum,
SparseTensorDenseMatMul, SparseToDense; SparseAddGrad and SparseConcat are not
differentiable, as in TF."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.gradients.math_grad import reduced_shape
from aioflow.gradients.registry import NotDifferentiable, RegisterGradient
from aioflow.ops import array_ops, math_ops, sparse_ops

NotDifferentiable("SparseAddGrad")
NotDifferentiable("SparseConcat")


@RegisterGradient("SparseReorder")
def _sparse_reorder_grad(op, unused_output_indices_grad, output_values_grad):
    input_indices = op.inputs[0]
    input_shape = op.inputs[2]
    num_entries = array_ops.shape(input_indices)[0]
    entry_indices = math_ops.range(num_entries)
    sp_unordered = SparseTensor(input_indices, entry_indices, input_shape)
    sp_ordered = sparse_ops.reorder(sp_unordered)
    inverted_permutation = apply_op("InvertPermutation", x=sp_ordered.values)
    return None, array_ops.gather(output_values_grad, inverted_permutation), None


@RegisterGradient("SparseAdd")
def _sparse_add_grad(op, *grads):
    val_grad = grads[1]
    a_indices = op.inputs[0]
    b_indices = op.inputs[3]
    sum_indices = op.outputs[0]
    a_val_grad, b_val_grad = apply_op("SparseAddGrad", backprop_val_grad=val_grad,
                                      a_indices=a_indices, b_indices=b_indices,
                                      sum_indices=sum_indices)
    a_val_grad.set_shape(op.inputs[1].get_shape())
    b_val_grad.set_shape(op.inputs[4].get_shape())
    return None, a_val_grad, None, None, b_val_grad, None, None


@RegisterGradient("SparseSlice")
def _sparse_slice_grad(op, *grads):
    backprop_val_grad = grads[1]
    val_grad = apply_op("SparseSliceGrad", backprop_val_grad=backprop_val_grad,
                        input_indices=op.inputs[0], input_start=op.inputs[3],
                        output_indices=op.outputs[0])
    val_grad.set_shape(op.inputs[1].get_shape())
    return None, val_grad, None, None, None


@RegisterGradient("SparseFillEmptyRows")
def _sparse_fill_empty_rows_grad(op, unused_grad_output_indices, output_grad_values,
                                 unused_grad_empty_row_indicator,
                                 unused_grad_reverse_index_map):
    d_values, d_default_value = apply_op("SparseFillEmptyRowsGrad",
                                         reverse_index_map=op.outputs[3],
                                         grad_values=output_grad_values)
    return [None, d_values, None, d_default_value]


@RegisterGradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op, out_grad):
    sp_indices = op.inputs[0]
    sp_shape = op.inputs[2]
    output_shape_kept_dims = reduced_shape(sp_shape, op.inputs[3])
    out_grad_reshaped = array_ops.reshape(out_grad, output_shape_kept_dims)
    scale = sp_shape // math_ops.cast(output_shape_kept_dims, dtypes.int64)
    return None, array_ops.gather_nd(out_grad_reshaped, sp_indices // scale), None, None


@RegisterGradient("SparseTensorDenseMatMul")
def _sparse_tensor_dense_mat_mul_grad(op, grad):
    a_indices, a_values, a_shape = op.inputs[:3]
    b = op.inputs[3]
    adj_a = op.get_attr("adjoint_a")
    adj_b = op.get_attr("adjoint_b")
    a_type, b_type = a_values.dtype.base_dtype, b.dtype.base_dtype
    if a_type != b_type:
        raise TypeError("SparseTensorDenseMatMul op received operands with different types: "
                        f"`{a_type.name}` and `{b_type.name}`.")
    b_grad = apply_op("SparseTensorDenseMatMul", a_indices=a_indices, a_values=a_values,
                      a_shape=a_shape, b=grad, adjoint_a=not adj_a)
    if adj_b:
        b_grad = array_ops.matrix_transpose(b_grad)
    rows = a_indices[:, 0]
    cols = a_indices[:, 1]
    parts_a = array_ops.gather(grad, rows if not adj_a else cols)
    parts_b = array_ops.gather(b if not adj_b else array_ops.transpose(b),
                               cols if not adj_a else rows)
    if not adj_a and not adj_b:
        a_values_grad = math_ops.matmul(array_ops.expand_dims(parts_a, -2),
                                        array_ops.expand_dims(parts_b, -2), adjoint_b=True)
    elif adj_a and not adj_b:
        a_values_grad = math_ops.matmul(array_ops.expand_dims(parts_a, -1),
                                        array_ops.expand_dims(parts_b, -1), adjoint_a=True)
    elif not adj_a and adj_b:
        a_values_grad = math_ops.matmul(array_ops.expand_dims(parts_a, -2),
                                        array_ops.expand_dims(parts_b, -1))
    else:
        a_values_grad = math_ops.matmul(array_ops.expand_dims(parts_a, -1),
                                        array_ops.expand_dims(parts_b, -2), adjoint_a=True,
                                        adjoint_b=True)
    return None, array_ops.squeeze(a_values_grad, axis=[-2, -1]), None, b_grad


@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    sparse_indices, output_shape, _, _ = op.inputs
    sparse_values_grad = array_ops.gather_nd(grad, sparse_indices)
    default_value_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(sparse_values_grad)
    return [array_ops.zeros_like(sparse_indices), array_ops.zeros_like(output_shape),
            sparse_values_grad, default_value_grad]
