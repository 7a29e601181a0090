"""A gRPC request's TensorProtos as arrays, checked before anything is allocated.

A TensorProto declares its dtype and shape apart from its values, so a message of a few
bytes can declare a tensor of gigabytes (TF's parsing repeats the last value, or zeros,
to fill the declared shape). Before decoding, each input is checked against the
signature (its dtype) and against what the message really carries:
- the shape is known and its dimensions non-negative (TF Serving: "tensor parsing
  error: <key>");
- raw `tensor_content` holds exactly the declared elements (strings: at least a length
  byte per element), as TF's Tensor::FromProto refuses otherwise;
- values repeated to fill the shape (fewer values than elements, TF's rule for the
  typed fields) fill at most MAX_FILL_BYTES;
and then decoded (strings at C speed: tensor_util), on a worker thread when the tensors
are large (PARSE_OFF_LOOP_BYTES), so that the loop serves other requests meanwhile.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np

from aioflow.framework import dtypes, errors, tensor_util
from aioflow.serving.loader import Signature
from aioflow.serving.rest_codec import type_string

#: Values repeated to fill a declared shape may fill at most this many bytes.
MAX_FILL_BYTES = 64 << 20
#: Tensors declaring more bytes than this are decoded on a worker thread.
PARSE_OFF_LOOP_BYTES = 1 << 20

#: The repeated field of each dtype (TensorProto's typed values).
_FIELDS = {
    dtypes.float32: "float_val", dtypes.float64: "double_val", dtypes.int64: "int64_val",
    dtypes.uint32: "uint32_val", dtypes.uint64: "uint64_val", dtypes.bool: "bool_val",
    dtypes.string: "string_val", dtypes.float16: "half_val", dtypes.bfloat16: "half_val",
    dtypes.complex64: "scomplex_val", dtypes.complex128: "dcomplex_val",
}


def _parsing_error(key: str, why: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"tensor parsing error: {key} ({why})")


def _values_given(proto, dtype) -> int:
    """How many values the typed field holds (complex: pairs)."""
    field = getattr(proto, _FIELDS.get(dtype, "int_val"))
    return len(field) // 2 if dtype.is_complex else len(field)


def check_tensor(key: str, index: int, proto, spec) -> int:
    """Check one input's TensorProto against its signature spec and its own content;
    the bytes it decodes to."""
    want = spec.dtype
    if proto.dtype != want.as_datatype_enum:
        try:
            got = type_string(dtypes.as_dtype(proto.dtype))
        except TypeError:
            raise _parsing_error(key, f"unknown dtype {proto.dtype}") from None
        raise errors.InvalidArgumentError(
            None, None, f"Expects arg[{index}] to be {type_string(want)} but {got} is "
                        "provided")
    shape = proto.tensor_shape
    if shape.unknown_rank:
        raise _parsing_error(key, "unknown rank")
    dims = [d.size for d in shape.dim]
    if any(d < 0 for d in dims):
        raise _parsing_error(key, f"negative dimension in {dims}")
    n = math.prod(dims)
    itemsize = 8 if want == dtypes.string else np.dtype(want.as_numpy_dtype).itemsize
    if n * itemsize >= 1 << 62:
        raise _parsing_error(key, f"shape {dims} is too large")
    if proto.tensor_content:
        size = len(proto.tensor_content)
        if want == dtypes.string:
            if size < n:
                raise _parsing_error(key, f"{size} bytes of content for {n} strings")
        elif size != n * itemsize:
            raise _parsing_error(key, f"{size} bytes of content for {n} elements of "
                                      f"{itemsize} bytes")
        return n * itemsize
    given = _values_given(proto, want)
    if given < n and n * itemsize > MAX_FILL_BYTES:
        raise _parsing_error(
            key, f"{given} values for {n} elements: filling {n * itemsize} bytes is over "
                 f"the limit of {MAX_FILL_BYTES}")
    return n * itemsize


def _decode(protos: dict) -> dict[str, np.ndarray]:
    try:
        return {key: tensor_util.make_ndarray(proto) for key, proto in protos.items()}
    except (ValueError, TypeError) as e:
        raise errors.InvalidArgumentError(None, None, f"invalid TensorProto: {e}") from None


async def decode_inputs(sig: Signature, protos, check_keys) -> dict[str, np.ndarray]:
    """The request's inputs as arrays: `check_keys(sig, keys)` first (every input of the
    signature and no other), then each checked (check_tensor), then decoded, off the
    loop when large."""
    check_keys(sig, protos.keys())
    total = 0
    for index, (key, spec) in enumerate(sig.inputs.items()):
        total += check_tensor(key, index, protos[key], spec)
    protos = dict(protos)
    if total > PARSE_OFF_LOOP_BYTES:
        return await asyncio.to_thread(_decode, protos)
    return _decode(protos)
