"""OpDefs of TF's set ops (tensorflow/core/ops/set_ops.cc): a set is the last dimension
of a dense tensor or of a SparseTensor (indices, values, shape); the result of an
operation is a SparseTensor whose last dimension holds each group's sorted set."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_SET_T = "{int8, int16, int32, int64, uint8, uint16, string}"


def _result_shapes(rank):
    return [TensorShape([None, rank]), TensorShape([None]), TensorShape([rank])]


def _rank(shape: TensorShape):
    return shape.rank


def _dense_dense(op):
    return _result_shapes(_rank(op.inputs[0].shape) or _rank(op.inputs[1].shape))


def _dense_sparse(op):
    return _result_shapes(_rank(op.inputs[0].shape))


def _set_size(op):
    return [TensorShape(None)]


(register_op("DenseToDenseSetOperation").input("set1: T").input("set2: T")
    .output("result_indices: int64").output("result_values: T")
    .output("result_shape: int64").attr("set_operation: string")
    .attr("validate_indices: bool = true").attr(f"T: {_SET_T}")
    .set_shape_fn(_dense_dense))
(register_op("DenseToSparseSetOperation").input("set1: T").input("set2_indices: int64")
    .input("set2_values: T").input("set2_shape: int64")
    .output("result_indices: int64").output("result_values: T")
    .output("result_shape: int64").attr("set_operation: string")
    .attr("validate_indices: bool = true").attr(f"T: {_SET_T}")
    .set_shape_fn(_dense_sparse))
(register_op("SetSize").input("set_indices: int64").input("set_values: T")
    .input("set_shape: int64").output("size: int32")
    .attr("validate_indices: bool = true").attr(f"T: {_SET_T}")
    .set_shape_fn(_set_size))
(register_op("SparseToSparseSetOperation").input("set1_indices: int64")
    .input("set1_values: T").input("set1_shape: int64").input("set2_indices: int64")
    .input("set2_values: T").input("set2_shape: int64")
    .output("result_indices: int64").output("result_values: T")
    .output("result_shape: int64").attr("set_operation: string")
    .attr("validate_indices: bool = true").attr(f"T: {_SET_T}")
    .set_shape_fn(lambda op: _result_shapes(op.inputs[2].shape.as_list()[0]
                                            if op.inputs[2].shape.rank == 1 else None)))
