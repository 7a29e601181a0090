"""Tensor slices in checkpoints, as TF writes them (tensor_slice.cc, saved_tensor_slice_util
and ordered_code.cc): the "shape_and_slice" spec of SaveV2/RestoreV2 ("10 4 0,5:-": the
full shape, then per dimension "start,length" or "-" for all of it), the key a slice is
stored under in a bundle (EncodeTensorNameSlice, OrderedCode), its TensorSliceProto, and
the copy of the overlap between two slices."""

from __future__ import annotations

import dataclasses

import numpy as np

from aioflow.framework import errors
from aioflow.proto import tensor_slice_pb2

FULL = -1  # TF's kFullExtent: a dimension taken whole


@dataclasses.dataclass(frozen=True)
class TensorSlice:
    """Per dimension a start and a length (FULL: the whole dimension, from 0)."""

    starts: tuple[int, ...]
    lengths: tuple[int, ...]

    @classmethod
    def full(cls, rank: int) -> TensorSlice:
        return cls((0,) * rank, (FULL,) * rank)

    @classmethod
    def from_proto(cls, proto) -> TensorSlice:
        starts, lengths = [], []
        for extent in proto.extent:
            has_length = extent.WhichOneof("has_length") is not None
            starts.append(extent.start)
            lengths.append(extent.length if has_length else FULL)
        return cls(tuple(starts), tuple(lengths))

    @property
    def dims(self) -> int:
        return len(self.starts)

    def is_full_at(self, d: int) -> bool:
        return self.lengths[d] == FULL and self.starts[d] == 0

    def is_full(self) -> bool:
        return all(self.is_full_at(d) for d in range(self.dims))

    def bounds(self, shape) -> list[tuple[int, int]]:
        """(start, end) per dimension within a tensor of `shape`."""
        return [(0, dim) if self.is_full_at(d) else (self.starts[d],
                                                     self.starts[d] + self.lengths[d])
                for d, dim in enumerate(shape)]

    def slice_shape(self, shape) -> tuple[int, ...]:
        return tuple(end - start for start, end in self.bounds(shape))

    def to_proto(self) -> tensor_slice_pb2.TensorSliceProto:
        proto = tensor_slice_pb2.TensorSliceProto()
        for d in range(self.dims):
            extent = proto.extent.add()
            if not self.is_full_at(d):
                extent.start = self.starts[d]
                extent.length = self.lengths[d]
        return proto

    def __str__(self) -> str:
        return ":".join("-" if self.is_full_at(d) else f"{self.starts[d]},{self.lengths[d]}"
                        for d in range(self.dims))


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def parse_slice(text: str, rank: int) -> TensorSlice:
    """TensorSlice::Parse of "start,length:-:..." (or "" / "-" for a whole tensor)."""
    if text in ("", "-") and rank != 1:
        return TensorSlice.full(rank)
    items = text.split(":")
    if len(items) != rank:
        raise errors.InternalError(None, None, f"Mismatching ranks: shape rank {rank}, "
                                               f"slice = {text}")
    starts, lengths = [], []
    for item in items:
        if item == "-":
            starts.append(0)
            lengths.append(FULL)
            continue
        start, sep, length = item.partition(",")
        try:
            s, n = int(start), int(length)
        except ValueError:
            raise _invalid(f"Expected a pair of numbers or '-' but got '{item}': string = "
                           f"{text}") from None
        if not sep or s < 0 or n < 0:
            raise _invalid(f"Expected non-negative start and length but got '{item}': "
                           f"string = {text}")
        starts.append(s)
        lengths.append(n)
    return TensorSlice(tuple(starts), tuple(lengths))


def parse_shape_and_slice(spec: str) -> tuple[tuple[int, ...], TensorSlice]:
    """checkpoint::ParseShapeAndSlice: the full shape and the slice of a non-empty spec,
    with TF's messages."""
    parts = spec.split(" ")
    if len(parts) < 2:
        raise _invalid(f"Expected at least 2 splits in shape_and_slice, but got "
                       f"{len(parts)} in spec {spec}")
    try:
        shape = tuple(int(p) for p in parts[:-1])
    except ValueError:
        raise _invalid(f"Expected a pair of numbers or '-' but got '{spec}'") from None
    if any(d < 0 for d in shape):
        raise _invalid(f"Expected a non-negative dimension in spec {spec}")
    sl = parse_slice(parts[-1], len(shape))
    for d, dim in enumerate(shape):
        if not sl.is_full_at(d) and sl.starts[d] + sl.lengths[d] > dim:
            raise _invalid(f"Extent in dimension {d} out of bounds: shape = "
                           f"{list(shape)}, slice = {sl}")
    return shape, sl


# -- OrderedCode (tensorflow/core/lib/strings/ordered_code.cc) ------------------------------
_LENGTH_TO_HEADER = [(0, 0), (0x80, 0), (0xC0, 0), (0xE0, 0), (0xF0, 0), (0xF8, 0),
                     (0xFC, 0), (0xFE, 0), (0xFF, 0), (0xFF, 0x80), (0xFF, 0xC0)]
_BITS_TO_LENGTH = [1] * 7 + [2] * 7 + [3] * 7 + [4] * 7 + [5] * 7 + [6] * 7 + [7] * 7 \
    + [8] * 7 + [9] * 7 + [10]


def _num_increasing(value: int) -> bytes:
    """WriteNumIncreasing: a length byte, then the value big-endian without leading 0s."""
    body = value.to_bytes((value.bit_length() + 7) // 8, "big") if value else b""
    return bytes([len(body)]) + body


def _string(value: bytes) -> bytes:
    """WriteString: 0x00 -> 0x00 0xff, 0xff -> 0xff 0x00, then the separator 0x00 0x01."""
    return value.replace(b"\x00", b"\x00\xff").replace(b"\xff", b"\xff\x00") + b"\x00\x01"


def _signed_num_increasing(value: int) -> bytes:
    """WriteSignedNumIncreasing: a self-delimiting, order-preserving signed encoding."""
    x = ~value if value < 0 else value
    if x < 64:
        return bytes([(0x80 ^ value) & 0xFF])
    length = _BITS_TO_LENGTH[x.bit_length()]
    buf = bytearray((value & ((1 << 80) - 1)).to_bytes(10, "big"))
    begin = buf[10 - length:]
    begin[0] ^= _LENGTH_TO_HEADER[length][0]
    begin[1] ^= _LENGTH_TO_HEADER[length][1]
    return bytes(begin)


def encode_tensor_name_slice(name: bytes, sl: TensorSlice) -> bytes:
    """checkpoint::EncodeTensorNameSlice: the bundle key of one slice of `name`."""
    out = [_num_increasing(0), _string(name), _num_increasing(sl.dims)]
    for d in range(sl.dims):
        out.append(_signed_num_increasing(sl.starts[d]))
        out.append(_signed_num_increasing(sl.lengths[d]))
    return b"".join(out)


def copy_overlap(src: np.ndarray, src_slice: TensorSlice, dst: np.ndarray,
                 dst_slice: TensorSlice, full_shape) -> bool:
    """Copy into `dst` (the values of `dst_slice`) what `src` (those of `src_slice`) holds
    of it; False when they do not overlap."""
    src_bounds = src_slice.bounds(full_shape)
    dst_bounds = dst_slice.bounds(full_shape)
    src_index, dst_index = [], []
    for (s0, s1), (d0, d1) in zip(src_bounds, dst_bounds, strict=True):
        lo, hi = max(s0, d0), min(s1, d1)
        if lo >= hi:
            return False
        src_index.append(slice(lo - s0, hi - s0))
        dst_index.append(slice(lo - d0, hi - d0))
    dst[tuple(dst_index)] = src[tuple(src_index)]
    return True
