"""tf.compat.v1.layers' Layer: a callable that makes its weights once, with get_variable in
its variable scope (named after the layer: "dense", "dense_1", ... unless given), and runs
its ops in that scope's name scope, as TF 1's layers do, so that variable names (and TF's
checkpoints) match: dense/kernel, batch_normalization/moving_mean, ... Updates a layer
makes (batch norm's moving averages) go to the UPDATE_OPS collection; weight
regularization losses to REGULARIZATION_LOSSES."""

from __future__ import annotations

import re
import weakref

from aioflow.framework import dtypes, ops
from aioflow.ops import variable_scope, variables
from aioflow.ops.partitioned_variables import PartitionedVariable

UPDATE_OPS = "update_ops"
REGULARIZATION_LOSSES = "regularization_losses"

_name_counts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _snake_case(name: str) -> str:
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if insecure[0] != "_" else "private" + insecure


def _unique_name(base: str) -> str:
    """base, base_1, base_2, ... per graph (Keras' unique_object_name)."""
    counts = _name_counts.setdefault(ops.get_default_graph(), {})
    n = counts.get(base, 0)
    counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


class Layer:
    """The base of tf.layers' classes (TF 1's legacy layers)."""

    def __init__(self, trainable: bool = True, name=None, dtype=None, _reuse=None,
                 **kwargs):
        self.trainable = trainable
        self._reuse = _reuse
        self.dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self.built = False
        self._scope = None
        self._updates: list = []
        self._losses: list = []
        self._trainable_weights: list = []
        self._non_trainable_weights: list = []
        if isinstance(name, variable_scope.VariableScope):
            self._base_name = name.name
            self._name = _unique_name(_snake_case(type(self).__name__))
        elif name:
            self._name = self._base_name = name
        else:
            self._base_name = _snake_case(type(self).__name__)
            self._name = _unique_name(self._base_name)

    # -- what TF's Layer offers -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def scope_name(self) -> str:
        if not self._scope:
            raise ValueError(f'No name available for layer scope because the layer '
                             f'"{self._name}" has not been used yet. The scope name  is '
                             f'determined the first time the layer instance is called. You '
                             f'must therefore call the layer before querying `scope_name`.')
        return self._scope.name

    @property
    def trainable_weights(self) -> list:
        return list(self._trainable_weights) if self.trainable else []

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> list:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    non_trainable_variables = non_trainable_weights

    @property
    def weights(self) -> list:
        return self.trainable_weights + self.non_trainable_weights

    variables = weights

    @property
    def updates(self) -> list:
        return list(self._updates)

    @property
    def losses(self) -> list:
        return list(self._losses)

    def add_update(self, update) -> None:
        """An op to run with the train op (a tensor's op), later put in UPDATE_OPS."""
        self._updates.append(update.op if isinstance(update, ops.Tensor) else update)

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        return inputs

    # -- weights ----------------------------------------------------------------------------
    def _set_scope(self, scope=None) -> None:
        if self._scope is None:
            if self._reuse:
                with variable_scope.variable_scope(
                        scope if scope is not None else self._base_name) as captured:
                    self._scope = captured
            else:
                with variable_scope.variable_scope(scope, default_name=self._base_name) \
                        as captured:
                    self._scope = captured

    def add_weight(self, name: str, shape, dtype=None, initializer=None, regularizer=None,
                   trainable=None, constraint=None, use_resource=None, partitioner=None,
                   **kwargs):
        """A weight of the layer: get_variable(name) in the layer's scope (with a
        partitioner, a PartitionedVariable whose parts are the layer's weights)."""
        if trainable is None:
            trainable = True
        dtype = dtypes.as_dtype(dtype or self.dtype or dtypes.float32)
        existing = set(variables.global_variables())
        var = variable_scope.get_variable(
            name, shape=shape, dtype=dtype, initializer=initializer,
            trainable=trainable and self.trainable, constraint=constraint,
            use_resource=use_resource, partitioner=partitioner)
        if regularizer is not None and var not in existing:
            with ops.name_scope(name + "/Regularizer"):
                loss = regularizer(var)
            if loss is not None:
                self._losses.append(loss)
                ops.add_to_collection(REGULARIZATION_LOSSES, loss)
        weights = (self._trainable_weights if trainable and self.trainable
                   else self._non_trainable_weights)
        weights.extend(var if isinstance(var, PartitionedVariable) else [var])
        return var

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)
        self._set_scope(scope)
        reuse = True if self.built else self._reuse
        with variable_scope.variable_scope(self._scope, reuse=reuse,
                                           auxiliary_name_scope=False):
            with ops.name_scope(self._scope.original_name_scope):
                inputs = _convert(inputs)
                if not self.built:
                    if self.dtype is None:
                        self.dtype = _base_dtype(inputs)
                    self.build(_shape(inputs))
                    self.built = True
                before = len(self._updates)
                outputs = self.call(inputs, *args, **kwargs)
        for update in self._updates[before:]:
            ops.add_to_collection(UPDATE_OPS, update)
        return outputs

    def apply(self, inputs, *args, **kwargs):
        return self(inputs, *args, **kwargs)


def _convert(inputs):
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(_convert(x) for x in inputs)
    if isinstance(inputs, ops.Tensor):
        return inputs
    return ops.convert_to_tensor(inputs)


def _base_dtype(inputs):
    first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
    dtype = first.dtype.base_dtype
    return dtype if dtype.is_floating else dtypes.float32


def _shape(inputs):
    if isinstance(inputs, (list, tuple)):
        return [x.shape for x in inputs]
    return inputs.shape
