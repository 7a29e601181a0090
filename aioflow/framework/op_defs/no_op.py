"""The NoOp OpDef (tensorflow/core/ops/no_op.cc): no inputs, no outputs; a control anchor."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

register_op("NoOp").set_shape_fn(cs.no_outputs)
