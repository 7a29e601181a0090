"""Gradient functions of DynamicPartition and DynamicStitch (TF's data_flow_grad.py)."""

from __future__ import annotations

from aioflow.framework import dtypes
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops, math_ops, segment_ops


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grads(op, *grads):
    data, indices = op.inputs[0], op.inputs[1]
    num_partitions = op.get_attr("num_partitions")
    prefix_shape = array_ops.shape(indices)
    original_indices = array_ops.reshape(
        math_ops.range(math_ops.reduce_prod(prefix_shape)), prefix_shape)
    partitioned_indices = apply_op("DynamicPartition", data=original_indices,
                                   partitions=indices, num_partitions=num_partitions)
    reconstructed = apply_op("ParallelDynamicStitch", indices=partitioned_indices,
                             data=list(grads))
    reconstructed = array_ops.reshape(reconstructed, array_ops.shape(data))
    return [reconstructed, None]


def _dynamic_stitch_grads(op, grad):
    num_values = len(op.inputs) // 2
    indices_grad = [None] * num_values

    def as_int32(x):
        return x if op.inputs[0].dtype == dtypes.int32 else math_ops.cast(x, dtypes.int32)

    inputs = [as_int32(op.inputs[i]) for i in range(num_values)]
    if isinstance(grad, IndexedSlices):
        output_rows = array_ops.shape(op.outputs[0])[0]
        grad = segment_ops.unsorted_segment_sum(grad.values, grad.indices, output_rows)
    values_grad = [array_ops.gather(grad, inp) for inp in inputs]
    return indices_grad + values_grad


RegisterGradient("DynamicStitch")(_dynamic_stitch_grads)
RegisterGradient("ParallelDynamicStitch")(_dynamic_stitch_grads)
