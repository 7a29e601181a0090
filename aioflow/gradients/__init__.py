"""Symbolic gradients as TF 1.x builds them: af.gradients, the gradient registry, one
module of gradient functions per op family, and gradients through v1 loops and conds."""

from aioflow.gradients import (  # noqa: F401  (importing a module registers its gradients)
    array_grad,
    control_flow_grad,
    data_flow_grad,
    functional_grad,
    image_grad,
    linalg_grad,
    list_grad,
    math_grad,
    nn_fused_batch_norm_grad,
    nn_grad,
    optional_grad,
    random_grad,
    resource_variable_grad,
    sparse_grad,
    tensor_array_grad,
)
from aioflow.gradients.custom_gradient import custom_gradient
from aioflow.gradients.gradients_impl import hessians
from aioflow.gradients.gradients_util import (
    AggregationMethod,
    UnconnectedGradients,
    gradients,
)
from aioflow.gradients.registry import (
    NoGradient,
    NotDifferentiable,
    RegisterGradient,
    get_gradient_function,
)

__all__ = [
    "AggregationMethod", "custom_gradient", "NoGradient", "NotDifferentiable", "RegisterGradient",
    "UnconnectedGradients", "get_gradient_function", "gradients", "hessians",
]
