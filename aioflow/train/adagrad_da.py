"""tf.compat.v1.train.AdagradDAOptimizer: Adagrad dual averaging, the weights computed
from the accumulated gradients and the global step (slots "gradient_accumulator" and
"gradient_squared_accumulator"); made for sparse linear models."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops, constant_op
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class AdagradDAOptimizer(Optimizer):
    """Adagrad dual averaging (Duchi et al.), as TF 1's: needs the global step."""

    def __init__(self, learning_rate, global_step,
                 initial_gradient_squared_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "AdagradDA"):
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._initial_gradient_squared_accumulator_value = \
            initial_gradient_squared_accumulator_value
        self._learning_rate_tensor = None
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._global_step = global_step
        self._global_step_on_worker = None

    def _create_slots(self, var_list) -> None:
        for v in var_list:
            with ops.colocate_with(v.op):
                g_val = constant_op.constant(0.0, shape=v.get_shape(),
                                             dtype=v.dtype.base_dtype)
                gg_val = constant_op.constant(self._initial_gradient_squared_accumulator_value,
                                              shape=v.get_shape(), dtype=v.dtype.base_dtype)
            self._get_or_make_slot(v, g_val, "gradient_accumulator", self._name)
            self._get_or_make_slot(v, gg_val, "gradient_squared_accumulator", self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = ops.convert_to_tensor(self._learning_rate,
                                                           name="learning_rate")
        # TF: a copy of the global step on the worker, to spare the parameter server
        with ops.colocate_with(self._learning_rate_tensor.op):
            self._global_step_on_worker = array_ops.identity(self._global_step) + 1

    def _args(self, var, dtype):
        with ops.device(var.device):
            global_step = array_ops.identity(self._global_step_on_worker)
        return (cast(self._learning_rate_tensor, dtype),
                cast(self._l1_regularization_strength, dtype),
                cast(self._l2_regularization_strength, dtype), global_step)

    def _apply_dense(self, grad, var):
        return training_ops.apply_adagrad_da(
            var, self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"), grad,
            *self._args(var, var.dtype.base_dtype), use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return training_ops.resource_apply_adagrad_da(
            var.handle, self.get_slot(var, "gradient_accumulator").handle,
            self.get_slot(var, "gradient_squared_accumulator").handle, grad,
            *self._args(var, grad.dtype.base_dtype), use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return training_ops.sparse_apply_adagrad_da(
            var, self.get_slot(var, "gradient_accumulator"),
            self.get_slot(var, "gradient_squared_accumulator"), grad.values, grad.indices,
            *self._args(var, var.dtype.base_dtype), use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return training_ops.resource_sparse_apply_adagrad_da(
            var.handle, self.get_slot(var, "gradient_accumulator").handle,
            self.get_slot(var, "gradient_squared_accumulator").handle, grad, indices,
            *self._args(var, grad.dtype), use_locking=self._use_locking)
