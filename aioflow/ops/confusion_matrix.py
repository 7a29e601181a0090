"""tf.math.confusion_matrix (TF 1's confusion_matrix.py): counts (or summed weights) of
each (label, prediction) pair, after checking both are non-negative and below
num_classes, as TF builds it (the metrics' mean_iou streams it)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.losses.losses_impl import remove_squeezable_dimensions
from aioflow.ops import array_ops, check_ops, math_ops


def confusion_matrix(labels, predictions, num_classes=None, weights=None,
                     dtype=dtypes.int32, name=None):
    """The [num_classes, num_classes] matrix: row = label, column = prediction."""
    with ops.name_scope(name, "confusion_matrix",
                        (predictions, labels, num_classes, weights)) as name:
        labels, predictions = remove_squeezable_dimensions(
            ops.convert_to_tensor(labels, name="labels"),
            ops.convert_to_tensor(predictions, name="predictions"))
        predictions = math_ops.cast(predictions, dtypes.int64)
        labels = math_ops.cast(labels, dtypes.int64)
        labels = array_ops.with_dependencies(
            [check_ops.assert_non_negative(labels,
                                           message="`labels` contains negative values")],
            labels)
        predictions = array_ops.with_dependencies(
            [check_ops.assert_non_negative(predictions,
                                           message="`predictions` contains negative values")],
            predictions)
        if num_classes is None:
            num_classes = math_ops.maximum(math_ops.reduce_max(predictions),
                                           math_ops.reduce_max(labels)) + 1
        else:
            num_classes_int64 = math_ops.cast(num_classes, dtypes.int64)
            labels = array_ops.with_dependencies(
                [check_ops.assert_less(labels, num_classes_int64,
                                       message="`labels` out of bound")], labels)
            predictions = array_ops.with_dependencies(
                [check_ops.assert_less(predictions, num_classes_int64,
                                       message="`predictions` out of bound")], predictions)
        if weights is not None:
            weights = ops.convert_to_tensor(weights, name="weights")
            predictions.get_shape().assert_is_compatible_with(weights.get_shape())
            weights = math_ops.cast(weights, dtype)
        shape = array_ops.stack([num_classes, num_classes])
        indices = array_ops.stack([labels, predictions], axis=1)
        values = array_ops.ones_like(predictions, dtype) if weights is None else weights
        return array_ops.scatter_nd(indices=indices, updates=values,
                                    shape=math_ops.cast(shape, dtypes.int64))
