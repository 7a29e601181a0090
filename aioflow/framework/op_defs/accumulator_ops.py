"""OpDefs of TF's conditional accumulators (tensorflow/core/ops/data_flow_ops.cc), what
SyncReplicasOptimizer aggregates gradients with: the dense accumulator as a resource
(ResourceConditionalAccumulator, what TF 2's Python builds) and as TF 1's Ref(string)
handle (ConditionalAccumulator), the sparse one (Ref(string) only, as TF's), and the ops
that apply, take, count and set the global step.

Spelled as TF 2.21's OpDefs (tests/test_accumulators.py compares them field by field with
tests/data/accumulators_tf.json, written by TensorFlow)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_ATTRS = ("dtype: numbertype", "shape: shape", "container: string = ''",
          "shared_name: string = ''", "reduction_type: {'MEAN', 'SUM'} = 'MEAN'")


def _ref_handle(op) -> list[TensorShape]:
    return [TensorShape([2])]  # (TF's legacy [container, name] string pair)


def _vector_unknown_vector(op) -> list[TensorShape]:
    return [TensorShape([None]), TensorShape(None), TensorShape([None])]


def _accumulator(name: str, handle: str) -> None:
    builder = register_op(name).output(f"handle: {handle}")
    for spec in _ATTRS:
        builder.attr(spec)
    builder.set_is_stateful().set_shape_fn(cs.scalar if handle == "resource"
                                           else _ref_handle)


def _user(name: str, handle: str):
    """An op on an accumulator: stateful in its resource form only (as TF's)."""
    builder = register_op(name).input(f"handle: {handle}")
    return builder.set_is_stateful() if handle == "resource" else builder


_accumulator("ConditionalAccumulator", "Ref(string)")
_accumulator("ResourceConditionalAccumulator", "resource")
_accumulator("SparseConditionalAccumulator", "Ref(string)")

for _prefix, _handle in (("", "Ref(string)"), ("Resource", "resource")):
    (_user(f"{_prefix}AccumulatorApplyGradient", _handle).input("local_step: int64")
        .input("gradient: dtype").attr("dtype: numbertype").set_shape_fn(cs.no_outputs))
    (_user(f"{_prefix}AccumulatorTakeGradient", _handle).input("num_required: int32")
        .output("average: dtype").attr("dtype: numbertype").set_shape_fn(cs.unknown))
    (_user(f"{_prefix}AccumulatorNumAccumulated", _handle)
        .output("num_accumulated: int32").set_shape_fn(cs.scalar))
    (_user(f"{_prefix}AccumulatorSetGlobalStep", _handle).input("new_global_step: int64")
        .set_shape_fn(cs.no_outputs))

(_user("SparseAccumulatorApplyGradient", "Ref(string)").input("local_step: int64")
    .input("gradient_indices: int64").input("gradient_values: dtype")
    .input("gradient_shape: int64").attr("dtype: numbertype").attr("has_known_shape: bool")
    .set_shape_fn(cs.no_outputs))
(_user("SparseAccumulatorTakeGradient", "Ref(string)").input("num_required: int32")
    .output("indices: int64").output("values: dtype").output("shape: int64")
    .attr("dtype: numbertype").set_shape_fn(_vector_unknown_vector))
