"""tf.compat.v1.train.GradientDescentOptimizer: var -= lr * grad (ApplyGradientDescent);
an IndexedSlices gradient as a scatter-subtract of its rows (duplicates add up)."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import state_ops
from aioflow.train import training_ops
from aioflow.train.optimizer import Optimizer, cast


class GradientDescentOptimizer(Optimizer):
    """Plain gradient descent."""

    def __init__(self, learning_rate, use_locking: bool = False,
                 name: str = "GradientDescent"):
        super().__init__(use_locking, name)
        self._learning_rate = learning_rate
        self._learning_rate_tensor = None

    def _prepare(self) -> None:
        learning_rate = self._call_if_callable(self._learning_rate)
        self._learning_rate_tensor = ops.convert_to_tensor(learning_rate, name="learning_rate")

    def _apply_dense(self, grad, var):
        return training_ops.apply_gradient_descent(
            var, cast(self._learning_rate_tensor, var.dtype.base_dtype), grad,
            use_locking=self._use_locking).op

    def _resource_apply_dense(self, grad, handle):
        return training_ops.resource_apply_gradient_descent(
            handle.handle, cast(self._learning_rate_tensor, grad.dtype.base_dtype), grad,
            use_locking=self._use_locking)

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices):
        return apply_op("ResourceScatterAdd", resource=handle.handle, indices=indices,
                        updates=-grad * cast(self._learning_rate_tensor,
                                             grad.dtype.base_dtype))

    def _apply_sparse_duplicate_indices(self, grad, var):
        delta = IndexedSlices(
            grad.values * cast(self._learning_rate_tensor, var.dtype.base_dtype),
            grad.indices, grad.dense_shape)
        return state_ops.scatter_sub(var, delta.indices, delta.values,
                                     use_locking=self._use_locking)
