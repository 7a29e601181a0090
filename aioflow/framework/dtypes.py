"""TensorFlow's DType objects: element types named and numbered as TF's DataType enum.

The enum values match `types.proto`, so a dtype read from a TF-written GraphDef means the
same thing here. Quantized types map to their plain NumPy integer type (values are held as
ordinary integer arrays); bfloat16 comes from `ml_dtypes`.
"""

from __future__ import annotations

import builtins
import numbers
from typing import Any

import ml_dtypes
import numpy as np

__all__ = [
    "DType",
    "as_dtype",
    "QUANTIZED_DTYPES",
    "NUMERIC_TYPES",
    "REAL_NUMBER_TYPES",
    "FLOAT_TYPES",
    "INTEGER_TYPES",
    "COMPLEX_TYPES",
    "QUANTIZED_TYPES",
    "ALL_TYPES",
]

# TF's DataType enum (types.proto). A reference type is its base type plus _REF_OFFSET.
DT_INVALID = 0
DT_FLOAT = 1
DT_DOUBLE = 2
DT_INT32 = 3
DT_UINT8 = 4
DT_INT16 = 5
DT_INT8 = 6
DT_STRING = 7
DT_COMPLEX64 = 8
DT_INT64 = 9
DT_BOOL = 10
DT_QINT8 = 11
DT_QUINT8 = 12
DT_QINT32 = 13
DT_BFLOAT16 = 14
DT_QINT16 = 15
DT_QUINT16 = 16
DT_UINT16 = 17
DT_COMPLEX128 = 18
DT_HALF = 19
DT_RESOURCE = 20
DT_VARIANT = 21
DT_UINT32 = 22
DT_UINT64 = 23
_REF_OFFSET = 100

# enum -> (canonical name, numpy scalar type)
_BASE_TYPES: dict[int, tuple[str, type]] = {
    DT_FLOAT: ("float32", np.float32),
    DT_DOUBLE: ("float64", np.float64),
    DT_INT32: ("int32", np.int32),
    DT_UINT8: ("uint8", np.uint8),
    DT_INT16: ("int16", np.int16),
    DT_INT8: ("int8", np.int8),
    DT_STRING: ("string", np.object_),
    DT_COMPLEX64: ("complex64", np.complex64),
    DT_INT64: ("int64", np.int64),
    DT_BOOL: ("bool", np.bool_),
    DT_QINT8: ("qint8", np.int8),
    DT_QUINT8: ("quint8", np.uint8),
    DT_QINT32: ("qint32", np.int32),
    DT_BFLOAT16: ("bfloat16", ml_dtypes.bfloat16),
    DT_QINT16: ("qint16", np.int16),
    DT_QUINT16: ("quint16", np.uint16),
    DT_UINT16: ("uint16", np.uint16),
    DT_COMPLEX128: ("complex128", np.complex128),
    DT_HALF: ("float16", np.float16),
    DT_RESOURCE: ("resource", np.object_),
    DT_VARIANT: ("variant", np.object_),
    DT_UINT32: ("uint32", np.uint32),
    DT_UINT64: ("uint64", np.uint64),
}

_QUANTIZED_ENUMS = frozenset({DT_QINT8, DT_QUINT8, DT_QINT16, DT_QUINT16, DT_QINT32})
_NUMPY_INCOMPATIBLE_ENUMS = frozenset({DT_RESOURCE, DT_VARIANT})
_NO_LIMITS_ENUMS = _QUANTIZED_ENUMS | {DT_BOOL, DT_STRING, DT_COMPLEX64, DT_COMPLEX128}


def _is_valid_enum(type_enum: int) -> bool:
    return type_enum in _BASE_TYPES or (type_enum - _REF_OFFSET) in _BASE_TYPES


class DType:
    """One element type of a tensor, identified by its TF DataType enum value.

    Instances are interned by `as_dtype`; equality is by enum value, and a DType also
    compares equal to anything `as_dtype` turns into the same type ("float32", np.float32).
    """

    __slots__ = ("_type_enum",)

    def __init__(self, type_enum: int) -> None:
        type_enum = int(type_enum)
        if not _is_valid_enum(type_enum):
            raise TypeError(f"type_enum is not a valid DataType value: {type_enum}")
        self._type_enum = type_enum

    # -- identity -------------------------------------------------------------------------

    @property
    def as_datatype_enum(self) -> int:
        """The DataType enum value (as written in GraphDefs and TensorProtos)."""
        return self._type_enum

    @property
    def _base_enum(self) -> int:
        e = self._type_enum
        return e - _REF_OFFSET if e > _REF_OFFSET else e

    @property
    def name(self) -> str:
        """The TF name of this type: 'float32', 'int64', 'float32_ref', ..."""
        base = _BASE_TYPES[self._base_enum][0]
        return base + "_ref" if self.is_ref_dtype else base

    @property
    def is_ref_dtype(self) -> bool:
        """Whether this is a reference type (the dtype of a TF1 ref Variable's output)."""
        return self._type_enum > _REF_OFFSET

    @property
    def base_dtype(self) -> DType:
        """The non-reference type of this type."""
        return _INTERN_TABLE[self._base_enum]

    @property
    def _as_ref(self) -> DType:
        """The reference type of this type."""
        return self if self.is_ref_dtype else _INTERN_TABLE[self._type_enum + _REF_OFFSET]

    @property
    def real_dtype(self) -> DType:
        """The type of the real and imaginary parts for complex types; otherwise self."""
        base = self._base_enum
        if base == DT_COMPLEX64:
            return float32
        if base == DT_COMPLEX128:
            return float64
        return self

    # -- numpy ---------------------------------------------------------------------------

    @property
    def as_numpy_dtype(self) -> type:
        """The NumPy scalar type holding values of this type (np.object_ for string,
        resource and variant; the plain integer type for quantized types)."""
        return _BASE_TYPES[self._base_enum][1]

    @property
    def is_numpy_compatible(self) -> bool:
        """Whether values of this type can live in a NumPy array (not resource/variant)."""
        return self._base_enum not in _NUMPY_INCOMPATIBLE_ENUMS

    # -- classification -------------------------------------------------------------------

    @property
    def is_bool(self) -> bool:
        """Whether this is the boolean type."""
        return self._base_enum == DT_BOOL

    @property
    def is_floating(self) -> bool:
        """Whether this is a real floating point type (half, bfloat16, float, double)."""
        return self._base_enum in (DT_HALF, DT_BFLOAT16, DT_FLOAT, DT_DOUBLE)

    @property
    def is_complex(self) -> bool:
        """Whether this is a complex type."""
        return self._base_enum in (DT_COMPLEX64, DT_COMPLEX128)

    @property
    def is_quantized(self) -> bool:
        """Whether this is a quantized integer type (qint8, quint8, ...)."""
        return self._base_enum in _QUANTIZED_ENUMS

    @property
    def is_integer(self) -> bool:
        """Whether this is a non-quantized integer type."""
        return (
            self.is_numpy_compatible
            and not self.is_quantized
            and np.issubdtype(self.as_numpy_dtype, np.integer)
        )

    @property
    def is_unsigned(self) -> bool:
        """Whether this type's minimum is 0 (False for types without limits, like TF)."""
        try:
            return builtins.bool(self.min == 0)
        except TypeError:
            return False

    # -- limits --------------------------------------------------------------------------

    def _info(self):
        base = self._base_enum
        if base in _NO_LIMITS_ENUMS:
            return None
        np_type = self.as_numpy_dtype
        if base == DT_BFLOAT16:
            return ml_dtypes.finfo(np_type)
        try:
            return np.finfo(np_type)
        except (TypeError, ValueError):
            pass
        try:
            return np.iinfo(np_type)
        except (TypeError, ValueError):
            return None

    @property
    def min(self) -> Any:
        """The smallest representable value; TypeError for types without one."""
        info = self._info()
        if info is None:
            raise TypeError(f"Cannot find minimum value of {self}.")
        return info.min

    @property
    def max(self) -> Any:
        """The largest representable value; TypeError for types without one."""
        info = self._info()
        if info is None:
            raise TypeError(f"Cannot find maximum value of {self}.")
        return info.max

    @property
    def size(self) -> int:
        """Bytes per element (1 for resource; pointer size for string/variant, as TF)."""
        if self._type_enum == DT_RESOURCE:
            return 1
        return np.dtype(self.as_numpy_dtype).itemsize

    def is_compatible_with(self, other: Any) -> bool:
        """Whether a value of type `other` can be used where this type is expected
        (a ref type accepts its own type only; a base type accepts its ref too)."""
        other = as_dtype(other)
        return self._type_enum in (other.as_datatype_enum, other.base_dtype.as_datatype_enum)

    # -- dunder --------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if other is None:
            return False
        if not isinstance(other, DType):
            try:
                other = as_dtype(other)
            except Exception:  # equality must never raise
                return False
        return self._type_enum == other._type_enum

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._type_enum)

    def __repr__(self) -> str:
        return "af." + self.name

    def __str__(self) -> str:
        return f"<dtype: {self.name!r}>"

    def __reduce__(self):
        return as_dtype, (self.name,)


# Interned instances, one per enum value (base and ref).
_INTERN_TABLE: dict[int, DType] = {}
for _enum in _BASE_TYPES:
    _INTERN_TABLE[_enum] = DType(_enum)
    _INTERN_TABLE[_enum + _REF_OFFSET] = DType(_enum + _REF_OFFSET)
del _enum

float16 = _INTERN_TABLE[DT_HALF]
half = float16
float32 = _INTERN_TABLE[DT_FLOAT]
float64 = _INTERN_TABLE[DT_DOUBLE]
double = float64
bfloat16 = _INTERN_TABLE[DT_BFLOAT16]
int8 = _INTERN_TABLE[DT_INT8]
int16 = _INTERN_TABLE[DT_INT16]
int32 = _INTERN_TABLE[DT_INT32]
int64 = _INTERN_TABLE[DT_INT64]
uint8 = _INTERN_TABLE[DT_UINT8]
uint16 = _INTERN_TABLE[DT_UINT16]
uint32 = _INTERN_TABLE[DT_UINT32]
uint64 = _INTERN_TABLE[DT_UINT64]
bool = _INTERN_TABLE[DT_BOOL]  # TF's public name; shadows the builtin in this module
complex64 = _INTERN_TABLE[DT_COMPLEX64]
complex128 = _INTERN_TABLE[DT_COMPLEX128]
string = _INTERN_TABLE[DT_STRING]
resource = _INTERN_TABLE[DT_RESOURCE]
variant = _INTERN_TABLE[DT_VARIANT]
qint8 = _INTERN_TABLE[DT_QINT8]
quint8 = _INTERN_TABLE[DT_QUINT8]
qint16 = _INTERN_TABLE[DT_QINT16]
quint16 = _INTERN_TABLE[DT_QUINT16]
qint32 = _INTERN_TABLE[DT_QINT32]

float16_ref = _INTERN_TABLE[DT_HALF + _REF_OFFSET]
half_ref = float16_ref
float32_ref = _INTERN_TABLE[DT_FLOAT + _REF_OFFSET]
float64_ref = _INTERN_TABLE[DT_DOUBLE + _REF_OFFSET]
double_ref = float64_ref
bfloat16_ref = _INTERN_TABLE[DT_BFLOAT16 + _REF_OFFSET]
int8_ref = _INTERN_TABLE[DT_INT8 + _REF_OFFSET]
int16_ref = _INTERN_TABLE[DT_INT16 + _REF_OFFSET]
int32_ref = _INTERN_TABLE[DT_INT32 + _REF_OFFSET]
int64_ref = _INTERN_TABLE[DT_INT64 + _REF_OFFSET]
uint8_ref = _INTERN_TABLE[DT_UINT8 + _REF_OFFSET]
uint16_ref = _INTERN_TABLE[DT_UINT16 + _REF_OFFSET]
uint32_ref = _INTERN_TABLE[DT_UINT32 + _REF_OFFSET]
uint64_ref = _INTERN_TABLE[DT_UINT64 + _REF_OFFSET]
bool_ref = _INTERN_TABLE[DT_BOOL + _REF_OFFSET]
complex64_ref = _INTERN_TABLE[DT_COMPLEX64 + _REF_OFFSET]
complex128_ref = _INTERN_TABLE[DT_COMPLEX128 + _REF_OFFSET]
string_ref = _INTERN_TABLE[DT_STRING + _REF_OFFSET]
resource_ref = _INTERN_TABLE[DT_RESOURCE + _REF_OFFSET]
variant_ref = _INTERN_TABLE[DT_VARIANT + _REF_OFFSET]
qint8_ref = _INTERN_TABLE[DT_QINT8 + _REF_OFFSET]
quint8_ref = _INTERN_TABLE[DT_QUINT8 + _REF_OFFSET]
qint16_ref = _INTERN_TABLE[DT_QINT16 + _REF_OFFSET]
quint16_ref = _INTERN_TABLE[DT_QUINT16 + _REF_OFFSET]
qint32_ref = _INTERN_TABLE[DT_QINT32 + _REF_OFFSET]

# Names accepted by as_dtype: every canonical name plus TF's aliases.
_STRING_TO_TF: dict[str, DType] = {d.name: d for d in _INTERN_TABLE.values()}
_STRING_TO_TF.update(
    {
        "half": float16,
        "float": float32,
        "double": float64,
        "half_ref": float16_ref,
        "float_ref": float32_ref,
        "double_ref": float64_ref,
    }
)

# NumPy dtypes -> DType, by kind and size (NumPy has several scalar types for one C type,
# e.g. np.ulonglong and np.uint64). Quantized types share NumPy types with plain integers and
# resource/variant share np.object_ with string, so only the plain types map back.
_NP_KIND_SIZE_TO_TF: dict[tuple[str, int], DType] = {
    ("f", 2): float16,
    ("f", 4): float32,
    ("f", 8): float64,
    ("i", 1): int8,
    ("i", 2): int16,
    ("i", 4): int32,
    ("i", 8): int64,
    ("u", 1): uint8,
    ("u", 2): uint16,
    ("u", 4): uint32,
    ("u", 8): uint64,
    ("c", 8): complex64,
    ("c", 16): complex128,
}
_BFLOAT16_NP_DTYPE = np.dtype(ml_dtypes.bfloat16)


def _from_numpy_dtype(np_dtype: np.dtype) -> DType | None:
    kind = np_dtype.kind
    if kind in "OSU":
        return string
    if kind == "b":
        return bool
    if kind in "iufc":
        return _NP_KIND_SIZE_TO_TF.get((kind, np_dtype.itemsize))
    if np_dtype == _BFLOAT16_NP_DTYPE:
        return bfloat16
    return None


_PYTHON_TO_TF: dict[type, DType] = {
    builtins.float: float32,
    builtins.int: int32,
    builtins.bool: bool,
    builtins.complex: complex128,
    builtins.bytes: string,
    builtins.str: string,
    builtins.object: string,
}


def as_dtype(type_value: Any) -> DType:
    """The DType for `type_value`: a DType, a DataType enum int, a type name ("float32",
    "float", "half", "double", ...), a NumPy dtype or scalar type, a Python type, or an
    object with a `.dtype`. Raises TypeError for anything else."""
    if type(type_value) is int:  # a DataType enum, the common case: no ABC test
        found = _INTERN_TABLE.get(type_value)
        if found is not None:
            return found
    if isinstance(type_value, DType):
        return _INTERN_TABLE[type_value.as_datatype_enum]
    if isinstance(type_value, np.dtype):
        found = _from_numpy_dtype(type_value)
        if found is None:
            raise TypeError(f"Cannot convert {type_value!r} to a TensorFlow DType.")
        return found
    found = None
    if isinstance(type_value, str):
        found = _STRING_TO_TF.get(type_value)
    elif isinstance(type_value, type):
        if issubclass(type_value, np.generic):
            found = _from_numpy_dtype(np.dtype(type_value))
        else:
            found = _PYTHON_TO_TF.get(type_value)
    elif isinstance(type_value, numbers.Integral) and not isinstance(
        type_value, (builtins.bool, np.bool_)
    ):
        found = _INTERN_TABLE.get(int(type_value))
    elif hasattr(type_value, "dtype"):
        try:
            found = _from_numpy_dtype(np.dtype(type_value.dtype))
        except TypeError:
            found = None
    if found is not None:
        return found
    raise TypeError(
        f"Cannot convert the argument `type_value`: {type_value!r} to a TensorFlow DType."
    )


QUANTIZED_DTYPES = frozenset(
    {qint8, quint8, qint16, quint16, qint32,
     qint8_ref, quint8_ref, qint16_ref, quint16_ref, qint32_ref}
)

# Type lists in the sense of TF's op type constraints ("floatingpointtype",
# "realnumbertype", "numbertype", "quantizedtype", ...), for kernel registrations.
FLOAT_TYPES: tuple[DType, ...] = (float16, bfloat16, float32, float64)
INTEGER_TYPES: tuple[DType, ...] = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
COMPLEX_TYPES: tuple[DType, ...] = (complex64, complex128)
QUANTIZED_TYPES: tuple[DType, ...] = (qint8, quint8, qint16, quint16, qint32)
REAL_NUMBER_TYPES: tuple[DType, ...] = FLOAT_TYPES + INTEGER_TYPES
# TF's kNumberTypes: real numbers, complex, and qint8/quint8/qint32 (not the 16-bit ones).
NUMERIC_TYPES: tuple[DType, ...] = REAL_NUMBER_TYPES + COMPLEX_TYPES + (qint8, quint8, qint32)
ALL_TYPES: tuple[DType, ...] = tuple(_INTERN_TABLE[e] for e in sorted(_BASE_TYPES))
