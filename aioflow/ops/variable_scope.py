"""af.get_variable and af.variable_scope (TF 1.x's variable_scope.py): variables named by
their variable scope, shared when the scope reuses them; and the initializers zeros,
ones, constant and the random ones come from init_ops.py."""

from __future__ import annotations

import contextlib
import enum
import weakref

import numpy as np

from aioflow.framework import dtypes, tensor_shape
from aioflow.framework import ops as ops_mod
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
from aioflow.ops.variables import GraphKeys, ResourceVariable, Variable


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE


# -- the variable store and scopes ---------------------------------------------------------
class VariableScope:
    """What a variable scope says: its name, reuse, and defaults for get_variable."""

    def __init__(self, reuse, name: str = "", initializer=None, dtype=dtypes.float32,
                 use_resource=None, constraint=None, name_scope: str = "",
                 caching_device=None, partitioner=None):
        self.name = name
        self.caching_device = caching_device
        self.partitioner = partitioner
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

    def get_variable(self, name, shape=None, dtype=None, initializer=None, **kwargs):
        return get_variable(name, shape, dtype, initializer, **kwargs)


class _Store:
    """Per graph: the variables get_variable made, by full name, and the scope stack."""

    def __init__(self):
        self.vars: dict[str, Variable] = {}
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
    if custom_getter is not None:
        raise NotImplementedError("variable_scope custom_getter is not supported by aioflow")
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
                          else base.partitioner)
    name_ctx = (ops_mod.name_scope(scope_name, values=values) if auxiliary_name_scope
                else contextlib.nullcontext(""))
    with name_ctx as ns:
        scope.original_name_scope = ns or ""
        store.scopes.append(scope)
        try:
            yield scope
        finally:
            store.scopes.pop()


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
    reuses) the existing one, with TF's checks and messages."""
    if partitioner is not None or custom_getter is not None:
        raise NotImplementedError("get_variable partitioner / custom_getter are not "
                                  "supported by aioflow")
    store = _store()
    scope = store.scopes[-1]
    full_name = f"{scope.name}/{name}" if scope.name else name
    reuse = scope.reuse
    dtype = dtypes.as_dtype(dtype) if dtype is not None else scope.dtype
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
        initializer = scope.initializer
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
            return initializer(dims, dtype=dtype, partition_info=None)
        var_dtype = dtype
    if use_resource is None:
        use_resource = bool(scope.use_resource)
    cls = ResourceVariable if use_resource else Variable
    if caching_device is None:
        caching_device = scope.caching_device
    with ops_mod.name_scope(None):
        var = cls(initial_value=init_value, name=full_name, trainable=trainable,
                  collections=collections, validate_shape=validate_shape, dtype=var_dtype,
                  constraint=constraint, caching_device=caching_device)
    store.vars[full_name] = var
    return var


def get_local_variable(name, shape=None, dtype=None, initializer=None, **kwargs):
    """get_variable into LOCAL_VARIABLES, not trainable."""
    kwargs["collections"] = list(kwargs.get("collections") or []) + [
        GraphKeys.LOCAL_VARIABLES]
    kwargs["trainable"] = False
    return get_variable(name, shape, dtype, initializer, **kwargs)
