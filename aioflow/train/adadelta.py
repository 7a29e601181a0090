"""tf.compat.v1.train.AdadeltaOptimizer: slots "accum" (squared gradients) and
"accum_update" (squared updates), both moving averages with decay `rho`."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class AdadeltaOptimizer(Optimizer):
    """Adadelta (Zeiler), as TF 1's."""

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-8,
                 use_locking: bool = False, name: str = "Adadelta"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._rho = rho
        self._epsilon = epsilon

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            self._zeros_slot(v, "accum", self._name)
            self._zeros_slot(v, "accum_update", self._name)

    def _prepare(self) -> None:
        c = self._call_if_callable
        self._lr_t = ops.convert_to_tensor(c(self._lr), name="lr")
        self._rho_t = ops.convert_to_tensor(c(self._rho), name="rho")
        self._epsilon_t = ops.convert_to_tensor(c(self._epsilon), name="epsilon")

    def _hyper(self, dtype):
        return cast(self._lr_t, dtype), cast(self._rho_t, dtype), cast(self._epsilon_t, dtype)

    def _slots_of(self, var, handles: bool) -> list:
        slots = [self.get_slot(var, "accum"), self.get_slot(var, "accum_update")]
        return [s.handle for s in slots] if handles else slots

    def _apply_dense(self, grad, var):
        return training_ops.apply_adadelta(var, *self._slots_of(var, False),
                                           *self._hyper(var.dtype.base_dtype), grad,
                                           use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adadelta(
            var.handle, *self._slots_of(var, True), *self._hyper(grad.dtype.base_dtype),
            grad, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adadelta(
            var, *self._slots_of(var, False), *self._hyper(var.dtype.base_dtype),
            grad.values, grad.indices, use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adadelta(
            var.handle, *self._slots_of(var, True), *self._hyper(grad.dtype), grad, indices,
            use_locking=self._use_locking)
