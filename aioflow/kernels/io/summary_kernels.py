"""Kernels of the v1 summary ops (tensorflow/core/kernels/summary_op.cc,
summary_tensor_op.cc, tsl/lib/histogram/histogram.cc): each outputs a serialized
`Summary` proto, byte for byte what TensorFlow's kernel writes for the same inputs.

- ScalarSummary: one `simple_value` (the value cast to float32) per tag.
- HistogramSummary: TF's default histogram (buckets at +-1e-12 * 1.1**k up to 1e20, then
  +-DBL_MAX, and 0), runs of empty buckets collapsed into one, as `EncodeToProto(...,
  preserve_zero_buckets=false)`; sums accumulated in input order, as TF's does.

TF's CPU threads flush subnormals to zero (flush-to-zero and denormals-are-zero), which
shows in these outputs: a float64 value cast to float32, a float32 value widened to
float64, a float64 compared or summed, a square. Done here for each of those; a running
sum that itself falls below 2.2e-308 is not flushed (TF's would be).
- TensorSummaryV2: the tensor as a TensorProto (`tensor_content`; strings as
  `string_val`) with the parsed SummaryMetadata (an unparseable one is left empty, as TF's).
- MergeSummary: the values of every input Summary, refusing a repeated non-empty tag.
"""

from __future__ import annotations

import sys
from functools import cache

import ml_dtypes
import numpy as np
from google.protobuf.message import DecodeError

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.proto import summary_pb2, tensor_pb2

_DBL_MAX = sys.float_info.max
# Widened to double through a float (cvtss2sd, which flushes subnormal inputs to zero);
# half goes through F16C, which does not.
_THROUGH_FLOAT = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16))


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _text(value) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _flush_subnormals(values: np.ndarray) -> np.ndarray:
    """`values` with each subnormal replaced by a zero of its sign: TF's CPU threads run
    with flush-to-zero and denormals-are-zero set (ScopedFlushDenormal)."""
    tiny = np.abs(values) < np.finfo(values.dtype).tiny
    if not tiny.any():
        return values
    out = values.copy()
    out[tiny] = np.copysign(np.zeros((), values.dtype), values[tiny])
    return out


def _output(summary: summary_pb2.Summary) -> list:
    return [np.array(summary.SerializeToString(), dtype=object)]


def _field(payload: bytes) -> bytes:
    """Field 1, length-delimited (Summary.value, Summary.Value.tag)."""
    size = bytearray()
    n = len(payload)
    while n >= 0x80:
        size.append(n & 0x7F | 0x80)
        n >>= 7
    size.append(n)
    return b"\n" + bytes(size) + payload


def _tagged_output(values) -> list:
    """A Summary of (tag, Summary.Value without its tag) pairs, the tags as the raw bytes
    TF writes (any bytes: protobuf's Python API takes only UTF-8 text). The tag is field
    1, so it leads each Value as protobuf would write it."""
    out = b"".join(_field(_field(_bytes(tag)) + value.SerializeToString())
                   for tag, value in values)
    return [np.array(out, dtype=object)]


@register_kernel("ScalarSummary", "CPU")
class ScalarSummaryOp(OpKernel):
    """A Summary with one simple_value per (tag, value) pair; tags and values same shape."""

    def compute(self, ctx, inputs):
        tags, values = np.asarray(inputs[0], dtype=object), np.asarray(inputs[1])
        if tags.shape != values.shape:
            single = f" (tag '{_text(tags.flat[0])}')" if tags.size == 1 else ""
            raise _invalid(f"tags and values are not the same shape: {shape_str(tags.shape)}"
                           f" != {shape_str(values.shape)}{single}")
        with np.errstate(over="ignore"):
            floats = values.astype(np.float32).ravel()
        if values.dtype == np.float64:  # the double -> float conversion flushes to zero
            floats = _flush_subnormals(floats)
        return _tagged_output((tag, summary_pb2.Summary.Value(simple_value=v))
                              for tag, v in zip(tags.ravel(), floats.tolist(), strict=True))


@cache
def _default_bucket_limits() -> np.ndarray:
    """TF's default histogram bucket limits (InitDefaultBucketsInner): -DBL_MAX, the
    negative limits, 0, the positive limits 1e-12 * 1.1**k below 1e20, DBL_MAX."""
    positive = []
    v = 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(_DBL_MAX)
    negative = [-x for x in reversed(positive)]
    return np.array(negative + [0.0] + positive, dtype=np.float64)


def encode_histogram(values: np.ndarray, histo, raw: np.ndarray | None = None) -> None:
    """Fill the HistogramProto `histo` with TF's default histogram of the finite float64
    `values` (Histogram::Add for each in order, then EncodeToProto without zero buckets).
    `raw`: the values min and max report when `values` are their denormals-are-zero view
    (TF compares and sums the view but stores the winning value as it was)."""
    raw = values if raw is None else raw
    limits = _default_bucket_limits()
    counts = np.bincount(np.searchsorted(limits, values, side="right"),
                         minlength=limits.size).astype(np.float64)
    # std::min / std::max keep the first of equal values (0.0 before -0.0), as argmin does.
    histo.min = float(raw[np.argmin(values)]) if values.size else _DBL_MAX
    histo.max = float(raw[np.argmax(values)]) if values.size else -_DBL_MAX
    histo.num = float(values.size)
    if values.size:  # sequential sums (np.sum is pairwise and rounds differently)
        # (TF's sum starts at 0.0: adding it last gives 0.0, not -0.0, for all -0.0 values)
        histo.sum = float(np.add.accumulate(values)[-1]) + 0.0
        squares = _flush_subnormals(values * values)
        histo.sum_squares = float(np.add.accumulate(squares)[-1])
    # A bucket is kept when it is non-empty or ends a run of empty ones (that run's last limit).
    nonzero = counts > 0.0
    keep = nonzero.copy()
    keep[:-1] |= nonzero[1:]
    keep[-1] = True
    histo.bucket_limit.extend(limits[keep].tolist())
    histo.bucket.extend(counts[keep].tolist())


@register_kernel("HistogramSummary", "CPU")
class HistogramSummaryOp(OpKernel):
    """A Summary holding the histogram of every value; NaN or Infinity is an error."""

    expensive = None  # big tensors go to the pool (a sort-like pass over every value)
    pool_above = 100_000

    def compute(self, ctx, inputs):
        tag, values = np.asarray(inputs[0], dtype=object), np.asarray(inputs[1])
        if tag.ndim != 0:
            raise _invalid("tags must be scalar")
        if values.dtype == np.float64:
            raw = values.ravel()
        else:  # float (and bfloat16, through float) -> double: subnormals become zeros
            raw = values.astype(np.float64).ravel()
            if values.dtype in _THROUGH_FLOAT:
                raw = np.where(np.abs(raw) < np.finfo(np.float32).tiny,
                               np.copysign(0.0, raw), raw)
        flat = _flush_subnormals(raw)  # compared and summed as zeros (denormals-are-zero)
        bad = ~np.isfinite(flat)
        if bad.any():
            first = flat[int(np.argmax(bad))]
            raise _invalid(f"Nan in summary histogram for: {self.name}" if np.isnan(first)
                           else f"Infinity in Histogram for: {self.name}")
        value = summary_pb2.Summary.Value()
        encode_histogram(flat, value.histo, raw)
        return _tagged_output([(tag.item(), value)])


@register_kernel("TensorSummaryV2", "CPU")
class TensorSummaryV2Op(OpKernel):
    """A Summary holding the whole tensor and its plugin's SummaryMetadata."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = dtypes.as_dtype(ctx.get_attr("T"))

    def compute(self, ctx, inputs):
        tag, tensor, metadata = (np.asarray(inputs[0], dtype=object), np.asarray(inputs[1]),
                                 np.asarray(inputs[2], dtype=object))
        if tag.ndim != 0:
            raise _invalid("tag must be scalar")
        if metadata.ndim != 0:
            raise _invalid("serialized_summary_metadata must be scalar")
        value = summary_pb2.Summary.Value()
        value.tensor.CopyFrom(_tensor_proto(tensor, self.dtype))
        value.metadata.SetInParent()
        try:
            value.metadata.ParseFromString(_bytes(metadata.item()))
        except DecodeError:
            value.metadata.Clear()  # TF ignores a metadata string that does not parse
        return _tagged_output([(tag.item(), value)])


def _tensor_proto(value: np.ndarray, dtype: dtypes.DType) -> tensor_pb2.TensorProto:
    """TF's Tensor::AsProtoTensorContent (AsProtoField for strings): dtype, shape (always
    present), the raw little-endian bytes in tensor_content (string_val for strings)."""
    proto = tensor_pb2.TensorProto(dtype=dtype.as_datatype_enum)
    proto.tensor_shape.SetInParent()
    for d in value.shape:
        proto.tensor_shape.dim.add(size=d)
    if dtype == dtypes.string:
        proto.string_val.extend(_bytes(v) for v in value.ravel())
    else:
        proto.tensor_content = np.ascontiguousarray(
            value, dtype=np.dtype(value.dtype).newbyteorder("<")).tobytes()
    return proto


@register_kernel("MergeSummary", "CPU")
class MergeSummaryOp(OpKernel):
    """One Summary with the values of every input Summary, in input order."""

    def compute(self, ctx, inputs):
        merged = summary_pb2.Summary()
        tags: set[str] = set()
        for item in inputs:
            for serialized in np.asarray(item, dtype=object).ravel():
                part = summary_pb2.Summary()
                try:
                    part.ParseFromString(_bytes(serialized))
                except DecodeError:
                    raise _invalid("Could not parse one of the summary inputs") from None
                for value in part.value:
                    if value.tag and value.tag in tags:
                        raise _invalid(f"Duplicate tag {value.tag} found in summary inputs ")
                    tags.add(value.tag)
                    merged.value.add().CopyFrom(value)
        return _output(merged)
