"""The `af.sparse` namespace: TF's `tf.compat.v1.sparse` names for SparseTensor builders."""

from aioflow.framework.sparse_tensor import SparseTensor, SparseTensorValue
from aioflow.ops.segment_ops import sparse_segment_mean as segment_mean
from aioflow.ops.segment_ops import sparse_segment_sqrt_n as segment_sqrt_n
from aioflow.ops.segment_ops import sparse_segment_sum as segment_sum
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
    "sparse_dense_matmul", "to_dense", "segment_sum", "segment_mean", "segment_sqrt_n",
]
