"""Sparse builders with TF's (tf.compat.v1) Python names and arguments: SparseTensor to
dense, sparse x dense matmul, reshape, reorder, reduce_sum, fill_empty_rows, add, slice,
concat, and sparse_placeholder. Each returns a SparseTensor where TF's does."""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.constant_value import constant_value, constant_value_as_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import (
    SparseTensor,
    SparseTensorValue,
    convert_to_sparse_tensor,
)
from aioflow.ops import array_ops, math_ops
from aioflow.ops.constant_op import constant

_SPARSE = (SparseTensor, SparseTensorValue)


def _lookup(new_name, new_value, old_name, old_value):
    """TF's deprecated_argument_lookup: at most one of two spellings may be given."""
    if old_value is not None:
        if new_value is not None:
            raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'.")
        return old_value
    return new_value


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices: bool = True, name: str | None = None) -> ops.Tensor:
    """A dense tensor of `output_shape`: `sparse_values` at `sparse_indices`, else
    `default_value` (SparseToDense; v1's tf.sparse_to_dense)."""
    return apply_op("SparseToDense", name=name, sparse_indices=sparse_indices,
                    output_shape=output_shape, sparse_values=sparse_values,
                    default_value=default_value, validate_indices=validate_indices)


def to_dense(sp_input, default_value=None, validate_indices: bool = True,
             name: str | None = None) -> ops.Tensor:
    """The SparseTensor as a dense tensor, `default_value` (zero) where it has no entry."""
    sp_input = convert_to_sparse_tensor(sp_input)
    if default_value is None:
        default_value = array_ops.zeros([], dtype=sp_input.dtype)
    return apply_op("SparseToDense", name=name, sparse_indices=sp_input.indices,
                    output_shape=sp_input.dense_shape, sparse_values=sp_input.values,
                    default_value=default_value, validate_indices=validate_indices)


def sparse_dense_matmul(sp_a, b, adjoint_a: bool = False, adjoint_b: bool = False,
                        name: str | None = None) -> ops.Tensor:
    """op(sp_a) @ op(b) for a rank-2 SparseTensor sp_a and a dense matrix b
    (SparseTensorDenseMatMul); a sparse b is handled by transposing, as TF does."""
    if isinstance(b, _SPARSE):
        if adjoint_a != adjoint_b:
            return array_ops.transpose(sparse_dense_matmul(b, sp_a, adjoint_a, adjoint_b))
        return array_ops.transpose(sparse_dense_matmul(
            b, sp_a, adjoint_a=not adjoint_a, adjoint_b=not adjoint_b))
    sp_a = convert_to_sparse_tensor(sp_a)
    with ops.name_scope(name, "SparseTensorDenseMatMul",
                        [sp_a.indices, sp_a.values, b]) as name:
        b = ops.convert_to_tensor(b, name="b")
        return apply_op("SparseTensorDenseMatMul", a_indices=sp_a.indices,
                        a_values=sp_a.values, a_shape=sp_a.dense_shape, b=b,
                        adjoint_a=adjoint_a, adjoint_b=adjoint_b)


matmul = sparse_dense_matmul
sparse_tensor_dense_matmul = sparse_dense_matmul


def reshape(sp_input, shape, name: str | None = None) -> SparseTensor:
    """The SparseTensor reshaped to `shape` (one -1 inferred) (SparseReshape); the new
    dense_shape is a constant when it is known statically, as TF makes it."""
    sp_input = convert_to_sparse_tensor(sp_input)
    shape = math_ops.cast(shape, dtype=dtypes.int64)
    with ops.name_scope(name, "SparseReshape", [sp_input]) as name:
        indices, reshaped_shape = apply_op("SparseReshape", name=name,
                                           input_indices=sp_input.indices,
                                           input_shape=sp_input.dense_shape, new_shape=shape)
        const_shape = constant_value_as_shape(shape)
        const_dims = const_shape.as_list() if const_shape.rank is not None else None
        if const_dims is not None and sp_input.shape.is_fully_defined():
            by_user = constant_value(shape)
            if by_user is not None and int((np.asarray(by_user) == -1).sum()) > 1:
                raise ValueError(
                    f"At most one dimension can be inferred (-1). Found: {by_user}")
            original = list(const_dims)
            in_size = int(np.prod(sp_input.shape.as_list()))
            num_implied = sum(d is None for d in const_dims)
            if num_implied == 1 and 0 not in const_dims:
                at = original.index(None)
                const_dims[at] = int(in_size // np.prod(original[:at] + original[at + 1:]))
            if num_implied == 0 or (num_implied == 1 and 0 not in const_dims):
                size = int(np.prod(const_dims))
                if size != in_size:
                    raise ValueError(f"Cannot reshape a tensor with {in_size} elements to "
                                     f"shape {original} ({size} elements).")
                reshaped_shape = constant(const_dims, dtype=dtypes.int64)
        return SparseTensor(indices, array_ops.identity(sp_input.values), reshaped_shape)


def reorder(sp_input, name: str | None = None) -> SparseTensor:
    """The SparseTensor with its entries in standard row-major order (SparseReorder)."""
    sp_input = convert_to_sparse_tensor(sp_input)
    indices, values = apply_op("SparseReorder", name=name, input_indices=sp_input.indices,
                               input_values=sp_input.values,
                               input_shape=sp_input.dense_shape)
    if sp_input.shape.is_fully_defined():
        return SparseTensor(indices, values, sp_input.shape.as_list())
    result = SparseTensor(indices, values, array_ops.identity(sp_input.dense_shape))
    result.set_shape(sp_input.shape)
    return result


def _reduction_dims(sp_input: SparseTensor, axis):
    """TF's math_ops._ReductionDims for a SparseTensor: all axes when `axis` is None."""
    if axis is not None:
        return axis
    rank = sp_input.dense_shape.shape.as_list()[0] \
        if sp_input.dense_shape.shape.is_fully_defined() else None
    if rank:
        return constant(np.arange(rank, dtype=np.int32))
    return math_ops.range(0, array_ops.size(sp_input.dense_shape))


def reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None,
               keep_dims=None) -> ops.Tensor:
    """The dense sum of a SparseTensor over `axis` (all by default) (SparseReduceSum)."""
    keepdims = _lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _lookup("axis", axis, "reduction_axes", reduction_axes)
    sp_input = convert_to_sparse_tensor(sp_input)
    return apply_op("SparseReduceSum", input_indices=sp_input.indices,
                    input_values=sp_input.values, input_shape=sp_input.dense_shape,
                    reduction_axes=_reduction_dims(sp_input, axis),
                    keep_dims=bool(keepdims))


def reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                      keep_dims=None) -> SparseTensor:
    """The sum of a SparseTensor over `axis`, as a SparseTensor (SparseReduceSumSparse)."""
    keepdims = _lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = _lookup("axis", axis, "reduction_axes", reduction_axes)
    sp_input = convert_to_sparse_tensor(sp_input)
    indices, values, shape = apply_op(
        "SparseReduceSumSparse", input_indices=sp_input.indices, input_values=sp_input.values,
        input_shape=sp_input.dense_shape, reduction_axes=_reduction_dims(sp_input, axis),
        keep_dims=bool(keepdims))
    return SparseTensor(indices, values, shape)


def fill_empty_rows(sp_input, default_value, name: str | None = None):
    """(SparseTensor with `default_value` at [row, 0, ...] of each empty row,
    empty_row_indicator) (SparseFillEmptyRows)."""
    sp_input = convert_to_sparse_tensor(sp_input)
    with ops.name_scope(name, "SparseFillEmptyRows", [sp_input]):
        default_value = ops.convert_to_tensor(default_value, dtype=sp_input.values.dtype)
        indices, values, empty_row_indicator, _ = apply_op(
            "SparseFillEmptyRows", indices=sp_input.indices, values=sp_input.values,
            dense_shape=sp_input.dense_shape, default_value=default_value)
        return SparseTensor(indices, values, sp_input.dense_shape), empty_row_indicator


def add(a, b, threshold=None, thresh=None) -> SparseTensor:
    """The sum of two SparseTensors of one shape (SparseAdd); a sum smaller in magnitude than
    `threshold` is dropped."""
    threshold = _lookup("threshold", threshold, "thresh", thresh)
    if threshold is None:
        threshold = 0
    if not any(isinstance(x, _SPARSE) for x in (a, b)):
        raise TypeError("At least one input should be SparseTensor; do you mean to use "
                        "tf.add()?")
    if not all(isinstance(x, _SPARSE) for x in (a, b)):
        raise NotImplementedError("af.sparse.add of a SparseTensor and a dense tensor "
                                  "(SparseTensorDenseAdd) is not supported yet")
    a = convert_to_sparse_tensor(a)
    b = convert_to_sparse_tensor(b)
    threshold = ops.convert_to_tensor(threshold, dtype=a.values.dtype.real_dtype.base_dtype,
                                      name="threshold")
    indices, values, shape = apply_op(
        "SparseAdd", a_indices=a.indices, a_values=a.values, a_shape=a.dense_shape,
        b_indices=b.indices, b_values=b.values, b_shape=b.dense_shape, thresh=threshold)
    a.shape.assert_is_compatible_with(b.shape)
    static = a.shape.merge_with(b.shape)
    if static.is_fully_defined():
        shape = static.as_list()
    return SparseTensor(indices, values, shape)


def slice(sp_input, start, size, name: str | None = None) -> SparseTensor:  # noqa: A001
    """The entries of `sp_input` in [start, start + size), shifted to start at 0
    (SparseSlice)."""
    sp_input = convert_to_sparse_tensor(sp_input)
    start = ops.convert_to_tensor(start, dtypes.int64)
    size = ops.convert_to_tensor(size, dtypes.int64)
    with ops.name_scope(name, "SparseSlice", [sp_input]) as name:
        indices, values, shape = apply_op(
            "SparseSlice", name=name, indices=sp_input.indices, values=sp_input.values,
            shape=sp_input.dense_shape, start=start, size=size)
        return SparseTensor(indices, values, shape)


def concat(axis, sp_inputs, name: str | None = None, concat_dim=None) -> SparseTensor:
    """SparseTensors of one rank joined along `axis` (SparseConcat)."""
    axis = _lookup("axis", axis, "concat_dim", concat_dim)
    if not isinstance(sp_inputs, (list, tuple)):
        raise TypeError("Inputs must be a list or tuple.")
    sp_inputs = [convert_to_sparse_tensor(s) for s in sp_inputs]
    if len(sp_inputs) == 1:
        return sp_inputs[0]
    indices, values, shape = apply_op(
        "SparseConcat", name=name, indices=[s.indices for s in sp_inputs],
        values=[s.values for s in sp_inputs], shapes=[s.dense_shape for s in sp_inputs],
        concat_dim=int(axis))
    return SparseTensor(indices, values, shape)


def retain(sp_input, to_retain) -> SparseTensor:
    """The entries of `sp_input` where the boolean vector `to_retain` is true (TF's
    sparse_retain: Where, then a Gather of the indices and of the values)."""
    sp_input = convert_to_sparse_tensor(sp_input)
    to_retain = ops.convert_to_tensor(to_retain)
    retain_shape = to_retain.get_shape()
    retain_shape.assert_has_rank(1)
    if sp_input.values.get_shape().rank is not None:
        tensor_shape.Dimension(sp_input.values.get_shape().as_list()[0]) \
            .assert_is_compatible_with(tensor_shape.Dimension(retain_shape.as_list()[0]))
    where_true = array_ops.reshape(array_ops.where(to_retain), [-1])
    new_indices = array_ops.gather(sp_input.indices, where_true)
    new_values = array_ops.gather(sp_input.values, where_true)
    return SparseTensor(new_indices, new_values, array_ops.identity(sp_input.dense_shape))


sparse_retain = retain


def sparse_placeholder(dtype, shape=None, name: str | None = None) -> SparseTensor:
    """A SparseTensor of three placeholders, fed with a SparseTensorValue (v1's
    tf.sparse_placeholder; dense_shape defaults to `shape` when one is given)."""
    shape_name = f"{name}/shape" if name is not None else None
    default_shape_name = f"{name}/shape_default" if name is not None else None
    if shape is None:
        rank = None
        dense_shape = array_ops.placeholder(dtypes.int64, shape=[rank], name=shape_name)
        dense_shape_default = constant_value_as_shape(dense_shape)
    else:
        if isinstance(shape, ops.Tensor):
            rank = shape.shape.as_list()[0]
            dense_shape_default = constant_value_as_shape(shape)
        else:
            rank = len(shape)
            dims = [None if d is None or d == -1 else int(d) for d in
                    (tensor_shape.TensorShape(shape).as_list()
                     if isinstance(shape, tensor_shape.TensorShape) else shape)]
            dense_shape_default = tensor_shape.TensorShape(dims)
            shape = ops.convert_to_tensor([-1 if d is None else d for d in dims],
                                          dtype=dtypes.int64, name=default_shape_name)
        dense_shape = array_ops.placeholder_with_default(shape, shape=shape.shape,
                                                         name=shape_name)
    result = SparseTensor(
        values=array_ops.placeholder(dtype, shape=[None],
                                     name=f"{name}/values" if name is not None else None),
        indices=array_ops.placeholder(dtypes.int64, shape=[None, rank],
                                      name=f"{name}/indices" if name is not None else None),
        dense_shape=dense_shape)
    result.set_shape(dense_shape_default)
    return result


placeholder = sparse_placeholder
