"""Builders of TF's data-flow ops beside the queues (TF's data_flow_ops.py):
dynamic_partition and dynamic_stitch."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.framework.op_def_library import apply_op


def dynamic_partition(data, partitions, num_partitions, name=None) -> list:
    """`num_partitions` tensors: the slices of data whose partition id is each index."""
    out = apply_op("DynamicPartition", name=name, data=data, partitions=partitions,
                   num_partitions=num_partitions)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def dynamic_stitch(indices, data, name=None) -> ops.Tensor:
    """merged[indices[m][i]] = data[m][i]."""
    return apply_op("DynamicStitch", name=name, indices=list(indices), data=list(data))


__all__ = ["dynamic_partition", "dynamic_stitch"]
