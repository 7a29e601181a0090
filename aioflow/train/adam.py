"""tf.compat.v1.train.AdamOptimizer: slots "m" and "v", the non-slot variables
beta1_power and beta2_power (colocated with the first variable by name, multiplied by
beta1 and beta2 after each step); ApplyAdam for dense gradients, and TF's sparse update
built of Assign, ScatterAdd and AssignSub for IndexedSlices."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops, math_ops, state_ops
from aioflow.train import training_ops
from aioflow.train.optimizer import (
    Optimizer,
    cast,
    init_scope,
    resource_scatter_add,
    update_variable,
)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), as TF 1's."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 use_locking: bool = False, name: str = "Adam"):
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._beta1 = beta1
        self._beta2 = beta2
        self._epsilon = epsilon
        self._lr_t = self._beta1_t = self._beta2_t = self._epsilon_t = None

    def _get_beta_accumulators(self):
        with init_scope():
            graph = ops.get_default_graph()
            return (self._get_non_slot_variable("beta1_power", graph=graph),
                    self._get_non_slot_variable("beta2_power", graph=graph))

    def _create_slots(self, var_list) -> None:
        first_var = min(var_list, key=lambda x: x.name)
        self._create_non_slot_variable(self._beta1, "beta1_power", first_var)
        self._create_non_slot_variable(self._beta2, "beta2_power", first_var)
        for v in var_list:
            self._zeros_slot(v, "m", self._name)
            self._zeros_slot(v, "v", self._name)

    def _prepare(self) -> None:
        self._lr_t = ops.convert_to_tensor(self._call_if_callable(self._lr),
                                           name="learning_rate")
        self._beta1_t = ops.convert_to_tensor(self._call_if_callable(self._beta1), name="beta1")
        self._beta2_t = ops.convert_to_tensor(self._call_if_callable(self._beta2), name="beta2")
        self._epsilon_t = ops.convert_to_tensor(self._call_if_callable(self._epsilon),
                                                name="epsilon")

    def _dense_args(self, var, dtype):
        beta1_power, beta2_power = self._get_beta_accumulators()
        return (cast(beta1_power, dtype), cast(beta2_power, dtype), cast(self._lr_t, dtype),
                cast(self._beta1_t, dtype), cast(self._beta2_t, dtype),
                cast(self._epsilon_t, dtype))

    def _apply_dense(self, grad, var):
        args = self._dense_args(var, var.dtype.base_dtype)
        return training_ops.apply_adam(
            var, self.get_slot(var, "m"), self.get_slot(var, "v"), *args, grad,
            use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, var):
        args = self._dense_args(var, grad.dtype.base_dtype)
        return training_ops.resource_apply_adam(
            var.handle, self.get_slot(var, "m").handle, self.get_slot(var, "v").handle,
            *args, grad, use_locking=self._use_locking)

    def _apply_sparse_shared(self, grad, var, indices, scatter_add):
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = self._get_beta_accumulators()
        beta1_power = cast(beta1_power, dtype)
        beta2_power = cast(beta2_power, dtype)
        lr_t = cast(self._lr_t, dtype)
        beta1_t = cast(self._beta1_t, dtype)
        beta2_t = cast(self._beta2_t, dtype)
        epsilon_t = cast(self._epsilon_t, dtype)
        lr = lr_t * math_ops.sqrt(1 - beta2_power) / (1 - beta1_power)
        # m_t = beta1 * m + (1 - beta1) * g_t
        m = self.get_slot(var, "m")
        m_scaled_g_values = grad * (1 - beta1_t)
        m_assign, _ = update_variable(m, m * beta1_t, use_locking=self._use_locking)
        with ops.control_dependencies([m_assign]):
            m_t = scatter_add(m, indices, m_scaled_g_values)
        # v_t = beta2 * v + (1 - beta2) * (g_t * g_t)
        v = self.get_slot(var, "v")
        v_scaled_g_values = (grad * grad) * (1 - beta2_t)
        v_assign, _ = update_variable(v, v * beta2_t, use_locking=self._use_locking)
        with ops.control_dependencies([v_assign]):
            v_t = scatter_add(v, indices, v_scaled_g_values)
        v_sqrt = math_ops.sqrt(v_t)
        var_update, _ = update_variable(var, lr * m_t / (v_sqrt + epsilon_t), "AssignSub",
                                        use_locking=self._use_locking)
        return array_ops.group(var_update, m_t, v_t)

    def _apply_sparse(self, grad, var):
        return self._apply_sparse_shared(
            grad.values, var, grad.indices,
            lambda x, i, v: state_ops.scatter_add(x, i, v, use_locking=self._use_locking))

    def _resource_apply_sparse(self, grad, var, indices):
        return self._apply_sparse_shared(grad, var, indices, resource_scatter_add)

    def _finish(self, update_ops, name_scope):
        with ops.control_dependencies(update_ops):
            beta1_power, beta2_power = self._get_beta_accumulators()
            with ops.colocate_with(beta1_power.op):
                update_beta1, _ = update_variable(beta1_power, beta1_power * self._beta1_t,
                                                  use_locking=self._use_locking)
                update_beta2, _ = update_variable(beta2_power, beta2_power * self._beta2_t,
                                                  use_locking=self._use_locking)
        return array_ops.group(*update_ops, update_beta1, update_beta2, name=name_scope)
