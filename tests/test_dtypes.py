"""Tests for aioflow.framework.dtypes: every DType's properties, as_dtype, equality."""

import builtins
import pickle

import ml_dtypes
import numpy as np
import pytest

from aioflow.framework import dtypes

# name, enum, numpy type, floating, integer, unsigned, complex, bool, quantized, np-compat, size
TABLE = [
    ("float32", 1, np.float32, True, False, False, False, False, False, True, 4),
    ("float64", 2, np.float64, True, False, False, False, False, False, True, 8),
    ("int32", 3, np.int32, False, True, False, False, False, False, True, 4),
    ("uint8", 4, np.uint8, False, True, True, False, False, False, True, 1),
    ("int16", 5, np.int16, False, True, False, False, False, False, True, 2),
    ("int8", 6, np.int8, False, True, False, False, False, False, True, 1),
    ("string", 7, np.object_, False, False, False, False, False, False, True, 8),
    ("complex64", 8, np.complex64, False, False, False, True, False, False, True, 8),
    ("int64", 9, np.int64, False, True, False, False, False, False, True, 8),
    ("bool", 10, np.bool_, False, False, False, False, True, False, True, 1),
    ("qint8", 11, np.int8, False, False, False, False, False, True, True, 1),
    ("quint8", 12, np.uint8, False, False, False, False, False, True, True, 1),
    ("qint32", 13, np.int32, False, False, False, False, False, True, True, 4),
    ("bfloat16", 14, ml_dtypes.bfloat16, True, False, False, False, False, False, True, 2),
    ("qint16", 15, np.int16, False, False, False, False, False, True, True, 2),
    ("quint16", 16, np.uint16, False, False, False, False, False, True, True, 2),
    ("uint16", 17, np.uint16, False, True, True, False, False, False, True, 2),
    ("complex128", 18, np.complex128, False, False, False, True, False, False, True, 16),
    ("float16", 19, np.float16, True, False, False, False, False, False, True, 2),
    ("resource", 20, np.object_, False, False, False, False, False, False, False, 1),
    ("variant", 21, np.object_, False, False, False, False, False, False, False, 8),
    ("uint32", 22, np.uint32, False, True, True, False, False, False, True, 4),
    ("uint64", 23, np.uint64, False, True, True, False, False, False, True, 8),
]


@pytest.mark.parametrize("row", TABLE, ids=[r[0] for r in TABLE])
def test_dtype_properties(row):
    name, enum, np_type, flt, integer, unsigned, cplx, boolean, quant, npc, size = row
    dt = getattr(dtypes, name)
    assert dt.name == name
    assert dt.as_datatype_enum == enum
    assert dt.as_numpy_dtype is np_type
    assert dt.is_floating is flt
    assert dt.is_integer is integer
    assert dt.is_unsigned is unsigned
    assert dt.is_complex is cplx
    assert dt.is_bool is boolean
    assert dt.is_quantized is quant
    assert dt.is_numpy_compatible is npc
    assert dt.size == size
    assert not dt.is_ref_dtype
    assert dt.base_dtype is dt
    assert repr(dt) == f"af.{name}"
    assert str(dt) == f"<dtype: '{name}'>"
    assert dtypes.as_dtype(enum) is dt
    assert dtypes.as_dtype(name) is dt
    assert (dt in dtypes.QUANTIZED_DTYPES) is quant


@pytest.mark.parametrize("row", TABLE, ids=[r[0] for r in TABLE])
def test_ref_dtype(row):
    name, enum, np_type, flt, integer, unsigned, cplx, boolean, quant, npc, _ = row
    dt = getattr(dtypes, name)
    ref = getattr(dtypes, name + "_ref")
    assert ref.name == name + "_ref"
    assert ref.as_datatype_enum == enum + 100
    assert ref.is_ref_dtype
    assert ref.base_dtype is dt
    assert dt._as_ref is ref
    assert ref._as_ref is ref
    assert ref.as_numpy_dtype is np_type
    assert (ref.is_floating, ref.is_integer, ref.is_unsigned) == (flt, integer, unsigned)
    assert (ref.is_complex, ref.is_bool, ref.is_quantized) == (cplx, boolean, quant)
    assert ref.is_numpy_compatible is npc
    assert ref != dt
    assert dtypes.as_dtype(enum + 100) is ref
    assert dtypes.as_dtype(name + "_ref") is ref
    assert repr(ref) == f"af.{name}_ref"
    assert (ref in dtypes.QUANTIZED_DTYPES) is quant


def test_aliases():
    assert dtypes.half is dtypes.float16
    assert dtypes.double is dtypes.float64
    assert dtypes.half_ref is dtypes.float16_ref
    assert dtypes.double_ref is dtypes.float64_ref
    for alias, dt in [("half", dtypes.float16), ("float", dtypes.float32),
                      ("double", dtypes.float64), ("half_ref", dtypes.float16_ref),
                      ("float_ref", dtypes.float32_ref), ("double_ref", dtypes.float64_ref)]:
        assert dtypes.as_dtype(alias) is dt


def test_real_dtype():
    assert dtypes.complex64.real_dtype is dtypes.float32
    assert dtypes.complex128.real_dtype is dtypes.float64
    assert dtypes.complex64_ref.real_dtype is dtypes.float32
    assert dtypes.int32.real_dtype is dtypes.int32
    assert dtypes.float32_ref.real_dtype is dtypes.float32_ref


@pytest.mark.parametrize(
    "dt",
    [dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int16, dtypes.int32,
     dtypes.int64, dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64],
    ids=str,
)
def test_min_max_numpy(dt):
    np_type = dt.as_numpy_dtype
    info = np.finfo(np_type) if dt.is_floating else np.iinfo(np_type)
    assert dt.min == info.min
    assert dt.max == info.max
    assert dt._as_ref.min == info.min


def test_min_max_bfloat16():
    assert float(dtypes.bfloat16.max) == float.fromhex("0x1.FEp127")
    assert float(dtypes.bfloat16.min) == -float.fromhex("0x1.FEp127")


@pytest.mark.parametrize(
    "dt",
    [dtypes.bool, dtypes.string, dtypes.complex64, dtypes.complex128, dtypes.qint8,
     dtypes.quint8, dtypes.qint16, dtypes.quint16, dtypes.qint32, dtypes.resource,
     dtypes.variant],
    ids=str,
)
def test_min_max_unavailable(dt):
    with pytest.raises(TypeError, match="Cannot find minimum value"):
        _ = dt.min
    with pytest.raises(TypeError, match="Cannot find maximum value"):
        _ = dt.max
    assert dt.is_unsigned is False


@pytest.mark.parametrize(
    "value, expected",
    [
        (np.float16, dtypes.float16),
        (np.float32, dtypes.float32),
        (np.float64, dtypes.float64),
        (ml_dtypes.bfloat16, dtypes.bfloat16),
        (np.int8, dtypes.int8),
        (np.int16, dtypes.int16),
        (np.int32, dtypes.int32),
        (np.int64, dtypes.int64),
        (np.uint8, dtypes.uint8),
        (np.uint16, dtypes.uint16),
        (np.uint32, dtypes.uint32),
        (np.uint64, dtypes.uint64),
        (np.bool_, dtypes.bool),
        (np.complex64, dtypes.complex64),
        (np.complex128, dtypes.complex128),
        (np.object_, dtypes.string),
        (np.bytes_, dtypes.string),
        (np.str_, dtypes.string),
        (np.dtype("float32"), dtypes.float32),
        (np.dtype(ml_dtypes.bfloat16), dtypes.bfloat16),
        (np.dtype("S5"), dtypes.string),
        (np.dtype("U3"), dtypes.string),
        (np.dtype(object), dtypes.string),
        (np.dtype(">i4"), dtypes.int32),
        (np.dtype("Q"), dtypes.uint64),
        (np.dtype("q"), dtypes.int64),
        (np.ulonglong, dtypes.uint64),
        (np.longlong, dtypes.int64),
        (np.intc, dtypes.int32),
        (np.array(2**63).dtype, dtypes.uint64),
        (builtins.float, dtypes.float32),
        (builtins.int, dtypes.int32),
        (builtins.bool, dtypes.bool),
        (builtins.complex, dtypes.complex128),
        (builtins.bytes, dtypes.string),
        (builtins.str, dtypes.string),
        (builtins.object, dtypes.string),
        (np.zeros(3, np.int16), dtypes.int16),
        (np.float64(1.0), dtypes.float64),
        (np.int64(9), dtypes.int64),  # an integer is read as an enum value first, as TF
        (dtypes.DType(3), dtypes.int32),
    ],
)
def test_as_dtype_accepts(value, expected):
    assert dtypes.as_dtype(value) is expected


def test_as_dtype_numpy_dtype_of_every_numpy_compatible_type():
    for dt in dtypes.ALL_TYPES:
        if dt.is_numpy_compatible and not dt.is_quantized:
            assert dtypes.as_dtype(np.dtype(dt.as_numpy_dtype)) is dt


@pytest.mark.parametrize(
    "value",
    ["foo", "float33", "", 0, 24, 99, 124, -1, 1.0, True, None, [1], np.dtype("datetime64[s]"),
     np.longdouble if np.dtype(np.longdouble).itemsize > 8 else "nope", object()],
    ids=repr,
)
def test_as_dtype_rejects(value):
    with pytest.raises(TypeError, match="to a TensorFlow DType"):
        dtypes.as_dtype(value)


def test_as_dtype_error_wording():
    with pytest.raises(TypeError) as err:
        dtypes.as_dtype("foo")
    assert str(err.value) == (
        "Cannot convert the argument `type_value`: 'foo' to a TensorFlow DType."
    )


def test_dtype_constructor_validates():
    with pytest.raises(TypeError, match="not a valid DataType"):
        dtypes.DType(99)
    assert dtypes.DType(1) == dtypes.float32
    assert dtypes.as_dtype(dtypes.DType(1)) is dtypes.float32


def test_equality():
    assert dtypes.float32 == dtypes.float32
    assert dtypes.float32 == dtypes.DType(1)
    assert dtypes.float32 == "float32"
    assert dtypes.float32 == "float"
    assert dtypes.float32 == np.float32
    assert dtypes.float32 == np.dtype("float32")
    assert dtypes.float32 == 1
    assert dtypes.float32 != dtypes.float64
    assert dtypes.float32 != dtypes.float32_ref
    assert dtypes.float32 != "nonsense"
    assert dtypes.float32 != None  # noqa: E711
    assert not dtypes.float32 == None  # noqa: E711
    assert dtypes.float32 != object()
    assert dtypes.float32 != [1, 2]
    assert dtypes.string == np.object_
    assert hash(dtypes.float32) == hash(dtypes.DType(1))
    assert len({dtypes.float32, dtypes.DType(1), dtypes.int32}) == 2


def test_equality_never_raises():
    class Weird:
        @property
        def dtype(self):
            raise RuntimeError("boom")

    assert dtypes.float32 != Weird()


def test_pickle_round_trip():
    for dt in list(dtypes.ALL_TYPES) + [dtypes.float32_ref]:
        assert pickle.loads(pickle.dumps(dt)) is dt


def test_is_compatible_with():
    assert dtypes.float32.is_compatible_with(dtypes.float32)
    assert dtypes.float32.is_compatible_with(dtypes.float32_ref)
    assert dtypes.float32.is_compatible_with("float32")
    assert not dtypes.float32_ref.is_compatible_with(dtypes.float32)
    assert dtypes.float32_ref.is_compatible_with(dtypes.float32_ref)
    assert not dtypes.float32.is_compatible_with(dtypes.int32)


def test_type_lists():
    assert set(dtypes.FLOAT_TYPES) == {dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                       dtypes.float64}
    assert all(t.is_floating for t in dtypes.FLOAT_TYPES)
    assert all(t.is_integer for t in dtypes.INTEGER_TYPES)
    assert len(dtypes.INTEGER_TYPES) == 8
    assert set(dtypes.REAL_NUMBER_TYPES) == set(dtypes.FLOAT_TYPES) | set(dtypes.INTEGER_TYPES)
    numeric = set(dtypes.NUMERIC_TYPES)
    assert numeric >= set(dtypes.REAL_NUMBER_TYPES) | {dtypes.complex64, dtypes.complex128}
    assert {dtypes.qint8, dtypes.quint8, dtypes.qint32} <= numeric
    assert dtypes.bool not in numeric and dtypes.string not in numeric
    assert dtypes.qint16 not in numeric and dtypes.quint16 not in numeric
    assert len(dtypes.NUMERIC_TYPES) == 17  # TF's kNumberTypes
    assert set(dtypes.QUANTIZED_TYPES) == {t for t in dtypes.QUANTIZED_DTYPES if not t.is_ref_dtype}
    assert len(dtypes.ALL_TYPES) == 23
    assert len(dtypes.QUANTIZED_DTYPES) == 10
