"""tf.compat.v1.train.FtrlOptimizer: FTRL-proximal (McMahan et al.) with L1, L2 and L2
shrinkage regularization (ApplyFtrlV2 when shrinkage is set); slots "accum" (starting at
`initial_accumulator_value`) and "linear"."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.ops import array_ops, math_ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class FtrlOptimizer(Optimizer):
    """FTRL-proximal, as TF 1's (including `beta` folded into the L2 strength)."""

    def __init__(self, learning_rate, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 use_locking: bool = False, name: str = "Ftrl", accum_name=None,
                 linear_name=None, l2_shrinkage_regularization_strength=0.0, beta=None):
        super().__init__(use_locking, name)
        for value, what in ((initial_accumulator_value, "initial_accumulator_value"),
                            (l1_regularization_strength, "l1_regularization_strength"),
                            (l2_regularization_strength, "l2_regularization_strength"),
                            (l2_shrinkage_regularization_strength,
                             "l2_shrinkage_regularization_strength")):
            if value < 0.0:
                raise ValueError(f"{what} {value:f} needs to be positive or zero")
        if learning_rate_power > 0.0:
            raise ValueError(f"learning_rate_power {learning_rate_power:f} needs to be "
                             f"negative or zero")
        self._learning_rate = learning_rate
        self._learning_rate_power = learning_rate_power
        self._initial_accumulator_value = initial_accumulator_value
        self._l1_regularization_strength = l1_regularization_strength
        self._l2_regularization_strength = l2_regularization_strength
        self._beta = 0.0 if beta is None else beta
        self._l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self._accum_name = accum_name
        self._linear_name = linear_name

    def _create_slots(self, var_list) -> None:
        def _accum_initializer(shape, dtype=None, partition_info=None):
            return array_ops.ones(shape=shape, dtype=dtype) * self._initial_accumulator_value

        for v in var_list:
            self._get_or_make_slot_with_initializer(
                v, _accum_initializer, v.shape, v.dtype.base_dtype, "accum",
                self._accum_name or self._name)
            self._zeros_slot(v, "linear", self._linear_name or self._name)

    def _prepare(self) -> None:
        self._learning_rate_tensor = ops.convert_to_tensor(self._learning_rate,
                                                           name="learning_rate")
        self._l1_regularization_strength_tensor = ops.convert_to_tensor(
            self._l1_regularization_strength, name="l1_regularization_strength")
        # the L2 strength with beta folded in, so that the kernels need not take beta
        self._adjusted_l2_regularization_strength_tensor = ops.convert_to_tensor(
            self._l2_regularization_strength
            + self._beta / (2. * math_ops.maximum(self._learning_rate, 1e-36)),
            name="adjusted_l2_regularization_strength")
        self._beta_tensor = ops.convert_to_tensor(self._beta, name="beta")
        self._l2_shrinkage_regularization_strength_tensor = ops.convert_to_tensor(
            self._l2_shrinkage_regularization_strength,
            name="l2_shrinkage_regularization_strength")
        self._learning_rate_power_tensor = ops.convert_to_tensor(
            self._learning_rate_power, name="learning_rate_power")

    def _hyper(self, dtype) -> list:
        """lr, l1, l2 (adjusted), [l2 shrinkage,] lr_power: the kernels' order."""
        out = [cast(self._learning_rate_tensor, dtype),
               cast(self._l1_regularization_strength_tensor, dtype),
               cast(self._adjusted_l2_regularization_strength_tensor, dtype)]
        if self._l2_shrinkage_regularization_strength > 0.0:
            out.append(cast(self._l2_shrinkage_regularization_strength_tensor, dtype))
        out.append(cast(self._learning_rate_power_tensor, dtype))
        return out

    def _fn(self, sparse: bool, resource: bool):
        name = ("resource_" if resource else "") + ("sparse_" if sparse else "") + \
            "apply_ftrl" + ("_v2" if self._l2_shrinkage_regularization_strength > 0.0 else "")
        return getattr(training_ops, name)

    def _slots_of(self, var, handles: bool) -> list:
        slots = [self.get_slot(var, "accum"), self.get_slot(var, "linear")]
        return [s.handle for s in slots] if handles else slots

    def _apply_dense(self, grad, var):
        return self._fn(False, False)(var, *self._slots_of(var, False), grad,
                                      *self._hyper(var.dtype.base_dtype),
                                      use_locking=self._use_locking)

    def _resource_apply_dense(self, grad, var):
        return self._fn(False, True)(var.handle, *self._slots_of(var, True), grad,
                                     *self._hyper(grad.dtype.base_dtype),
                                     use_locking=self._use_locking)

    def _apply_sparse(self, grad, var):
        return self._fn(True, False)(var, *self._slots_of(var, False), grad.values,
                                     grad.indices, *self._hyper(var.dtype.base_dtype),
                                     use_locking=self._use_locking)

    def _resource_apply_sparse(self, grad, var, indices):
        return self._fn(True, True)(var.handle, *self._slots_of(var, True), grad, indices,
                                    *self._hyper(grad.dtype), use_locking=self._use_locking)
