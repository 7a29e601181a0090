"""tf.compat.v1.train.ProximalAdagradOptimizer: an Adagrad step ("accumulator" slot), then
the proximal step of L1 and L2 regularization (FOBOS with Adagrad's learning rate)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import constant_op
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class ProximalAdagradOptimizer(Optimizer):
    """Proximal Adagrad, as TF 1's."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            with ops.colocate_with(v.op):
                val = constant_op.constant(self._initial_accumulator_value,
                                           shape=v.get_shape(), dtype=v.dtype.base_dtype)
            self._get_or_make_slot(v, val, "accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = ops.convert_to_tensor(self._learning_rate,
                                                           name="learning_rate")
        self._l1_regularization_strength_tensor = ops.convert_to_tensor(
            self._l1_regularization_strength, name="l1_regularization_strength")
        self._l2_regularization_strength_tensor = ops.convert_to_tensor(
            self._l2_regularization_strength, name="l2_regularization_strength")

    def _hyper(self):
        return (self._learning_rate_tensor, self._l1_regularization_strength_tensor,
                self._l2_regularization_strength_tensor)

    def _apply_dense(self, grad, var):
        return training_ops.apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), *self._hyper(), grad,
            use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_proximal_adagrad(
            var.handle, self.get_slot(var, "accumulator").handle, *self._hyper(), grad,
            use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_proximal_adagrad(
            var, self.get_slot(var, "accumulator"), *self._hyper(), grad.values,
            grad.indices, use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_proximal_adagrad(
            var.handle, self.get_slot(var, "accumulator").handle,
            *(cast(t, grad.dtype) for t in self._hyper()), grad, indices,
            use_locking=self._use_locking)
