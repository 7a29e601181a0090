"""The ops IndexedSlices need in gradients: conversion to a dense tensor (UnsortedSegmentSum,
as TF converts where an op needs dense input), summing several slices of one tensor
(concatenated values and indices), and gating gradients (tuple)."""

from __future__ import annotations

import warnings

import numpy as np

from aioflow.framework import ops
from aioflow.framework.constant_value import constant_value
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.ops import array_ops, math_ops, segment_ops

_LARGE_SPARSE_NUM_ELEMENTS = 100000000


def indexed_slices_to_tensor(value, dtype=None, name=None, *, warn: bool = True):
    """The dense tensor of `value` (TF's _indexed_slices_to_tensor); `warn=False`: without
    the large-or-unknown-size warning (TF's _indexed_slices_to_tensor_no_warning, for the
    gradients that must densify)."""
    if dtype is not None and not dtype.is_compatible_with(value.dtype):
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices "
                         f"with dtype {value.dtype.name}")
    if value.dense_shape is None:
        raise ValueError("Tensor conversion requested for IndexedSlices without dense_shape: "
                         f"{value}")
    if warn:
        shape_value = constant_value(value.dense_shape)
        if shape_value is None or np.prod(shape_value) >= _LARGE_SPARSE_NUM_ELEMENTS:
            warnings.warn("Converting sparse IndexedSlices to a dense Tensor"
                          + (" of unknown shape" if shape_value is None else
                             f" with {int(np.prod(shape_value))} elements")
                          + ". This may consume a large amount of memory.", stacklevel=3)
    return segment_ops.unsorted_segment_sum(value.values, value.indices,
                                            value.dense_shape[0], name=name)


ops.register_tensor_conversion_function(IndexedSlices, indexed_slices_to_tensor)


def aggregate_indexed_slices_gradients(grads):
    """The sum of several gradients of one tensor, some IndexedSlices: AddN when any is
    dense, else one IndexedSlices of the concatenated values and indices."""
    if len(grads) < 1:
        return None
    if len(grads) == 1:
        return grads[0]
    grads = [g for g in grads if g is not None]
    if any(isinstance(g, ops.Tensor) for g in grads):
        return math_ops.add_n(grads)
    return IndexedSlices(array_ops.concat([g.values for g in grads], axis=0),
                         array_ops.concat([g.indices for g in grads], axis=0),
                         grads[0].dense_shape)


def gated_tuple(tensors) -> list:
    """Each gradient behind an Identity that waits for all of them (gate_gradients)."""
    return array_ops.tuple(tensors)
