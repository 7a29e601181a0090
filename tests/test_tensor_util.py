"""Tests for aioflow.framework.tensor_util: make_tensor_proto / make_ndarray with TF's rules,
every dtype and every encoding TF writes (tensor_content, typed fields, broadcast values)."""

import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from aioflow.framework import dtypes, tensor_util
from aioflow.framework.tensor_shape import TensorShape
from aioflow.framework.tensor_util import make_ndarray, make_tensor_proto
from aioflow.proto import tensor_pb2, tensor_shape_pb2, types_pb2

BF16 = ml_dtypes.bfloat16

# Every numpy-compatible DType, the TensorProto field TF uses for its values, and sample values.
FIELD_OF = {
    dtypes.float16: "half_val",
    dtypes.bfloat16: "half_val",
    dtypes.float32: "float_val",
    dtypes.float64: "double_val",
    dtypes.int8: "int_val",
    dtypes.int16: "int_val",
    dtypes.int32: "int_val",
    dtypes.uint8: "int_val",
    dtypes.uint16: "int_val",
    dtypes.qint8: "int_val",
    dtypes.quint8: "int_val",
    dtypes.qint16: "int_val",
    dtypes.quint16: "int_val",
    dtypes.qint32: "int_val",
    dtypes.int64: "int64_val",
    dtypes.uint32: "uint32_val",
    dtypes.uint64: "uint64_val",
    dtypes.complex64: "scomplex_val",
    dtypes.complex128: "dcomplex_val",
    dtypes.bool: "bool_val",
    dtypes.string: "string_val",
}
VALUE_FIELDS = sorted(set(FIELD_OF.values()))
CONTENT_TYPES = {
    dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16,
    dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint32, dtypes.uint64, dtypes.qint8,
    dtypes.quint8, dtypes.qint16, dtypes.quint16, dtypes.qint32,
}


def sample(dt, n=4):
    """n distinct-ish values of dtype dt as a numpy array."""
    np_type = dt.as_numpy_dtype
    if dt == dtypes.string:
        arr = np.empty(n, dtype=object)
        arr[:] = [b"", b"a\x00b", "é".encode(), b"xyz" * 3][:n] + [b"q"] * max(0, n - 4)
        return arr
    if dt == dtypes.bool:
        return np.array([True, False, True, True][:n] + [False] * max(0, n - 4))
    if dt.is_complex:
        return (np.arange(n) - 1.5 + 1j * (np.arange(n) * 2 - 3.25)).astype(np_type)
    if dt.is_floating:
        return (np.arange(n) * 1.5 - 2.25).astype(np_type)
    info = np.iinfo(np_type)
    vals = [info.min, info.max, 0, 1][:n] + list(range(2, 2 + max(0, n - 4)))
    return np.array(vals, dtype=np_type)


def field_values(dt, arr):
    """How TF writes the flat values of arr into the typed field for dt."""
    flat = np.asarray(arr).ravel()
    if dt in (dtypes.float16, dtypes.bfloat16):
        return flat.view(np.uint16).tolist()
    if dt.is_complex:
        return flat.view(dt.real_dtype.as_numpy_dtype).tolist()
    if dt == dtypes.string:
        return list(flat)
    return flat.tolist()


def proto_with(dt, shape, field=None, values=(), content=None):
    p = tensor_pb2.TensorProto(dtype=dt.as_datatype_enum)
    p.tensor_shape.CopyFrom(
        tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in shape]
        )
    )
    if field is not None:
        getattr(p, field).extend(values)
    if content is not None:
        p.tensor_content = content
    return p


def roundtrip(proto):
    return make_ndarray(tensor_pb2.TensorProto.FromString(proto.SerializeToString()))


def assert_same(actual, expected):
    """Same dtype, shape and values (NaN equal to NaN; strings as bytes)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape
    if expected.dtype == object or expected.dtype.kind in "SU":
        assert actual.dtype == object
        exp = [x.encode() if isinstance(x, str) else bytes(x) for x in expected.ravel()]
        assert list(actual.ravel()) == exp
        return
    assert actual.dtype == expected.dtype.newbyteorder("=")
    if expected.dtype == BF16:
        np.testing.assert_array_equal(actual.astype(np.float32), expected.astype(np.float32))
    else:
        np.testing.assert_array_equal(actual, expected)


NP_TYPES = [d for d in FIELD_OF if not d.is_quantized]

# -- dtype inference ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values, dtype, shape",
    [
        (1.0, dtypes.float32, []),
        ([1.5, 2.5], dtypes.float32, [2]),
        (1, dtypes.int32, []),
        ([[1, 2], [3, 4]], dtypes.int32, [2, 2]),
        (2**40, dtypes.int64, []),
        ([1, 2**40], dtypes.int64, [2]),
        (-(2**31), dtypes.int32, []),
        (2**31, dtypes.int64, []),
        (2**63, dtypes.uint64, []),
        (True, dtypes.bool, []),
        ([True, False], dtypes.bool, [2]),
        (b"ab", dtypes.string, []),
        ("ab", dtypes.string, []),
        ([["a", b"b"]], dtypes.string, [1, 2]),
        (1 + 2j, dtypes.complex128, []),
        ([], dtypes.float32, [0]),
        ([[], []], dtypes.float32, [2, 0]),
        ((1, 2, 3), dtypes.int32, [3]),
        ([np.float64(1.0)], dtypes.float32, [1]),  # lists are narrowed like Python values
        (np.float64(1.0), dtypes.float64, []),  # numpy values keep their type
        (np.array([1, 2]), dtypes.int64, [2]),
        (np.array([1.0], dtype=np.float16), dtypes.float16, [1]),
        (np.array([1.0], dtype=BF16), dtypes.bfloat16, [1]),
        (np.array(["x", "yy"]), dtypes.string, [2]),
        (np.array([b"x"]), dtypes.string, [1]),
        (np.zeros((2, 0, 3), np.uint16), dtypes.uint16, [2, 0, 3]),
    ],
)
def test_dtype_and_shape_inference(values, dtype, shape):
    proto = make_tensor_proto(values)
    assert proto.dtype == dtype.as_datatype_enum
    assert [d.size for d in proto.tensor_shape.dim] == shape
    assert not proto.tensor_shape.unknown_rank
    arr = roundtrip(proto)
    assert arr.shape == tuple(shape)
    if dtype == dtypes.string:
        expected = np.array(values, dtype=object)
        assert list(arr.ravel()) == [
            x.encode() if isinstance(x, str) else x for x in expected.ravel()
        ]
    else:
        np.testing.assert_array_equal(arr, np.asarray(values).astype(dtype.as_numpy_dtype))


def test_array_like_values():
    class ArrayLike:
        def __array__(self, dtype=None, copy=None):
            return np.array([1.5, 2.5], dtype=np.float64)

    proto = make_tensor_proto(ArrayLike())
    assert proto.dtype == types_pb2.DT_DOUBLE
    np.testing.assert_array_equal(make_ndarray(proto), [1.5, 2.5])


def test_tensor_proto_passes_through():
    proto = make_tensor_proto([1, 2])
    assert make_tensor_proto(proto) is proto


# -- explicit dtype ----------------------------------------------------------------------------


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_explicit_dtype_from_python_values(dt):
    arr = sample(dt)
    proto = make_tensor_proto(arr.tolist(), dtype=dt)
    assert proto.dtype == dt.as_datatype_enum
    assert_same(roundtrip(proto), arr)


def _wider_array(dt, arr):
    """arr held in another NumPy type that make_tensor_proto must cast to dt."""
    if dt == dtypes.string:
        return arr
    if dt.is_complex:
        return arr.astype(np.complex128)
    if dt.is_floating:
        return arr.astype(np.float64)
    if dt == dtypes.bool:
        return arr.astype(np.int8)
    return arr.astype(np.float64 if dt == dtypes.uint64 else np.int64)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_explicit_dtype_from_ndarray_casts(dt):
    arr = sample(dt)
    if dt == dtypes.uint64:
        arr = arr[2:]  # values that survive a float64 round trip
    proto = make_tensor_proto(_wider_array(dt, arr), dtype=dt)
    assert proto.dtype == dt.as_datatype_enum
    assert_same(roundtrip(proto), arr)


def test_explicit_dtype_accepts_any_as_dtype_form():
    for form in ("float32", np.float32, dtypes.float32, 1, float, dtypes.float32_ref):
        proto = make_tensor_proto([1, 2], dtype=form)
        assert proto.dtype == types_pb2.DT_FLOAT


def test_int_to_float_dtype_is_allowed():
    proto = make_tensor_proto([1, 2], dtype=dtypes.float64)
    np.testing.assert_array_equal(make_ndarray(proto), np.array([1.0, 2.0]))
    proto = make_tensor_proto([1.5], dtype=dtypes.complex64)
    np.testing.assert_array_equal(make_ndarray(proto), np.array([1.5], np.complex64))


# -- encodings written -------------------------------------------------------------------------


def written_fields(proto):
    return {f for f in VALUE_FIELDS if len(getattr(proto, f))} | (
        {"tensor_content"} if proto.tensor_content else set()
    )


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_multi_element_encoding(dt):
    arr = sample(dt).reshape(2, 2)
    proto = make_tensor_proto(arr, dtype=dt)
    if dt in CONTENT_TYPES:
        assert written_fields(proto) == {"tensor_content"}
        little = arr.astype(np.dtype(dt.as_numpy_dtype).newbyteorder("<"))
        assert proto.tensor_content == little.tobytes()
    else:
        assert written_fields(proto) == {FIELD_OF[dt]}
        assert list(getattr(proto, FIELD_OF[dt])) == field_values(dt, arr)
    assert_same(roundtrip(proto), arr)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_scalar_encoding(dt):
    arr = sample(dt)[1:2].reshape(())
    proto = make_tensor_proto(arr, dtype=dt)
    assert len(proto.tensor_shape.dim) == 0
    assert written_fields(proto) == {FIELD_OF[dt]}
    assert list(getattr(proto, FIELD_OF[dt])) == field_values(dt, arr)
    out = roundtrip(proto)
    assert out.shape == ()
    assert_same(out, arr)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_broadcast_one_value_encoding(dt):
    value = sample(dt)[1]
    proto = make_tensor_proto(value, dtype=dt, shape=[2, 3])
    assert written_fields(proto) == {FIELD_OF[dt]}
    assert len(getattr(proto, FIELD_OF[dt])) == (2 if dt.is_complex else 1)
    expected = np.empty((2, 3), dtype=dt.as_numpy_dtype)
    expected[...] = value
    assert_same(roundtrip(proto), expected)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_empty_tensor_encoding(dt):
    proto = make_tensor_proto([], dtype=dt, shape=[0, 3])
    assert written_fields(proto) == set()
    out = roundtrip(proto)
    assert out.shape == (0, 3)
    assert out.dtype == np.dtype(dt.as_numpy_dtype)
    proto = make_tensor_proto(np.zeros((3, 0), dtype=dt.as_numpy_dtype), dtype=dt)
    assert written_fields(proto) == set()
    assert roundtrip(proto).shape == (3, 0)


def test_fewer_values_than_shape_padded_with_last():
    proto = make_tensor_proto([1, 2], shape=[5])
    assert list(proto.int_val) == [1, 2] and not proto.tensor_content
    np.testing.assert_array_equal(make_ndarray(proto), [1, 2, 2, 2, 2])
    proto = make_tensor_proto(["a", "b"], shape=[2, 2])
    assert list(make_ndarray(proto).ravel()) == [b"a", b"b", b"b", b"b"]


def test_same_size_different_shape_is_reshaped():
    proto = make_tensor_proto([[1, 2], [3, 4]], shape=[4])
    assert proto.tensor_content
    np.testing.assert_array_equal(make_ndarray(proto), [1, 2, 3, 4])


def test_strings_keep_trailing_nuls_from_python_values():
    proto = make_tensor_proto([b"a\x00", b"\x00"])
    assert list(proto.string_val) == [b"a\x00", b"\x00"]
    assert list(make_ndarray(proto)) == [b"a\x00", b"\x00"]


def test_golden_wire_bytes():
    # Bytes that TF writes for these constants (field numbers and encodings).
    assert make_tensor_proto([[1, 2], [3, 4]]).SerializeToString() == (
        b"\x08\x03\x12\x08\x12\x02\x08\x02\x12\x02\x08\x02\x22\x10"
        + struct.pack("<4i", 1, 2, 3, 4)
    )
    assert make_tensor_proto(1.0).SerializeToString() == (
        b"\x08\x01\x12\x00\x2a\x04" + struct.pack("<f", 1.0)
    )
    assert make_tensor_proto("hi").SerializeToString() == b"\x08\x07\x12\x00\x42\x02hi"
    assert make_tensor_proto(0.0, dtype=dtypes.float16, shape=[3]).SerializeToString() == (
        b"\x08\x13\x12\x04\x12\x02\x08\x03\x6a\x01\x00"
    )


# -- errors ------------------------------------------------------------------------------------


def test_error_value_type_mismatch():
    with pytest.raises(TypeError, match=r"Expected int32, but got 1.5 of type 'float'\."):
        make_tensor_proto([1, 1.5], dtype=dtypes.int32)
    with pytest.raises(TypeError, match=r"Expected string, but got 1 of type 'int'\."):
        make_tensor_proto([1], dtype=dtypes.string)
    with pytest.raises(TypeError, match=r"Expected float32, but got 'a' of type 'str'\."):
        make_tensor_proto("a", dtype=dtypes.float32)
    with pytest.raises(TypeError, match=r"Expected bool, but got 1 of type 'int'\."):
        make_tensor_proto([1], dtype=dtypes.bool)
    with pytest.raises(TypeError, match=r"Expected int64, but got None of type 'NoneType'\."):
        make_tensor_proto([None], dtype=dtypes.int64)
    with pytest.raises(TypeError, match=r"Expected float64, but got 1j"):
        make_tensor_proto([1j], dtype=dtypes.float64)


def test_error_dtype_not_compatible():
    with pytest.raises(TypeError, match=r"`dtype` <dtype: 'resource'> is not compatible with"):
        make_tensor_proto(1, dtype=dtypes.resource)
    with pytest.raises(TypeError, match="is not compatible with"):
        make_tensor_proto(1, dtype=dtypes.variant)


def test_error_unconvertible_elements():
    with pytest.raises(TypeError, match=r"Failed to convert elements of \[1, None\] to Tensor"):
        make_tensor_proto([1, None])
    with pytest.raises(TypeError, match="Failed to convert elements"):
        make_tensor_proto(2**70)
    with pytest.raises(TypeError, match="Failed to convert elements"):
        make_tensor_proto(np.array([object()]))


def test_error_none_and_ragged():
    with pytest.raises(ValueError, match="None values not supported"):
        make_tensor_proto(None)
    with pytest.raises(ValueError, match=r"to be a dense tensor with shape \[2, 2\]"):
        make_tensor_proto([[1, 2], [3]])
    with pytest.raises(ValueError, match=r"to be a dense tensor with shape \[2, 2\]"):
        make_tensor_proto([["a", "b"], ["c"]], dtype=dtypes.string)


def test_error_unsupported_numpy_dtype():
    with pytest.raises(TypeError, match="Unrecognized data type"):
        make_tensor_proto(np.array(["2020-01-01"], dtype="datetime64[D]"))


def test_error_out_of_range_ints():
    with pytest.raises(ValueError, match="out of range for int8"):
        make_tensor_proto([300], dtype=dtypes.int8)


def test_shape_rules():
    with pytest.raises(ValueError, match="Too many elements provided. Takes at most 2, but got 3."):
        make_tensor_proto([1, 2, 3], shape=[2])
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(3,\), but got \(2,\)\."):
        make_tensor_proto([1, 2], shape=[3], verify_shape=True)
    make_tensor_proto([[1, 2]], shape=[1, 2], verify_shape=True)
    with pytest.raises(TypeError, match=r"Expected Tensor's shape: \(3,\), but got \(2,\)\."):
        make_tensor_proto([1, 2], shape=[3], allow_broadcast=True)
    with pytest.raises(ValueError, match="allow_broadcast and verify_shape are not both allowed"):
        make_tensor_proto([1], shape=[1], allow_broadcast=True, verify_shape=True)
    np.testing.assert_array_equal(
        make_ndarray(make_tensor_proto([7], shape=[2, 2], allow_broadcast=True)),
        np.full((2, 2), 7, np.int32),
    )
    np.testing.assert_array_equal(
        make_ndarray(make_tensor_proto([[1, 2], [3, 4]], shape=[4], allow_broadcast=True)),
        [1, 2, 3, 4],
    )
    with pytest.raises(ValueError, match="must be fully defined"):
        make_tensor_proto(1, shape=[None, 2])
    with pytest.raises(ValueError, match="must be fully defined"):
        make_tensor_proto(1, shape=TensorShape(None))


def test_shape_argument_forms():
    for shape in ([2, 2], (2, 2), TensorShape([2, 2]), np.array([2, 2])):
        proto = make_tensor_proto(1.0, shape=shape)
        assert make_ndarray(proto).shape == (2, 2)


# -- reading every encoding --------------------------------------------------------------------


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_read_typed_field_full(dt):
    arr = sample(dt, 6).reshape(2, 3)
    proto = proto_with(dt, [2, 3], FIELD_OF[dt], field_values(dt, arr))
    assert_same(roundtrip(proto), arr)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_read_typed_field_fewer_values_repeat_last(dt):
    arr = sample(dt, 6)
    proto = proto_with(dt, [3, 2], FIELD_OF[dt], field_values(dt, arr[:2]))
    expected = np.concatenate([arr[:2], np.repeat(arr[1:2], 4)]).reshape(3, 2)
    assert_same(roundtrip(proto), expected)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_read_typed_field_no_values_is_zero(dt):
    proto = proto_with(dt, [2, 2])
    out = roundtrip(proto)
    assert out.shape == (2, 2)
    if dt == dtypes.string:
        assert list(out.ravel()) == [b""] * 4
    else:
        assert out.dtype == np.dtype(dt.as_numpy_dtype)
        assert not np.any(out.astype(np.complex128) if dt == dtypes.bfloat16 else out)


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_read_typed_field_extra_values_ignored(dt):
    # TF's runtime reads only as many values as the shape holds.
    arr = sample(dt, 5)
    proto = proto_with(dt, [3], FIELD_OF[dt], field_values(dt, arr))
    assert_same(roundtrip(proto), arr[:3])


@pytest.mark.parametrize("dt", list(FIELD_OF), ids=str)
def test_read_typed_field_scalar(dt):
    arr = sample(dt)[3:4].reshape(())
    proto = proto_with(dt, [], FIELD_OF[dt], field_values(dt, arr))
    out = roundtrip(proto)
    assert out.shape == ()
    assert_same(out, arr)


@pytest.mark.parametrize("dt", [d for d in FIELD_OF if d != dtypes.string], ids=str)
def test_read_tensor_content_every_type(dt):
    # TF's C++ side writes tensor_content for every fixed-size type (bool, complex, uint16 too).
    arr = sample(dt, 6).reshape(3, 2)
    content = arr.astype(np.dtype(dt.as_numpy_dtype).newbyteorder("<")).tobytes()
    proto = proto_with(dt, [3, 2], content=content)
    assert_same(roundtrip(proto), arr)


def test_read_tensor_content_size_mismatch():
    proto = proto_with(dtypes.float32, [3], content=b"\x00" * 8)
    with pytest.raises(ValueError, match="tensor_content has 8 bytes, expected 12"):
        make_ndarray(proto)


def _varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def test_read_string_tensor_content():
    items = [b"", b"ab", b"x" * 200, "é".encode()]
    content = b"".join(_varint(len(s)) for s in items) + b"".join(items)
    proto = proto_with(dtypes.string, [2, 2], content=content)
    out = roundtrip(proto)
    assert out.dtype == object and out.shape == (2, 2)
    assert list(out.ravel()) == items
    bad = proto_with(dtypes.string, [2, 2], content=content[:-1])
    with pytest.raises(ValueError, match="bad string tensor_content"):
        make_ndarray(bad)


def test_read_half_val_bit_patterns():
    values = np.array([0.0, -0.0, 1.0, -2.5, 65504.0, np.inf, -np.inf, 6e-8], dtype=np.float16)
    proto = proto_with(dtypes.float16, [8], "half_val", values.view(np.uint16).tolist())
    out = make_ndarray(proto)
    assert out.dtype == np.float16
    assert out.view(np.uint16).tolist() == values.view(np.uint16).tolist()
    nan = proto_with(dtypes.float16, [], "half_val", [0x7E00])
    assert np.isnan(make_ndarray(nan))
    bf = np.array([1.0, -3.0, 3e38, -np.inf, 1e-40], dtype=BF16)
    proto = proto_with(dtypes.bfloat16, [5], "half_val", bf.view(np.uint16).tolist())
    out = make_ndarray(proto)
    assert out.dtype == np.dtype(BF16)
    assert out.view(np.uint16).tolist() == bf.view(np.uint16).tolist()
    # A writer that stored the bits sign-extended as int16 reads the same.
    proto = proto_with(dtypes.bfloat16, [1], "half_val", [int(np.int16(-16320 - 1))])
    assert make_ndarray(proto).view(np.uint16)[0] == np.uint16(np.int16(-16321).view(np.uint16))


def test_read_complex_pairs():
    proto = proto_with(dtypes.complex64, [2], "scomplex_val", [1.0, 2.0, 3.0, -4.0])
    np.testing.assert_array_equal(make_ndarray(proto), np.array([1 + 2j, 3 - 4j], np.complex64))
    proto = proto_with(dtypes.complex128, [3], "dcomplex_val", [1.0, 2.0])
    np.testing.assert_array_equal(make_ndarray(proto), np.full(3, 1 + 2j, np.complex128))
    with pytest.raises(ValueError, match=r"\(real, imag\) pairs"):
        make_ndarray(proto_with(dtypes.complex64, [1], "scomplex_val", [1.0, 2.0, 3.0]))


def test_read_quantized_types_as_plain_ints():
    proto = proto_with(dtypes.qint8, [3], "int_val", [-128, 0, 127])
    out = make_ndarray(proto)
    assert out.dtype == np.int8 and out.tolist() == [-128, 0, 127]
    proto = make_tensor_proto([1, 2, 3], dtype=dtypes.quint8)
    assert proto.dtype == types_pb2.DT_QUINT8 and proto.tensor_content == b"\x01\x02\x03"


def test_read_ref_dtype_as_base():
    proto = proto_with(dtypes.float32_ref, [2], "float_val", [1.0, 2.0])
    np.testing.assert_array_equal(make_ndarray(proto), np.array([1.0, 2.0], np.float32))


def test_read_errors():
    with pytest.raises(TypeError, match="Unsupported tensor type: 20"):
        make_ndarray(proto_with(dtypes.resource, [1]))
    with pytest.raises(TypeError, match="Unsupported tensor type: 21"):
        make_ndarray(proto_with(dtypes.variant, []))
    with pytest.raises(TypeError, match="Unsupported tensor type: 0"):
        make_ndarray(tensor_pb2.TensorProto())
    unknown = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT)
    unknown.tensor_shape.unknown_rank = True
    with pytest.raises(ValueError, match="unknown rank"):
        make_ndarray(unknown)
    with pytest.raises(ValueError, match="shape"):
        make_ndarray(proto_with(dtypes.float32, [-1]))


def test_make_ndarray_result_is_writable_copy():
    proto = make_tensor_proto(np.arange(4, dtype=np.float32))
    out = make_ndarray(proto)
    out[0] = 9.0
    assert make_ndarray(proto)[0] == 0.0


def test_tf_spelling_alias():
    assert tensor_util.MakeNdarray is make_ndarray


# -- properties --------------------------------------------------------------------------------

_shapes = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)
_numeric_dtypes = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(endianness="?"),
    hnp.unsigned_integer_dtypes(endianness="?"),
    hnp.floating_dtypes(endianness="?"),
    hnp.complex_number_dtypes(endianness="?"),
)
_numeric_arrays = _numeric_dtypes.flatmap(lambda dt: hnp.arrays(dt, _shapes))
_bf16_arrays = hnp.arrays(np.uint16, _shapes).map(lambda a: a.view(BF16))
_string_arrays = _shapes.flatmap(
    lambda shape: st.lists(
        st.binary(max_size=12), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))
    ).map(lambda items, shape=shape: _object_array(items, shape))
)


def _object_array(items, shape):
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr.reshape(shape)


def _bits_equal(actual, expected):
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype.newbyteorder("=")
    if expected.dtype == object:
        assert list(actual.ravel()) == list(expected.ravel())
    elif expected.dtype.kind in "fc" or expected.dtype == BF16:
        wide = np.complex128 if expected.dtype.kind == "c" else np.float64
        with np.errstate(invalid="ignore"):  # ml_dtypes warns casting a bfloat16 NaN
            actual, expected = actual.astype(wide), expected.astype(wide)
        np.testing.assert_array_equal(actual, expected)
    else:
        assert np.array_equal(actual, expected)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_numeric_arrays, _bf16_arrays, _string_arrays))
def test_prop_round_trip(arr):
    proto = make_tensor_proto(arr)
    parsed = tensor_pb2.TensorProto.FromString(proto.SerializeToString())
    assert parsed == proto
    _bits_equal(make_ndarray(parsed), arr)


@settings(max_examples=200, deadline=None)
@given(_numeric_dtypes, _shapes, st.data())
def test_prop_broadcast_scalar(dt, shape, data):
    value = data.draw(hnp.arrays(dt, ()))
    if int(np.prod(shape)) == 0:
        # One value is more than an empty shape holds (TF raises too).
        with pytest.raises(ValueError, match="Too many elements provided"):
            make_tensor_proto(value, shape=list(shape))
        return
    proto = make_tensor_proto(value, shape=list(shape))
    expected = np.empty(shape, dtype=dt)
    expected[...] = value
    _bits_equal(roundtrip(proto), expected)


_quantized = st.sampled_from(list(dtypes.QUANTIZED_TYPES))


@settings(max_examples=100, deadline=None)
@given(_quantized, _shapes, st.data())
def test_prop_round_trip_quantized(dt, shape, data):
    arr = data.draw(hnp.arrays(dt.as_numpy_dtype, shape))
    proto = make_tensor_proto(arr, dtype=dt)
    assert proto.dtype == dt.as_datatype_enum
    _bits_equal(roundtrip(proto), arr)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([d for d in FIELD_OF if d != dtypes.string]),
    _shapes,
    st.integers(min_value=0, max_value=3),
    st.data(),
)
def test_prop_typed_fields_read_like_tf(dt, shape, drop, data):
    """Arrays written into the typed field (maybe with trailing repeats dropped) read back."""
    np_type = dt.as_numpy_dtype
    n = int(np.prod(shape))
    if dt == dtypes.bfloat16:
        flat = data.draw(hnp.arrays(np.uint16, n)).view(BF16)
    else:
        flat = data.draw(hnp.arrays(np_type, n))
    keep = max(1, n - drop) if n else 0
    flat = flat.copy()
    if n:
        flat[keep:] = flat[keep - 1]
    proto = proto_with(dt, list(shape), FIELD_OF[dt], field_values(dt, flat[:keep]))
    _bits_equal(roundtrip(proto), flat.reshape(shape))
