"""SparseTensor (three graph tensors: indices, values, dense_shape) and SparseTensorValue (the
NumPy triple a Session fetches for one, and accepts as its feed), as TF's
tensorflow/python/framework/sparse_tensor.py defines them for graph mode."""

from __future__ import annotations

import collections

from aioflow.framework import dtypes, ops
from aioflow.framework.constant_value import constant_value_as_shape

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])
SparseTensorValue.__doc__ = ("A SparseTensor's value: indices [nnz, rank] int64, values [nnz] "
                             "and dense_shape [rank] int64 (NumPy arrays).")


class SparseTensor:
    """A sparse tensor in the graph: `indices` [N, ndims] int64, `values` [N] and
    `dense_shape` [ndims] int64 tensors. Fetching it gives a SparseTensorValue; feeding it
    takes a SparseTensorValue (or any triple), one value per component."""

    def __init__(self, indices, values, dense_shape):
        with ops.name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = ops.convert_to_tensor(indices, name="indices", dtype=dtypes.int64)
            values = ops.convert_to_tensor(values, name="values")
            dense_shape = ops.convert_to_tensor(dense_shape, name="dense_shape",
                                                dtype=dtypes.int64)
            dense_shape_default = constant_value_as_shape(dense_shape)
        self._indices = indices
        self._values = values
        self._dense_shape = dense_shape
        self._dense_shape_default = dense_shape_default
        indices_shape = indices.shape.with_rank(2)
        values_shape = values.shape.with_rank(1)
        dense_shape_shape = dense_shape.shape.with_rank(1)
        indices_shape.dims[0].assert_is_compatible_with(values_shape.dims[0])
        indices_shape.dims[1].assert_is_compatible_with(dense_shape_shape.dims[0])

    @classmethod
    def from_value(cls, sparse_tensor_value) -> SparseTensor:
        """A SparseTensor of constants holding a SparseTensorValue (or a SparseTensor)."""
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(indices=sparse_tensor_value.indices, values=sparse_tensor_value.values,
                   dense_shape=sparse_tensor_value.dense_shape)

    @property
    def indices(self) -> ops.Tensor:
        return self._indices

    @property
    def values(self) -> ops.Tensor:
        return self._values

    @property
    def dense_shape(self) -> ops.Tensor:
        return self._dense_shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._values.dtype

    @property
    def op(self) -> ops.Operation:
        return self._values.op

    @property
    def graph(self) -> ops.Graph:
        return self._indices.graph

    @property
    def shape(self):
        """The static dense shape (partially known, from a constant dense_shape)."""
        return self._dense_shape_default

    def get_shape(self):
        return self._dense_shape_default

    def set_shape(self, shape) -> None:
        """Narrow the static dense shape (it must be compatible with what is known)."""
        self._dense_shape_default = self._dense_shape_default.merge_with(shape)

    def consumers(self) -> list:
        return self._indices.consumers() + self._values.consumers() + \
            self._dense_shape.consumers()

    def _components(self) -> tuple:
        """(indices, values, dense_shape): what a Session fetches and feeds for it."""
        return self._indices, self._values, self._dense_shape

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")


def convert_to_sparse_tensor(value) -> SparseTensor:
    """TF's _convert_to_sparse_tensor: a SparseTensor as is, a SparseTensorValue as
    constants; TypeError for anything else."""
    if isinstance(value, SparseTensorValue):
        return SparseTensor.from_value(value)
    if not isinstance(value, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return value
