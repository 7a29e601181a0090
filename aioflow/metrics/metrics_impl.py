"""tf.compat.v1.metrics: streaming metrics as TF 1 builds them: each keeps its state in
local variables (LOCAL_VARIABLES and METRIC_VARIABLES, under the metric's variable scope:
accuracy/total, accuracy/count, ...) and returns (value, update_op): run update_op per
batch, read value at the end; tf.local_variables_initializer() resets them."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.losses.losses_impl import remove_squeezable_dimensions
from aioflow.losses.weights_broadcast import broadcast_weights
from aioflow.ops import (
    array_ops,
    check_ops,
    confusion_matrix,
    math_ops,
    state_ops,
    variable_scope,
    variables,
)

LOCAL_VARIABLES = "local_variables"
METRIC_VARIABLES = "metric_variables"


def metric_variable(shape, dtype, validate_shape: bool = True, name=None):
    """A local, untrainable variable of zeros holding a metric's state."""
    return variables.Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                              collections=[LOCAL_VARIABLES, METRIC_VARIABLES],
                              validate_shape=validate_shape, name=name)


def _add(collections, value) -> None:
    for key in collections or ():
        ops.add_to_collection(key, value)


def _remove_squeezable_dimensions(predictions, labels, weights):
    predictions = ops.convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    if weights is None:
        return predictions, labels, None
    weights = ops.convert_to_tensor(weights)
    weights_rank = weights.get_shape().ndims
    if weights_rank == 0:
        return predictions, labels, weights
    predictions_rank = predictions.get_shape().ndims
    if predictions_rank is not None and weights_rank is not None:
        if weights_rank - predictions_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif predictions_rank - weights_rank == 1:
            weights = array_ops.expand_dims(weights, [-1])
    return predictions, labels, weights


def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name=None):
    """The (weighted) mean of all values seen."""
    with variable_scope.variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.reduce_sum(weights)
        update_total_op = state_ops.assign_add(total, math_ops.reduce_sum(values))
        with ops.control_dependencies([values]):
            update_count_op = state_ops.assign_add(count, num_values)
        mean_t = math_ops.div_no_nan(total, math_ops.maximum(count, 0), name="value")
        _add(metrics_collections, mean_t)
        update_op = math_ops.div_no_nan(update_total_op,
                                        math_ops.maximum(update_count_op, 0),
                                        name="update_op")
        _add(updates_collections, update_op)
        return mean_t, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The fraction of predictions equal to labels."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions.get_shape().assert_is_compatible_with(labels.get_shape())
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


def _count_condition(values, weights=None, metrics_collections=None,
                     updates_collections=None):
    check_ops.assert_type(values, dtypes.bool)
    count = metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        with ops.control_dependencies((check_ops.assert_rank_in(
                weights, (0, array_ops.rank(values))),)):
            weights = math_ops.cast(weights, dtypes.float32)
            values = math_ops.multiply(values, weights)
    value_tensor = array_ops.identity(count)
    _add(metrics_collections, value_tensor)
    update_op = state_ops.assign_add(count, math_ops.reduce_sum(values))
    _add(updates_collections, update_op)
    return value_tensor, update_op


def _condition_metric(default_name: str, label_value: bool, prediction_value: bool):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope.variable_scope(name, default_name,
                                           (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                math_ops.cast(predictions, dtype=dtypes.bool),
                math_ops.cast(labels, dtype=dtypes.bool), weights)
            condition = math_ops.logical_and(math_ops.equal(labels, label_value),
                                             math_ops.equal(predictions, prediction_value))
            return _count_condition(condition, weights, metrics_collections,
                                    updates_collections)

    metric.__name__ = metric.__qualname__ = default_name
    metric.__doc__ = f"The (weighted) count of {default_name.replace('_', ' ')}."
    return metric


true_positives = _condition_metric("true_positives", True, True)
false_positives = _condition_metric("false_positives", False, True)
false_negatives = _condition_metric("false_negatives", True, False)
true_negatives = _condition_metric("true_negatives", False, False)


def _ratio_metric(default_name: str, other):
    def metric(labels, predictions, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope.variable_scope(name, default_name,
                                           (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                math_ops.cast(predictions, dtype=dtypes.bool),
                math_ops.cast(labels, dtype=dtypes.bool), weights)
            true_p, true_update = true_positives(labels, predictions, weights)
            other_v, other_update = other(labels, predictions, weights)

            def compute(tp, o, name):
                return array_ops.where(math_ops.greater(tp + o, 0),
                                       math_ops.divide(tp, tp + o), 0, name)

            value = compute(true_p, other_v, "value")
            _add(metrics_collections, value)
            update_op = compute(true_update, other_update, "update_op")
            _add(updates_collections, update_op)
            return value, update_op

    metric.__name__ = metric.__qualname__ = default_name
    return metric


precision = _ratio_metric("precision", false_positives)
precision.__doc__ = "true positives / (true positives + false positives)."
recall = _ratio_metric("recall", false_negatives)
recall.__doc__ = "true positives / (true positives + false negatives)."


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    absolute_errors = math_ops.abs(predictions - labels)
    return mean(absolute_errors, weights, metrics_collections, updates_collections,
                name or "mean_absolute_error")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    squared_error = math_ops.squared_difference(labels, predictions)
    return mean(squared_error, weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse_op = mean_squared_error(labels, predictions, weights, None, None,
                                            name or "root_mean_squared_error")
    rmse = math_ops.sqrt(mse)
    _add(metrics_collections, rmse)
    update_rmse_op = math_ops.sqrt(update_mse_op)
    _add(updates_collections, update_rmse_op)
    return rmse, update_rmse_op


def _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights=None,
                                    includes=("tp", "fn", "tn", "fp")):
    with ops.control_dependencies([
            check_ops.assert_greater_equal(
                predictions, math_ops.cast(0.0, dtype=predictions.dtype),
                message="predictions must be in [0, 1]"),
            check_ops.assert_less_equal(
                predictions, math_ops.cast(1.0, dtype=predictions.dtype),
                message="predictions must be in [0, 1]")]):
        predictions, labels, weights = _remove_squeezable_dimensions(
            math_ops.cast(predictions, dtypes.float32), math_ops.cast(labels, dtypes.bool),
            weights)
    num_thresholds = len(thresholds)
    predictions_2d = array_ops.reshape(predictions, [-1, 1])
    labels_2d = array_ops.reshape(math_ops.cast(labels, dtype=dtypes.bool), [1, -1])
    num_predictions = predictions_2d.get_shape().as_list()[0]
    if num_predictions is None:
        num_predictions = array_ops.shape(predictions_2d)[0]
    thresh_tiled = array_ops.tile(
        array_ops.expand_dims(array_ops.constant(thresholds, dtype=dtypes.float32), [1]),
        array_ops.stack([1, num_predictions]))
    pred_is_pos = math_ops.greater(
        array_ops.tile(array_ops.transpose(predictions_2d), [num_thresholds, 1]),
        thresh_tiled)
    if "fn" in includes or "tn" in includes:
        pred_is_neg = math_ops.logical_not(pred_is_pos)
    label_is_pos = array_ops.tile(labels_2d, [num_thresholds, 1])
    if "fp" in includes or "tn" in includes:
        label_is_neg = math_ops.logical_not(label_is_pos)
    weights_tiled = None
    if weights is not None:
        weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), predictions)
        weights_tiled = array_ops.tile(array_ops.reshape(weights, [1, -1]),
                                       [num_thresholds, 1])
    values, update_ops = {}, {}
    for key, name, a, b in (("tp", "true_positives", "pos", "pos"),
                            ("fn", "false_negatives", "pos", "neg"),
                            ("tn", "true_negatives", "neg", "neg"),
                            ("fp", "false_positives", "neg", "pos")):
        if key not in includes:
            continue
        a = label_is_pos if a == "pos" else label_is_neg
        b = pred_is_pos if b == "pos" else pred_is_neg
        var = metric_variable([num_thresholds], dtypes.float32, name=name)
        hits = math_ops.cast(math_ops.logical_and(a, b), dtypes.float32)
        if weights_tiled is not None:
            hits *= weights_tiled
        update_ops[key] = state_ops.assign_add(var, math_ops.reduce_sum(hits, 1))
        values[key] = var
    return values, update_ops


def auc(labels, predictions, weights=None, num_thresholds: int = 200,
        metrics_collections=None, updates_collections=None, curve: str = "ROC", name=None,
        summation_method: str = "trapezoidal", thresholds=None):
    """The area under the ROC or PR curve, from confusion matrices at thresholds."""
    with variable_scope.variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                    "majoring"):
            raise ValueError(f"Invalid summation_method: {summation_method} "
                             f"summation_method should be 'trapezoidal', "
                             f"'careful_interpolation', 'minoring', or 'majoring'.")
        kepsilon = 1e-7
        if thresholds is not None:
            thresholds = sorted(thresholds)
            num_thresholds = len(thresholds) + 2
        else:
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1)
                          for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon] + thresholds + [1.0 + kepsilon]
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights)
        epsilon = 1.0e-6

        def compute_auc(tp, fn, tn, fp, name):
            if curve == "PR" and summation_method == "careful_interpolation":
                return _interpolate_pr_auc(tp, fp, fn, num_thresholds)
            rec = math_ops.divide(tp + epsilon, tp + fn + epsilon)
            if curve == "ROC":
                x, y = math_ops.divide(fp, fp + tn + epsilon), rec
            else:
                x, y = rec, math_ops.divide(tp + epsilon, tp + fp + epsilon)
            dx = x[:num_thresholds - 1] - x[1:]
            if summation_method == "minoring":
                height = math_ops.minimum(y[:num_thresholds - 1], y[1:])
            elif summation_method == "majoring":
                height = math_ops.maximum(y[:num_thresholds - 1], y[1:])
            else:
                height = (y[:num_thresholds - 1] + y[1:]) / 2.0
            return math_ops.reduce_sum(math_ops.multiply(dx, height), name=name)

        value = compute_auc(values["tp"], values["fn"], values["tn"], values["fp"], "value")
        _add(metrics_collections, value)
        update_op = compute_auc(update_ops["tp"], update_ops["fn"], update_ops["tn"],
                                update_ops["fp"], "update_op")
        _add(updates_collections, update_op)
        return value, update_op


def _streaming_confusion_matrix(labels, predictions, num_classes, weights=None):
    """A float64 confusion-matrix variable and the op adding a batch's matrix to it."""
    total_cm = metric_variable([num_classes, num_classes], dtypes.float64,
                               name="total_confusion_matrix")
    predictions = math_ops.cast(predictions, dtypes.int64)
    labels = math_ops.cast(labels, dtypes.int64)
    num_classes = math_ops.cast(num_classes, dtypes.int64)
    if predictions.get_shape().ndims > 1:
        predictions = array_ops.reshape(predictions, [-1])
    if labels.get_shape().ndims > 1:
        labels = array_ops.reshape(labels, [-1])
    if weights is not None and weights.get_shape().ndims > 1:
        weights = array_ops.reshape(weights, [-1])
    current_cm = confusion_matrix.confusion_matrix(labels, predictions, num_classes,
                                                   weights=weights, dtype=dtypes.float64)
    return total_cm, state_ops.assign_add(total_cm, current_cm)


def _interpolate_pr_auc(tp, fp, fn, num_thresholds: int):
    """The PR curve's area with precision interpolated between thresholds (TF's
    interpolate_pr_auc, after Davis & Goadrich 2006: tp and p = tp + fp linear in each
    interval, integrated in closed form)."""
    dtp = tp[:num_thresholds - 1] - tp[1:]
    p = tp + fp
    prec_slope = math_ops.div_no_nan(dtp, math_ops.maximum(p[:num_thresholds - 1] - p[1:], 0),
                                     name="prec_slope")
    intercept = tp[1:] - math_ops.multiply(prec_slope, p[1:])
    safe_p_ratio = array_ops.where(
        math_ops.logical_and(p[:num_thresholds - 1] > 0, p[1:] > 0),
        math_ops.div_no_nan(p[:num_thresholds - 1], math_ops.maximum(p[1:], 0),
                            name="recall_relative_ratio"),
        array_ops.ones_like(p[1:]))
    return math_ops.reduce_sum(
        math_ops.div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                            math_ops.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment"),
        name="interpolate_pr_auc")


def mean_iou(labels, predictions, num_classes: int, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean over classes of intersection / union, from a streaming confusion
    matrix."""
    with variable_scope.variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions.get_shape().assert_is_compatible_with(labels.get_shape())
        total_cm, update_op = _streaming_confusion_matrix(labels, predictions,
                                                          num_classes, weights)
        sum_over_row = math_ops.cast(math_ops.reduce_sum(total_cm, 0), dtypes.float32)
        sum_over_col = math_ops.cast(math_ops.reduce_sum(total_cm, 1), dtypes.float32)
        cm_diag = math_ops.cast(array_ops.diag_part(total_cm), dtypes.float32)
        denominator = sum_over_row + sum_over_col - cm_diag
        num_valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0),
                                                      dtype=dtypes.float32))
        denominator = array_ops.where(math_ops.greater(denominator, 0), denominator,
                                      array_ops.ones_like(denominator))
        iou = math_ops.divide(cm_diag, denominator)
        value = array_ops.where(math_ops.greater(num_valid, 0),
                                math_ops.reduce_sum(iou, name="mean_iou") / num_valid, 0)
        _add(metrics_collections, value)
        _add(updates_collections, update_op)
        return value, update_op


# -- at thresholds, relative and cosine errors, per-class accuracy --------------------------

def _count_at_thresholds(default_name: str, key: str):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope.variable_scope(name, default_name,
                                           (predictions, labels, weights)):
            values, update_ops = _confusion_matrix_at_thresholds(
                labels, predictions, thresholds, weights=weights, includes=(key,))
            value = array_ops.identity(values[key])
            _add(metrics_collections, value)
            _add(updates_collections, update_ops[key])
            return value, update_ops[key]

    metric.__name__ = metric.__qualname__ = f"{default_name}_at_thresholds"
    metric.__doc__ = (f"The (weighted) count of {default_name.replace('_', ' ')} at each "
                      "threshold (a prediction above it is positive).")
    return metric


true_positives_at_thresholds = _count_at_thresholds("true_positives", "tp")
false_positives_at_thresholds = _count_at_thresholds("false_positives", "fp")
false_negatives_at_thresholds = _count_at_thresholds("false_negatives", "fn")
true_negatives_at_thresholds = _count_at_thresholds("true_negatives", "tn")


def _ratio_at_thresholds(default_name: str, prefix: str, other: str):
    def metric(labels, predictions, thresholds, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with variable_scope.variable_scope(name, default_name,
                                           (predictions, labels, weights)):
            values, update_ops = _confusion_matrix_at_thresholds(
                labels, predictions, thresholds, weights, includes=("tp", other))
            epsilon = 1e-7

            def compute(tp, o, name):
                return math_ops.divide(tp, epsilon + tp + o, name=f"{prefix}_{name}")

            value = compute(values["tp"], values[other], "value")
            _add(metrics_collections, value)
            update_op = compute(update_ops["tp"], update_ops[other], "update_op")
            _add(updates_collections, update_op)
            return value, update_op

    metric.__name__ = metric.__qualname__ = default_name
    return metric


precision_at_thresholds = _ratio_at_thresholds("precision_at_thresholds", "precision", "fp")
precision_at_thresholds.__doc__ = "tp / (tp + fp) at each threshold."
recall_at_thresholds = _ratio_at_thresholds("recall_at_thresholds", "recall", "fn")
recall_at_thresholds.__doc__ = "tp / (tp + fn) at each threshold."


def mean_relative_error(labels, predictions, normalizer, weights=None,
                        metrics_collections=None, updates_collections=None, name=None):
    """The mean of |labels - predictions| / normalizer (0 where normalizer is 0)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions, normalizer = remove_squeezable_dimensions(predictions, normalizer)
    predictions.get_shape().assert_is_compatible_with(normalizer.get_shape())
    relative_errors = array_ops.where(
        math_ops.equal(normalizer, 0.0), array_ops.zeros_like(labels),
        math_ops.divide(math_ops.abs(labels - predictions), normalizer))
    return mean(relative_errors, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """1 - the mean over rows of sum(labels * predictions) along `dim` (unit vectors)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    radial_diffs = math_ops.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim],
                                       keepdims=True)
    mean_distance, update_op = mean(radial_diffs, weights, None, None,
                                    name or "mean_cosine_distance")
    mean_distance = math_ops.subtract(1.0, mean_distance)
    update_op = math_ops.subtract(1.0, update_op)
    _add(metrics_collections, mean_distance)
    _add(updates_collections, update_op)
    return mean_distance, update_op


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The (weighted) fraction of values below `threshold`."""
    is_below_threshold = math_ops.cast(math_ops.less(values, threshold), dtypes.float32)
    return mean(is_below_threshold, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The element-wise (weighted) mean of the tensors seen (all of one shape)."""
    with variable_scope.variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        total = metric_variable(values.get_shape(), dtypes.float32, name="total_tensor")
        count = metric_variable(values.get_shape(), dtypes.float32, name="count_tensor")
        num_values = array_ops.ones_like(values)
        if weights is not None:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.multiply(num_values, weights)
        update_total_op = state_ops.assign_add(total, values)
        with ops.control_dependencies([values]):
            update_count_op = state_ops.assign_add(count, num_values)
        mean_t = math_ops.div_no_nan(total, math_ops.maximum(count, 0), name="value")
        _add(metrics_collections, mean_t)
        update_op = math_ops.div_no_nan(update_total_op, math_ops.maximum(update_count_op, 0),
                                        name="update_op")
        _add(updates_collections, update_op)
        return mean_t, update_op


def mean_per_class_accuracy(labels, predictions, num_classes: int, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over classes of each class's (weighted) accuracy."""
    with variable_scope.variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = math_ops.cast(labels, dtypes.int64)
        if labels.get_shape().ndims > 1:
            labels = array_ops.reshape(labels, [-1])
        if predictions.get_shape().ndims > 1:
            predictions = array_ops.reshape(predictions, [-1])
        predictions.get_shape().assert_is_compatible_with(labels.get_shape())
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = array_ops.ones([array_ops.size(labels)], dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = math_ops.cast(predictions, labels.dtype)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            if weights.get_shape().ndims > 1:
                weights = array_ops.reshape(weights, [-1])
            weights = math_ops.cast(weights, dtypes.float32)
            is_correct *= weights
            ones *= weights
        update_total_op = state_ops.scatter_add(total, labels, ones)
        update_count_op = state_ops.scatter_add(count, labels, is_correct)
        per_class_accuracy = math_ops.div_no_nan(count, math_ops.maximum(total, 0))
        mean_accuracy_v = math_ops.reduce_mean(per_class_accuracy, name="mean_accuracy")
        _add(metrics_collections, mean_accuracy_v)
        update_op = math_ops.div_no_nan(update_count_op, math_ops.maximum(update_total_op, 0),
                                        name="update_op")
        _add(updates_collections, update_op)
        return mean_accuracy_v, update_op


def _at_operating_point(default_name: str, target_name: str, last_threshold: float):
    def metric(labels, predictions, target, weights=None, num_thresholds: int = 200,
               metrics_collections=None, updates_collections=None, name=None):
        if target < 0 or target > 1:
            raise ValueError(f"`{target_name}` must be in the range [0, 1]. Currently, "
                             f"`{target_name}` is {target}.")
        with variable_scope.variable_scope(name, default_name,
                                           (predictions, labels, weights)):
            kepsilon = 1e-7
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1)
                          for i in range(num_thresholds - 2)]
            thresholds = [0.0 - kepsilon] + thresholds + [last_threshold]
            values, update_ops = _confusion_matrix_at_thresholds(labels, predictions,
                                                                 thresholds, weights)

            def compute(tp, tn, fp, fn, name):
                if default_name == "sensitivity_at_specificity":
                    specificities = math_ops.divide(tn, tn + fp + kepsilon)
                    index = math_ops.argmin(math_ops.abs(specificities - target), 0)
                    index = math_ops.cast(index, dtypes.int32)
                    return math_ops.divide(tp[index], tp[index] + fn[index] + kepsilon, name)
                sensitivities = math_ops.divide(tp, tp + fn + kepsilon)
                min_val = math_ops.reduce_min(math_ops.abs(sensitivities - target))
                at_min = math_ops.equal(math_ops.abs(sensitivities - target), min_val)
                at_min = math_ops.cumsum(math_ops.cast(at_min, dtypes.int64))
                index = math_ops.cast(math_ops.argmax(at_min, 0), dtypes.int32)
                return math_ops.divide(tn[index], tn[index] + fp[index] + kepsilon, name)

            value = compute(values["tp"], values["tn"], values["fp"], values["fn"], "value")
            _add(metrics_collections, value)
            update_op = compute(update_ops["tp"], update_ops["tn"], update_ops["fp"],
                                update_ops["fn"], "update_op")
            _add(updates_collections, update_op)
            return value, update_op

    metric.__name__ = metric.__qualname__ = default_name
    return metric


_sensitivity_at_specificity = _at_operating_point("sensitivity_at_specificity",
                                                  "specificity", 1.0 + 1e-7)
_specificity_at_sensitivity = _at_operating_point("specificity_at_sensitivity",
                                                  "sensitivity", 1.0 - 1e-7)


def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds: int = 200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The sensitivity (recall) at the threshold whose specificity is nearest
    `specificity`."""
    return _sensitivity_at_specificity(labels, predictions, specificity, weights,
                                       num_thresholds, metrics_collections,
                                       updates_collections, name)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds: int = 200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity at the (last) threshold whose sensitivity is nearest
    `sensitivity`."""
    return _specificity_at_sensitivity(labels, predictions, sensitivity, weights,
                                       num_thresholds, metrics_collections,
                                       updates_collections, name)
