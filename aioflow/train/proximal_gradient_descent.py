"""tf.compat.v1.train.ProximalGradientDescentOptimizer: a gradient step, then the
proximal step of L1 (soft threshold) and L2 (shrink) regularization (FOBOS)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class ProximalGradientDescentOptimizer(Optimizer):
    """Proximal gradient descent, as TF 1's."""

    def __init__(self, learning_rate, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength

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
        return training_ops.apply_proximal_gradient_descent(
            var, *self._hyper(), grad, use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_proximal_gradient_descent(
            var.handle, *self._hyper(), grad, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_proximal_gradient_descent(
            var, *self._hyper(), grad.values, grad.indices,
            use_locking=self._use_locking).op

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_proximal_gradient_descent(
            var.handle, *(cast(t, grad.dtype) for t in self._hyper()), grad, indices,
            use_locking=self._use_locking)
