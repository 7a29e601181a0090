"""OpDefs of TF's ParallelConcat (array_ops.cc) and of the two internal ops that
ParallelConcatRemovePass rewrites it into (inplace_ops.cc): `_ParallelConcatStart`
(an uninitialized buffer, stateful so it is never folded or shared) and
`_ParallelConcatUpdate` (writes one input into row `loc` of that buffer)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

(register_op("ParallelConcat").input("values: N * T").output("output: T")
    .attr("N: int >= 1").attr("T: type").attr("shape: shape").set_shape_fn(cs.shape_attr))
(register_op("_ParallelConcatStart").output("output: dtype").attr("shape: shape")
    .attr("dtype: type").set_is_stateful().set_shape_fn(cs.shape_attr))
(register_op("_ParallelConcatUpdate").input("value: T").input("update: T").output("output: T")
    .attr("T: type").attr("loc: int").set_shape_fn(cs.unchanged_shape))
