"""tf.compat.v1.metrics at k, as TF 1 builds them (metrics_impl.py): precision_at_k,
precision_at_top_k, sparse_precision_at_k, recall_at_k, recall_at_top_k,
average_precision_at_k and sparse_average_precision_at_k. Labels are class ids (dense,
one or more per row, or a SparseTensor); the top-k predicted ids are compared with them as
sets (tf.sets: DenseToDenseSetOperation, DenseToSparseSetOperation, SetSize), optionally
for one class_id only. Local float64 variables under TF's names (precision_at_2/
true_positive_at_2, average_precision_at_3/max, ...)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.losses.weights_broadcast import assert_broadcastable, broadcast_weights
from aioflow.metrics.metrics_impl import _add, metric_variable
from aioflow.ops import (
    array_ops,
    control_flow_ops,
    image_ops,
    math_ops,
    sets,
    sparse_ops,
    state_ops,
)


def _convert(x):
    return x if isinstance(x, SparseTensor) else ops.convert_to_tensor(x)


def _maybe_expand_labels(labels, predictions):
    """Labels with the rank of predictions (a last dimension of 1 added if need be)."""
    with ops.name_scope(None, "expand_labels", (labels, predictions)) as scope:
        labels = _convert(labels)
        if isinstance(labels, SparseTensor):
            return control_flow_ops.cond(
                math_ops.equal(array_ops.rank(predictions),
                               array_ops.size(labels.dense_shape) + 1),
                lambda: sparse_ops.reshape(
                    labels, shape=array_ops.concat((labels.dense_shape, (1,)), 0),
                    name=scope),
                lambda: labels)
        labels_rank = labels.get_shape().ndims
        if labels_rank is not None:
            predictions_rank = predictions.get_shape().ndims
            if predictions_rank is not None:
                if predictions_rank == labels_rank:
                    return labels
                if predictions_rank == labels_rank + 1:
                    return array_ops.expand_dims(labels, -1, name=scope)
                raise ValueError(
                    f"Unexpected labels shape {labels.get_shape()} for predictions shape "
                    f"{predictions.get_shape()}. Predictions rank should be the same rank "
                    f"as labels rank or labels rank plus one .")
        return control_flow_ops.cond(
            math_ops.equal(array_ops.rank(predictions), array_ops.rank(labels) + 1),
            lambda: array_ops.expand_dims(labels, -1, name=scope), lambda: labels)


def _safe_scalar_div(numerator, denominator, name):
    numerator.get_shape().with_rank_at_most(1)
    denominator.get_shape().with_rank_at_most(1)
    return math_ops.div_no_nan(numerator, denominator, name=name)


def _at_k_name(name: str, k=None, class_id=None) -> str:
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


def _reduced_shape(input_shape, axes):
    """TF's math_ops.reduced_shape: input_shape with the reduced axes set to 1."""
    axes = ops.convert_to_tensor(axes)
    input_rank = array_ops.size(input_shape, out_type=axes.dtype)
    axes = (axes + input_rank) % input_rank
    axes_shape = array_ops.shape(axes)
    return apply_op("DynamicStitch",
                    indices=[math_ops.range(input_rank), axes],
                    data=[input_shape, array_ops.ones(axes_shape, dtype=input_shape.dtype)])


def _select_class_id(ids, selected_id):
    """The ids equal to `selected_id`, as a SparseTensor of the ids' shape."""
    ids = _convert(ids)
    if isinstance(ids, SparseTensor):
        return sparse_ops.retain(ids, math_ops.equal(ids.values, selected_id))
    ids_shape = array_ops.shape(ids, out_type=dtypes.int64)
    ids_last_dim = array_ops.size(ids_shape) - 1
    filled_selected_id_shape = _reduced_shape(ids_shape,
                                              array_ops.reshape(ids_last_dim, [1]))
    filled_selected_id = array_ops.fill(filled_selected_id_shape,
                                        math_ops.cast(selected_id, dtypes.int64))
    result = sets.set_intersection(filled_selected_id, ids)
    return SparseTensor(indices=result.indices, values=result.values, dense_shape=ids_shape)


def _maybe_select_class_id(labels, predictions_idx, selected_id=None):
    if selected_id is None:
        return labels, predictions_idx
    return (_select_class_id(labels, selected_id),
            _select_class_id(predictions_idx, selected_id))


def _weighted(count, weights):
    if weights is None:
        return count
    with ops.control_dependencies((assert_broadcastable(weights, count),)):
        weights = math_ops.cast(weights, dtypes.float64)
        return math_ops.multiply(count, weights)


def _sparse_true_positive_at_k(labels, predictions_idx, class_id=None, weights=None,
                               name=None):
    with ops.name_scope(name, "true_positives", (predictions_idx, labels, weights)):
        labels, predictions_idx = _maybe_select_class_id(labels, predictions_idx, class_id)
        tp = sets.set_size(sets.set_intersection(predictions_idx, labels))
        return _weighted(math_ops.cast(tp, dtypes.float64), weights)


def _sparse_false_negative_at_k(labels, predictions_idx, class_id=None, weights=None):
    with ops.name_scope(None, "false_negatives", (predictions_idx, labels, weights)):
        labels, predictions_idx = _maybe_select_class_id(labels, predictions_idx, class_id)
        fn = sets.set_size(sets.set_difference(predictions_idx, labels, aminusb=False))
        return _weighted(math_ops.cast(fn, dtypes.float64), weights)


def _sparse_false_positive_at_k(labels, predictions_idx, class_id=None, weights=None):
    with ops.name_scope(None, "false_positives", (predictions_idx, labels, weights)):
        labels, predictions_idx = _maybe_select_class_id(labels, predictions_idx, class_id)
        fp = sets.set_size(sets.set_difference(predictions_idx, labels, aminusb=True))
        return _weighted(math_ops.cast(fp, dtypes.float64), weights)


def _streaming_count(kind: str, count_fn, labels, predictions_idx, k, class_id, weights):
    """A float64 local variable summing the batch's counts, and its update."""
    with ops.name_scope(None, _at_k_name(kind, k, class_id=class_id),
                        (predictions_idx, labels, weights)) as scope:
        counts = count_fn(predictions_idx=predictions_idx, labels=labels,
                          class_id=class_id, weights=weights)
        batch_total = math_ops.cast(math_ops.reduce_sum(counts), dtypes.float64)
        var = metric_variable([], dtypes.float64, name=scope)
        return var, state_ops.assign_add(var, batch_total, name="update")


def _ratio_at_top_k(kind: str, other_kind: str, other_fn, labels, predictions_idx, k,
                    class_id, weights, metrics_collections, updates_collections, name):
    """tp / (tp + other) at the top k (precision: other = false positives; recall:
    false negatives)."""
    with ops.name_scope(name, _at_k_name(kind, k, class_id=class_id),
                        (predictions_idx, labels, weights)) as scope:
        labels = _maybe_expand_labels(labels, predictions_idx)
        top_k_idx = math_ops.cast(predictions_idx, dtypes.int64)
        tp, tp_update = _streaming_count("true_positive", _sparse_true_positive_at_k,
                                         labels, top_k_idx, k, class_id, weights)
        other, other_update = _streaming_count(other_kind, other_fn, labels, top_k_idx, k,
                                               class_id, weights)
        metric = math_ops.divide(tp, math_ops.add(tp, other), name=scope)
        _add(metrics_collections, metric)
        update = math_ops.divide(tp_update, math_ops.add(tp_update, other_update),
                                 name="update")
        _add(updates_collections, update)
        return metric, update


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                    metrics_collections=None, updates_collections=None, name=None):
    """Recall of the given top-k ids against the labels."""
    return _ratio_at_top_k("recall", "false_negative", _sparse_false_negative_at_k, labels,
                           predictions_idx, k, class_id, weights, metrics_collections,
                           updates_collections, name)


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    """Precision of the given top-k ids against the labels."""
    return _ratio_at_top_k("precision", "false_positive", _sparse_false_positive_at_k,
                           labels, predictions_idx, k, class_id, weights,
                           metrics_collections, updates_collections, name)


def _at_k(kind: str, at_top_k):
    def metric(labels, predictions, k, class_id=None, weights=None, metrics_collections=None,
               updates_collections=None, name=None):
        with ops.name_scope(name, _at_k_name(kind, k, class_id=class_id),
                            (predictions, labels, weights)) as scope:
            _, top_k_idx = image_ops.top_k(predictions, k)
            return at_top_k(labels=labels, predictions_idx=top_k_idx, k=k,
                            class_id=class_id, weights=weights,
                            metrics_collections=metrics_collections,
                            updates_collections=updates_collections, name=scope)

    return metric


recall_at_k = _at_k("recall", recall_at_top_k)
recall_at_k.__name__ = recall_at_k.__qualname__ = "recall_at_k"
recall_at_k.__doc__ = "Recall of the top-k predictions (by score) against the labels."
precision_at_k = _at_k("precision", precision_at_top_k)
precision_at_k.__name__ = precision_at_k.__qualname__ = "precision_at_k"
precision_at_k.__doc__ = "Precision of the top-k predictions (by score) against the labels."
sparse_precision_at_k = precision_at_k


def _expand_and_tile(tensor, multiple: int, dim: int = 0, name=None):
    """`tensor` with a new dimension `dim` repeated `multiple` times."""
    if multiple < 1:
        raise ValueError(f"Invalid argument multiple={multiple} for expand_and_tile  call. "
                         f"`multiple` must be an integer > 0")
    with ops.name_scope(name, "expand_and_tile", (tensor, multiple, dim)) as scope:
        tensor = _convert(tensor)
        if isinstance(tensor, SparseTensor):
            if dim < 0:
                expand_dims = array_ops.reshape(array_ops.size(tensor.dense_shape) + dim,
                                                [1])
            else:
                expand_dims = [dim]
            expanded_shape = array_ops.concat(
                (array_ops.slice(tensor.dense_shape, [0], expand_dims), [1],
                 array_ops.slice(tensor.dense_shape, expand_dims, [-1])),
                0, name="expanded_shape")
            expanded = sparse_ops.reshape(tensor, shape=expanded_shape, name="expand")
            if multiple == 1:
                return expanded
            return sparse_ops.concat(dim - 1 if dim < 0 else dim, [expanded] * multiple,
                                     name=scope)
        expanded = array_ops.expand_dims(tensor, dim if dim >= 0 else dim - 1,
                                         name="expand")
        if multiple == 1:
            return expanded
        ones = array_ops.ones_like(array_ops.shape(tensor))
        tile_multiples = array_ops.concat((ones[:dim], (multiple,), ones[dim:]), 0,
                                          name="multiples")
        return array_ops.tile(expanded, tile_multiples, name=scope)


def _num_relevant(labels, k: int):
    """Per row, min(number of labels, k)."""
    if k < 1:
        raise ValueError(f"Invalid k={k}")
    with ops.name_scope(None, "num_relevant", (labels,)) as scope:
        labels = _convert(labels)
        if isinstance(labels, SparseTensor):
            return math_ops.minimum(sets.set_size(labels), k, name=scope)
        num_labels = math_ops.reduce_sum(
            array_ops.where_v2(math_ops.greater_equal(labels, 0),
                               array_ops.ones_like(labels), array_ops.zeros_like(labels)),
            axis=-1)
        return math_ops.minimum(num_labels, k, name=scope)


def _sparse_average_precision_at_top_k(labels, predictions_idx):
    """Per row, the average precision of the ranked ids against the labels."""
    with ops.name_scope(None, "average_precision", (predictions_idx, labels)) as scope:
        predictions_idx = math_ops.cast(predictions_idx, dtypes.int64, name="predictions_idx")
        if predictions_idx.get_shape().ndims == 0:
            raise ValueError("The rank of `predictions_idx` must be at least 1.")
        k = predictions_idx.get_shape().as_list()[-1]
        if k is None:
            raise ValueError("The last dimension of predictions_idx must be set. Currently, "
                             "it is None.")
        labels = _maybe_expand_labels(labels, predictions_idx)
        predictions_idx_per_k = array_ops.expand_dims(predictions_idx, -1,
                                                      name="predictions_idx_per_k")
        labels_per_k = _expand_and_tile(labels, multiple=k, dim=-1, name="labels_per_k")
        relevant_per_k = _sparse_true_positive_at_k(labels_per_k, predictions_idx_per_k,
                                                    name="relevant_per_k")
        tp_per_k = math_ops.cumsum(relevant_per_k, axis=-1, name="tp_per_k")
        retrieved_per_k = math_ops.cumsum(array_ops.ones_like(relevant_per_k), axis=-1,
                                          name="retrieved_per_k")
        precision_per_k = math_ops.divide(math_ops.cast(tp_per_k, dtypes.float64),
                                          math_ops.cast(retrieved_per_k, dtypes.float64),
                                          name="precision_per_k")
        relevant_precision_per_k = math_ops.multiply(
            precision_per_k, math_ops.cast(relevant_per_k, dtypes.float64),
            name="relevant_precision_per_k")
        precision_sum = math_ops.reduce_sum(relevant_precision_per_k, axis=(-1,),
                                            name="precision_sum")
        num_relevant_items = math_ops.cast(_num_relevant(labels, k), dtypes.float64)
        return math_ops.divide(precision_sum, num_relevant_items, name=scope)


def _streaming_sparse_average_precision_at_top_k(labels, predictions_idx, weights=None,
                                                 metrics_collections=None,
                                                 updates_collections=None, name=None):
    with ops.name_scope(name, "average_precision_at_top_k",
                        (predictions_idx, labels, weights)) as scope:
        average_precision = _sparse_average_precision_at_top_k(
            predictions_idx=predictions_idx, labels=labels)
        if weights is not None:
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float64),
                                        average_precision)
            average_precision = math_ops.multiply(average_precision, weights)
        with ops.name_scope(None, "max", (average_precision,)) as max_scope:
            max_var = metric_variable([], dtypes.float64, name=max_scope)
            if weights is None:
                batch_max = math_ops.cast(array_ops.size(average_precision, name="batch_max"),
                                          dtypes.float64)
            else:
                batch_max = math_ops.reduce_sum(weights, name="batch_max")
            max_update = state_ops.assign_add(max_var, batch_max, name="update")
        with ops.name_scope(None, "total", (average_precision,)) as total_scope:
            total_var = metric_variable([], dtypes.float64, name=total_scope)
            batch_total = math_ops.reduce_sum(average_precision, name="batch_total")
            total_update = state_ops.assign_add(total_var, batch_total, name="update")
        mean_average_precision = _safe_scalar_div(total_var, max_var, name="mean")
        _add(metrics_collections, mean_average_precision)
        update = _safe_scalar_div(total_update, max_update, name=scope)
        _add(updates_collections, update)
        return mean_average_precision, update


def _clean_out_of_range_indices(labels, num_classes):
    """Labels >= num_classes replaced by -1 (when there are any)."""
    sparse = isinstance(labels, SparseTensor)

    def _clean_out_of_range(values):
        return array_ops.where_v2(math_ops.greater_equal(values, num_classes),
                                  -1 * array_ops.ones_like(values), values)

    def _clean_labels_out_of_range():
        if sparse:
            return SparseTensor(indices=labels.indices,
                                values=_clean_out_of_range(labels.values),
                                dense_shape=labels.dense_shape)
        return _clean_out_of_range(labels)

    max_labels = math_ops.reduce_max(labels.values if sparse else labels)
    return control_flow_ops.cond(math_ops.greater_equal(max_labels, num_classes),
                                 _clean_labels_out_of_range, lambda: labels)


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """The mean over rows of the average precision of the top-k predictions."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    with ops.name_scope(name, _at_k_name("average_precision", k),
                        (predictions, labels, weights)) as scope:
        _, predictions_idx = image_ops.top_k(predictions, k)
        labels = _clean_out_of_range_indices(
            labels, math_ops.cast(array_ops.shape(predictions)[-1], dtypes.int64))
        return _streaming_sparse_average_precision_at_top_k(
            labels=labels, predictions_idx=predictions_idx, weights=weights,
            metrics_collections=metrics_collections,
            updates_collections=updates_collections, name=scope)


sparse_average_precision_at_k = average_precision_at_k
