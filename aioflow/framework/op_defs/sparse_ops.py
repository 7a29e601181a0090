"""OpDefs of TF's sparse ops (tensorflow/core/ops/sparse_ops.cc, math_ops.cc): a SparseTensor
is three inputs, `indices` [nnz, rank] int64, `values` [nnz] and `dense_shape` [rank] int64.

The shape functions give what is cheap to know (ranks, nnz, a constant shape); an unknown
shape is always a valid answer."""

from __future__ import annotations

import numpy as np

from aioflow.framework.constant_value import constant_value, constant_value_as_shape
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)


def _dim(shape: TensorShape, i: int):
    """Dimension i of a shape (None when unknown or the rank is too small)."""
    return shape.as_list()[i] if shape.rank is not None and shape.rank > i else None


def _rank_of(op, shape_input: int, indices_input: int | None = None):
    """The SparseTensor's rank: the length of its dense_shape (or indices' second dim)."""
    rank = _dim(op.inputs[shape_input].shape, 0)
    if rank is None and indices_input is not None:
        rank = _dim(op.inputs[indices_input].shape, 1)
    return rank


def _sparse_out(rank, nnz=None) -> list[TensorShape]:
    """[indices, values, dense_shape] shapes of an output SparseTensor."""
    return [TensorShape([nnz, rank]), TensorShape([nnz]), TensorShape([rank])]


def _sparse_to_dense_shape(op):
    return [constant_value_as_shape(op.inputs[1], fold=True)]


def _matmul_shape(op):
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    a_shape = constant_value(op.inputs[2])
    rows = None
    if a_shape is not None and np.size(a_shape) == 2:
        rows = int(np.ravel(a_shape)[1 if adj_a else 0])
    cols = _dim(op.inputs[3].shape, 0 if adj_b else 1)
    return [TensorShape([rows, cols])]


def _reshape_shape(op):
    nnz = _dim(op.inputs[0].shape, 0)
    rank = _dim(op.inputs[2].shape, 0)
    return [TensorShape([nnz, rank]), TensorShape([rank])]


def _reorder_shape(op):
    return [op.inputs[0].shape, op.inputs[1].shape]


def _reduce_sparse_shape(op):
    return _sparse_out(None)


def _fill_empty_rows_shape(op):
    rank = _rank_of(op, 2, 0)
    nnz = _dim(op.inputs[0].shape, 0)
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([None]),
            TensorShape([nnz])]


def _add_shape(op):
    return _sparse_out(_rank_of(op, 2, 0))


def _slice_shape(op):
    return _sparse_out(_rank_of(op, 2, 0))


def _concat_shape(op):
    n = op.get_attr("N")
    rank = None
    for t in op.inputs[2 * n:]:
        rank = rank if rank is not None else _dim(t.shape, 0)
    return _sparse_out(rank)


(register_op("SparseToDense").input("sparse_indices: Tindices").input("output_shape: Tindices")
    .input("sparse_values: T").input("default_value: T").output("dense: T")
    .attr("validate_indices: bool = true").attr("T: type").attr("Tindices: {int32, int64}")
    .set_shape_fn(_sparse_to_dense_shape))
(register_op("SparseTensorDenseMatMul").input("a_indices: Tindices").input("a_values: T")
    .input("a_shape: int64").input("b: T").output("product: T").attr("T: type")
    .attr("Tindices: {int32,int64} = DT_INT64").attr("adjoint_a: bool = false")
    .attr("adjoint_b: bool = false").set_shape_fn(_matmul_shape))
(register_op("SparseReshape").input("input_indices: int64").input("input_shape: int64")
    .input("new_shape: int64").output("output_indices: int64").output("output_shape: int64")
    .set_shape_fn(_reshape_shape))
(register_op("SparseReorder").input("input_indices: int64").input("input_values: T")
    .input("input_shape: int64").output("output_indices: int64").output("output_values: T")
    .attr("T: type").set_shape_fn(_reorder_shape))
def _sparse_reduce_shape(op) -> list:
    """With a constant dense shape and axes: the reduced shape (TF's SparseReduceShapeFn)."""
    shape = constant_value(op.inputs[2])
    axes = constant_value(op.inputs[3])
    if shape is None or axes is None:
        return [_UNKNOWN]
    if np.ndim(shape) != 1:  # TF: the dense shape is a vector
        raise ValueError(f"Shape must be rank 1 but is rank {np.ndim(shape)} for "
                         f"'{op.name}' (op: '{op.type}')")
    rank = len(shape)
    reduced = {int(a) % rank for a in np.ravel(axes)} if rank else set()
    keep = op.get_attr("keep_dims")
    dims = [1 if i in reduced else int(d) for i, d in enumerate(shape)
            if keep or i not in reduced]
    return [TensorShape(dims)]


(register_op("SparseReduceSum").input("input_indices: int64").input("input_values: T")
    .input("input_shape: int64").input("reduction_axes: int32").output("output: T")
    .attr("keep_dims: bool = false").attr("T: numbertype")
    .set_shape_fn(_sparse_reduce_shape))
(register_op("SparseReduceSumSparse").input("input_indices: int64").input("input_values: T")
    .input("input_shape: int64").input("reduction_axes: int32").output("output_indices: int64")
    .output("output_values: T").output("output_shape: int64").attr("keep_dims: bool = false")
    .attr("T: numbertype").set_shape_fn(_reduce_sparse_shape))
(register_op("SparseFillEmptyRows").input("indices: int64").input("values: T")
    .input("dense_shape: int64").input("default_value: T").output("output_indices: int64")
    .output("output_values: T").output("empty_row_indicator: bool")
    .output("reverse_index_map: int64").attr("T: type").set_shape_fn(_fill_empty_rows_shape))
(register_op("SparseAdd").input("a_indices: int64").input("a_values: T").input("a_shape: int64")
    .input("b_indices: int64").input("b_values: T").input("b_shape: int64")
    .input("thresh: Treal").output("sum_indices: int64").output("sum_values: T")
    .output("sum_shape: int64").attr("T: numbertype").attr("Treal: realnumbertype")
    .set_shape_fn(_add_shape))
(register_op("SparseSlice").input("indices: int64").input("values: T").input("shape: int64")
    .input("start: int64").input("size: int64").output("output_indices: int64")
    .output("output_values: T").output("output_shape: int64").attr("T: type")
    .set_shape_fn(_slice_shape))
(register_op("SparseConcat").input("indices: N * int64").input("values: N * T")
    .input("shapes: N * int64").output("output_indices: int64").output("output_values: T")
    .output("output_shape: int64").attr("concat_dim: int").attr("N: int >= 2")
    .attr("T: type").set_shape_fn(_concat_shape))
