"""`parallel_stack` (TF's array_ops.parallel_stack): stacks tensors of one shape along a
new first axis with ParallelConcat, whose inputs are copied into the output as each
becomes available (ParallelConcatRemovePass rewrites the node before it runs)."""

from __future__ import annotations

from aioflow.framework import ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.ops.array_ops import expand_dims


def parallel_stack(values, name: str = "parallel_stack") -> ops.Tensor:
    """Stack `values` (each of the first one's fully known shape) into one tensor of
    shape [len(values)] + shape, as TF's: ExpandDims of each, then ParallelConcat."""
    with ops.name_scope(name):
        first = ops.convert_to_tensor(values[0])
        output_shape = tensor_shape.TensorShape([len(values)]).concatenate(first.shape)
        return apply_op("ParallelConcat", values=[expand_dims(v, 0) for v in values],
                        shape=output_shape)
