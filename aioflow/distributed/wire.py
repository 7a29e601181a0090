"""Values on the wire: runtime values <-> TensorProto (numeric arrays as tensor_content,
read back with np.frombuffer: no copy on the receiving side), and OpErrors <-> gRPC
status codes (TF's codes are gRPC's)."""

from __future__ import annotations

import numpy as np
from google.protobuf import any_pb2

from aioflow.distributed import shm_transfer
from aioflow.framework import dtypes, errors, tensor_util
from aioflow.proto import tensor_pb2, tensor_shape_pb2


def to_proto(value) -> tensor_pb2.TensorProto:
    """A TensorProto of a runtime value (a NumPy array or scalar)."""
    array = np.asarray(value)
    if array.dtype.kind in "biufc" and array.dtype.byteorder in "=|<":
        proto = tensor_pb2.TensorProto(
            dtype=dtypes.as_dtype(array.dtype).as_datatype_enum,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in array.shape]))
        proto.tensor_content = array.tobytes()  # (the one copy: into the message)
        return proto
    return tensor_util.make_tensor_proto(array)


def from_proto(proto: tensor_pb2.TensorProto):
    """The runtime value of a TensorProto (numeric content viewed, not copied)."""
    if proto.tensor_content and proto.dtype not in (dtypes.string.as_datatype_enum,):
        dtype = dtypes.as_dtype(proto.dtype)
        if dtype.is_numpy_compatible:
            shape = [d.size for d in proto.tensor_shape.dim]
            return np.frombuffer(proto.tensor_content, dtype=dtype.as_numpy_dtype).reshape(shape)
    return tensor_util.make_ndarray(proto)


def error_of(code: int, message: str) -> errors.OpError:
    """The OpError of a status code (UnknownError for one TF does not know)."""
    return errors.exception_type_from_error_code(code)(None, None, message)


# -- RecvTensorResponse without copies ------------------------------------------------------
# A large tensor between tasks is the transfer that counts: its response is written as
# protobuf wire format by hand, the array's memory joined once into the message bytes,
# and read back as a NumPy view of the received bytes (TF's messages, field for field:
# RecvTensorResponse.tensor = 1, is_dead = 2; TensorProto.dtype = 1, tensor_shape = 2,
# tensor_content = 4; TensorShapeProto.dim = 2; Dim.size = 1).

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        bits = n & 0x7F
        n >>= 7
        if n:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _read_varint(view, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = view[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _tensor_chunks(value) -> list:
    """A TensorProto's wire format as chunks (the array's buffer one of them, uncopied)."""
    array = np.asarray(value)
    if not (array.dtype.kind in "biufc" and array.dtype.byteorder in "=|<"):
        return [to_proto(array).SerializeToString()]
    dims = b"".join(b"\x12" + _varint(len(d)) + d
                    for d in (b"\x08" + _varint(s) for s in array.shape))
    content = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
    return [b"\x08" + _varint(dtypes.as_dtype(array.dtype).as_datatype_enum),
            b"\x12" + _varint(len(dims)) + dims,
            b"\x22" + _varint(content.nbytes), content]


def encode_recv_tensor_response(got: tuple) -> bytes:
    """RecvTensorResponse bytes of (value, is_dead), or of (array, False, path) for an
    array written to the shared-memory file `path` (shm_transfer.py): then the tensor
    carries its dtype and shape only and transport_options (field 4, an Any) names the
    file."""
    value, is_dead = got[0], got[1]
    if is_dead:
        return b"\x10\x01"
    if len(got) > 2:
        array = np.asarray(value)
        dims = b"".join(b"\x12" + _varint(len(d)) + d
                        for d in (b"\x08" + _varint(n) for n in array.shape))
        tensor = (b"\x08" + _varint(dtypes.as_dtype(array.dtype).as_datatype_enum)
                  + b"\x12" + _varint(len(dims)) + dims)
        any_ = (b"\x0a" + _varint(len(shm_transfer.TYPE_URL)) + shm_transfer.TYPE_URL.encode()
                + b"\x12" + _varint(len(got[2])) + got[2].encode())
        return (b"\x0a" + _varint(len(tensor)) + tensor
                + b"\x22" + _varint(len(any_)) + any_)
    chunks = _tensor_chunks(value)
    size = sum(len(c) if isinstance(c, bytes) else c.nbytes for c in chunks)
    return b"".join([b"\x0a" + _varint(size), *chunks])


def decode_recv_tensor_response(data: bytes) -> tuple:
    """(value, is_dead) of RecvTensorResponse bytes; a numeric tensor is a read-only view
    of `data`; one in a shared-memory file is a shm_transfer.Incoming (its receiver's
    pool maps it)."""
    view = memoryview(data)
    pos, end = 0, len(view)
    tensor, is_dead, options = None, False, None
    while pos < end:
        key, pos = _read_varint(view, pos)
        field, wire = key >> 3, key & 7
        if wire == 2:
            length, pos = _read_varint(view, pos)
            if field == 1:
                tensor = view[pos:pos + length]
            elif field == 4:
                options = any_pb2.Any.FromString(bytes(view[pos:pos + length]))
            pos += length
        elif wire == 0:
            value, pos = _read_varint(view, pos)
            if field == 2:
                is_dead = bool(value)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"Malformed RecvTensorResponse (wire type {wire})")
    if is_dead or tensor is None:
        return None, True
    if options is not None and options.type_url == shm_transfer.TYPE_URL:
        proto = tensor_pb2.TensorProto.FromString(bytes(tensor))
        dtype = dtypes.as_dtype(proto.dtype).as_numpy_dtype
        shape = [d.size for d in proto.tensor_shape.dim]
        return shm_transfer.Incoming(options.value.decode(), dtype, shape), False
    return _decode_tensor(tensor), False


def _decode_tensor(view: memoryview):
    """A TensorProto's value: its tensor_content viewed, the rest parsed by protobuf."""
    pos, end = 0, len(view)
    content, rest = None, []
    while pos < end:
        start = pos
        key, pos = _read_varint(view, pos)
        field, wire = key >> 3, key & 7
        if wire == 2:
            length, pos = _read_varint(view, pos)
            if field == 4:
                content = view[pos:pos + length]
            else:
                rest.append(view[start:pos + length])
            pos += length
        elif wire == 0:
            _, pos = _read_varint(view, pos)
            rest.append(view[start:pos])
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            rest.append(view[start:pos])
        else:
            raise ValueError(f"Malformed TensorProto (wire type {wire})")
    proto = tensor_pb2.TensorProto.FromString(b"".join(rest))
    if content is not None:
        dtype = dtypes.as_dtype(proto.dtype)
        if dtype.is_numpy_compatible and dtype != dtypes.string:
            shape = [d.size for d in proto.tensor_shape.dim]
            return np.frombuffer(content, dtype=dtype.as_numpy_dtype).reshape(shape)
        proto.tensor_content = bytes(content)
    return tensor_util.make_ndarray(proto)


# -- RecvTensors: several keys of one step in one call (aioflow's, not TF's) ---------------
# Request: dma_ok (one byte), step_id (varint), then each key (varint length, UTF-8).
# Response: per tensor ready, its key (varint length, UTF-8) and its RecvTensorResponse
# (varint length, encode_recv_tensor_response's bytes).

def encode_recv_tensors_request(request: tuple) -> bytes:
    """Bytes of (step_id, keys, dma_ok)."""
    step_id, keys, dma_ok = request
    parts = [b"\x01" if dma_ok else b"\x00", _varint(step_id)]
    for key in keys:
        data = key.encode()
        parts += [_varint(len(data)), data]
    return b"".join(parts)


def decode_recv_tensors_request(data: bytes) -> tuple:
    view = memoryview(data)
    dma_ok = bool(view[0])
    step_id, pos = _read_varint(view, 1)
    keys = []
    while pos < len(view):
        length, pos = _read_varint(view, pos)
        keys.append(bytes(view[pos:pos + length]).decode())
        pos += length
    return step_id, keys, dma_ok


def encode_recv_tensors_response(items: list) -> bytes:
    """Bytes of [(key, got)], `got` as encode_recv_tensor_response takes it."""
    parts = []
    for key, got in items:
        data, payload = key.encode(), encode_recv_tensor_response(got)
        parts += [_varint(len(data)), data, _varint(len(payload)), payload]
    return b"".join(parts)


def decode_recv_tensors_response(data: bytes) -> list:
    """[(key, (value, is_dead))]; values as decode_recv_tensor_response gives them."""
    view = memoryview(data)
    pos, out = 0, []
    while pos < len(view):
        length, pos = _read_varint(view, pos)
        key = bytes(view[pos:pos + length]).decode()
        pos += length
        length, pos = _read_varint(view, pos)
        out.append((key, decode_recv_tensor_response(view[pos:pos + length])))
        pos += length
    return out
