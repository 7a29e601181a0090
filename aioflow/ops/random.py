"""The `af.random` namespace: TF's `tf.random` names (graph mode, TF 1.x seeds)."""

from aioflow.framework.random_seed import get_seed, set_random_seed
from aioflow.ops.candidate_sampling_ops import (
    all_candidate_sampler,
    log_uniform_candidate_sampler,
    uniform_candidate_sampler,
)
from aioflow.ops.random_ops import (
           categorical,
           multinomial,
           random_gamma,
           stateless_truncated_normal,
           truncated_normal,
)
from aioflow.ops.random_ops import random_normal as normal
from aioflow.ops.random_ops import random_shuffle as shuffle
from aioflow.ops.random_ops import random_uniform as uniform
from aioflow.ops.random_ops import stateless_random_normal as stateless_normal
from aioflow.ops.random_ops import stateless_random_uniform as stateless_uniform

gamma = random_gamma
#: tf.random.set_seed: in a graph, the graph-level seed, as set_random_seed.
set_seed = set_random_seed

__all__ = ["categorical", "gamma", "get_seed", "multinomial", "normal", "set_random_seed",
           "set_seed", "shuffle", "stateless_normal", "stateless_truncated_normal",
           "stateless_uniform", "truncated_normal", "uniform",
           "all_candidate_sampler", "log_uniform_candidate_sampler",
           "uniform_candidate_sampler"]
