"""Builders of TF's conditional accumulators (TF's data_flow_ops.py):
ConditionalAccumulator (dense, a resource as TF 2.21 builds it) and
SparseConditionalAccumulator (IndexedSlices, TF 1's ref handle: TF never moved it to a
resource). They build TF's nodes, names and casts, so a graph matches TF's node for node;
the kernels are aioflow/kernels/data_flow/accumulator_kernels.py."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.ops.math_ops import cast


def _int64(value):
    return cast(ops.convert_to_tensor(value), dtypes.int64)


class ConditionalAccumulatorBase:
    """What both accumulators share: dtype, shape, handle, count and global step."""

    _prefix = "Resource"  # of the count / global step ops

    def __init__(self, dtype, shape, accumulator_ref):
        self._dtype = dtypes.as_dtype(dtype)
        self._shape = (tensor_shape.TensorShape(shape) if shape is not None
                       else tensor_shape.unknown_shape())
        self._accumulator_ref = accumulator_ref
        self._name = accumulator_ref.op.name.split("/")[-1]

    @property
    def accumulator_ref(self):
        return self._accumulator_ref

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype

    def num_accumulated(self, name=None):
        """An int32 tensor: how many gradients are in now."""
        if name is None:
            name = f"{self._name}_NumAccumulated"
        return apply_op(f"{self._prefix}AccumulatorNumAccumulated",
                        handle=self._accumulator_ref, name=name)

    def set_global_step(self, new_global_step, name=None):
        """An op setting the accumulator's global step (gradients computed before it are
        dropped from then on)."""
        return apply_op(f"{self._prefix}AccumulatorSetGlobalStep",
                        handle=self._accumulator_ref,
                        new_global_step=_int64(new_global_step), name=name)


class ConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates dense gradients: those computed at the accumulator's step or later are
    added; take_grad waits for `num_required` of them and returns their mean."""

    def __init__(self, dtype, shape=None, shared_name=None, name="conditional_accumulator",
                 reduction_type="MEAN"):
        ref = apply_op("ResourceConditionalAccumulator", dtype=dtype,
                       shape=tensor_shape.TensorShape(shape), shared_name=shared_name or "",
                       name=name, reduction_type=reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_grad(self, grad, local_step=0, name=None):
        """An op adding `grad` (computed at `local_step`; dropped when stale)."""
        grad = ops.convert_to_tensor(grad, self._dtype)
        grad.shape.assert_is_compatible_with(self._shape)
        return apply_op("ResourceAccumulatorApplyGradient", handle=self._accumulator_ref,
                        local_step=_int64(local_step), gradient=grad, name=name)

    def take_grad(self, num_required, name=None):
        """The mean of `num_required` gradients (waits until they are in)."""
        out = apply_op("ResourceAccumulatorTakeGradient", handle=self._accumulator_ref,
                       num_required=num_required, dtype=self._dtype, name=name)
        out.set_shape(self._shape)
        return out


class SparseConditionalAccumulator(ConditionalAccumulatorBase):
    """Aggregates sparse gradients (IndexedSlices); the mean divides each row by the
    number of gradients that had it."""

    _prefix = ""

    def __init__(self, dtype, shape=None, shared_name=None,
                 name="sparse_conditional_accumulator", reduction_type="MEAN"):
        ref = apply_op("SparseConditionalAccumulator", dtype=dtype,
                       shape=tensor_shape.TensorShape(shape), shared_name=shared_name or "",
                       name=name, reduction_type=reduction_type)
        super().__init__(dtype, shape, ref)

    def apply_indexed_slices_grad(self, grad, local_step=0, name=None):
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step,
                               name=name)

    def apply_grad(self, grad_indices, grad_values, grad_shape=None, local_step=0,
                   name=None):
        """An op adding the sparse gradient (indices, values[, dense shape])."""
        local_step = _int64(local_step)
        return apply_op("SparseAccumulatorApplyGradient", handle=self._accumulator_ref,
                        local_step=local_step, gradient_indices=cast(grad_indices,
                                                                     dtypes.int64),
                        gradient_values=grad_values,
                        gradient_shape=cast([] if grad_shape is None else grad_shape,
                                            dtypes.int64),
                        has_known_shape=grad_shape is not None, name=name)

    def take_grad(self, num_required, name=None):
        """(indices, values, dense shape) of the mean of `num_required` gradients."""
        return apply_op("SparseAccumulatorTakeGradient", handle=self._accumulator_ref,
                        num_required=num_required, dtype=self._dtype, name=name)

    def take_indexed_slices_grad(self, num_required, name=None):
        """take_grad as IndexedSlices."""
        indices, values, shape = self.take_grad(num_required, name=name)
        return IndexedSlices(indices=indices, values=values, dense_shape=shape)


__all__ = ["ConditionalAccumulatorBase", "ConditionalAccumulator",
           "SparseConditionalAccumulator"]
