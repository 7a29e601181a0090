"""Clipping builders with TF's names and node layout (TF's clip_ops.py): clip_by_value
(Minimum then Maximum, as TF's Python writes it; the ClipByValue op itself runs from
imported graphs)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import math_ops


def clip_by_value(t, clip_value_min, clip_value_max, name: str | None = None) -> ops.Tensor:
    """max(min(t, clip_value_max), clip_value_min), as TF: a Minimum and a Maximum op under
    the scope "clip_by_value"."""
    with ops.name_scope(name, "clip_by_value", [t, clip_value_min, clip_value_max]) as name:
        values = ops.convert_to_tensor(t, name="t")
        t_min = math_ops.minimum(values, clip_value_max)
        values.shape.merge_with(t_min.shape)
        return math_ops.maximum(t_min, clip_value_min, name=name)


__all__ = ["clip_by_value"]
