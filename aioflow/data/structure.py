"""Element structures as tf.data sees them (tensorflow/python/data/util/nest.py,
structure.py): tuples, namedtuples and dicts (by sorted key) are structure; a list is a
leaf (it becomes one tensor), unlike tf.nest. A dataset's element_spec is such a
structure of TensorSpecs; its flat lists of types and shapes are the ops' attrs."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.tensor_spec import TensorSpec


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def is_nested(x) -> bool:
    return isinstance(x, (tuple, dict))


def flatten(x) -> list:
    """The leaves of `x` in order (dict values by sorted key)."""
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in flatten(x[k])]
    if isinstance(x, tuple):
        return [leaf for item in x for leaf in flatten(item)]
    return [x]


def pack_sequence_as(structure, flat: list):
    """`flat` in the shape of `structure`."""
    flat = list(flat)
    pos = [0]

    def build(s):
        if isinstance(s, dict):
            built = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, built[k]) for k in s)
        if isinstance(s, tuple):
            items = [build(item) for item in s]
            return type(s)(*items) if _is_namedtuple(s) else type(s)(items)
        value = flat[pos[0]]
        pos[0] += 1
        return value

    out = build(structure)
    if pos[0] != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {pos[0]} elements, but "
                         f"flat_sequence had {len(flat)} elements.")
    return out


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(x) for x in flatten(structure)])


def assert_same_structure(a, b) -> None:
    def shape(x):
        if isinstance(x, dict):
            return ("dict", tuple((k, shape(x[k])) for k in sorted(x)))
        if isinstance(x, tuple):
            return ("tuple", tuple(shape(i) for i in x))
        return "leaf"
    if shape(a) != shape(b):
        raise TypeError(f"The two structures don't have the same nested structure.\n\n"
                        f"First structure: {a}\n\nSecond structure: {b}")


class DatasetSpec:
    """The spec of an element that is itself a dataset (a window's component): a scalar
    variant whose dataset has `element_spec` (tf.data.DatasetSpec)."""

    dtype = dtypes.variant

    def __init__(self, element_spec, dataset_shape=()):
        self.element_spec = element_spec
        self.shape = tensor_shape.TensorShape(dataset_shape)

    def __repr__(self) -> str:
        return f"DatasetSpec({self.element_spec!r}, {self.shape!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, DatasetSpec) and other.element_spec == self.element_spec

    __hash__ = None


def spec_of(tensor: ops.Tensor) -> TensorSpec:
    return TensorSpec(tensor.shape, tensor.dtype)


def flat_types(spec) -> list:
    return [s.dtype for s in flatten(spec)]


def flat_shapes(spec) -> list:
    return [s.shape for s in flatten(spec)]


def most_specific_compatible_shape(a, b) -> tensor_shape.TensorShape:
    """The shape both `a` and `b` have (unknown where they differ)."""
    a, b = tensor_shape.as_shape(a), tensor_shape.as_shape(b)
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return tensor_shape.TensorShape(None)
    return tensor_shape.TensorShape(
        [x if x == y else None for x, y in zip(a.as_list(), b.as_list(), strict=True)])
