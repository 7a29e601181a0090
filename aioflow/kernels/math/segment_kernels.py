"""CPU kernels (NumPy) for the segment reductions: SegmentSum/Mean/Max/Min/Prod (sorted
ids), UnsortedSegmentSum/Max/Min/Prod (num_segments) and SparseSegmentSum/Mean/SqrtN (with
and without num_segments), as TF 2.21's CPU kernels compute them.

- Sorted ids: the output has last id + 1 rows; an empty segment gives 0 (Prod: 1; Max/Min:
  0 too, as TF's sorted kernels write). Ids are checked as TF walks them: at each new
  segment "segment ids are not increasing", then the bounds of the finished one.
- Unsorted: a negative id drops its row (as TF's CPU kernel does), an id >= num_segments is
  TF's "segment_ids[i] = x is out of range [0, n)" for the first such one; an empty
  segment gives the reducer's identity (Max: the lowest finite value, Min: the highest).
- Sparse: rows of `data` picked by `indices` reduced into sorted segments; Mean divides by
  the count, SqrtN by its square root; empty segments give 0.
- Max/Min with NaN: TF's reducers keep their accumulator only when it is strictly better
  than the next value, so a NaN replaces it and the values after the last NaN decide (a NaN
  last in its segment gives NaN). The kernels compute exactly that, vectorised.
- Integer Mean truncates toward zero; half/bfloat16 accumulate in float32 and round once;
  integer sums wrap as TF's do.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, allocate, register_kernel
from aioflow.kernels.math.cwise_kernels import _NON_QUANTIZED_NUMBERS, BIG, shape_str

_REAL = [t for t in _NON_QUANTIZED_NUMBERS if not t.is_complex]
_FLOAT = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64]
_INDEX = [dtypes.int32, dtypes.int64]
_HALF = (np.dtype(np.float16), np.dtype(dtypes.bfloat16.as_numpy_dtype))


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _limits(dtype: np.dtype):
    """finfo or iinfo of `dtype`; ml_dtypes' finfo knows bfloat16 (NumPy's does not)."""
    if dtype.kind in "fc" or dtype in _HALF:
        return ml_dtypes.finfo(dtype)
    return np.iinfo(dtype)


def _lowest(dtype: np.dtype):
    return _limits(dtype).min


def _highest(dtype: np.dtype):
    return _limits(dtype).max


def _scalar_num_segments(value) -> int:
    """num_segments as an int; TF's errors when it is not a scalar or is negative."""
    value = np.asarray(value)
    if value.ndim != 0:
        raise _invalid(f"num_segments should be a scalar, not shape {shape_str(value.shape)}")
    n = int(value)
    if n < 0:
        raise _invalid(f"Input num_segments == {n} must not be negative.")
    return n


# -- the reductions over runs of rows --------------------------------------------------------

def _work_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a reduction accumulates in (float32 for half/bfloat16)."""
    return np.dtype(np.float32) if dtype in _HALF else dtype


def _reduce_runs(kind: str, data, starts, seg_of_row):
    """One reduced row per run of rows beginning at `starts` (non-empty runs); data is
    [n, ...] in the work dtype; seg_of_row[i] is the run of row i."""
    if kind in ("sum", "mean", "sqrtn"):
        return np.add.reduceat(data, starts, axis=0)
    if kind == "prod":
        return np.multiply.reduceat(data, starts, axis=0)
    ufunc = np.maximum if kind == "max" else np.minimum
    if data.dtype.kind not in "fc":
        return ufunc.reduceat(data, starts, axis=0)
    return _nan_aware_runs(ufunc, data, starts, seg_of_row)


def _nan_aware_runs(ufunc, data, starts, seg_of_row):
    """max/min per run as TF's reducers: the values after a run's last NaN decide; a NaN last
    in its run gives NaN."""
    nan = np.isnan(data)
    if not nan.any():
        return ufunc.reduceat(data, starts, axis=0)
    n = data.shape[0]
    rows = np.arange(n).reshape((n,) + (1,) * (data.ndim - 1))
    nan_row = np.where(nan, rows, -1)
    last_nan = np.maximum.reduceat(nan_row, starts, axis=0)  # per run, per element
    ends = np.append(starts[1:], n) - 1
    ident = -np.inf if ufunc is np.maximum else np.inf
    masked = np.where(rows <= last_nan[seg_of_row], ident, data)
    out = ufunc.reduceat(masked, starts, axis=0)
    tail_nan = last_nan == ends.reshape((-1,) + (1,) * (data.ndim - 1))
    out[tail_nan] = np.nan
    return out.astype(data.dtype, copy=False)


def _finish(kind: str, sums, counts, out_dtype: np.dtype):
    """Mean / SqrtN from the sums and the per-run counts; the result in `out_dtype`."""
    if kind in ("mean", "sqrtn"):
        shape = (-1,) + (1,) * (sums.ndim - 1)
        counts = counts.reshape(shape)
        if kind == "sqrtn":
            sums = sums / np.sqrt(counts.astype(sums.dtype))
        elif sums.dtype.kind in "iu":
            sums = (np.sign(sums) * (np.abs(sums) // counts)).astype(sums.dtype)
        else:
            sums = sums / counts.astype(sums.dtype)
    return sums.astype(out_dtype, copy=False)


def _segments_of_sorted(ids):
    """Run starts and, per row, its run number, for ids sorted in runs."""
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.concatenate([[0], change]).astype(np.intp)
    seg_of_row = np.zeros(ids.shape[0], dtype=np.intp)
    seg_of_row[change] = 1
    return starts, np.cumsum(seg_of_row)


def _check_sorted_runs(run_ids, output_rows: int) -> None:
    """TF's walk over the segments: at each new segment the id must grow ("segment ids are
    not increasing"), then the finished segment's id must be in [0, output_rows)."""
    grows = np.append(run_ids[1:] > run_ids[:-1], True)
    in_range = (run_ids >= 0) & (run_ids < output_rows)
    bad = np.flatnonzero(~grows | ~in_range)
    if bad.size:
        k = int(bad[0])
        if not grows[k]:
            raise _invalid("segment ids are not increasing")
        raise _invalid(f"Segment id {int(run_ids[k])} out of range [0, {output_rows}), possibly "
                       "because 'segment_ids' input is not sorted.")


def _sorted_reduce(kind: str, rows, ids, output_rows: int, out_dtype: np.dtype):
    """Reduce `rows` ([n, ...]) into `output_rows` by sorted `ids` (checked here)."""
    empty = 1 if kind == "prod" else 0
    out = allocate((output_rows,) + rows.shape[1:], empty, out_dtype)
    if ids.shape[0] == 0:
        return out
    starts, seg_of_row = _segments_of_sorted(ids)
    run_ids = ids[starts]
    _check_sorted_runs(run_ids, output_rows)
    work = rows.astype(_work_dtype(rows.dtype), copy=False)
    reduced = _reduce_runs(kind, work, starts, seg_of_row)
    counts = np.diff(np.append(starts, ids.shape[0]))
    out[run_ids] = _finish(kind, reduced, counts, out_dtype)
    return out


class _SegmentBase(OpKernel):
    """Thread pool for large data; the reducer kind from the op's name."""

    expensive = None
    pool_above = BIG
    compilable = True
    kind = "sum"


@register_kernel("SegmentSum", "CPU", T=_NON_QUANTIZED_NUMBERS, Tindices=_INDEX)
class SegmentSumOp(_SegmentBase):
    """output[i] = reduce of data[j] over j with segment_ids[j] == i (ids sorted)."""

    def compute(self, ctx, inputs):
        data, ids = np.asarray(inputs[0]), np.asarray(inputs[1])
        if data.ndim < 1:
            raise _invalid("input must be at least rank 1")
        if ids.ndim != 1:
            raise _invalid("segment_ids should be a vector.")
        if ids.shape[0] != data.shape[0]:
            raise _invalid("segment_ids should be the same size as dimension 0 of input.")
        output_rows = int(ids[-1]) + 1 if ids.shape[0] else 0
        if output_rows < 0:
            raise _invalid(f"Segment id {int(ids[-1])} out of range [0, {output_rows}), "
                           "possibly because 'segment_ids' input is not sorted.")
        return (_sorted_reduce(self.kind, data, ids, output_rows, data.dtype),)


@register_kernel("SegmentMean", "CPU", T=_NON_QUANTIZED_NUMBERS, Tindices=_INDEX)
class SegmentMeanOp(SegmentSumOp):
    kind = "mean"


@register_kernel("SegmentProd", "CPU", T=_NON_QUANTIZED_NUMBERS, Tindices=_INDEX)
class SegmentProdOp(SegmentSumOp):
    kind = "prod"


@register_kernel("SegmentMax", "CPU", T=_REAL, Tindices=_INDEX)
class SegmentMaxOp(SegmentSumOp):
    kind = "max"


@register_kernel("SegmentMin", "CPU", T=_REAL, Tindices=_INDEX)
class SegmentMinOp(SegmentSumOp):
    kind = "min"


# -- unsorted ------------------------------------------------------------------------------

def _slice_debug(shape: tuple, flat: int) -> str:
    """TF's SliceDebugString: "[i]" or "[i,j]" for flat position `flat` in `shape`."""
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]"


@register_kernel("UnsortedSegmentSum", "CPU", T=_NON_QUANTIZED_NUMBERS,
                 Tindices=[dtypes.int16, dtypes.int32, dtypes.int64],
                 Tnumsegments=_INDEX)
class UnsortedSegmentSumOp(_SegmentBase):
    """output[i] = reduce of data[j...] over j with segment_ids[j...] == i; negative ids
    drop their rows."""

    def compute(self, ctx, inputs):
        data, ids = np.asarray(inputs[0]), np.asarray(inputs[1])
        n = _scalar_num_segments(inputs[2])
        if data.shape[:ids.ndim] != ids.shape:
            raise _invalid(f"data.shape = {shape_str(data.shape)} does not start with "
                           f"segment_ids.shape = {shape_str(ids.shape)}")
        inner = data.shape[ids.ndim:]
        dtype = data.dtype
        if self.kind == "sum":
            init = 0
        elif self.kind == "prod":
            init = 1
        else:
            init = _lowest(dtype) if self.kind == "max" else _highest(dtype)
        flat_ids = ids.reshape(-1).astype(np.int64, copy=False)
        too_big = flat_ids >= n
        if too_big.any():
            i = int(np.argmax(too_big))
            raise _invalid(f"segment_ids{_slice_debug(ids.shape, i)} = {int(flat_ids[i])} is "
                           f"out of range [0, {n})")
        work_dtype = _work_dtype(dtype)
        # zeros come from calloc: pages a sum never writes are never touched (a huge
        # num_segments costs no time until the output is read)
        out = allocate((n,) + inner, init, work_dtype)
        keep = flat_ids >= 0
        rows = data.reshape((ids.size,) + inner)  # (not -1: ambiguous for empty data)
        if not keep.all():
            rows, flat_ids = rows[keep], flat_ids[keep]
        if flat_ids.size:
            rows = rows.astype(work_dtype, copy=False)
            self._scatter(out, flat_ids, rows)
        return (out.astype(dtype, copy=False),)

    def _scatter(self, out, ids, rows) -> None:
        if self.kind == "sum":
            np.add.at(out, ids, rows)
        elif self.kind == "prod":
            np.multiply.at(out, ids, rows)
        else:
            # Sort rows by id (stable: TF's order within a segment) and reduce runs.
            order = np.argsort(ids, kind="stable")
            ids, rows = ids[order], rows[order]
            starts, seg_of_row = _segments_of_sorted(ids)
            reduced = _reduce_runs(self.kind, rows, starts, seg_of_row)
            target = out[ids[starts]]
            ufunc = np.maximum if self.kind == "max" else np.minimum
            if rows.dtype.kind in "fc":
                # the initial value (finite) never beats a NaN result
                merged = np.where(np.isnan(reduced), reduced, ufunc(target, reduced))
            else:
                merged = ufunc(target, reduced)
            out[ids[starts]] = merged


@register_kernel("UnsortedSegmentProd", "CPU", T=_NON_QUANTIZED_NUMBERS, Tindices=_INDEX,
                 Tnumsegments=_INDEX)
class UnsortedSegmentProdOp(UnsortedSegmentSumOp):
    kind = "prod"


@register_kernel("UnsortedSegmentMax", "CPU", T=_REAL, Tindices=_INDEX, Tnumsegments=_INDEX)
class UnsortedSegmentMaxOp(UnsortedSegmentSumOp):
    kind = "max"


@register_kernel("UnsortedSegmentMin", "CPU", T=_REAL, Tindices=_INDEX, Tnumsegments=_INDEX)
class UnsortedSegmentMinOp(UnsortedSegmentSumOp):
    kind = "min"


# -- sparse --------------------------------------------------------------------------------

class _SparseSegmentBase(_SegmentBase):
    """data rows picked by `indices`, reduced into sorted segments."""

    with_num_segments = False

    def is_expensive(self, inputs: list) -> bool:
        data = inputs[0]
        rows = data.shape[0] if getattr(data, "ndim", 0) else 1  # a scalar: compute says why
        return inputs[1].size * max(1, data.size // max(1, rows)) > BIG

    def compute(self, ctx, inputs):
        data, indices, ids = (np.asarray(v) for v in inputs[:3])
        num_segments = None
        if self.with_num_segments:
            value = np.asarray(inputs[3])
            if value.ndim != 0:
                raise _invalid(
                    f"num_segments should be a scalar, not shape {shape_str(value.shape)}")
            num_segments = int(value)
        if indices.ndim != 1:
            raise _invalid("indices should be a vector.")
        if ids.ndim != 1:
            raise _invalid("segment_ids should be a vector.")
        if indices.shape[0] != ids.shape[0]:
            raise _invalid("segment_ids and indices should have same size.")
        if data.ndim < 1:
            raise _invalid("input must be at least rank 1")
        last = int(ids[-1]) + 1 if ids.shape[0] else 0
        if num_segments is not None:
            if last > num_segments:
                raise _invalid("segment ids must be < num_segments")
            output_rows = num_segments
        else:
            output_rows = last
        if output_rows < 0:
            raise _invalid("segment ids must be >= 0")
        rows_count = data.shape[0]
        idx = indices.astype(np.int64, copy=False)
        bad = (idx < 0) | (idx >= rows_count)
        if ids.shape[0]:
            starts, _ = _segments_of_sorted(ids)
            run_ids = ids[starts]
            _check_sorted_runs(run_ids, output_rows)
        if bad.any():
            i = int(np.argmax(bad))
            raise _invalid(f"Bad: indices[{i}] == {int(idx[i])} out of range [0, {rows_count})")
        rows = data[idx] if idx.size else np.zeros((0,) + data.shape[1:], data.dtype)
        return (_sorted_reduce(self.kind, rows, ids, output_rows, data.dtype),)


for _kind, _types in (("Sum", _REAL), ("Mean", _FLOAT), ("SqrtN", _FLOAT)):
    for _suffix in ("", "WithNumSegments"):
        _constraints = dict(T=_types, Tidx=_INDEX, Tsegmentids=_INDEX)
        if _suffix:
            _constraints["Tnumsegments"] = _INDEX
        register_kernel(f"SparseSegment{_kind}{_suffix}", "CPU", **_constraints)(
            type(f"SparseSegment{_kind}{_suffix}Op", (_SparseSegmentBase,), {
                "kind": _kind.lower(), "with_num_segments": bool(_suffix),
                "__doc__": f"CPU kernel for SparseSegment{_kind}{_suffix}."}))
