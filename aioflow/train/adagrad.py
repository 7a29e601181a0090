"""tf.compat.v1.train.AdagradOptimizer: accum += grad**2; var -= lr * grad / sqrt(accum);
one slot, "accumulator", starting at `initial_accumulator_value`."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops, init_ops, math_ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class AdagradOptimizer(Optimizer):
    """Adagrad (Duchi et al.), as TF 1's."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1,
                 use_locking: bool = False, name: str = "Adagrad"):
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: "
                             f"{initial_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_accumulator_value = initial_accumulator_value
        self._learning_rate_tensor = None

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            dtype = v.dtype.base_dtype
            if v.get_shape().is_fully_defined():
                init = init_ops.constant_initializer(self._initial_accumulator_value,
                                                     dtype=dtype)
            else:
                init = self._init_constant_op(v, dtype)
            self._get_or_make_slot_with_initializer(v, init, v.get_shape(), dtype,
                                                    "accumulator", self._name)

    def _init_constant_op(self, v, dtype):
        def init(*_, **__):
            fill = array_ops.fill(array_ops.shape(v), self._initial_accumulator_value)
            return math_ops.cast(fill, dtype)
        return init

    def _prepare(self) -> None:
        self._learning_rate_tensor = ops.convert_to_tensor(
            self._call_if_callable(self._learning_rate), name="learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad(
            var, self.get_slot(var, "accumulator"),
            cast(self._learning_rate_tensor, var.dtype.base_dtype), grad,
            use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adagrad(
            var.handle, self.get_slot(var, "accumulator").handle,
            cast(self._learning_rate_tensor, grad.dtype.base_dtype), grad,
            use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad(
            var, self.get_slot(var, "accumulator"),
            cast(self._learning_rate_tensor, var.dtype.base_dtype), grad.values,
            grad.indices, use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adagrad(
            var.handle, self.get_slot(var, "accumulator").handle,
            cast(self._learning_rate_tensor, grad.dtype), grad, indices,
            use_locking=self._use_locking)
