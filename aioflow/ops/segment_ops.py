"""Segment-reduction builders with TF's names and node layout: `af.math.segment_*`,
`af.math.unsorted_segment_*` and `af.math.sparse_segment_*` (the same functions as
`tf.compat.v1.sparse.segment_sum/mean/sqrt_n`: with `num_segments` they build the
...WithNumSegments op, as TF's)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.framework.op_def_library import apply_op


def _sorted(op_type: str, py_name: str):
    def fn(data, segment_ids, name: str | None = None) -> ops.Tensor:
        return apply_op(op_type, name=name, data=data, segment_ids=segment_ids)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = (f"Reduces `data` over sorted `segment_ids` (a `{op_type}` op; empty "
                  "segments give 0, Prod 1).")
    return fn


def _unsorted(op_type: str, py_name: str):
    def fn(data, segment_ids, num_segments, name: str | None = None) -> ops.Tensor:
        return apply_op(op_type, name=name, data=data, segment_ids=segment_ids,
                        num_segments=num_segments)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = (f"Reduces `data` into `num_segments` rows by `segment_ids` (a `{op_type}` "
                  "op; negative ids drop their rows).")
    return fn


def _sparse(op_type: str, py_name: str):
    def fn(data, indices, segment_ids, name: str | None = None, num_segments=None,
           sparse_gradient: bool = False) -> ops.Tensor:
        if num_segments is not None:
            return apply_op(op_type + "WithNumSegments", name=name, data=data, indices=indices,
                            segment_ids=segment_ids, num_segments=num_segments,
                            sparse_gradient=sparse_gradient)
        return apply_op(op_type, name=name, data=data, indices=indices,
                        segment_ids=segment_ids, sparse_gradient=sparse_gradient)

    fn.__name__ = fn.__qualname__ = py_name
    fn.__doc__ = (f"Reduces the rows `data[indices]` over sorted `segment_ids` (a `{op_type}` "
                  "op, or its WithNumSegments form when `num_segments` is given).")
    return fn


segment_sum = _sorted("SegmentSum", "segment_sum")
segment_mean = _sorted("SegmentMean", "segment_mean")
segment_max = _sorted("SegmentMax", "segment_max")
segment_min = _sorted("SegmentMin", "segment_min")
segment_prod = _sorted("SegmentProd", "segment_prod")
unsorted_segment_sum = _unsorted("UnsortedSegmentSum", "unsorted_segment_sum")
unsorted_segment_max = _unsorted("UnsortedSegmentMax", "unsorted_segment_max")
unsorted_segment_min = _unsorted("UnsortedSegmentMin", "unsorted_segment_min")
unsorted_segment_prod = _unsorted("UnsortedSegmentProd", "unsorted_segment_prod")
sparse_segment_sum = _sparse("SparseSegmentSum", "sparse_segment_sum")
sparse_segment_mean = _sparse("SparseSegmentMean", "sparse_segment_mean")
sparse_segment_sqrt_n = _sparse("SparseSegmentSqrtN", "sparse_segment_sqrt_n")

__all__ = [
    "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
    "unsorted_segment_sum", "unsorted_segment_max", "unsorted_segment_min",
    "unsorted_segment_prod", "sparse_segment_sum", "sparse_segment_mean",
    "sparse_segment_sqrt_n",
]
