"""OpDefs of TF's manip ops (tensorflow/core/ops/manip_ops.cc): Roll. Spelled as TF 2.21's
(tests/test_misc_ops.py compares them with tests/data/misc_ops_tf.json)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

_INDEX = "{int32, int64}"

(register_op("Roll").input("input: T").input("shift: Tshift").input("axis: Taxis")
    .output("output: T").attr("T: type").attr(f"Tshift: {_INDEX}").attr(f"Taxis: {_INDEX}")
    .set_shape_fn(cs.unchanged_shape))
