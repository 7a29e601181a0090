"""OpDefs of the gradient ops of TF's sparse ops (tensorflow/core/ops/sparse_ops.cc):
SparseAddGrad, SparseSliceGrad and SparseFillEmptyRowsGrad, which sparse_grad.py's
gradients of SparseAdd, SparseSlice and SparseFillEmptyRows emit."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _rows(t) -> int | None:
    """Dimension 0 of a tensor's static shape, None when unknown."""
    shape = t.shape
    return shape.as_list()[0] if shape.rank is not None and shape.rank > 0 else None


def _add_grad_shape(op) -> list[TensorShape]:
    return [TensorShape([_rows(op.inputs[1])]), TensorShape([_rows(op.inputs[2])])]


def _slice_grad_shape(op) -> list[TensorShape]:
    return [TensorShape([_rows(op.inputs[1])])]


def _fill_empty_rows_grad_shape(op) -> list[TensorShape]:
    return [TensorShape([_rows(op.inputs[0])]), TensorShape([])]


(register_op("SparseAddGrad").input("backprop_val_grad: T").input("a_indices: int64")
    .input("b_indices: int64").input("sum_indices: int64").output("a_val_grad: T")
    .output("b_val_grad: T").attr("T: numbertype").set_shape_fn(_add_grad_shape))
(register_op("SparseSliceGrad").input("backprop_val_grad: T").input("input_indices: int64")
    .input("input_start: int64").input("output_indices: int64").output("val_grad: T")
    .attr("T: numbertype").set_shape_fn(_slice_grad_shape))
(register_op("SparseFillEmptyRowsGrad").input("reverse_index_map: int64")
    .input("grad_values: T").output("d_values: T").output("d_default_value: T")
    .attr("T: type").set_shape_fn(_fill_empty_rows_grad_shape))
