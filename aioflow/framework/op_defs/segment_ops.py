"""OpDefs of TF's segment reductions (tensorflow/core/ops/math_ops.cc): SegmentSum/Mean/
Max/Min/Prod over sorted ids, UnsortedSegment* with num_segments, and the SparseSegment*
family (with and without num_segments)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_NUMBER = "numbertype"
_REAL = "realnumbertype"
_FLOAT = "{bfloat16, half, float, double}"
_INDEX = "{int32, int64}"


def _num_segments(op, index: int):
    """The num_segments input's constant value, or None (unknown)."""
    values = cs._const_ints(op.inputs[index])
    return values[0] if values and len(values) == 1 else None


def _segment_shape(op) -> list[TensorShape]:
    """Sorted segments: [?] + data.shape[1:] (the count is the last id + 1)."""
    data = op.inputs[0].shape
    if data.rank is None or data.rank == 0:
        return [cs.UNKNOWN]
    return [TensorShape([None]).concatenate(data.as_list()[1:])]


def _unsorted_shape(op) -> list[TensorShape]:
    """[num_segments] + data.shape[segment_ids.rank:]."""
    data, ids = op.inputs[0].shape, op.inputs[1].shape
    if data.rank is None or ids.rank is None or ids.rank > data.rank:
        return [cs.UNKNOWN]
    return [TensorShape([_num_segments(op, 2)]).concatenate(data.as_list()[ids.rank:])]


def _sparse_shape(op) -> list[TensorShape]:
    """[num_segments or ?] + data.shape[1:]."""
    data = op.inputs[0].shape
    if data.rank is None or data.rank == 0:
        return [cs.UNKNOWN]
    n = _num_segments(op, 3) if len(op.inputs) > 3 else None
    return [TensorShape([n]).concatenate(data.as_list()[1:])]


for _name, _types in (("SegmentSum", _NUMBER), ("SegmentMean", _NUMBER), ("SegmentProd", _NUMBER),
                      ("SegmentMax", _REAL), ("SegmentMin", _REAL)):
    (register_op(_name).input("data: T").input("segment_ids: Tindices").output("output: T")
        .attr(f"T: {_types}").attr(f"Tindices: {_INDEX}").set_shape_fn(_segment_shape))

for _name, _types, _ids in (
        ("UnsortedSegmentSum", _NUMBER, "{int16, int32, int64}"),
        ("UnsortedSegmentProd", _NUMBER, _INDEX),
        ("UnsortedSegmentMax", _REAL, _INDEX),
        ("UnsortedSegmentMin", _REAL, _INDEX)):
    (register_op(_name).input("data: T").input("segment_ids: Tindices")
        .input("num_segments: Tnumsegments").output("output: T")
        .attr(f"T: {_types}").attr(f"Tindices: {_ids}")
        .attr(f"Tnumsegments: {_INDEX} = DT_INT32").set_shape_fn(_unsorted_shape))

for _name, _types in (("SparseSegmentSum", _REAL), ("SparseSegmentMean", _FLOAT),
                      ("SparseSegmentSqrtN", _FLOAT)):
    (register_op(_name).input("data: T").input("indices: Tidx").input("segment_ids: Tsegmentids")
        .output("output: T").attr(f"T: {_types}").attr(f"Tidx: {_INDEX} = DT_INT32")
        .attr(f"Tsegmentids: {_INDEX} = DT_INT32").attr("sparse_gradient: bool = false")
        .set_shape_fn(_sparse_shape))
    (register_op(_name + "WithNumSegments").input("data: T").input("indices: Tidx")
        .input("segment_ids: Tsegmentids").input("num_segments: Tnumsegments")
        .output("output: T").attr(f"T: {_types}").attr(f"Tidx: {_INDEX} = DT_INT32")
        .attr(f"Tnumsegments: {_INDEX} = DT_INT32").attr(f"Tsegmentids: {_INDEX} = DT_INT32")
        .attr("sparse_gradient: bool = false").set_shape_fn(_sparse_shape))
