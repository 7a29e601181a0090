"""tf.compat.v1.train.MomentumOptimizer: accum = momentum * accum + grad; var -= lr * accum
(Nesterov: var -= lr * grad + lr * momentum * accum); one slot, "momentum"."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class MomentumOptimizer(Optimizer):
    """Gradient descent with momentum (ApplyMomentum and its forms)."""

    def __init__(self, learning_rate, momentum, use_locking: bool = False,
                 name: str = "Momentum", use_nesterov: bool = False):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._momentum = momentum
        self._use_nesterov = use_nesterov

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = ops.convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")
        self._momentum_tensor = ops.convert_to_tensor(
            self._call_if_callable(self._momentum), name="momentum")

    def _hyper(self, dtype):
        return cast(self._learning_rate_tensor, dtype), cast(self._momentum_tensor, dtype)

    def _apply_dense(self, grad, var):
        lr, momentum = self._hyper(var.dtype.base_dtype)
        return training_ops.apply_momentum(
            var, self.get_slot(var, "momentum"), lr, grad, momentum,
            use_locking=self._use_locking, use_nesterov=self._use_nesterov).op

    def _resource_apply_dense(self, grad, var):
        lr, momentum = self._hyper(grad.dtype.base_dtype)
        return training_ops.resource_apply_momentum(
            var.handle, self.get_slot(var, "momentum").handle, lr, grad, momentum,
            use_locking=self._use_locking, use_nesterov=self._use_nesterov)

    def _apply_sparse(self, grad, var):
        lr, momentum = self._hyper(var.dtype.base_dtype)
        return training_ops.sparse_apply_momentum(
            var, self.get_slot(var, "momentum"), lr, grad.values, grad.indices, momentum,
            use_locking=self._use_locking, use_nesterov=self._use_nesterov).op

    def _resource_apply_sparse(self, grad, var, indices):
        lr, momentum = self._hyper(grad.dtype)
        return training_ops.resource_sparse_apply_momentum(
            var.handle, self.get_slot(var, "momentum").handle, lr, grad, indices, momentum,
            use_locking=self._use_locking, use_nesterov=self._use_nesterov)
