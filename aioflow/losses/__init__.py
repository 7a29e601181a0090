"""tf.compat.v1.losses: the losses of TF 1 with their weights, reductions and the LOSSES
and REGULARIZATION_LOSSES collections."""

from aioflow.losses.losses_impl import (
    Reduction,
    absolute_difference,
    compute_weighted_loss,
    cosine_distance,
    hinge_loss,
    huber_loss,
    log_loss,
    mean_pairwise_squared_error,
    mean_squared_error,
    sigmoid_cross_entropy,
    softmax_cross_entropy,
    sparse_softmax_cross_entropy,
)
from aioflow.losses.util import (
    add_loss,
    get_losses,
    get_regularization_loss,
    get_regularization_losses,
    get_total_loss,
)

__all__ = [
    "Reduction", "absolute_difference", "compute_weighted_loss", "cosine_distance",
    "hinge_loss", "huber_loss", "log_loss", "mean_pairwise_squared_error",
    "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
    "sparse_softmax_cross_entropy", "add_loss", "get_losses", "get_regularization_loss",
    "get_regularization_losses", "get_total_loss",
]
