"""The `af.nn` namespace: TF's `tf.nn` names for the core activations and helpers."""

from aioflow.ops import rnn_cell
from aioflow.ops.candidate_sampling_ops import (
    all_candidate_sampler,
    compute_accidental_hits,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from aioflow.ops.image_ops import in_top_k, top_k
from aioflow.ops.nn_conv_ops import (
    avg_pool,
    avg_pool3d,
    conv2d,
    conv2d_transpose,
    conv3d,
    depthwise_conv2d,
    depthwise_conv2d_native,
    fused_batch_norm,
    l2_loss,
    local_response_normalization,
    lrn,
    max_pool,
    max_pool2d,
    max_pool3d,
    max_pool_v2,
)
from aioflow.ops.nn_impl import (
    batch_normalization,
    dropout,
    embedding_lookup,
    l2_normalize,
    log_poisson_loss,
    moments,
    nce_loss,
    sampled_softmax_loss,
    sigmoid_cross_entropy_with_logits,
    weighted_cross_entropy_with_logits,
    zero_fraction,
)
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
from aioflow.ops.nn_xent_ops import (
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)
from aioflow.ops.rnn import (
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from aioflow.ops.space_batch_ops import depth_to_space, space_to_depth  # noqa: E402

__all__ = [
    "space_to_depth", "depth_to_space",
    "relu", "relu6", "elu", "selu", "softplus", "softsign", "leaky_relu", "softmax",
    "log_softmax", "bias_add", "sigmoid", "tanh",
    "conv2d", "conv2d_transpose", "conv3d", "depthwise_conv2d", "depthwise_conv2d_native",
    "max_pool", "max_pool2d", "max_pool_v2", "avg_pool", "max_pool3d", "avg_pool3d",
    "fused_batch_norm", "lrn", "local_response_normalization", "l2_loss",
    "top_k", "in_top_k",
    "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
    "sparse_softmax_cross_entropy_with_logits",
    # training pieces (nn_impl.py)
    "dropout", "moments", "batch_normalization", "l2_normalize", "zero_fraction",
    "sigmoid_cross_entropy_with_logits", "weighted_cross_entropy_with_logits",
    "log_poisson_loss", "embedding_lookup", "nce_loss", "sampled_softmax_loss",
    "uniform_candidate_sampler", "log_uniform_candidate_sampler", "all_candidate_sampler",
    "compute_accidental_hits",
    # recurrent networks
    "rnn_cell", "dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn",
    "static_bidirectional_rnn",
]
