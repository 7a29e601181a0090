"""Partitioned variables as TF 1.x makes them (partitioned_variables.py, variables.py):
the partitioners get_variable(partitioner=...) calls (fixed_size_partitioner,
variable_axis_size_partitioner, min_max_variable_partitioner), and PartitionedVariable,
the list of `name/part_<i>` variables (each with a SaveSliceInfo naming its slice of the
full variable, so that Saver writes and reads TF's sliced checkpoint entries) that reads
as one tensor: the parts concatenated under `<name>/ConcatPartitions/`."""

from __future__ import annotations

import math

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.ops import array_ops


def variable_axis_size_partitioner(max_shard_bytes, axis: int = 0,
                                   bytes_per_string_element: int = 16, max_shards=None):
    """Shards along `axis`, each at most `max_shard_bytes` (at most `max_shards`)."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError(
            "Both max_shard_bytes and bytes_per_string_element must be positive. "
            f"Currently, max_shard_bytes is {max_shard_bytes} and"
            f"bytes_per_string_element is {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, tensor_shape.TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        dtype = dtypes.as_dtype(dtype)
        element_size = (bytes_per_string_element if dtype.base_dtype == dtypes.string
                        else dtype.size)
        dims = shape.as_list()
        partitions = [1] * len(dims)
        bytes_per_slice = 1.0 * (shape.num_elements() / dims[axis]) * element_size
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * dims[axis] / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions[axis] = axis_shards
        return partitions

    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16):
    """As many shards along `axis` as keep each at least `min_slice_size` bytes, at most
    `max_partitions` (and at most the axis' length)."""
    def _partitioner(shape, dtype):
        shape = tensor_shape.as_shape(shape)
        if axis >= len(shape):
            raise ValueError(f"Cannot partition variable along axis {axis} when shape is "
                             f"only {shape}")
        dtype = dtypes.as_dtype(dtype)
        bytes_per_element = (bytes_per_string_element if dtype.base_dtype == dtypes.string
                             else dtype.size)
        partitions = shape.num_elements() * bytes_per_element / min_slice_size
        partitions_list = [1] * len(shape)
        partitions_list[axis] = max(1, min(shape.as_list()[axis], max_partitions,
                                           int(math.ceil(partitions))))
        return partitions_list

    return _partitioner


def fixed_size_partitioner(num_shards: int, axis: int = 0):
    """`num_shards` shards along `axis` (fewer when the axis is shorter)."""
    def _partitioner(shape, **unused_args):
        shape = tensor_shape.as_shape(shape)
        partitions_list = [1] * len(shape)
        partitions_list[axis] = min(num_shards, shape.as_list()[axis])
        return partitions_list

    return _partitioner


class PartitionedVariable:
    """The parts of a variable split along one axis, in offset order. Iterating gives the
    part variables; as a tensor it is their concatenation (built anew each time, outside
    any control dependencies, as TF's as_tensor)."""

    def __init__(self, name: str, shape, dtype, variable_list, partitions):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        for v in variable_list:
            if v._save_slice_info is None:
                raise ValueError(f"All variables must have a save_slice_info available: "
                                 f"{[v.name for v in variable_list]}")
            if len(shape) != len(partitions):
                raise ValueError(f"len(shape) != len(partitions): {len(shape)} vs. "
                                 f"{len(partitions)}")
            if v._get_save_slice_info().full_shape != list(shape):
                raise ValueError(f"All variables' full shapes must match shape: {shape}; "
                                 f"but full shapes were: "
                                 f"{[v._get_save_slice_info().full_shape for v in variable_list]}")
        self._variable_list = sorted(variable_list,
                                     key=lambda v: v._get_save_slice_info().var_offset)
        self._name = name
        self._shape = tensor_shape.as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    def __iter__(self):
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length of {len(axes)} tensors because it is "
                             f"partitioned along {len(axes)} axes")
        return len(self._variable_list)

    def _partition_axes(self) -> list[int]:
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def _concat(self) -> ops.Tensor:
        if len(self._variable_list) == 1:
            with ops.name_scope(None):
                return array_ops.identity(self._variable_list[0], name=self._name)
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(f"Cannot concatenate along more than one dimension: "
                                      f"{axes}.  Multi-axis partition concat is not "
                                      f"supported")
        with ops.name_scope(self._name + "/ConcatPartitions/"):
            concatenated = array_ops.concat(self._variable_list, axes[0])
        with ops.name_scope(None):
            return array_ops.identity(concatenated, name=self._name)

    def as_tensor(self) -> ops.Tensor:
        """The parts concatenated (TF's as_tensor: outside control dependencies)."""
        with ops.control_dependencies(None):
            return self._concat()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def get_shape(self) -> tensor_shape.TensorShape:
        return self._shape

    def _get_variable_list(self) -> list:
        return self._variable_list

    def _get_partitions(self) -> list[int]:
        return self._partitions

    def _apply_assign_fn(self, assign_fn, value):
        axes = self._partition_axes()
        if len(axes) > 1:
            raise NotImplementedError(f"Cannot do assign action along more than one "
                                      f"dimension: {axes}.  Multi-axis partition assign "
                                      f"action is not supported ")
        if isinstance(value, list):
            if len(value) != len(self._variable_list):
                raise ValueError(f"Length of the value list ({len(value)}) is not equal to "
                                 f"the number of partitions ({len(self._variable_list)}).")
            parts = value
        else:
            sizes = [v.get_shape().as_list()[axes[0]] for v in self._variable_list]
            parts = array_ops.split(value, sizes, axis=axes[0])
        return [assign_fn(var, parts[i]) for i, var in enumerate(self._variable_list)]

    def assign(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(
            lambda var, v: var.assign(v, use_locking=use_locking, name=name,
                                      read_value=read_value), value)

    def assign_add(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(
            lambda var, v: var.assign_add(v, use_locking=use_locking, name=name,
                                          read_value=read_value), value)

    def assign_sub(self, value, use_locking=False, name=None, read_value=True):
        return self._apply_assign_fn(
            lambda var, v: var.assign_sub(v, use_locking=use_locking, name=name,
                                          read_value=read_value), value)

    def __repr__(self) -> str:
        return (f"<af.PartitionedVariable '{self._name}' shape={self._shape} "
                f"partitions={self._partitions}>")


def _to_tensor(value, dtype=None, name=None):
    if dtype is not None and not dtypes.as_dtype(dtype).is_compatible_with(value.dtype):
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{dtypes.as_dtype(dtype).name}' for variable of type "
                         f"'{value.dtype.name}'")
    return value.as_tensor()


ops.register_tensor_conversion_function(PartitionedVariable, _to_tensor)
