"""OpDefs of the v1 summary ops (tensorflow/core/ops/logging_ops.cc): ScalarSummary,
HistogramSummary, TensorSummaryV2 and MergeSummary, each producing one serialized
`Summary` proto (a string scalar) that FileWriter.add_summary writes for TensorBoard."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op

(register_op("ScalarSummary").input("tags: string").input("values: T")
    .output("summary: string").attr("T: realnumbertype").set_shape_fn(cs.scalar))
(register_op("HistogramSummary").input("tag: string").input("values: T")
    .output("summary: string").attr("T: realnumbertype = DT_FLOAT")
    .set_shape_fn(cs.scalar))
(register_op("TensorSummaryV2").input("tag: string").input("tensor: T")
    .input("serialized_summary_metadata: string").output("summary: string").attr("T: type")
    .set_shape_fn(cs.scalar))
(register_op("MergeSummary").input("inputs: N * string").output("summary: string")
    .attr("N: int >= 1").set_shape_fn(cs.scalar))
