"""tf.compat.v1.metrics: streaming metrics in local variables, each returning (value,
update_op)."""

from aioflow.metrics.metrics_impl import (
    accuracy,
    auc,
    false_negatives,
    false_negatives_at_thresholds,
    false_positives,
    false_positives_at_thresholds,
    mean,
    mean_absolute_error,
    mean_cosine_distance,
    mean_iou,
    mean_per_class_accuracy,
    mean_relative_error,
    mean_squared_error,
    mean_tensor,
    percentage_below,
    precision,
    precision_at_thresholds,
    recall,
    recall_at_thresholds,
    root_mean_squared_error,
    true_negatives,
    true_negatives_at_thresholds,
    true_positives,
    true_positives_at_thresholds,
)

__all__ = [
    "accuracy", "auc", "false_negatives", "false_negatives_at_thresholds", "false_positives",
    "false_positives_at_thresholds", "mean", "mean_absolute_error", "mean_cosine_distance",
    "mean_iou", "mean_per_class_accuracy", "mean_relative_error", "mean_squared_error",
    "mean_tensor", "percentage_below", "precision", "precision_at_thresholds", "recall",
    "recall_at_thresholds", "root_mean_squared_error", "true_negatives",
    "true_negatives_at_thresholds", "true_positives", "true_positives_at_thresholds",
]
