"""TensorSpec: the dtype, shape and name a function or signature expects of a tensor
(tf.TensorSpec), read from a SavedModel's TensorInfo or TensorSpecProto; its repr is TF's,
since TF's signature errors quote it."""

from __future__ import annotations

from aioflow.framework import dtypes, tensor_shape

__all__ = ["TensorSpec"]


class TensorSpec:
    """An immutable (shape, dtype, name) triple; `is_compatible_with` checks a value's."""

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name: str | None = None):
        self._shape = tensor_shape.as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor_info(cls, info, name: str | None = None) -> TensorSpec:
        """The spec a SignatureDef's TensorInfo states (dtype and static shape)."""
        return cls(tensor_shape.TensorShape(info.tensor_shape), info.dtype, name)

    @classmethod
    def from_proto(cls, proto) -> TensorSpec:
        """A TensorSpecProto (struct.proto) as a TensorSpec."""
        return cls(tensor_shape.TensorShape(proto.shape), proto.dtype, proto.name or None)

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._shape

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def name(self) -> str | None:
        return self._name

    def is_compatible_with(self, other) -> bool:
        """Same dtype and compatible shapes (a spec or anything with dtype and shape)."""
        return (self._dtype == dtypes.as_dtype(other.dtype)
                and self._shape.is_compatible_with(tensor_shape.as_shape(other.shape)))

    def _key(self):
        dims = None if self._shape.rank is None else tuple(self._shape.as_list())
        return (self._dtype, dims, self._name)

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"TensorSpec(shape={self._shape}, dtype=tf.{self._dtype.name}, "
                f"name={self._name!r})")
