"""The `af.nn` namespace: TF's `tf.nn` names for the core activations and helpers."""

from aioflow.ops.nn_ops import (
    bias_add,
    elu,
    leaky_relu,
    log_softmax,
    relu,
    relu6,
    selu,
    sigmoid,
    softmax,
    softplus,
    softsign,
    tanh,
)

__all__ = [
    "relu", "relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "softmax",
    "log_softmax", "bias_add", "sigmoid", "tanh",
]
