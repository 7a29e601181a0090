"""Static values of graph tensors, for shape inference (as TF's tensor_util.constant_value).

`constant_value(t)` is the NumPy value of `t` when it can be known while building the graph
(a Const, or Shape/Size/Rank of an input whose shape is known, and a few ops over those);
otherwise None. `constant_value_as_shape(t)` reads a 1-D shape tensor as a partial
TensorShape, so `reshape(x, [shape(x)[0], -1])`-style graphs still get static shapes.

Values are for shape inference, which only needs small ones: a value of more than
MAX_ELEMENTS elements is never built here (it is None: unknown), so a GraphDef holding a
Const of shape [2**30] with one float_val, or a Fill or Range of that size, costs nothing
to import, as in TF.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aioflow.framework import tensor_shape

MAX_ELEMENTS = 1 << 20
# TensorShape::MaxDimensions(): a shape vector longer than this is no shape.
_MAX_RANK = 254


def _np_type(dtype) -> Any:
    return dtype.as_numpy_dtype


def constant_value(tensor, fold: bool = False) -> np.ndarray | None:
    """The value of `tensor` if it is known at graph-building time, else None.

    With `fold` (shape functions: TF's C++ shape inference folds small constant
    subgraphs), a StridedSlice of known values is evaluated too, e.g. the
    `shape(x)[0]` in `stack([shape(x)[0], -1])`, and a BroadcastArgs of known shapes;
    builders keep TF's Python constant_value, which does not (TF's
    try_evaluate_constant, which folds the same way, is this with `fold`)."""
    op = tensor.op
    kind = op.type
    try:
        if kind == "Const":
            return _const_value(op)
        if kind in ("Identity", "StopGradient", "Snapshot", "PreventGradient"):
            return constant_value(op.inputs[0], fold)
        if kind == "StridedSlice" and fold:
            return _strided_slice_value(op)
        if kind in ("ExpandDims", "Reshape") and fold:
            value, arg = constant_value(op.inputs[0], True), constant_value(op.inputs[1])
            if value is None or arg is None:
                return None
            if kind == "ExpandDims":
                return np.expand_dims(value, int(np.ravel(arg)[0]))
            return value.reshape([int(d) for d in np.ravel(arg)])
        if kind == "BroadcastArgs" and fold:
            s0, s1 = (constant_value(t, True) for t in op.inputs)
            if s0 is None or s1 is None:
                return None
            dims = np.broadcast_shapes(tuple(int(d) for d in s0), tuple(int(d) for d in s1))
            return np.array(dims, dtype=s0.dtype)
        if kind in ("Shape", "ShapeN"):
            shape = op.inputs[tensor.value_index].shape
            if shape.is_fully_defined():
                return np.array(shape.as_list(), dtype=_np_type(op.get_attr("out_type")))
            return None
        if kind == "Size":
            shape = op.inputs[0].shape
            if shape.is_fully_defined():
                return np.array(shape.num_elements(), dtype=_np_type(op.get_attr("out_type")))
            return None
        if kind == "Rank":
            rank = op.inputs[0].shape.rank
            return None if rank is None else np.array(rank, dtype=np.int32)
        if kind == "Cast":
            value = constant_value(op.inputs[0], fold)
            return None if value is None else value.astype(_np_type(op.get_attr("DstT")))
        if kind == "Pack":
            values = [constant_value(t, fold) for t in op.inputs]
            if any(v is None for v in values):
                return None
            return np.stack(values, axis=op.get_attr("axis"))
        if kind in ("ConcatV2", "Concat"):
            inputs = list(op.inputs)
            axis_t, parts = (inputs[-1], inputs[:-1]) if kind == "ConcatV2" else (
                inputs[0], inputs[1:])
            axis = constant_value(axis_t)
            values = [constant_value(t, fold) for t in parts]
            if axis is None or any(v is None for v in values):
                return None
            return np.concatenate(values, axis=int(axis))
        if kind == "Fill":
            dims, value = constant_value(op.inputs[0]), constant_value(op.inputs[1])
            if dims is None or value is None:
                return None
            dims = [int(d) for d in np.ravel(dims)]
            if min(dims, default=0) < 0 or math.prod(dims) > MAX_ELEMENTS:
                return None
            return np.full(dims, value, dtype=value.dtype)
        if kind == "Range":
            start, limit, delta = (constant_value(t) for t in op.inputs)
            if start is None or limit is None or delta is None:
                return None
            if range_size(start, limit, delta) > MAX_ELEMENTS:
                return None
            return np.arange(start, limit, delta, dtype=_np_type(op.get_attr("Tidx")))
    except (ValueError, TypeError, OverflowError):
        return None
    return None


def _strided_slice_value(op) -> np.ndarray | None:
    """StridedSlice of known values with known begin/end/strides, without ellipsis or new
    axes (what shape tensors use), as its kernel computes it."""
    value, begin, end, strides = (constant_value(t, True) for t in op.inputs)
    if value is None or begin is None or end is None or strides is None:
        return None
    if op.get_attr("ellipsis_mask") or op.get_attr("new_axis_mask"):
        return None
    begin, end, strides = (np.ravel(v).tolist() for v in (begin, end, strides))
    if not len(begin) == len(end) == len(strides) <= value.ndim or 0 in strides:
        return None
    begin_mask, end_mask = op.get_attr("begin_mask"), op.get_attr("end_mask")
    shrink = op.get_attr("shrink_axis_mask")
    index = []
    for i, (b, e, st) in enumerate(zip(begin, end, strides, strict=True)):
        if shrink >> i & 1:
            if not -value.shape[i] <= b < value.shape[i]:
                return None
            index.append(int(b))
        else:
            index.append(slice(None if begin_mask >> i & 1 else int(b),
                               None if end_mask >> i & 1 else int(e), int(st)))
    return np.asarray(value[tuple(index)])


def _const_value(op) -> np.ndarray | None:
    """A Const's value, when it is small and its TensorProto agrees with its dtype attr (a
    Const that TF's kernel would refuse has no known value)."""
    proto = op._get_attr_proto("value").tensor
    dtype = op._get_attr_proto("dtype")
    if dtype is not None and dtype.type != proto.dtype:
        return None
    dims = [d.size for d in proto.tensor_shape.dim]
    if min(dims, default=0) < 0 or math.prod(dims) > MAX_ELEMENTS:
        return None
    return op.get_attr("value")


def constant_value_as_shape(tensor, fold: bool = False) -> tensor_shape.TensorShape:
    """The (partial) shape that the 1-D int tensor `tensor` holds; -1 and unknowns are None.
    `fold` as in constant_value (shape functions)."""
    op = tensor.op
    if op.type == "Shape":
        return op.inputs[0].shape
    if op.type == "Pack":
        dims = []
        for t in op.inputs:
            v = constant_value(t, fold)
            dims.append(None if v is None or int(v) < 0 else int(v))
        return tensor_shape.TensorShape(dims)
    if op.type == "ConcatV2":
        out = tensor_shape.TensorShape([])
        for t in op.inputs[:-1]:
            out = out.concatenate(constant_value_as_shape(t, fold))
        return out
    if op.type == "StridedSlice":
        sliced = _sliced_shape(op, fold)
        if sliced is not None:
            return sliced
    value = constant_value(tensor, fold)
    if value is not None:
        if value.ndim != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {value.ndim} for '{op.name}'")
        return tensor_shape.TensorShape([None if d < 0 else int(d) for d in value.tolist()])
    shape = tensor.shape
    length = shape.dims[0].value if shape.rank == 1 else None
    if length is not None and length > _MAX_RANK:
        return tensor_shape.unknown_shape()
    return tensor_shape.unknown_shape(rank=length)


def _sliced_shape(op, fold: bool) -> tensor_shape.TensorShape | None:
    """A 1-D slice of a shape tensor (TF's constant_value_as_shape: begin, end and stride
    known, no mask but begin's and end's)."""
    begin, end, strides = (constant_value(t) for t in op.inputs[1:])
    if begin is None or end is None or strides is None or np.size(begin) != 1:
        return None
    if (op.get_attr("ellipsis_mask") or op.get_attr("new_axis_mask")
            or op.get_attr("shrink_axis_mask") or op.get_attr("begin_mask") not in (0, 1)
            or op.get_attr("end_mask") not in (0, 1)):
        return None
    prev = constant_value_as_shape(op.inputs[0], fold)
    if prev.rank is None:
        return None
    b = None if op.get_attr("begin_mask") else int(np.ravel(begin)[0])
    e = None if op.get_attr("end_mask") else int(np.ravel(end)[0])
    st = int(np.ravel(strides)[0])
    if st == 0:
        return None
    return tensor_shape.TensorShape(prev.dims[b:e:st])


def range_size(start, limit, delta) -> int:
    """The length of Range(start, limit, delta), as TF computes it; ValueError when the
    sign of delta does not lead from start to limit."""
    if delta == 0:
        raise ValueError("Requires delta != 0: 0")
    if delta > 0 and start > limit:
        raise ValueError(f"Requires start <= limit when delta > 0: {start}/{limit}")
    if delta < 0 and start < limit:
        raise ValueError(f"Requires start >= limit when delta < 0: {start}/{limit}")
    if isinstance(start + limit + delta, (int, np.integer)):
        return (abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta))
    # Computed in the values' own type, as TF does (it matters for half types).
    with np.errstate(all="ignore"):  # an overflow is the check below, not a warning
        size = np.ceil(np.abs((limit - start) / delta))
    if np.isnan(size):  # TF casts NaN to int64's minimum and then refuses it as a dim
        raise ValueError("Dimension -9223372036854775808 must be >= 0")
    if size > np.iinfo(np.int64).max:  # an infinite limit, or a tiny delta
        raise ValueError(f"Requires ((limit - start) / delta) <= {np.iinfo(np.int64).max}")
    return int(size)
