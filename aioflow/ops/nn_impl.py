"""tf.nn's training pieces built of other ops, node for node as TF's Python builds them
(nn_impl.py, nn_ops.py, embedding_ops.py): dropout (TF 1's keep_prob or rate), moments,
batch_normalization, l2_normalize, zero_fraction, the sigmoid, weighted and Poisson
cross-entropies; embedding_lookup lives in embedding_ops.py (imported here for the
sampled losses and tf.nn)."""

from __future__ import annotations

import math
import numbers

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, constant_op, control_flow_ops, math_ops, random_ops
from aioflow.ops.embedding_ops import embedding_lookup
from aioflow.ops.partitioned_variables import PartitionedVariable


# -- dropout --------------------------------------------------------------------------------
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.compat.v1.nn.dropout: zero each element with probability rate (1 - keep_prob),
    scale the rest by 1 / (1 - rate); a uniform draw seeded as TF's."""
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'.")
    if keep_prob is not None:
        try:
            rate = 1.0 - keep_prob
        except TypeError:
            raise ValueError(f"`keep_prob` must be a floating point number or Tensor. "
                             f"Received: keep_prob={keep_prob}") from None
    if rate is None:
        raise ValueError(f"`rate` must be provided. Received: rate={rate}")
    return dropout_v2(x, rate, noise_shape=noise_shape, seed=seed, name=name)


def dropout_v2(x, rate, noise_shape=None, seed=None, name=None):
    """tf.nn.dropout (TF 2's signature)."""
    with ops.name_scope(name, "dropout", [x]) as name:
        is_rate_number = isinstance(rate, numbers.Real)
        if is_rate_number and (rate < 0 or rate >= 1):
            raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). "
                             f"Received: rate={rate}")
        x = ops.convert_to_tensor(x, name="x")
        x_dtype = x.dtype
        if not x_dtype.is_floating:
            raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be "
                             f"scaled. Received: x_dtype={x_dtype}")
        if is_rate_number and rate == 0:
            return x
        if not isinstance(rate, ops.Tensor):
            if not is_rate_number:
                raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: "
                                 f"rate={rate}")
            scale = ops.convert_to_tensor(1 / (1 - rate), dtype=x_dtype)
            ret = apply_op("Mul", x=x, y=scale)
        else:
            rate.get_shape().assert_has_rank(0)
            if rate.dtype != x_dtype:
                if not rate.dtype.is_compatible_with(x_dtype):
                    raise ValueError(f"`x.dtype` must be compatible with `rate.dtype`. "
                                     f"Received: x.dtype={x_dtype} and rate.dtype="
                                     f"{rate.dtype}")
                rate = apply_op("Cast", name="rate", x=rate, DstT=x_dtype)
            one_tensor = constant_op.constant(1, dtype=x_dtype)
            ret = apply_op("RealDiv", x=x, y=apply_op("Sub", x=one_tensor, y=rate))
        noise_shape = _get_noise_shape(x, noise_shape)
        random_tensor = random_ops.random_uniform(noise_shape, seed=seed, dtype=x_dtype)
        keep_mask = random_tensor >= rate
        zero_tensor = constant_op.constant(0, dtype=x_dtype)
        ret = array_ops.where_v2(keep_mask, ret, zero_tensor)
        ret.set_shape(x.get_shape())
        return ret


def _get_noise_shape(x, noise_shape):
    if noise_shape is None:
        return array_ops.shape(x)
    try:
        noise = tensor_shape.as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.dims is not None and len(x.shape.dims) == len(noise.dims):
        dims = [d.value if n.value is None and d.value is not None else n.value
                for d, n in zip(x.shape.dims, noise.dims, strict=True)]
        return tensor_shape.TensorShape(dims)
    return noise_shape


# -- statistics and normalization -----------------------------------------------------------
def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of `x` over `axes` (float16 computed in float32)."""
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keep_dims' and 'keepdims'")
    keep_dims = bool(keepdims if keepdims is not None else keep_dims)
    with ops.name_scope(name, "moments", [x, axes]):
        y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = math_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = math_ops.reduce_mean(
            math_ops.squared_difference(y, array_ops.stop_gradient(mean)), axes,
            keepdims=True, name="variance")
        if not keep_dims:
            mean = array_ops.squeeze(mean, axes)
            variance = array_ops.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """(x - mean) * scale / sqrt(variance + epsilon) + offset, as TF's two multiplies."""
    with ops.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        scaled = x * math_ops.cast(inv, x.dtype)
        shift = offset - mean * inv if offset is not None else -mean * inv
        return scaled + math_ops.cast(shift, x.dtype)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon))."""
    axis = dim if axis is None else axis
    with ops.name_scope(name, "l2_normalize", [x]) as name:
        x = ops.convert_to_tensor(x, name="x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=name)


def zero_fraction(value, name=None):
    """The fraction of zeros in `value` (float32)."""
    with ops.name_scope(name, "zero_fraction", [value]):
        value = ops.convert_to_tensor(value, name="value")
        size = array_ops.size(value, out_type=dtypes.int64)
        num_nonzero = control_flow_ops.cond(
            size <= dtypes.int32.max,
            true_fn=lambda: math_ops.cast(_count_nonzero(value, dtypes.int32), dtypes.int64),
            false_fn=lambda: _count_nonzero(value, dtypes.int64))
        with ops.name_scope("counts_to_fraction"):
            num_zero = size - num_nonzero
            fraction = math_ops.cast(num_zero, dtypes.float32) / math_ops.cast(
                size, dtypes.float32)
        return array_ops.identity(fraction, "fraction")


def _count_nonzero(input_tensor, dtype):
    with ops.name_scope("count_nonzero", values=[input_tensor]):
        zero = array_ops.zeros([], dtype=input_tensor.dtype)
        nonzero_count = math_ops.reduce_sum(
            math_ops.cast(math_ops.not_equal(input_tensor, zero), dtype=dtype),
            name="nonzero_count")
        return nonzero_count


# -- cross-entropies --------------------------------------------------------------------------
def _same_shape(labels, logits, what: str = "logits") -> None:
    try:
        labels.get_shape().assert_is_compatible_with(logits.get_shape())
    except ValueError:
        raise ValueError(f"`{what}` and `labels` must have the same shape, received "
                         f"({logits.get_shape()} vs {labels.get_shape()}).") from None


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None, _sentinel=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)): the logistic loss, stable."""
    if _sentinel is not None:
        raise ValueError("Only call `sigmoid_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...).")
    if labels is None or logits is None:
        raise ValueError("Both `labels` and `logits` must be provided.")
    with ops.name_scope(name, "logistic_loss", [logits, labels]) as name:
        logits = ops.convert_to_tensor(logits, name="logits")
        labels = ops.convert_to_tensor(labels, name="labels")
        _same_shape(labels, logits)
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = logits >= zeros
        relu_logits = array_ops.where(cond, logits, zeros)
        neg_abs_logits = array_ops.where(cond, -logits, logits)
        return math_ops.add(relu_logits - logits * labels,
                            math_ops.log1p(math_ops.exp(neg_abs_logits)), name=name)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """The logistic loss with the positive term weighted by pos_weight."""
    labels = targets if labels is None else labels
    with ops.name_scope(name, "logistic_loss", [logits, labels]) as name:
        logits = ops.convert_to_tensor(logits, name="logits")
        labels = ops.convert_to_tensor(labels, name="labels")
        _same_shape(labels, logits)
        log_weight = 1 + (pos_weight - 1) * labels
        return math_ops.add(
            (1 - labels) * logits,
            log_weight * (math_ops.log1p(math_ops.exp(-math_ops.abs(logits)))
                          + apply_op("Relu", features=-logits)), name=name)


def log_poisson_loss(targets, log_input, compute_full_loss: bool = False, name=None):
    """exp(log_input) - log_input * targets (+ Stirling's term)."""
    with ops.name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = ops.convert_to_tensor(log_input, name="log_input")
        targets = ops.convert_to_tensor(targets, name="targets")
        _same_shape(targets, log_input, "log_input")
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            point_five = constant_op.constant(0.5, dtype=targets.dtype)
            two_pi = constant_op.constant(2 * math.pi, dtype=targets.dtype)
            stirling = targets * math_ops.log(targets) - targets + point_five * math_ops.log(
                two_pi * targets)
            zeros = array_ops.zeros_like(targets, dtype=targets.dtype)
            ones = array_ops.ones_like(targets, dtype=targets.dtype)
            cond = math_ops.logical_and(targets >= zeros, targets <= ones)
            result += array_ops.where(cond, zeros, stirling)
        return result


# -- sampled losses ----------------------------------------------------------------------------
def _sum_rows(x):
    """Each row's sum, as a matmul with a column of ones (TF's _sum_rows)."""
    cols = array_ops.shape(x)[1]
    ones_shape = array_ops.stack([cols, 1])
    ones = array_ops.ones(ones_shape, x.dtype)
    return array_ops.reshape(math_ops.matmul(x, ones), [-1])


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true=1, sampled_values=None, subtract_log_q=True,
                            remove_accidental_hits=False, partition_strategy="mod",
                            name=None, seed=None):
    """Logits of the true classes and of the sampled ones ([batch, num_true + num_sampled])
    and their labels (1 / num_true for the true classes), built as TF builds them."""
    from aioflow.ops import candidate_sampling_ops, sparse_ops

    if isinstance(weights, PartitionedVariable):
        weights = list(weights)
    if not isinstance(weights, list):
        weights = list(weights) if isinstance(weights, tuple) else [weights]
    with ops.name_scope(name, "compute_sampled_logits", weights + [biases, inputs, labels]):
        if labels.dtype != dtypes.int64:
            labels = math_ops.cast(labels, dtypes.int64)
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = candidate_sampling_ops.log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled,
                unique=True, range_max=num_classes, seed=seed)
        sampled, true_expected_count, sampled_expected_count = (
            array_ops.stop_gradient(s) for s in sampled_values)
        sampled = math_ops.cast(sampled, dtypes.int64)
        all_ids = array_ops.concat([labels_flat, sampled], 0)
        all_w = embedding_lookup(weights, all_ids, partition_strategy=partition_strategy)
        if all_w.dtype != inputs.dtype:
            all_w = math_ops.cast(all_w, inputs.dtype)
        true_w = array_ops.slice(all_w, [0, 0],
                                 array_ops.stack([array_ops.shape(labels_flat)[0], -1]))
        sampled_w = array_ops.slice(all_w,
                                    array_ops.stack([array_ops.shape(labels_flat)[0], 0]),
                                    [-1, -1])
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True)
        all_b = embedding_lookup(biases, all_ids, partition_strategy=partition_strategy)
        if all_b.dtype != inputs.dtype:
            all_b = math_ops.cast(all_b, inputs.dtype)
        true_b = array_ops.slice(all_b, [0], array_ops.shape(labels_flat))
        sampled_b = array_ops.slice(all_b, array_ops.shape(labels_flat), [-1])
        dim = array_ops.shape(true_w)[1:2]
        new_true_w_shape = array_ops.concat([[-1, num_true], dim], 0)
        row_wise_dots = math_ops.multiply(array_ops.expand_dims(inputs, 1),
                                          array_ops.reshape(true_w, new_true_w_shape))
        dots_as_matrix = array_ops.reshape(row_wise_dots, array_ops.concat([[-1], dim], 0))
        true_logits = array_ops.reshape(_sum_rows(dots_as_matrix), [-1, num_true])
        true_b = array_ops.reshape(true_b, [-1, num_true])
        true_logits += true_b
        sampled_logits += sampled_b
        if remove_accidental_hits:
            acc_indices, acc_ids, acc_weights = (
                candidate_sampling_ops.compute_accidental_hits(labels, sampled,
                                                               num_true=num_true))
            acc_indices_2d = array_ops.reshape(acc_indices, [-1, 1])
            acc_ids_2d_int32 = array_ops.reshape(math_ops.cast(acc_ids, dtypes.int32),
                                                 [-1, 1])
            sparse_indices = array_ops.concat([acc_indices_2d, acc_ids_2d_int32], 1,
                                              "sparse_indices")
            sampled_logits_shape = array_ops.concat(
                [array_ops.shape(labels)[:1], array_ops.expand_dims(num_sampled, 0)], 0)
            if sampled_logits.dtype != acc_weights.dtype:
                acc_weights = math_ops.cast(acc_weights, sampled_logits.dtype)
            sampled_logits += sparse_ops.sparse_to_dense(
                sparse_indices, sampled_logits_shape, acc_weights, default_value=0.0,
                validate_indices=False)
        if subtract_log_q:
            true_logits -= math_ops.log(true_expected_count)
            sampled_logits -= math_ops.log(sampled_expected_count)
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat([array_ops.ones_like(true_logits) / num_true,
                                       array_ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example (TF 1.x's tf.nn.nce_loss): sigmoid
    cross entropy over the true and `num_sampled` sampled classes, summed by row."""
    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs,
        num_sampled=num_sampled, num_classes=num_classes, num_true=num_true,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name)
    sampled_losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                       name="sampled_losses")
    return _sum_rows(sampled_losses)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                         num_true=1, sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Sampled softmax loss per example (TF 1.x's tf.nn.sampled_softmax_loss): softmax
    cross entropy over the true and `num_sampled` sampled classes."""
    from aioflow.ops.nn_xent_ops import softmax_cross_entropy_with_logits_v2

    logits, labels = _compute_sampled_logits(
        weights=weights, biases=biases, labels=labels, inputs=inputs,
        num_sampled=num_sampled, num_classes=num_classes, num_true=num_true,
        sampled_values=sampled_values, subtract_log_q=True,
        remove_accidental_hits=remove_accidental_hits,
        partition_strategy=partition_strategy, name=name, seed=seed)
    labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
