"""TF's candidate samplers (tf.random.*_candidate_sampler, tf.nn.*): each takes its
`seed`/`seed2` attrs from the graph seed and the op seed as TF's random ops do, so a
seeded graph samples TF's classes. Their outputs carry no gradient."""

from __future__ import annotations

from aioflow.framework.op_def_library import apply_op
from aioflow.framework.random_seed import seed_attrs


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                              seed=None, name=None):
    """`num_sampled` classes drawn uniformly from [0, range_max) (distinct if `unique`),
    with the expected counts of the true and the sampled classes."""
    return tuple(apply_op("UniformCandidateSampler", name=name, true_classes=true_classes,
                          num_true=num_true, num_sampled=num_sampled, unique=unique,
                          range_max=range_max, **seed_attrs(seed)))


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                  seed=None, name=None):
    """As uniform_candidate_sampler, drawing class k with probability
    log((k + 2) / (k + 1)) / log(range_max + 1) (Zipf-like)."""
    return tuple(apply_op("LogUniformCandidateSampler", name=name,
                          true_classes=true_classes, num_true=num_true,
                          num_sampled=num_sampled, unique=unique, range_max=range_max,
                          **seed_attrs(seed)))


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None,
                          name=None):
    """Every class 0 .. num_sampled - 1, each with expected count 1."""
    return tuple(apply_op("AllCandidateSampler", name=name, true_classes=true_classes,
                          num_true=num_true, num_sampled=num_sampled, unique=unique,
                          **seed_attrs(seed)))


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None,
                            name=None):
    """(indices, ids, weights): the rows and sample positions where a sampled class is a
    true class of the row, weight -FLT_MAX, to add to the sampled logits."""
    return tuple(apply_op("ComputeAccidentalHits", name=name, true_classes=true_classes,
                          sampled_candidates=sampled_candidates, num_true=num_true,
                          **seed_attrs(seed)))


__all__ = ["all_candidate_sampler", "compute_accidental_hits",
           "log_uniform_candidate_sampler", "uniform_candidate_sampler"]
