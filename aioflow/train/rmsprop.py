"""tf.compat.v1.train.RMSPropOptimizer: a moving average of the squared gradient ("rms",
starting at ones), momentum on the scaled step ("momentum"); centered: also the moving
average of the gradient ("mg"), its square subtracted."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops, init_ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class RMSPropOptimizer(Optimizer):
    """RMSProp (Hinton), as TF 1's."""

    def __init__(self, learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10,
                 use_locking: bool = False, centered: bool = False, name: str = "RMSProp"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._decay = decay
        self._momentum = momentum
        self._epsilon = epsilon
        self._centered = centered

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            if v.get_shape().is_fully_defined():
                init_rms = init_ops.ones_initializer(dtype=v.dtype.base_dtype)
            else:
                init_rms = array_ops.ones_like(v)
            self._get_or_make_slot_with_initializer(v, init_rms, v.get_shape(),
                                                    v.dtype.base_dtype, "rms", self._name)
            if self._centered:
                self._zeros_slot(v, "mg", self._name)
            self._zeros_slot(v, "momentum", self._name)

    def _prepare(self) -> None:
        c = self._call_if_callable
        self._learning_rate_tensor = ops.convert_to_tensor(c(self._learning_rate),
                                                           name="learning_rate")
        self._decay_tensor = ops.convert_to_tensor(c(self._decay), name="decay")
        self._momentum_tensor = ops.convert_to_tensor(c(self._momentum), name="momentum")
        self._epsilon_tensor = ops.convert_to_tensor(c(self._epsilon), name="epsilon")

    def _hyper(self, dtype):
        return (cast(self._learning_rate_tensor, dtype), cast(self._decay_tensor, dtype),
                cast(self._momentum_tensor, dtype), cast(self._epsilon_tensor, dtype))

    def _slots_of(self, var, handles: bool) -> list:
        names = ["mg", "rms", "momentum"] if self._centered else ["rms", "momentum"]
        slots = [self.get_slot(var, n) for n in names]
        return [s.handle for s in slots] if handles else slots

    def _apply_dense(self, grad, var):
        fn = (training_ops.apply_centered_rms_prop if self._centered
              else training_ops.apply_rms_prop)
        return fn(var, *self._slots_of(var, False), *self._hyper(var.dtype.base_dtype), grad,
                  use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, var):
        fn = (training_ops.resource_apply_centered_rms_prop if self._centered
              else training_ops.resource_apply_rms_prop)
        return fn(var.handle, *self._slots_of(var, True),
                  *self._hyper(grad.dtype.base_dtype), grad, use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        fn = (training_ops.sparse_apply_centered_rms_prop if self._centered
              else training_ops.sparse_apply_rms_prop)
        return fn(var, *self._slots_of(var, False), *self._hyper(var.dtype.base_dtype),
                  grad.values, grad.indices, use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        fn = (training_ops.resource_sparse_apply_centered_rms_prop if self._centered
              else training_ops.resource_sparse_apply_rms_prop)
        return fn(var.handle, *self._slots_of(var, True), *self._hyper(grad.dtype), grad,
                  indices, use_locking=self._use_locking)
