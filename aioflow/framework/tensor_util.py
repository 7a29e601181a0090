"""NumPy arrays <-> TensorProto, with TensorFlow's rules for both directions.

`make_tensor_proto` infers dtypes from Python values as TF does and writes the same
encodings TF writes; `make_ndarray` reads every encoding TF (Python or C++) may write,
so Const values in a TF-written GraphDef come back as the same arrays.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import ml_dtypes
import numpy as np

from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.framework.value_repr import summarize

__all__ = ["make_tensor_proto", "make_ndarray", "MakeNdarray"]

# Types whose dense values TF writes as raw little-endian bytes in tensor_content (only
# when there is more than one element and the values fill the shape exactly).
_TENSOR_CONTENT_TYPES = frozenset(
    {
        dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
        dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
        dtypes.uint8, dtypes.uint32, dtypes.uint64,
        dtypes.qint8, dtypes.quint8, dtypes.qint16, dtypes.quint16, dtypes.qint32,
    }
)

_INT_VAL_ENUMS = frozenset(
    d.as_datatype_enum
    for d in (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.uint8, dtypes.uint16,
              dtypes.qint8, dtypes.quint8, dtypes.qint16, dtypes.quint16, dtypes.qint32)
)

_MAX_CONTENT_BYTES = 1 << 31
# The largest array NumPy can allocate (its sizes are signed 64-bit).
_MAX_ARRAY_BYTES = 2**63 - 1


def _tensor_pb2():
    # Imported on use so this module loads without the generated protos.
    from aioflow.proto import tensor_pb2

    return tensor_pb2


# -- Python value checks ---------------------------------------------------------------------

_INTEGRAL = (numbers.Integral, np.integer, tensor_shape.Dimension)
_REAL = (numbers.Real, np.integer, np.floating, ml_dtypes.bfloat16)
_COMPLEX = (numbers.Complex, np.number, ml_dtypes.bfloat16)
_TEXT = (bytes, str)
_BOOL = (bool, np.bool_)


def _flatten(values: Any):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _flatten(v)
    else:
        yield values


def _first_mismatch(values: Any, kinds: tuple) -> tuple[bool, Any]:
    for v in _flatten(values):
        if isinstance(v, kinds):
            continue
        if isinstance(v, np.ndarray) and issubclass(v.dtype.type, kinds):
            continue
        return True, v
    return False, None


def _expected_kinds(dtype: dtypes.DType) -> tuple | None:
    if dtype.is_bool:
        return _BOOL
    if dtype.is_integer or dtype.is_quantized:
        return _INTEGRAL
    if dtype.is_floating:
        return _REAL
    if dtype.is_complex:
        return _COMPLEX
    if dtype.base_dtype == dtypes.string:
        return _TEXT
    return None


def _assert_compatible(values: Any, dtype: dtypes.DType | None) -> None:
    """TypeError when a leaf of `values` cannot be a value of `dtype` (an int dtype
    rejects floats, a string dtype rejects numbers, ...)."""
    if dtype is None:
        return
    kinds = _expected_kinds(dtype)
    if kinds is None:
        return
    bad, leaf = _first_mismatch(values, kinds)
    if bad:
        raise TypeError(
            f"Expected {dtype.base_dtype.name}, but got {leaf!r} of type "
            f"'{type(leaf).__name__}'."
        )


def _dense_dimensions(values: Any) -> list[int]:
    """The shape a nested list must have to be dense, following first elements."""
    if not isinstance(values, (list, tuple)):
        return []
    if not values:
        return [0]
    return [len(values)] + _dense_dimensions(values[0])


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray):
        return bytes(value)
    raise TypeError(f"Expected binary or unicode string, got {summarize(value)}")


def _strings_to_bytes(items: Any, values: Any) -> list[bytes]:
    try:
        return [_as_bytes(x) for x in items]
    except TypeError:
        raise TypeError(
            f"Failed to convert elements of {values} to Tensor. Consider casting elements "
            "to a supported type."
        ) from None


def _fully_defined(shape: Any) -> list[int]:
    ts = tensor_shape.as_shape(shape)
    if not ts.is_fully_defined():
        raise ValueError(f"Shape {ts} must be fully defined to make a TensorProto.")
    return ts.as_list()  # type: ignore[return-value]


def _is_array_like(obj: Any) -> bool:
    return not isinstance(obj, (np.ndarray, np.generic)) and (
        hasattr(obj, "__array__") or hasattr(obj, "__array_interface__")
    )


# -- Python -> TensorProto -------------------------------------------------------------------


def make_tensor_proto(
    values: Any,
    dtype: Any = None,
    shape: Any = None,
    verify_shape: bool = False,
    allow_broadcast: bool = False,
):
    """A TensorProto holding `values` (a Python scalar or nested list, a NumPy array or
    scalar), as TF's make_tensor_proto builds it.

    Without `dtype`, Python floats become float32 and Python ints int32 (int64 when a
    value does not fit). With `shape`, a value with fewer elements than the shape is
    stored as is and padded with its last element when read back; more elements is a
    ValueError. `verify_shape` requires the value's shape to equal `shape`;
    `allow_broadcast` accepts only a scalar/one element or an exact element count.
    """
    tensor_pb2 = _tensor_pb2()
    if allow_broadcast and verify_shape:
        raise ValueError("allow_broadcast and verify_shape are not both allowed.")
    if isinstance(values, tensor_pb2.TensorProto):
        return values

    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    is_quantized = dtype is not None and dtype.is_quantized
    shape_list = None if shape is None else _fully_defined(shape)

    if _is_array_like(values):
        values = np.asarray(values)

    if isinstance(values, (np.ndarray, np.generic)):
        if dtype is not None and dtype.is_numpy_compatible:
            nparray = _cast(values, dtype)
        else:
            nparray = values
    else:
        if values is None:
            raise ValueError("None values not supported.")
        np_dt = dtype.as_numpy_dtype if dtype is not None and dtype.is_numpy_compatible else None
        if shape_list is not None and int(np.prod(shape_list, dtype=np.int64)) == 0:
            nparray = np.empty(shape_list, dtype=np_dt)
        else:
            _assert_compatible(values, dtype)
            nparray = _to_array(values, np_dt)
            dense = _dense_dimensions(values)
            if list(nparray.shape) != dense:
                raise ValueError(
                    f"Expected values {values} to be a dense tensor with shape {dense}, "
                    f"but got shape {list(nparray.shape)}."
                )
        # NumPy's default float and int types are 64-bit; TF prefers 32-bit.
        if dtype is None and nparray.dtype == np.float64:
            nparray = nparray.astype(np.float32)
        elif dtype is None and nparray.dtype == np.int64:
            narrowed = nparray.astype(np.int32)
            if np.array_equal(narrowed, nparray):
                nparray = narrowed

    try:
        numpy_dtype = dtypes.as_dtype(nparray.dtype)
    except TypeError:
        raise TypeError(f"Unrecognized data type: {nparray.dtype}") from None
    if is_quantized:
        numpy_dtype = dtype
    if dtype is not None and dtype.base_dtype != numpy_dtype.base_dtype:
        raise TypeError(
            f"`dtype` {dtype} is not compatible with {values} of dtype {nparray.dtype}."
        )

    if shape_list is None:
        shape_list = list(nparray.shape)
        shape_size = int(nparray.size)
        is_same_size = True
    else:
        shape_size = int(np.prod(shape_list, dtype=np.int64))
        is_same_size = shape_size == nparray.size
        if allow_broadcast:
            if nparray.shape not in ((1,), ()) and nparray.size != shape_size:
                raise TypeError(
                    f"Expected Tensor's shape: {tuple(shape_list)}, but got {nparray.shape}."
                )
        else:
            if verify_shape and nparray.shape != tuple(shape_list):
                raise TypeError(
                    f"Expected Tensor's shape: {tuple(shape_list)}, but got {nparray.shape}."
                )
            if nparray.size > shape_size:
                raise ValueError(
                    f"Too many elements provided. Takes at most {shape_size:d}, "
                    f"but got {nparray.size:d}."
                )

    proto = tensor_pb2.TensorProto(
        dtype=numpy_dtype.base_dtype.as_datatype_enum,
        tensor_shape=tensor_shape.TensorShape(shape_list).as_proto(),
    )

    if is_same_size and numpy_dtype.base_dtype in _TENSOR_CONTENT_TYPES and shape_size > 1:
        if nparray.size * nparray.itemsize >= _MAX_CONTENT_BYTES:
            raise ValueError("Cannot create a tensor proto whose content is larger than 2GB.")
        little = np.asarray(nparray).astype(nparray.dtype.newbyteorder("<"), copy=False)
        proto.tensor_content = little.tobytes()
        return proto

    if numpy_dtype.base_dtype == dtypes.string and not isinstance(values, np.ndarray):
        # Take the strings from the Python values, not the NumPy array, which would trim
        # trailing NULs from bytes.
        proto.string_val.extend(_strings_to_bytes(_flatten(values), values))
        return proto

    _append_values(proto, numpy_dtype.base_dtype, np.asarray(nparray).ravel(), values)
    return proto


def _cast(values: np.ndarray | np.generic, dtype: dtypes.DType):
    try:
        return values.astype(dtype.as_numpy_dtype)
    except OverflowError as e:
        raise ValueError(f"Values out of range for {dtype.base_dtype.name}: {e}") from e


def _to_array(values: Any, np_dt: Any) -> np.ndarray:
    try:
        return np.array(values, dtype=np_dt)
    except OverflowError as e:
        raise ValueError(f"Values out of range for {np.dtype(np_dt).name}: {e}") from e
    except ValueError as e:
        msg = str(e)
        if "inhomogeneous" in msg or "sequence" in msg:
            raise ValueError(
                f"Expected values {values} to be a dense tensor with shape "
                f"{_dense_dimensions(values)}, but could not convert it: {msg}"
            ) from e
        raise


def _append_values(proto, dtype: dtypes.DType, flat: np.ndarray, values: Any) -> None:
    """Writes `flat` into the typed repeated field TF uses for `dtype`."""
    enum = dtype.as_datatype_enum
    if flat.dtype != object:
        # Bit views below (half, complex) need native byte order.
        flat = np.ascontiguousarray(flat.astype(flat.dtype.newbyteorder("="), copy=False))
    if dtype in (dtypes.float16, dtypes.bfloat16):
        bits = flat.view(np.uint16)
        proto.half_val.extend(bits.tolist())
    elif dtype == dtypes.float32:
        proto.float_val.extend(flat.tolist())
    elif dtype == dtypes.float64:
        proto.double_val.extend(flat.tolist())
    elif enum in _INT_VAL_ENUMS:
        proto.int_val.extend(flat.tolist())
    elif dtype == dtypes.int64:
        proto.int64_val.extend(flat.tolist())
    elif dtype == dtypes.uint32:
        proto.uint32_val.extend(flat.tolist())
    elif dtype == dtypes.uint64:
        proto.uint64_val.extend(flat.tolist())
    elif dtype == dtypes.complex64:
        proto.scomplex_val.extend(flat.view(np.float32).tolist())
    elif dtype == dtypes.complex128:
        proto.dcomplex_val.extend(flat.view(np.float64).tolist())
    elif dtype == dtypes.bool:
        proto.bool_val.extend(flat.tolist())
    elif dtype == dtypes.string:
        proto.string_val.extend(_strings_to_bytes(flat.tolist(), values))
    else:
        raise TypeError(f"Element type not supported in TensorProto: {dtype.name}.")


# -- TensorProto -> NumPy --------------------------------------------------------------------


def _decode_string_list(content: bytes, n: int) -> list[bytes] | np.ndarray:
    """Decodes TF's string tensor_content: n varint32 lengths, then the bytes. In NumPy
    (the lengths) and C-level maps (the slices), not a Python loop per element: a
    message of millions of strings decodes at memory speed."""
    bad = "Cannot parse tensor from proto: bad string tensor_content"
    raw = np.frombuffer(content, dtype=np.uint8)
    ends = np.flatnonzero(raw[:5 * n] < 0x80)[:n]  # the last byte of each varint
    if len(ends) < n:
        raise ValueError(bad)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    widths = ends - starts + 1
    if n and widths.max() > 5:  # (a varint32 has at most 5 bytes)
        raise ValueError(bad)
    header = int(ends[-1]) + 1 if n else 0
    if n and widths.max() == 1:
        lengths = raw[:header].astype(np.int64)
    else:
        digits = (raw[:header] & 0x7F).astype(np.int64)
        shifts = (np.arange(header) - np.repeat(starts, widths)) * 7
        lengths = np.add.reduceat(digits << shifts, starts) if n else digits
    if (lengths >= 1 << 32).any():
        raise ValueError(bad)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = header
    np.cumsum(lengths, out=offsets[1:])
    offsets[1:] += header
    if int(offsets[-1]) != len(content):
        raise ValueError(bad)
    if not lengths.any():
        return np.full(n, b"", dtype=np.object_)
    return list(map(content.__getitem__,
                    map(slice, offsets[:-1].tolist(), offsets[1:].tolist())))


def _fill(values: np.ndarray, n: int) -> np.ndarray:
    """`values` stretched to n elements as TF's runtime reads a TensorProto: no values
    means zeros, fewer values repeat the last one, extra values are ignored."""
    have = len(values)
    if have == n:
        return values
    if have > n:
        return values[:n]
    if have == 0:
        return np.zeros(n, dtype=values.dtype)
    out = np.empty(n, dtype=values.dtype)
    out[:have] = values
    out[have:] = values[-1]
    return out


def _string_array(items: list[bytes] | np.ndarray, n: int) -> np.ndarray:
    if isinstance(items, np.ndarray):
        return _fill(items, n)
    if not len(items):
        items = [b""]
    arr = np.empty(len(items), dtype=np.object_)
    arr[:] = items
    return _fill(arr, n)


def make_ndarray(tensor) -> np.ndarray:
    """The NumPy array a TensorProto holds, whichever encoding it uses: tensor_content
    (raw little-endian bytes, or TF's varint-framed strings) or the typed repeated field
    (with one value or too few values repeated to fill the shape, none meaning zeros).
    Strings come back as an object array of bytes. A value that memory cannot hold is
    a ResourceExhaustedError (TF's OOM), never a raw MemoryError."""
    if tensor.tensor_shape.unknown_rank:
        raise ValueError("Cannot make an ndarray from a TensorProto of unknown rank.")
    shape = [d.size for d in tensor.tensor_shape.dim]
    if any(s < 0 for s in shape):
        raise ValueError(f"Cannot make an ndarray from a TensorProto with shape {shape}.")
    try:
        return _make_ndarray(tensor, shape)
    except MemoryError:
        raise _oom(tensor, shape) from None


def _oom(tensor, shape: list[int]) -> errors.ResourceExhaustedError:
    """TF's words for a tensor its allocator cannot hold."""
    from aioflow.framework.node_def_util import tf_type_name

    name = tf_type_name(tensor.dtype)
    return errors.ResourceExhaustedError(
        None, None, f"OOM when allocating tensor with shape[{','.join(map(str, shape))}] and "
                    f"type {name}")


def _make_ndarray(tensor, shape: list[int]) -> np.ndarray:
    num_elements = math.prod(shape)
    try:
        dtype = dtypes.as_dtype(tensor.dtype).base_dtype
    except TypeError:
        raise TypeError(f"Unsupported tensor type: {tensor.dtype}") from None
    if not dtype.is_numpy_compatible:
        raise TypeError(f"Unsupported tensor type: {tensor.dtype}")
    np_type = dtype.as_numpy_dtype
    enum = dtype.as_datatype_enum
    if num_elements * np.dtype(np_type).itemsize > _MAX_ARRAY_BYTES:
        raise _oom(tensor, shape)  # more than NumPy can address

    if num_elements == 0:
        return np.zeros(shape, dtype=np_type)

    if tensor.tensor_content:
        content = tensor.tensor_content
        if dtype == dtypes.string:
            return _string_array(_decode_string_list(content, num_elements), num_elements).reshape(
                shape
            )
        np_dtype = np.dtype(np_type)
        if len(content) != num_elements * np_dtype.itemsize:
            raise ValueError(
                f"Cannot parse tensor from proto: tensor_content has {len(content)} bytes, "
                f"expected {num_elements * np_dtype.itemsize} for {dtype.name} {shape}."
            )
        flat = np.frombuffer(content, dtype=np_dtype.newbyteorder("<"))
        return flat.astype(np_dtype).reshape(shape)

    if dtype == dtypes.string:
        return _string_array(list(tensor.string_val), num_elements).reshape(shape)

    if dtype in (dtypes.float16, dtypes.bfloat16):
        bits = np.array(tensor.half_val, dtype=np.int64).astype(np.uint16)
        values = bits.view(np_type)
    elif dtype == dtypes.float32:
        values = np.array(tensor.float_val, dtype=np.float32)
    elif dtype == dtypes.float64:
        values = np.array(tensor.double_val, dtype=np.float64)
    elif enum in _INT_VAL_ENUMS:
        values = np.array(tensor.int_val, dtype=np.int64).astype(np_type)
    elif dtype == dtypes.int64:
        values = np.array(tensor.int64_val, dtype=np.int64)
    elif dtype == dtypes.uint32:
        values = np.array(tensor.uint32_val, dtype=np.uint32)
    elif dtype == dtypes.uint64:
        values = np.array(tensor.uint64_val, dtype=np.uint64)
    elif dtype in (dtypes.complex64, dtypes.complex128):
        parts = tensor.scomplex_val if dtype == dtypes.complex64 else tensor.dcomplex_val
        if len(parts) % 2:
            raise ValueError(
                f"Cannot parse tensor from proto: {dtype.name} values must come in "
                f"(real, imag) pairs, got {len(parts)} numbers."
            )
        values = np.array(parts, dtype=dtype.real_dtype.as_numpy_dtype).view(np_type)
    elif dtype == dtypes.bool:
        values = np.array(tensor.bool_val, dtype=np.bool_)
    else:
        raise TypeError(f"Unsupported tensor type: {tensor.dtype}")

    return _fill(values, num_elements).reshape(shape)


# TF's public spelling.
MakeNdarray = make_ndarray
