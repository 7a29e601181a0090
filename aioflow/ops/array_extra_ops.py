"""Builders for the array ops a text or embedding model adds, with TF's names and node
layout: clip_by_value (Minimum then Maximum, as TF's Python writes it; the ClipByValue op
itself runs from imported graphs), unique, unique_with_counts, broadcast_dynamic_shape
(BroadcastArgs), reverse_sequence, tensor_scatter_nd_update/add/sub/max/min and bucketize."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import math_ops


def clip_by_value(t, clip_value_min, clip_value_max, name: str | None = None) -> ops.Tensor:
    """max(min(t, clip_value_max), clip_value_min), as TF: a Minimum and a Maximum op under
    the scope "clip_by_value"."""
    with ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = ops.convert_to_tensor(t, name="t")
        t_min = math_ops.minimum(values, clip_value_max)
        values.shape.merge_with(t_min.shape)
        return math_ops.maximum(t_min, clip_value_min, name=name)


def unique(x, out_idx=dtypes.int32, name: str | None = None):
    """(y, idx): the distinct values of a vector in first-occurrence order and each
    element's position in y (a `Unique` op)."""
    return apply_op("Unique", name=name, x=x, out_idx=dtypes.as_dtype(out_idx))


def unique_with_counts(x, out_idx=dtypes.int32, name: str | None = None):
    """(y, idx, count) (a `UniqueWithCounts` op)."""
    return apply_op("UniqueWithCounts", name=name, x=x, out_idx=dtypes.as_dtype(out_idx))


def broadcast_dynamic_shape(shape_x, shape_y) -> ops.Tensor:
    """The shape two shapes broadcast to (a `BroadcastArgs` op)."""
    return apply_op("BroadcastArgs", s0=shape_x, s1=shape_y)


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=None,  # noqa: A002
                     name: str | None = None, seq_dim=None, batch_dim=None) -> ops.Tensor:
    """Reverses the first seq_lengths[b] entries along seq_axis of each batch entry b (a
    `ReverseSequence` op; seq_dim/batch_dim are the v1 names)."""
    seq_axis = seq_dim if seq_axis is None else seq_axis
    batch_axis = batch_dim if batch_axis is None else batch_axis
    if seq_axis is None:
        raise TypeError("reverse_sequence() missing required argument 'seq_axis'")
    return apply_op("ReverseSequence", name=name, input=input, seq_lengths=seq_lengths,
                    seq_dim=seq_axis, batch_dim=0 if batch_axis is None else batch_axis)


def _tensor_scatter(op_type: str, py_name: str):
    def fn(tensor, indices, updates, name: str | None = None) -> ops.Tensor:
        return apply_op(op_type, name=name, tensor=tensor, indices=indices, updates=updates)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = (f"A copy of `tensor` with `updates` applied at N-d `indices` (a "
                  f"`{op_type}` op).")
    return fn


tensor_scatter_nd_update = _tensor_scatter("TensorScatterUpdate", "tensor_scatter_nd_update")
tensor_scatter_nd_add = _tensor_scatter("TensorScatterAdd", "tensor_scatter_nd_add")
tensor_scatter_nd_sub = _tensor_scatter("TensorScatterSub", "tensor_scatter_nd_sub")
tensor_scatter_nd_max = _tensor_scatter("TensorScatterMax", "tensor_scatter_nd_max")
tensor_scatter_nd_min = _tensor_scatter("TensorScatterMin", "tensor_scatter_nd_min")
# TF's v1 names
tensor_scatter_update = tensor_scatter_nd_update
tensor_scatter_add = tensor_scatter_nd_add
tensor_scatter_sub = tensor_scatter_nd_sub


def bucketize(input, boundaries, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """The index of the bucket each value falls in: the number of `boundaries` <= it (a
    `Bucketize` op; TF exposes it only as tf.raw_ops.Bucketize)."""
    return apply_op("Bucketize", name=name, input=input,
                    boundaries=[float(b) for b in boundaries])


__all__ = [
    "clip_by_value", "unique", "unique_with_counts", "broadcast_dynamic_shape",
    "reverse_sequence", "tensor_scatter_nd_update", "tensor_scatter_nd_add",
    "tensor_scatter_nd_sub", "tensor_scatter_nd_max", "tensor_scatter_nd_min",
    "tensor_scatter_update", "tensor_scatter_add", "tensor_scatter_sub", "bucketize",
]
