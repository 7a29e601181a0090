"""Static tensor shapes with unknown parts, as TF's Dimension and TensorShape.

Shape inference works on partially known shapes: a rank may be unknown (dims is None),
and any dimension may be unknown (None). Indexing gives `Dimension` objects (TF1 style);
equality of shapes is structural (TF2 style).
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

from aioflow.framework.value_repr import summarize

__all__ = [
    "Dimension",
    "TensorShape",
    "as_dimension",
    "as_shape",
    "dimension_value",
    "dimension_at_index",
    "unknown_shape",
    "scalar",
    "vector",
    "matrix",
]


def _shape_proto_module():
    # Imported on use so this module loads without the generated protos.
    from aioflow.proto import tensor_shape_pb2

    return tensor_shape_pb2


class Dimension:
    """One dimension of a shape: a non-negative int, or None when unknown.

    Arithmetic with an unknown dimension gives an unknown dimension; comparisons that
    involve an unknown dimension give None (neither true nor false), as in TF.
    """

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        if value is None:
            self._value = None
            return
        if isinstance(value, Dimension):
            self._value = value._value
            return
        if isinstance(value, int):
            ivalue = int(value)
        else:
            try:
                ivalue = operator.index(value)
            except TypeError:
                raise TypeError(
                    "Dimension value must be integer or None or have an __index__ method, "
                    f"got value '{summarize(value)}' with type '{type(value)!r}'"
                ) from None
        if ivalue < 0:
            raise ValueError(f"Dimension {ivalue} must be >= 0")
        self._value = ivalue

    @property
    def value(self) -> int | None:
        """The size, or None if unknown."""
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __eq__(self, other: object) -> bool | None:  # type: ignore[override]
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return None
        return self._value == other._value

    def __ne__(self, other: object) -> bool | None:  # type: ignore[override]
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return None
        return self._value != other._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("Cannot convert an unknown Dimension to an int.")
        return self._value

    def __index__(self) -> int:
        if self._value is None:
            raise TypeError("Cannot use an unknown Dimension as an index.")
        return self._value

    def __reduce__(self):
        return Dimension, (self._value,)

    # -- compatibility ---------------------------------------------------------------------

    def is_compatible_with(self, other: Any) -> bool:
        """Whether the two dimensions could be the same (equal, or either unknown)."""
        other = as_dimension(other)
        return self._value is None or other._value is None or self._value == other._value

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raises ValueError unless `other` is compatible with this dimension."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")

    def merge_with(self, other: Any) -> Dimension:
        """The dimension known to both: the known value of either (ValueError if both are
        known and differ)."""
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(other._value if self._value is None else self._value)

    # -- arithmetic (unknown in, unknown out) ------------------------------------------------

    def _binary(self, other: Any, fn, reverse: bool = False) -> Dimension:
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return Dimension(None)
        if reverse:
            return Dimension(fn(other._value, self._value))
        return Dimension(fn(self._value, other._value))

    def __add__(self, other: Any) -> Dimension:
        return self._binary(other, operator.add)

    def __radd__(self, other: Any) -> Dimension:
        return self._binary(other, operator.add, reverse=True)

    def __sub__(self, other: Any) -> Dimension:
        return self._binary(other, operator.sub)

    def __rsub__(self, other: Any) -> Dimension:
        return self._binary(other, operator.sub, reverse=True)

    def __mul__(self, other: Any) -> Dimension:
        return self._binary(other, operator.mul)

    def __rmul__(self, other: Any) -> Dimension:
        return self._binary(other, operator.mul, reverse=True)

    def __floordiv__(self, other: Any) -> Dimension:
        return self._binary(other, operator.floordiv)

    def __rfloordiv__(self, other: Any) -> Dimension:
        return self._binary(other, operator.floordiv, reverse=True)

    def __mod__(self, other: Any) -> Dimension:
        return self._binary(other, operator.mod)

    def __rmod__(self, other: Any) -> Dimension:
        return self._binary(other, operator.mod, reverse=True)

    def __truediv__(self, other: Any):
        raise TypeError(
            "unsupported operand type(s) for /: 'Dimension' and "
            f"'{type(other).__name__}', please use // instead"
        )

    def __rtruediv__(self, other: Any):
        raise TypeError(
            f"unsupported operand type(s) for /: '{type(other).__name__}' and "
            "'Dimension', please use // instead"
        )

    def _compare(self, other: Any, fn) -> bool | None:
        other = as_dimension(other)
        if self._value is None or other._value is None:
            return None
        return fn(self._value, other._value)

    def __lt__(self, other: Any) -> bool | None:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> bool | None:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> bool | None:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> bool | None:
        return self._compare(other, operator.ge)


def as_dimension(value: Any) -> Dimension:
    """`value` as a Dimension (a Dimension is returned unchanged)."""
    if isinstance(value, Dimension):
        return value
    return Dimension(value)


def dimension_value(dimension: Any) -> int | None:
    """The int (or None) of a Dimension or plain value."""
    if isinstance(dimension, Dimension):
        return dimension.value
    return dimension


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """Dimension `index` of `shape`; an unknown Dimension when the rank is unknown."""
    shape = as_shape(shape)
    if shape.rank is None:
        return Dimension(None)
    return shape[index]


class TensorShape:
    """A possibly partial shape: unknown rank (dims None), or a list of dimensions each of
    which may be unknown. Built from a list/tuple, a TensorShapeProto, None, or an int."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Any) -> None:
        if dims is None:
            self._dims: tuple[int | None, ...] | None = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif isinstance(dims, (list, tuple)):
            self._dims = tuple(as_dimension(d)._value for d in dims)
        elif isinstance(dims, (str, bytes)):
            raise TypeError(f"Cannot convert {dims!r} to a TensorShape")
        elif hasattr(dims, "unknown_rank") and hasattr(dims, "dim"):
            # A TensorShapeProto (size -1 is an unknown dimension).
            if dims.unknown_rank:
                self._dims = None
            else:
                self._dims = tuple(
                    None if d.size == -1 else as_dimension(d.size)._value for d in dims.dim
                )
        else:
            try:
                it = iter(dims)
            except TypeError:
                # A single value is a one-dimensional shape.
                self._dims = (as_dimension(dims)._value,)
            else:
                self._dims = tuple(as_dimension(d)._value for d in it)

    # -- views -------------------------------------------------------------------------------

    @property
    def rank(self) -> int | None:
        """The number of dimensions, or None if unknown."""
        return None if self._dims is None else len(self._dims)

    @property
    def ndims(self) -> int | None:
        """Alias of `rank`."""
        return self.rank

    @property
    def dims(self) -> list[Dimension] | None:
        """The dimensions as Dimension objects, or None if the rank is unknown."""
        if self._dims is None:
            return None
        return [Dimension(d) for d in self._dims]

    def as_list(self) -> list[int | None]:
        """The dimensions as ints/None; ValueError when the rank is unknown."""
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def as_proto(self):
        """This shape as a TensorShapeProto (unknown dims as size -1)."""
        pb = _shape_proto_module()
        if self._dims is None:
            return pb.TensorShapeProto(unknown_rank=True)
        return pb.TensorShapeProto(
            dim=[pb.TensorShapeProto.Dim(size=-1 if d is None else d) for d in self._dims]
        )

    def is_fully_defined(self) -> bool:
        """Whether the rank and every dimension are known."""
        return self._dims is not None and all(d is not None for d in self._dims)

    def assert_is_fully_defined(self) -> None:
        """Raises ValueError unless the shape is fully defined."""
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def num_elements(self) -> int | None:
        """The number of elements, or None unless the shape is fully defined."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:  # type: ignore[union-attr]
            n *= d  # type: ignore[operator]
        return n

    # -- combination -------------------------------------------------------------------------

    def is_compatible_with(self, other: Any) -> bool:
        """Whether both could describe the same tensor: either rank unknown, or the same
        rank with pairwise compatible dimensions."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        pairs = zip(self._dims, other._dims, strict=True)
        return all(a is None or b is None or a == b for a, b in pairs)

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raises ValueError unless `other` is compatible with this shape."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def merge_with(self, other: Any) -> TensorShape:
        """The most specific shape compatible with both (what both say together);
        ValueError when they are not compatible."""
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if len(self._dims) != len(other._dims):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        merged = []
        for a, b in zip(self._dims, other._dims, strict=True):
            if a is None:
                merged.append(b)
            elif b is None or a == b:
                merged.append(a)
            else:
                raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape(merged)

    def most_specific_compatible_shape(self, other: Any) -> TensorShape:
        """The most specific shape that both shapes are compatible with (keeps what they
        agree on; unknown rank if their ranks differ or either is unknown)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return unknown_shape()
        pairs = zip(self._dims, other._dims, strict=True)
        return TensorShape([a if a is not None and a == b else None for a, b in pairs])

    def concatenate(self, other: Any) -> TensorShape:
        """This shape's dimensions followed by `other`'s (unknown if either rank is)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return unknown_shape()
        return TensorShape(self._dims + other._dims)

    def assert_same_rank(self, other: Any) -> None:
        """Raises ValueError if both ranks are known and differ."""
        other = as_shape(other)
        if self.rank is not None and other.rank is not None and self.rank != other.rank:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_has_rank(self, rank: int) -> None:
        """Raises ValueError if the rank is known and is not `rank`."""
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank: int) -> TensorShape:
        """This shape with its rank known to be `rank`; ValueError if it is not."""
        try:
            return self.merge_with(unknown_shape(rank=rank))
        except ValueError:
            raise ValueError(f"Shape {self} must have rank {rank}") from None

    def with_rank_at_least(self, rank: int) -> TensorShape:
        """This shape, checked to have at least `rank` dimensions (if the rank is known)."""
        if self.rank is not None and self.rank < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> TensorShape:
        """This shape, checked to have at most `rank` dimensions (if the rank is known)."""
        if self.rank is not None and self.rank > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    # -- container protocol ------------------------------------------------------------------

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None

    def __iter__(self) -> Iterator[Dimension]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter([Dimension(d) for d in self._dims])

    def __getitem__(self, key: Any) -> Any:
        if self._dims is not None:
            if isinstance(key, slice):
                return TensorShape(self._dims[key])
            return Dimension(self._dims[key])
        if isinstance(key, slice):
            if key.step is not None:
                raise ValueError("Steps are not yet handled")
            start = 0 if key.start is None else key.start
            stop = key.stop
            if stop is None or start < 0 or stop < 0:
                return unknown_shape()
            return unknown_shape(rank=max(stop - start, 0))
        return Dimension(None)

    def __add__(self, other: Any) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other: Any) -> TensorShape:
        return as_shape(other).concatenate(self)

    def __eq__(self, other: object) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({self._dims[0]},)"
        return "(" + ", ".join(str(d) for d in self._dims) + ")"

    def __reduce__(self):
        return TensorShape, (None if self._dims is None else list(self._dims),)


def as_shape(shape: Any) -> TensorShape:
    """`shape` as a TensorShape (a TensorShape is returned unchanged)."""
    if isinstance(shape, TensorShape):
        return shape
    return TensorShape(shape)


def unknown_shape(rank: int | None = None, **kwargs: Any) -> TensorShape:
    """A shape of unknown rank, or of known `rank` with every dimension unknown."""
    if rank is None and "ndims" in kwargs:
        rank = kwargs.pop("ndims")
    if kwargs:
        raise TypeError(f"Unknown argument: {kwargs}")
    if rank is None:
        return TensorShape(None)
    return TensorShape([None] * rank)


def scalar() -> TensorShape:
    """The shape of a scalar: rank 0."""
    return TensorShape([])


def vector(length: Any) -> TensorShape:
    """The shape of a vector of `length` elements."""
    return TensorShape([length])


def matrix(rows: Any, cols: Any) -> TensorShape:
    """The shape of a `rows` x `cols` matrix."""
    return TensorShape([rows, cols])
