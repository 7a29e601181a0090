"""TF 1's learning-rate schedules (tf.compat.v1.train.exponential_decay & co.): each
builds, in a graph, the tensor of the learning rate at `global_step`, node for node as
TF's (its keras LearningRateSchedule classes called once), in the name scope of the
schedule (ExponentialDecay, PiecewiseConstant, PolynomialDecay, InverseTimeDecay,
CosineDecay, SGDRDecay, LinearCosineDecay, NoisyLinearCosineDecay)."""

from __future__ import annotations

import math

from aioflow.framework import dtypes, ops
from aioflow.ops import array_ops, constant_op, control_flow_ops, math_ops, random_ops


def _lr(value):
    return ops.convert_to_tensor(value, name="initial_learning_rate")


def _progress(learning_rate, global_step, decay_steps, decay_rate, staircase: bool):
    """(lr, decay_rate, global_step / decay_steps) in the learning rate's dtype, the ratio
    floored under staircase: the nodes exponential and inverse-time decay both start with,
    in TF's order."""
    lr = _lr(learning_rate)
    dtype = lr.dtype
    decay_steps = math_ops.cast(decay_steps, dtype)
    decay_rate = math_ops.cast(decay_rate, dtype)
    p = math_ops.cast(global_step, dtype) / decay_steps
    if staircase:
        p = math_ops.floor(p)
    return lr, decay_rate, p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name=None):
    """lr * decay_rate ^ (global_step / decay_steps) (the exponent floored: staircase)."""
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    with ops.name_scope(name or "ExponentialDecay") as scope:
        lr, decay_rate, p = _progress(learning_rate, global_step, decay_steps, decay_rate,
                                      staircase)
        return math_ops.multiply(lr, math_ops.pow(decay_rate, p), name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate,
                      staircase: bool = False, name=None):
    """lr * exp(-decay_rate * global_step / decay_steps)."""
    if global_step is None:
        raise ValueError("global_step is required for natural_exp_decay.")
    rate = math_ops.exp(math_ops.negative(decay_rate))
    return exponential_decay(learning_rate, global_step, decay_steps, rate, staircase,
                             name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate,
                       staircase: bool = False, name=None):
    """lr / (1 + decay_rate * global_step / decay_steps)."""
    if global_step is None:
        raise ValueError("global_step is required for inverse_time_decay.")
    with ops.name_scope(name or "InverseTimeDecay") as scope:
        lr, decay_rate, p = _progress(learning_rate, global_step, decay_steps, decay_rate,
                                      staircase)
        const = math_ops.cast(constant_op.constant(1), lr.dtype)
        denom = math_ops.add(const, math_ops.multiply(decay_rate, p))
        return math_ops.divide(lr, denom, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle: bool = False, name=None):
    """(lr - end) * (1 - step / decay_steps) ^ power + end, the step capped at
    decay_steps (cycle: decay_steps multiplied up past it instead)."""
    if global_step is None:
        raise ValueError("global_step is required for polynomial_decay.")
    with ops.name_scope(name or "PolynomialDecay") as scope:
        lr = _lr(learning_rate)
        dtype = lr.dtype
        end = math_ops.cast(end_learning_rate, dtype)
        power = math_ops.cast(power, dtype)
        step = math_ops.cast(global_step, dtype)
        steps = math_ops.cast(decay_steps, dtype)
        if cycle:
            multiplier = array_ops.where_v2(math_ops.equal(step, 0), 1.0,
                                            math_ops.ceil(step / decay_steps))
            steps = math_ops.multiply(steps, multiplier)
        else:
            step = math_ops.minimum(step, steps)
        p = math_ops.divide(step, steps)
        return math_ops.add(math_ops.multiply(lr - end, math_ops.pow(1 - p, power)), end,
                            name=scope)


def piecewise_constant(x, boundaries, values, name=None):
    """values[i] where boundaries[i-1] < x <= boundaries[i] (a case of conds)."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of "
                         "values")
    boundaries = [ops.convert_to_tensor(b) for b in _flat(boundaries)]
    values = [ops.convert_to_tensor(v) for v in _flat(values)]
    x_recomp = ops.convert_to_tensor(x)
    for i, b in enumerate(boundaries):
        if b.dtype.base_dtype != x_recomp.dtype.base_dtype:
            if b.dtype.base_dtype == dtypes.int32 and \
                    x_recomp.dtype.base_dtype == dtypes.int64:
                boundaries[i] = math_ops.cast(b, x_recomp.dtype.base_dtype)
            else:
                raise ValueError(f"Boundaries ({b.dtype.base_dtype}) must have the same "
                                 f"dtype as x ({x_recomp.dtype.base_dtype}).")
    for v in values[1:]:
        if v.dtype.base_dtype != values[0].dtype.base_dtype:
            raise ValueError(f"Values must have elements all with the same dtype "
                             f"({values[0].dtype.base_dtype} vs {v.dtype.base_dtype}).")
    with ops.name_scope(name or "PiecewiseConstant"):
        boundaries = [ops.convert_to_tensor(b) for b in boundaries]
        values = [ops.convert_to_tensor(v) for v in values]
        x_recomp = ops.convert_to_tensor(x)
        for i, b in enumerate(boundaries):
            if b.dtype.base_dtype != x_recomp.dtype.base_dtype:
                boundaries[i] = math_ops.cast(b, x_recomp.dtype.base_dtype)
        pairs = [(x_recomp <= boundaries[0], lambda: values[0]),
                 (x_recomp > boundaries[-1], lambda: values[-1])]
        for low, high, v in zip(boundaries[:-1], boundaries[1:], values[1:-1], strict=True):
            pred = (x_recomp > low) & (x_recomp <= high)
            pairs.append((pred, lambda v=v: v))
        return control_flow_ops.case(pairs, lambda: values[0], exclusive=True)


piecewise_constant_decay = piecewise_constant


def _flat(values) -> list:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps))
    + alpha)."""
    if global_step is None:
        raise ValueError("cosine decay requires global_step")
    with ops.name_scope(name or "CosineDecay"):
        lr = _lr(learning_rate)
        dtype = lr.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        step = math_ops.cast(global_step, dtype)
        step = math_ops.minimum(step, decay_steps)
        completed_fraction = step / decay_steps
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(constant_op.constant(math.pi)
                                                   * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(lr, decayed)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0,
                          m_mul=1.0, alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR), periods growing by t_mul."""
    if global_step is None:
        raise ValueError("cosine decay restarts requires global_step")
    with ops.name_scope(name or "SGDRDecay") as scope:
        lr = _lr(learning_rate)
        dtype = lr.dtype
        first_decay_steps = math_ops.cast(first_decay_steps, dtype)
        alpha = math_ops.cast(alpha, dtype)
        t_mul = math_ops.cast(t_mul, dtype)
        m_mul = math_ops.cast(m_mul, dtype)
        step = math_ops.cast(global_step, dtype)
        completed_fraction = step / first_decay_steps

        def compute_step(completed_fraction, geometric=False):
            if geometric:
                i_restart = math_ops.floor(
                    math_ops.log(1.0 - completed_fraction * (1.0 - t_mul))
                    / math_ops.log(t_mul))
                sum_r = (1.0 - t_mul ** i_restart) / (1.0 - t_mul)
                completed_fraction = (completed_fraction - sum_r) / t_mul ** i_restart
            else:
                i_restart = math_ops.floor(completed_fraction)
                completed_fraction -= i_restart
            return i_restart, completed_fraction

        i_restart, completed_fraction = control_flow_ops.cond(
            math_ops.equal(t_mul, 1.0),
            lambda: compute_step(completed_fraction, geometric=False),
            lambda: compute_step(completed_fraction, geometric=True))
        m_fac = m_mul ** i_restart
        cosine_decayed = 0.5 * m_fac * (1.0 + math_ops.cos(constant_op.constant(math.pi)
                                                           * completed_fraction))
        decayed = (1 - alpha) * cosine_decayed + alpha
        return math_ops.multiply(lr, decayed, name=scope)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """lr * ((alpha + linear) * cosine + beta), linear = (decay_steps - step) /
    decay_steps, cosine = 0.5 * (1 + cos(pi * 2 * num_periods * step / decay_steps))."""
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          name or "LinearCosineDecay", None)


def noisy_linear_cosine_decay(learning_rate, global_step, decay_steps, initial_variance=1.0,
                              variance_decay=0.55, num_periods=0.5, alpha=0.0, beta=0.001,
                              name=None):
    """linear_cosine_decay with Gaussian noise of decaying variance added to `linear`."""
    return _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta,
                          name or "NoisyLinearCosineDecay",
                          (initial_variance, variance_decay))


def _linear_cosine(learning_rate, global_step, decay_steps, num_periods, alpha, beta, name,
                   noise):
    if global_step is None:
        raise ValueError("linear cosine decay requires global_step")
    with ops.name_scope(name) as scope:
        lr = _lr(learning_rate)
        dtype = lr.dtype
        decay_steps = math_ops.cast(decay_steps, dtype)
        if noise is not None:
            initial_variance = math_ops.cast(noise[0], dtype)
            variance_decay = math_ops.cast(noise[1], dtype)
        num_periods = math_ops.cast(num_periods, dtype)
        alpha = math_ops.cast(alpha, dtype)
        beta = math_ops.cast(beta, dtype)
        step = math_ops.cast(global_step, dtype)
        step = math_ops.minimum(step, decay_steps)
        linear_decayed = (decay_steps - step) / decay_steps
        if noise is not None:
            variance = initial_variance / math_ops.pow(1.0 + step, variance_decay)
            std = math_ops.sqrt(variance)
            linear_decayed = linear_decayed + random_ops.random_normal(
                linear_decayed.shape, stddev=std)
        completed_fraction = step / decay_steps
        fraction = 2.0 * num_periods * completed_fraction
        cosine_decayed = 0.5 * (1.0 + math_ops.cos(constant_op.constant(math.pi) * fraction))
        linear_cosine_decayed = (alpha + linear_decayed) * cosine_decayed + beta
        return math_ops.multiply(lr, linear_cosine_decayed, name=scope)
