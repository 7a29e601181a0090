"""The OpDef of `_UnsafeReadVariable` (TF 1.x's resource_variable_ops.cc; TF 2.21 no
longer has it): ReadVariableOp's signature, for the reads ResourceVariableReadPass
rewrites; stateful as ReadVariableOp, so it is never folded or shared."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

(register_op("_UnsafeReadVariable").input("resource: resource").output("value: dtype")
    .attr("dtype: type").set_is_stateful().set_shape_fn(cs.unknown))
