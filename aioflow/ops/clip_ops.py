"""Clipping builders with TF's names and node layout (TF's clip_ops.py): clip_by_value
(Minimum then Maximum, as TF's Python writes it; the ClipByValue op itself runs from
imported graphs), clip_by_norm, global_norm, clip_by_global_norm and clip_by_average_norm.
IndexedSlices are clipped by their values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.ops import array_ops, constant_op, math_ops
from aioflow.ops.nn_conv_ops import l2_loss


def clip_by_value(t, clip_value_min, clip_value_max, name: str | None = None) -> ops.Tensor:
    """max(min(t, clip_value_max), clip_value_min), as TF: a Minimum and a Maximum op under
    the scope "clip_by_value"."""
    with ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = ops.convert_to_tensor(t, name="t")
        t_min = math_ops.minimum(values, clip_value_max)
        values.shape.merge_with(t_min.shape)
        return math_ops.maximum(t_min, clip_value_min, name=name)



def _values(t):
    return t.values if isinstance(t, IndexedSlices) else t


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t * clip_norm / max(l2norm(t, axes), clip_norm)."""
    with ops.name_scope(name, "clip_by_norm", [t, clip_norm]) as name:
        values = ops.convert_to_tensor(_values(t), name="t")
        if np.isscalar(clip_norm):
            clip_norm = max(clip_norm, 0)
        else:
            clip_norm = math_ops.cast(math_ops.maximum(clip_norm, 0), dtype=values.dtype)
        l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = array_ops.where(pred, l2sum, array_ops.ones_like(l2sum))
        l2norm = array_ops.where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        values.shape.assert_is_compatible_with(intermediate.shape)
        values_clip = array_ops.identity(intermediate / math_ops.maximum(l2norm, clip_norm),
                                         name=name)
        if isinstance(t, IndexedSlices):
            return IndexedSlices(values_clip, t.indices, t.dense_shape)
        return values_clip


def _check_list(t_list) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"`t_list` should be a sequence of tensors. Received "
                        f"{type(t_list)}.")
    return list(t_list)


def global_norm(t_list, name=None):
    """sqrt(sum of the squared L2 norms of the tensors), None entries skipped."""
    t_list = _check_list(t_list)
    with ops.name_scope(name, "global_norm", t_list) as name:
        values = [ops.convert_to_tensor(_values(t), name=f"t_{i}") if t is not None else t
                  for i, t in enumerate(t_list)]
        half_squared_norms = []
        for v in values:
            if v is not None:
                with ops.colocate_with(v.op):
                    half_squared_norms.append(l2_loss(v))
        half_squared_norm = math_ops.reduce_sum(array_ops.stack(half_squared_norms))
        return math_ops.sqrt(
            half_squared_norm * constant_op.constant(2.0, dtype=half_squared_norm.dtype),
            name="global_norm")


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(each tensor * clip_norm / max(global_norm, clip_norm), the global norm); NaN or
    Inf norms make every value NaN, as TF's."""
    t_list = _check_list(t_list)
    if use_norm is None:
        use_norm = global_norm(t_list, name)
    with ops.name_scope(name, "clip_by_global_norm", t_list + [clip_norm]) as name:
        scale_for_finite = clip_norm * math_ops.minimum(
            1.0 / use_norm, constant_op.constant(1.0, dtype=use_norm.dtype) / clip_norm)
        scale = scale_for_finite + (use_norm - use_norm)
        values = [ops.convert_to_tensor(_values(t), name=f"t_{i}") if t is not None else t
                  for i, t in enumerate(t_list)]
        clipped = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with ops.colocate_with(v.op):
                clipped.append(array_ops.identity(v * math_ops.cast(scale, v.dtype),
                                                  name=f"{name}_{i}"))
        out = [IndexedSlices(c, t.indices, t.dense_shape) if isinstance(t, IndexedSlices)
               else c for c, t in zip(clipped, t_list, strict=True)]
    return out, use_norm


def clip_by_average_norm(t, clip_norm, name=None):
    """t * clip_norm / max(l2norm(t) / size(t), clip_norm)."""
    with ops.name_scope(name, "clip_by_average_norm", [t, clip_norm]) as name:
        t = ops.convert_to_tensor(t, name="t")
        n_element = math_ops.cast(array_ops.size(t), dtypes.float32)
        l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(t * t,
                                                        math_ops.range(array_ops.rank(t))))
        return array_ops.identity(
            t * clip_norm * math_ops.minimum(l2norm_inv * n_element,
                                             constant_op.constant(1.0) / clip_norm),
            name=name)


__all__ = ["clip_by_value", "clip_by_norm", "global_norm", "clip_by_global_norm",
           "clip_by_average_norm"]
