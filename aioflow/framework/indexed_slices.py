"""IndexedSlices: a sparse slice of a dense tensor's rows (values, indices, dense_shape).

Gradients of Gather, ResourceGather and embedding lookups are IndexedSlices, as in TF:
only the gathered rows carry gradient. Where an op needs a dense tensor, the slices are
converted with UnsortedSegmentSum (the conversion function is registered by
aioflow.gradients, which may build ops; the framework itself builds none).
"""

from __future__ import annotations

from aioflow.framework import constant_value, dtypes, ops, tensor_shape


class IndexedSlices:
    """values[i] is the slice of a dense tensor of shape `dense_shape` at row indices[i]."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    @property
    def values(self):
        return self._values

    @property
    def indices(self):
        return self._indices

    @property
    def dense_shape(self):
        return self._dense_shape

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def op(self) -> ops.Operation:
        return self._values.op

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def graph(self) -> ops.Graph:
        return self._values.graph

    @property
    def shape(self):
        """The dense shape, as far as it is known statically."""
        if self._dense_shape is None:
            return tensor_shape.unknown_shape()
        return constant_value.constant_value_as_shape(self._dense_shape)

    def get_shape(self):
        return self.shape

    def __repr__(self) -> str:
        shape = f", dense_shape={self._dense_shape}" if self._dense_shape is not None else ""
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"


def convert_to_tensor_or_indexed_slices(value, dtype=None, name=None):
    """IndexedSlices pass through; anything else becomes a Tensor."""
    if isinstance(value, IndexedSlices):
        if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name}"
                             f" for Tensor with dtype {value.dtype.name}: {value!r}")
        return value
    return ops.convert_to_tensor(value, dtype=dtype, name=name)


def convert_n_to_tensor_or_indexed_slices(values, dtype=None, name=None) -> list:
    """As convert_to_tensor_or_indexed_slices for each value (None stays None); the i-th
    conversion is named `name_i`."""
    out = []
    for i, value in enumerate(values):
        if value is None:
            out.append(value)
        else:
            n = None if name is None else f"{name}_{i}"
            out.append(convert_to_tensor_or_indexed_slices(value, dtype=dtype, name=n))
    return out
