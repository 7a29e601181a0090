"""`af.test` (TF 1.x's tf.test): the gradient checker."""

from aioflow.gradients.gradient_checker import compute_gradient, compute_gradient_error

__all__ = ["compute_gradient", "compute_gradient_error"]
