"""af.get_variable and af.variable_scope (TF 1.x's variable_scope.py): variables named by
their variable scope, shared when the scope reuses them; and the initializers zeros,
ones, constant and the random ones come from init_ops.py."""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
import weakref

import numpy as np

from aioflow.framework import dtypes, tensor_shape
from aioflow.framework import ops as ops_mod
from aioflow.ops import array_ops
from aioflow.ops.init_ops import (  # noqa: F401  (TF's variable_scope has these names)
    Initializer,
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    orthogonal_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from aioflow.ops.partitioned_variables import PartitionedVariable
from aioflow.ops.variables import GraphKeys, ResourceVariable, SaveSliceInfo, Variable


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


# -- the variable store and scopes ---------------------------------------------------------
class VariableScope:
    """What a variable scope says: its name, reuse, and defaults for get_variable."""

    def __init__(self, reuse, name: str = "", initializer=None, dtype=dtypes.float32,
                 use_resource=None, constraint=None, name_scope: str = "",
                 caching_device=None, partitioner=None, custom_getter=None):
        self.name = name
        self.caching_device = caching_device
        self.partitioner = partitioner
        self.custom_getter = custom_getter
        self.reuse = reuse
        self.initializer = initializer
        self.dtype = dtypes.as_dtype(dtype)
        self.use_resource = use_resource
        self.constraint = constraint
        self.original_name_scope = name_scope

    def reuse_variables(self) -> None:
        self.reuse = True

    def set_caching_device(self, caching_device) -> None:
        self.caching_device = caching_device

    def set_partitioner(self, partitioner) -> None:
        self.partitioner = partitioner

    def set_custom_getter(self, custom_getter) -> None:
        self.custom_getter = custom_getter

    def get_variable(self, name, shape=None, dtype=None, initializer=None, **kwargs):
        return get_variable(name, shape, dtype, initializer, **kwargs)


class _Store:
    """Per graph: the variables get_variable made, by full name, and the scope stack."""

    def __init__(self):
        self.vars: dict[str, Variable] = {}
        self.partitioned: dict[str, PartitionedVariable] = {}
        self.scopes: list[VariableScope] = [VariableScope(False)]
        self.counts: dict[str, int] = {}


_stores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _store(graph=None) -> _Store:
    graph = graph or ops_mod.get_default_graph()
    store = _stores.get(graph)
    if store is None:
        store = _stores[graph] = _Store()
    return store


def get_variable_scope() -> VariableScope:
    return _store().scopes[-1]


@contextlib.contextmanager
def variable_scope(name_or_scope=None, default_name=None, values=None, initializer=None,
                   regularizer=None, caching_device=None, partitioner=None,
                   custom_getter=None, reuse=None, dtype=None, use_resource=None,
                   constraint=None, auxiliary_name_scope=True):
    """A variable scope (and a name scope of the same name), as TF 1.x's."""
    if custom_getter is not None and not callable(custom_getter):
        raise ValueError(f"Cannot set custom_getter to a non-callable value: {custom_getter}")
    store = _store()
    parent = store.scopes[-1]
    if isinstance(name_or_scope, VariableScope):
        full_name = name_or_scope.name
        base = name_or_scope
        scope_name = full_name.rsplit("/", 1)[-1]
    else:
        if name_or_scope is None:
            if default_name is None:
                raise TypeError("If default_name is None then name_or_scope is required")
            prefix = f"{parent.name}/{default_name}" if parent.name else default_name
            count = store.counts.get(prefix, 0)
            store.counts[prefix] = count + 1
            scope_name = default_name if count == 0 else f"{default_name}_{count}"
        else:
            scope_name = name_or_scope
        full_name = f"{parent.name}/{scope_name}" if parent.name else scope_name
        base = parent
    # As TF 1.x: reuse is inherited (False means None); AUTO_REUSE counts as set.
    new_reuse = reuse or (isinstance(name_or_scope, VariableScope) and name_or_scope.reuse) \
        or parent.reuse
    scope = VariableScope(new_reuse, full_name,
                          initializer if initializer is not None else base.initializer,
                          dtype if dtype is not None else base.dtype,
                          use_resource if use_resource is not None else base.use_resource,
                          constraint if constraint is not None else base.constraint,
                          caching_device=(caching_device if caching_device is not None
                                          else base.caching_device),
                          partitioner=partitioner if partitioner is not None
                          else base.partitioner,
                          custom_getter=_maybe_wrap_custom_getter(custom_getter,
                                                                  base.custom_getter))
    name_ctx = (ops_mod.name_scope(scope_name, values=values) if auxiliary_name_scope
                else contextlib.nullcontext(""))
    with name_ctx as ns:
        scope.original_name_scope = ns or ""
        store.scopes.append(scope)
        try:
            yield scope
        finally:
            store.scopes.pop()


def _maybe_wrap_custom_getter(custom_getter, old_getter):
    """A scope's getter within another's: the new one calls the old one, which calls the
    true getter (TF's _maybe_wrap_custom_getter)."""
    if custom_getter is None:
        return old_getter
    if old_getter is None:
        return custom_getter

    def wrapped_custom_getter(getter, *args, **kwargs):
        return custom_getter(functools.partial(old_getter, getter), *args, **kwargs)

    return wrapped_custom_getter


def _default_initializer(name: str, dtype: dtypes.DType):
    if dtype.is_floating:
        return glorot_uniform_initializer()
    if dtype.is_integer or dtype.is_unsigned or dtype.is_bool or dtype == dtypes.string:
        return zeros_initializer()
    raise ValueError(f"An initializer for variable {name} of {dtype.name} is required")


def get_variable(name, shape=None, dtype=None, initializer=None, regularizer=None,
                 trainable=None, collections=None, caching_device=None, partitioner=None,
                 validate_shape=True, use_resource=None, custom_getter=None,
                 constraint=None, synchronization=None, aggregation=None):
    """The variable `name` of the current variable scope: made, or (when the scope
    reuses) the existing one, with TF's checks and messages. With a partitioner (given
    or the scope's), a PartitionedVariable of `name/part_<i>` variables. A custom getter
    (given, or the scopes') is called with the true getter and the arguments."""
    store = _store()
    scope = store.scopes[-1]
    full_name = f"{scope.name}/{name}" if scope.name else name
    if initializer is None:
        initializer = scope.initializer
    if caching_device is None:
        caching_device = scope.caching_device
    if partitioner is None:
        partitioner = scope.partitioner
    if custom_getter is None:
        custom_getter = scope.custom_getter
    if use_resource is None:
        use_resource = scope.use_resource
    if dtype is None:
        dtype = scope.dtype

    def true_getter(name, shape=None, dtype=dtypes.float32, initializer=None,
                    regularizer=None, reuse=None, trainable=None, collections=None,
                    caching_device=None, partitioner=None, validate_shape=True,
                    use_resource=None, constraint=None, synchronization=None,
                    aggregation=None):
        dtype = dtypes.as_dtype(dtype)
        common = {"trainable": trainable, "collections": collections,
                  "caching_device": caching_device, "validate_shape": validate_shape,
                  "use_resource": bool(use_resource), "constraint": constraint}
        if partitioner is not None:
            return _partitioned_variable(store, name, shape, dtype, initializer,
                                         partitioner, reuse, common)
        return _single_variable(store, name, shape, dtype, initializer, None, reuse, common)

    kwargs = {"name": full_name, "shape": shape, "dtype": dtype, "initializer": initializer,
              "regularizer": regularizer, "reuse": scope.reuse, "trainable": trainable,
              "collections": collections, "caching_device": caching_device,
              "partitioner": partitioner, "validate_shape": validate_shape,
              "use_resource": use_resource, "synchronization": synchronization,
              "aggregation": aggregation}
    with ops_mod.name_scope(None):  # get_variable's names ignore the name scope
        if custom_getter is None:
            return true_getter(constraint=constraint, **kwargs)
        if _accepts(custom_getter, "constraint"):
            kwargs["constraint"] = constraint
        return custom_getter(getter=true_getter, **kwargs)


def _accepts(fn, arg: str) -> bool:
    """Whether `fn` takes `arg` by name or any keyword arguments (TF's fn_args check)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == arg or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _single_variable(store, full_name, shape, dtype, initializer, partition_info, reuse,
                     common):
    shape = None if shape is None else tensor_shape.as_shape(shape)
    found = store.vars.get(full_name)
    if found is not None:
        if reuse is False:
            raise ValueError(f"Variable {full_name} already exists, disallowed. Did you mean "
                             f"to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        if shape is not None and not shape.is_compatible_with(found.get_shape()):
            raise ValueError(f"Trying to share variable {full_name}, but specified shape "
                             f"{shape} and found shape {found.get_shape()}.")
        if dtype != found.dtype.base_dtype:
            raise ValueError(f"Trying to share variable {full_name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.base_dtype.name}.")
        return found
    if reuse is True:
        raise ValueError(f"Variable {full_name} does not exist, or was not created with "
                         f"tf.get_variable(). Did you mean to set reuse=tf.AUTO_REUSE in "
                         f"VarScope?")
    if initializer is None:
        initializer = _default_initializer(full_name, dtype)
    if isinstance(initializer, type) and issubclass(initializer, Initializer):
        initializer = initializer(dtype=dtype)
    if isinstance(initializer, (ops_mod.Tensor, np.ndarray, list, int, float)):
        if shape is not None and isinstance(initializer, ops_mod.Tensor):
            raise ValueError("If initializer is a constant, do not specify shape.")
        init_value = initializer
        var_dtype = None if isinstance(initializer, ops_mod.Tensor) else dtype
    else:
        if shape is None or not shape.is_fully_defined():
            raise ValueError(f"Shape of a new variable ({full_name}) must be fully defined, "
                             f"but instead was {shape}.")
        dims = shape.as_list()

        def init_value():
            return initializer(dims, dtype=dtype, partition_info=partition_info)
        var_dtype = dtype
    cls = ResourceVariable if common["use_resource"] else Variable
    var = cls(initial_value=init_value, name=full_name, trainable=common["trainable"],
              collections=common["collections"], validate_shape=common["validate_shape"],
              dtype=var_dtype, constraint=common["constraint"],
              caching_device=common["caching_device"])
    store.vars[full_name] = var
    return var


class _PartitionInfo:
    """What an initializer of one part is told: the full shape and the part's offset."""

    def __init__(self, full_shape, var_offset):
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape) -> int:
        dim = self.single_slice_dim(shape)
        return 0 if dim is None else self.var_offset[dim]

    def single_slice_dim(self, shape):
        if len(shape) != len(self.full_shape):
            raise ValueError(f"Expected equal length, but received shape={shape} of length "
                             f"{len(shape)} while self.full_shape={self.full_shape} is of "
                             f"length {len(self.full_shape)}.")
        slice_dim = None
        for i, (dim, full) in enumerate(zip(shape, self.full_shape, strict=True)):
            if self.var_offset[i] + dim > full:
                raise ValueError(f"With self.var_offset={self.var_offset}, a partition of "
                                 f"shape={shape} would exceed self.full_shape="
                                 f"{self.full_shape} in dimension {i}.")
            if dim != full:
                if slice_dim is not None:
                    raise ValueError(f"Cannot use single_slice_dim() with shape={shape} "
                                     f"and self.full_shape={self.full_shape} since slice "
                                     f"dim could be either dimension {i} or {slice_dim}.")
                slice_dim = i
        return slice_dim


def _call_partitioner(partitioner, shape, dtype) -> list[int]:
    if not shape.is_fully_defined():
        raise ValueError(f"Shape of a new partitioned variable must be fully defined, but "
                         f"instead was {shape}.")
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, (list, tuple)):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError(f"Partitioner returned a partition list that does not match the "
                         f"Variable's rank: {slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(f"Can only slice a variable along one dimension: shape: {shape}, "
                         f"partitioning: {slicing}")
    return list(slicing)


def _slice_dim_and_num_slices(slicing) -> tuple[int, int]:
    for slice_dim, num_slices in enumerate(slicing):
        if num_slices > 1:
            return slice_dim, num_slices
    return 0, 1


def _iter_slices(full_shape, num_slices: int, slice_dim: int):
    """(offset, shape) of each part: the first `full % num` parts one longer."""
    excess = full_shape[slice_dim] % num_slices
    offset = [0] * len(full_shape)
    min_len = full_shape[slice_dim] // num_slices
    for i in range(num_slices):
        shape = list(full_shape)
        shape[slice_dim] = min_len + bool(i < excess)
        yield list(offset), shape
        offset[slice_dim] += shape[slice_dim]


def _partitioned_variable(store, name, shape, dtype, initializer, partitioner, reuse,
                          common):
    """TF's _VariableStore._get_partitioned_variable."""
    from_value = initializer is not None and isinstance(initializer, ops_mod.Tensor)
    if name in store.vars:
        raise ValueError(f"A partitioner was provided, but an unpartitioned version of the "
                         f"variable was found: {name}.  Perhaps a variable of the same name "
                         f"was already created without partitioning?")
    shape = tensor_shape.as_shape(shape)
    if from_value:
        shape = shape.merge_with(initializer.get_shape())
    partitions = _call_partitioner(partitioner, shape, dtype)
    existing = store.partitioned.get(name)
    if existing is not None:
        if reuse is False:
            raise ValueError(f"Partitioned variable with name {name} already exists. Did you "
                             f"mean to set reuse=True or reuse=tf.AUTO_REUSE in VarScope?")
        if not shape.is_compatible_with(existing.get_shape()):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"shape {shape} and found shape {existing.get_shape()}.")
        if not dtype.is_compatible_with(existing.dtype):
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"dtype {dtype.name} and found dtype {existing.dtype.name}.")
        if existing._get_partitions() != partitions:
            raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                             f"partitions {partitions} and found partitions "
                             f"{existing._get_partitions()}.")
        return existing
    if reuse is True:
        raise ValueError(f"PartitionedVariable {name} does not exist, or was not created "
                         f"with tf.get_variable(). Did you mean to set reuse=False or "
                         f"reuse=tf.AUTO_REUSE in VarScope?")
    slice_dim, num_slices = _slice_dim_and_num_slices(partitions)
    parts = []
    for i, (var_offset, var_shape) in enumerate(
            _iter_slices(shape.as_list(), num_slices, slice_dim)):
        info = _PartitionInfo(full_shape=shape.as_list(), var_offset=var_offset)
        part_name = f"{name}/part_{i}"
        with ops_mod.name_scope(part_name + "/PartitionedInitializer"):
            if initializer is None:
                init, init_shape = _default_initializer(name, dtype), var_shape
            elif isinstance(initializer, ops_mod.Tensor):
                init = array_ops.slice(initializer, var_offset, var_shape)
                dtype = init.dtype.base_dtype
                init_shape = None
            elif callable(initializer):
                init, init_shape = initializer, var_shape
            else:
                init = ops_mod.convert_to_tensor(initializer, dtype=dtype)
                init = array_ops.slice(init, var_offset, var_shape)
                init_shape = None
        with ops_mod.name_scope(None):
            var = _single_variable(store, part_name, init_shape, dtype, init, info, reuse,
                                   common)
        var._set_save_slice_info(SaveSliceInfo(name, shape.as_list(), var_offset, var_shape))
        parts.append(var)
    partitioned = PartitionedVariable(name=name, shape=shape, dtype=dtype,
                                      variable_list=parts, partitions=partitions)
    store.partitioned[name] = partitioned
    return partitioned


def get_local_variable(name, shape=None, dtype=None, initializer=None, **kwargs):
    """get_variable into LOCAL_VARIABLES, not trainable."""
    kwargs["collections"] = list(kwargs.get("collections") or []) + [
        GraphKeys.LOCAL_VARIABLES]
    kwargs["trainable"] = False
    return get_variable(name, shape, dtype, initializer, **kwargs)
