"""tf.compat.v1.losses (TF's losses_impl.py): each loss as TF builds it, weighted and
reduced by compute_weighted_loss (Reduction: NONE, SUM, MEAN, SUM_OVER_BATCH_SIZE,
SUM_BY_NONZERO_WEIGHTS, the default) and added to the LOSSES collection."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.losses import util
from aioflow.losses.weights_broadcast import assert_broadcastable, broadcast_weights
from aioflow.ops import array_ops, control_flow_ops, math_ops, nn_impl, nn_ops, nn_xent_ops


class Reduction:
    """How a loss reduces its weighted elements."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of "
                             f"{cls.all()}.")


def _safe_mean(losses, num_present):
    total_loss = math_ops.reduce_sum(losses)
    return math_ops.div_no_nan(total_loss, num_present, name="value")


def _num_present(losses, weights, per_batch: bool = False):
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with ops.name_scope(None, "num_present", (losses, weights)) as scope:
        weights = math_ops.cast(weights, dtype=dtypes.float32)
        present = array_ops.where(math_ops.equal(weights, 0.0),
                                  array_ops.zeros_like(weights), array_ops.ones_like(weights))
        present = broadcast_weights(present, losses)
        if per_batch:
            return math_ops.reduce_sum(present,
                                       axis=math_ops.range(1, array_ops.rank(present)),
                                       keepdims=True, name=scope)
        return math_ops.reduce_sum(present, name=scope)


def _num_elements(losses):
    with ops.name_scope(None, "num_elements", values=[losses]) as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), dtype=losses.dtype)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=util.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """`losses` * `weights`, reduced by `reduction`, added to `loss_collection`."""
    Reduction.validate(reduction)
    with ops.name_scope(scope, "weighted_loss", (losses, weights)):
        with ops.control_dependencies((assert_broadcastable(weights, losses),)):
            losses = ops.convert_to_tensor(losses)
            input_dtype = losses.dtype
            losses = math_ops.cast(losses, dtype=dtypes.float32)
            weights = math_ops.cast(weights, dtype=dtypes.float32)
            weighted_losses = math_ops.multiply(losses, weights)
            if reduction == Reduction.NONE:
                loss = weighted_losses
            else:
                loss = math_ops.reduce_sum(weighted_losses)
                if reduction == Reduction.MEAN:
                    loss = _safe_mean(loss, math_ops.reduce_sum(
                        array_ops.ones_like(losses) * weights))
                elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                    loss = _safe_mean(loss, _num_present(losses, weights))
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    loss = _safe_mean(loss, _num_elements(losses))
            loss = math_ops.cast(loss, input_dtype)
            util.add_loss(loss, loss_collection)
            return loss


def _check(labels, predictions, what: str = "predictions", labels_name: str = "labels"):
    if labels is None:
        raise ValueError(f"Argument `{labels_name}` must not be None.")
    if predictions is None:
        raise ValueError(f"Argument `{what}` must not be None.")


def _float_pair(predictions, labels):
    predictions = math_ops.cast(predictions, dtype=dtypes.float32)
    labels = math_ops.cast(labels, dtype=dtypes.float32)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    return predictions, labels


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=util.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(labels, predictions)
    with ops.name_scope(scope, "absolute_difference", (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = math_ops.abs(math_ops.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=util.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _check(labels, predictions)
    with ops.name_scope(scope, "cosine_distance_loss",
                        (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        radial_diffs = math_ops.multiply(predictions, labels)
        losses = 1 - math_ops.reduce_sum(radial_diffs, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=util.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(labels, logits, "logits")
    with ops.name_scope(scope, "hinge_loss", (logits, labels, weights)) as scope:
        logits, labels = _float_pair(logits, labels)
        all_ones = array_ops.ones_like(labels)
        labels = math_ops.subtract(2 * labels, all_ones)
        losses = nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(labels, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=util.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(labels, predictions)
    with ops.name_scope(scope, "huber_loss", (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        error = math_ops.subtract(predictions, labels)
        abs_error = math_ops.abs(error)
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        losses = math_ops.add(
            math_ops.multiply(ops.convert_to_tensor(0.5, dtype=quadratic.dtype),
                              math_ops.multiply(quadratic, quadratic)),
            math_ops.multiply(delta, linear))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=util.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(labels, predictions)
    with ops.name_scope(scope, "log_loss", (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = -math_ops.multiply(labels, math_ops.log(predictions + epsilon)) \
            - math_ops.multiply(1 - labels, math_ops.log(1 - predictions + epsilon))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=util.LOSSES):
    _check(labels, predictions)
    with ops.name_scope(scope, "mean_pairwise_squared_error",
                        (predictions, labels, weights)):
        weights = math_ops.cast(weights, dtype=dtypes.float32)
        labels = math_ops.cast(labels, dtype=dtypes.float32)
        with ops.control_dependencies((assert_broadcastable(weights, labels),)):
            predictions = math_ops.cast(predictions, dtype=dtypes.float32)
            predictions.get_shape().assert_is_compatible_with(labels.get_shape())
            diffs = math_ops.subtract(predictions, labels)
            axis = math_ops.range(1, array_ops.rank(diffs))
            sum_squares_diff_per_batch = math_ops.reduce_sum(math_ops.square(diffs),
                                                             axis=axis, keepdims=True)
            num_present_per_batch = _num_present(diffs, weights, per_batch=True)
            term1 = 2.0 * math_ops.div_no_nan(
                sum_squares_diff_per_batch,
                math_ops.maximum(num_present_per_batch - 1, 0), name="value")
            sum_diff = math_ops.reduce_sum(diffs, axis=axis, keepdims=True)
            term2 = 2.0 * math_ops.div_no_nan(
                math_ops.square(sum_diff),
                math_ops.maximum(math_ops.multiply(num_present_per_batch,
                                                   num_present_per_batch - 1), 0),
                name="value")
            weighted_losses = math_ops.multiply(term1 - term2, weights)
            loss = math_ops.reduce_sum(weighted_losses)
            mean_loss = array_ops.where(math_ops.reduce_sum(num_present_per_batch) > 0, loss,
                                        array_ops.zeros_like(loss), name="value")
            util.add_loss(mean_loss, loss_collection)
            return mean_loss


def mean_squared_error(labels, predictions, weights=1.0, scope=None,
                       loss_collection=util.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(labels, predictions)
    with ops.name_scope(scope, "mean_squared_error", (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=util.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(multi_class_labels, logits, "logits", "multi_class_labels")
    with ops.name_scope(scope, "sigmoid_cross_entropy_loss",
                        (logits, multi_class_labels, weights)) as scope:
        logits = ops.convert_to_tensor(logits)
        multi_class_labels = math_ops.cast(multi_class_labels, logits.dtype)
        logits.get_shape().assert_is_compatible_with(multi_class_labels.get_shape())
        if label_smoothing > 0:
            multi_class_labels = (multi_class_labels * (1 - label_smoothing)
                                  + 0.5 * label_smoothing)
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=multi_class_labels,
                                                           logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=util.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(onehot_labels, logits, "logits", "onehot_labels")
    with ops.name_scope(scope, "softmax_cross_entropy_loss",
                        (logits, onehot_labels, weights)) as scope:
        logits = ops.convert_to_tensor(logits)
        onehot_labels = math_ops.cast(onehot_labels, logits.dtype)
        logits.get_shape().assert_is_compatible_with(onehot_labels.get_shape())
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(onehot_labels)[-1], logits.dtype)
            smooth_positives = 1.0 - label_smoothing
            smooth_negatives = label_smoothing / num_classes
            onehot_labels = onehot_labels * smooth_positives + smooth_negatives
        onehot_labels = array_ops.stop_gradient(onehot_labels, name="labels_stop_gradient")
        losses = nn_xent_ops.softmax_cross_entropy_with_logits_v2(
            labels=onehot_labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff: int = 0,
                                 name=None):
    """Squeeze the last dimension (of size 1) of labels or predictions when their ranks
    differ by one more (less) than expected (TF's confusion_matrix helper)."""
    with ops.name_scope(name, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = ops.convert_to_tensor(predictions)
        labels = ops.convert_to_tensor(labels)
        p_shape, l_shape = predictions.get_shape(), labels.get_shape()
        p_rank, l_rank = p_shape.ndims, l_shape.ndims
        if l_rank is not None and p_rank is not None:
            rank_diff = p_rank - l_rank
            if rank_diff == expected_rank_diff + 1 and p_shape.dims[-1].is_compatible_with(1):
                predictions = array_ops.squeeze(predictions, [-1])
            elif rank_diff == expected_rank_diff - 1 and \
                    l_shape.dims[-1].is_compatible_with(1):
                labels = array_ops.squeeze(labels, [-1])
            return labels, predictions
        rank_diff = array_ops.rank(predictions) - array_ops.rank(labels)
        if p_rank is None or p_shape.dims[-1].is_compatible_with(1):
            predictions = control_flow_ops.cond(
                math_ops.equal(expected_rank_diff + 1, rank_diff),
                lambda: array_ops.squeeze(predictions, [-1]), lambda: predictions)
        if l_rank is None or l_shape.dims[-1].is_compatible_with(1):
            labels = control_flow_ops.cond(
                math_ops.equal(expected_rank_diff - 1, rank_diff),
                lambda: array_ops.squeeze(labels, [-1]), lambda: labels)
        return labels, predictions


def _remove_squeezable_dimensions(labels, predictions, weights=None,
                                  expected_rank_diff: int = 0):
    labels, predictions = remove_squeezable_dimensions(labels, predictions,
                                                       expected_rank_diff=expected_rank_diff)
    if weights is not None:
        weights = ops.convert_to_tensor(weights)
        labels_rank = labels.get_shape().ndims
        weights_shape = weights.get_shape()
        weights_rank = weights_shape.ndims
        if labels_rank is not None and weights_rank is not None:
            if weights_rank - labels_rank == 1:
                weights = array_ops.squeeze(weights, [-1])
            return labels, predictions, weights
        rank_diff = array_ops.rank(weights) - array_ops.rank(labels)
        if weights_rank is None or (weights_rank > 0 and
                                    weights_shape.dims[-1].is_compatible_with(1)):
            weights = control_flow_ops.cond(math_ops.equal(1, rank_diff),
                                            lambda: array_ops.squeeze(weights, [-1]),
                                            lambda: weights)
    return labels, predictions, weights


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=util.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    _check(labels, logits, "logits")
    with ops.name_scope(scope, "sparse_softmax_cross_entropy_loss",
                        (logits, labels, weights)) as scope:
        labels, logits, weights = _remove_squeezable_dimensions(labels, logits, weights,
                                                                expected_rank_diff=1)
        losses = nn_xent_ops.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)
