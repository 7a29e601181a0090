"""tf.data's Optional (tensorflow/python/data/ops/optional_ops.py) and
tf.data.experimental.get_next_as_optional: the next element of an iterator or nothing,
as a variant; `has_value()` and `get_value()` read it (OptionalHasValue,
OptionalGetValue), colocated with the iterator as TF's."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.framework.op_def_library import apply_op

from . import structure


class Optional:
    """A value that may be absent: the variant tensor and the element structure."""

    def __init__(self, variant_tensor, element_spec):
        self._variant_tensor = variant_tensor
        self._element_spec = element_spec

    @property
    def element_spec(self):
        return self._element_spec

    def has_value(self, name=None):
        with ops.colocate_with(self._variant_tensor.op):
            return apply_op("OptionalHasValue", optional=self._variant_tensor, name=name)

    def get_value(self, name=None):
        """The value (InvalidArgumentError when there is none)."""
        with ops.colocate_with(self._variant_tensor.op):
            flat = apply_op("OptionalGetValue", optional=self._variant_tensor,
                            output_types=structure.flat_types(self._element_spec),
                            output_shapes=structure.flat_shapes(self._element_spec),
                            name=name)
        return structure.pack_sequence_as(self._element_spec, list(flat))


def get_next_as_optional(iterator) -> Optional:
    """The iterator's next element as an Optional (empty at the end: no error)."""
    with ops.colocate_with(iterator._iterator_resource.op):
        variant = apply_op("IteratorGetNextAsOptional",
                           iterator=iterator._iterator_resource,
                           output_types=structure.flat_types(iterator.element_spec),
                           output_shapes=structure.flat_shapes(iterator.element_spec))
    return Optional(variant, iterator.element_spec)
