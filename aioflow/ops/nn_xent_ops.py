"""The softmax cross-entropy builders (tf.nn.softmax_cross_entropy_with_logits[_v2],
tf.nn.sparse_softmax_cross_entropy_with_logits) with the graph TF's Python layer builds:
logits flattened to [batch, classes], one SoftmaxCrossEntropyWithLogits (or Sparse) op,
the loss reshaped back."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, math_ops


def _flatten_outer_dims(logits):
    rank = array_ops.rank(logits)
    last_dim_size = array_ops.slice(array_ops.shape(logits), [math_ops.subtract(rank, 1)], [1])
    output = array_ops.reshape(logits, array_ops.concat([[-1], last_dim_size], 0))
    shape = logits.shape
    if shape.rank is not None:
        dims = shape.as_list()
        if None not in dims[:-1]:
            product = 1
            for d in dims[:-1]:
                product *= d
            output.set_shape([product, dims[-1]])
    return output


def _xent_v2_helper(labels, logits, axis=-1, name=None):
    with ops.name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as name:
        logits = ops.convert_to_tensor(logits, name="logits")
        labels = ops.convert_to_tensor(labels, name="labels")
        to_float32 = logits.dtype in (dtypes.float16, dtypes.bfloat16)
        precise_logits = math_ops.cast(logits, dtypes.float32) if to_float32 else logits
        labels = math_ops.cast(labels, precise_logits.dtype)
        input_rank = array_ops.rank(precise_logits)
        shape = logits.shape
        if axis != -1:
            def move_dim_to_end(tensor, dim_index, rank):
                return array_ops.transpose(tensor, array_ops.concat(
                    [math_ops.range(dim_index), math_ops.range(dim_index + 1, rank),
                     [dim_index]], 0))
            precise_logits = move_dim_to_end(precise_logits, axis, input_rank)
            labels = move_dim_to_end(labels, axis, input_rank)
        input_shape = array_ops.shape(precise_logits)
        precise_logits = _flatten_outer_dims(precise_logits)
        labels = _flatten_outer_dims(labels)
        cost, _ = apply_op("SoftmaxCrossEntropyWithLogits", name=name,
                           features=precise_logits, labels=labels)
        output_shape = array_ops.slice(input_shape, [0], [math_ops.subtract(input_rank, 1)])
        cost = array_ops.reshape(cost, output_shape)
        if shape.rank is not None:
            dims = shape.as_list()
            del dims[axis]
            cost.set_shape(dims)
        return math_ops.cast(cost, logits.dtype) if to_float32 else cost


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name=None, dim=None):
    """Cross-entropy of softmax(logits) against label distributions; gradients flow into
    both labels and logits."""
    axis = -1 if axis is None and dim is None else (axis if axis is not None else dim)
    return _xent_v2_helper(labels=labels, logits=logits, axis=axis, name=name)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1,
                                      name=None, axis=None):
    """TF 1.x's deprecated form: no gradient flows into labels."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `softmax_cross_entropy_with_logits` with named arguments "
                         "(labels=..., logits=..., ...).")
    axis = dim if axis is None else axis
    with ops.name_scope(name, "softmax_cross_entropy_with_logits_sg",
                        [logits, labels]) as name:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=axis,
                                                name=name)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Cross-entropy of softmax(logits) against integer class labels."""
    if _sentinel is not None or labels is None or logits is None:
        raise ValueError("Only call `sparse_softmax_cross_entropy_with_logits` with named "
                         "arguments (labels=..., logits=..., ...).")
    with ops.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = ops.convert_to_tensor(labels)
        logits = ops.convert_to_tensor(logits)
        precise_logits = (math_ops.cast(logits, dtypes.float32)
                          if logits.dtype == dtypes.float16 else logits)
        labels_static_shape = labels.shape
        labels_shape = array_ops.shape(labels)
        lrank, grank = labels_static_shape.rank, logits.shape.rank
        if grank == 0:
            raise ValueError(f"`logits` cannot be a scalar. Received logits={logits}`")
        if grank is not None and lrank is not None and lrank != grank - 1:
            raise ValueError(
                "`labels.shape.rank` must equal `logits.shape.rank - 1`. Received: "
                f"labels.shape={labels_static_shape} of rank {lrank} and "
                f"logits.shape={logits.shape} of rank {grank}")
        if grank == 2:
            cost, _ = apply_op("SparseSoftmaxCrossEntropyWithLogits", name=name,
                               features=precise_logits, labels=labels)
            return math_ops.cast(cost, dtypes.float16) if logits.dtype == dtypes.float16 \
                else cost
        num_classes = array_ops.shape(logits)[array_ops.rank(logits) - 1]
        precise_logits = array_ops.reshape(precise_logits, [-1, num_classes])
        labels = array_ops.reshape(labels, [-1])
        cost, _ = apply_op("SparseSoftmaxCrossEntropyWithLogits", name=name,
                           features=precise_logits, labels=labels)
        cost = array_ops.reshape(cost, labels_shape)
        cost.set_shape(labels_static_shape)
        return math_ops.cast(cost, dtypes.float16) if logits.dtype == dtypes.float16 else cost


__all__ = ["softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits"]
