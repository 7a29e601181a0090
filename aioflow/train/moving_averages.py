"""Moving averages (TF's moving_averages): assign_moving_average (v -= (v - value) *
(1 - decay), optionally zero-debiased), weighted_moving_average, and
ExponentialMovingAverage, whose shadow variables are slots named `<var>/<name>` so that
TF's checkpoints of them restore here (and `variables_to_restore` maps them back)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.ops import (
    array_ops,
    control_flow_ops,
    init_ops,
    math_ops,
    state_ops,
    variable_scope,
    variables,
)
from aioflow.train import slot_creator
from aioflow.train.optimizer import init_scope

MOVING_AVERAGE_VARIABLES = "moving_average_variables"


def assign_moving_average(variable, value, decay, zero_debias: bool = True, name=None):
    """variable -= (variable - value) * (1 - decay); with zero_debias, the average of a
    biased shadow divided by 1 - decay ** steps."""
    with ops.name_scope(name, "AssignMovingAvg", [variable, value, decay]) as scope:
        decay = ops.convert_to_tensor(1.0 - decay, name="decay")
        if decay.dtype != variable.dtype.base_dtype:
            decay = math_ops.cast(decay, variable.dtype.base_dtype)
        if zero_debias:
            return _zero_debias(variable, value, decay)
        return state_ops.assign_sub(variable, (variable - value) * decay, name=scope)


def _zero_debias(unbiased_var, value, decay):
    with variable_scope.variable_scope(unbiased_var.name[:-len(":0")],
                                       values=[unbiased_var, value, decay]):
        with init_scope():
            biased_initializer = init_ops.zeros_initializer()
            local_step_initializer = init_ops.zeros_initializer()

        def _maybe_get_unique(name: str) -> str:
            scope = variable_scope.get_variable_scope()
            if scope.reuse:
                return name
            existing = {x.op.name for x in variables.global_variables()}
            full_name = scope.name + "/" + name
            if full_name not in existing:
                return name
            idx = 1
            while full_name + f"_{idx}" in existing:
                idx += 1
            return name + f"_{idx}"

        with ops.colocate_with(unbiased_var.op):
            biased_var = variable_scope.get_variable(
                _maybe_get_unique("biased"), initializer=biased_initializer,
                shape=unbiased_var.get_shape(), dtype=unbiased_var.dtype.base_dtype,
                trainable=False)
            local_step = variable_scope.get_variable(
                _maybe_get_unique("local_step"), shape=[],
                dtype=unbiased_var.dtype.base_dtype, initializer=local_step_initializer,
                trainable=False)
    update_biased = state_ops.assign_sub(biased_var, (biased_var - value) * decay)
    update_local_step = local_step.assign_add(1)
    bias_factor = 1 - math_ops.pow(1.0 - decay, update_local_step)
    return state_ops.assign(unbiased_var, update_biased / bias_factor,
                            name=ops.get_default_graph().get_name_scope() + "/")


def weighted_moving_average(value, decay, weight, truediv: bool = True, collections=None,
                            name=None):
    """The moving average of value * weight over the moving average of weight."""
    if collections is None:
        collections = [variables.GraphKeys.GLOBAL_VARIABLES]
    with variable_scope.variable_scope(name, "WeightedMovingAvg",
                                       [value, weight, decay]) as scope:
        value_x_weight_var = variable_scope.get_variable(
            "value_x_weight", shape=value.get_shape(), dtype=value.dtype,
            initializer=init_ops.zeros_initializer(), trainable=False,
            collections=collections)
        weight_var = variable_scope.get_variable(
            "weight", shape=weight.get_shape(), dtype=weight.dtype,
            initializer=init_ops.zeros_initializer(), trainable=False,
            collections=collections)
        numerator = assign_moving_average(value_x_weight_var, value * weight, decay,
                                          zero_debias=False)
        denominator = assign_moving_average(weight_var, weight, decay, zero_debias=False)
        div = math_ops.truediv if truediv else math_ops.divide
        return div(numerator, denominator, name=scope.name)


class ExponentialMovingAverage:
    """Shadow variables tracking moving averages of variables (or tensors)."""

    def __init__(self, decay, num_updates=None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages: dict = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list=None):
        """The op updating the averages of `var_list` (default: the trainable
        variables); their shadow variables are made the first time."""
        if var_list is None:
            var_list = variables.trainable_variables()
        zero_debias_true = set()
        for var in var_list:
            if var.dtype.base_dtype not in (dtypes.bfloat16, dtypes.float16, dtypes.float32,
                                            dtypes.float64):
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if var in self._averages:
                continue
            with init_scope():
                if isinstance(var, variables.Variable):
                    with ops.device(var.device):
                        initialized_value = control_flow_ops.cond(
                            variables.is_variable_initialized(var), var.read_value,
                            lambda var=var: var.initial_value)
                    avg = slot_creator.create_slot(var, initialized_value, self.name,
                                                   colocate_with_primary=True)
                    ops.add_to_collection(MOVING_AVERAGE_VARIABLES, var)
                else:
                    avg = slot_creator.create_zeros_slot(
                        var, self.name, colocate_with_primary=var.op.type in (
                            "Variable", "VariableV2", "VarHandleOp"))
                    if self._zero_debias:
                        zero_debias_true.add(avg)
            self._averages[var] = avg
        with ops.name_scope(self.name) as scope:
            decay = ops.convert_to_tensor(self._decay, dtype=dtypes.float32, name="decay")
            if self._num_updates is not None:
                num_updates = math_ops.cast(self._num_updates, dtypes.float32,
                                            name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = []
            for var in var_list:
                avg = self._averages[var]
                updates.append(assign_moving_average(avg, var, decay,
                                                     avg in zero_debias_true))
            return array_ops.group(*updates, name=scope)

    def average(self, var):
        """The shadow variable of `var`, or None."""
        return self._averages.get(var)

    def average_name(self, var) -> str:
        """The name of `var`'s shadow variable (made or to be made)."""
        if var in self._averages:
            return self._averages[var].name[:-len(":0")]
        return ops.get_default_graph().unique_name(
            var.name[:-len(":0")] + "/" + self.name, mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None) -> dict:
        """{checkpoint name: variable}: the averages restore into the variables."""
        name_map = {}
        if moving_avg_variables is None:
            moving_avg_variables = (variables.trainable_variables()
                                    + ops.get_collection(MOVING_AVERAGE_VARIABLES))
        moving_avg_variables = list(dict.fromkeys(moving_avg_variables))
        for v in moving_avg_variables:
            name_map[self.average_name(v)] = v
        names = {v.name for v in moving_avg_variables}
        for v in variables.global_variables():
            if v.name not in names and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
