"""tf.compat.v1.metrics: streaming metrics in local variables, each returning (value,
update_op)."""

from aioflow.metrics.metrics_impl import (
    accuracy,
    auc,
    false_negatives,
    false_positives,
    mean,
    mean_absolute_error,
    mean_iou,
    mean_squared_error,
    precision,
    recall,
    root_mean_squared_error,
    true_negatives,
    true_positives,
)

__all__ = [
    "accuracy", "auc", "false_negatives", "false_positives", "mean", "mean_absolute_error",
    "mean_iou", "mean_squared_error", "precision", "recall", "root_mean_squared_error",
    "true_negatives", "true_positives",
]
