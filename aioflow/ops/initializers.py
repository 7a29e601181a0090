"""af.initializers: TF 1.x's tf.compat.v1.initializers names (defined in init_ops.py)."""

from __future__ import annotations

from aioflow.ops.init_ops import (
    constant_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    ones_initializer,
    orthogonal_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    truncated_normal_initializer,
    variance_scaling_initializer,
    zeros_initializer,
)
from aioflow.ops.variables import (
    global_variables_initializer as global_variables,
)
from aioflow.ops.variables import (
    local_variables_initializer as local_variables,
)
from aioflow.ops.variables import (
    variables_initializer as variables,
)

zeros = zeros_initializer
ones = ones_initializer
constant = constant_initializer
random_uniform = random_uniform_initializer
random_normal = random_normal_initializer
truncated_normal = truncated_normal_initializer
glorot_uniform = glorot_uniform_initializer
glorot_normal = glorot_normal_initializer
variance_scaling = variance_scaling_initializer
orthogonal = orthogonal_initializer

__all__ = ["zeros", "ones", "constant", "random_uniform", "random_normal",
           "truncated_normal", "glorot_uniform", "glorot_normal", "variance_scaling",
           "orthogonal", "global_variables", "local_variables", "variables"]
