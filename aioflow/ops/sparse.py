"""The `af.sparse` namespace: TF's `tf.compat.v1.sparse` names for SparseTensor builders."""

from aioflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from aioflow.ops.sparse_ops import (
    add,
    concat,
    fill_empty_rows,
    matmul,
    placeholder,
    reduce_sum,
    reduce_sum_sparse,
    reorder,
    reshape,
    slice,
    sparse_dense_matmul,
    to_dense,
)

__all__ = [
    "SparseTensor", "SparseTensorValue", "add", "concat", "fill_empty_rows", "matmul",
    "placeholder", "reduce_sum", "reduce_sum_sparse", "reorder", "reshape", "slice",
    "sparse_dense_matmul", "to_dense",
]
