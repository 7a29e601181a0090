"""OpDefs of TF's printing ops (tensorflow/core/ops/logging_ops.cc): TF 1's Print (an
identity that writes its data to stderr), TF 2's PrintV2 (writes one string, as tf.print
does with StringFormat's output) and Timestamp. Assert is declared with the control-flow ops.

Spelled as TF 2.21's OpDefs (tests/test_logging_ops.py compares them field by field with
tests/data/logging_ops_tf.json, written by TensorFlow)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op


def _scalar_input(op) -> list:
    """PrintV2's shape function: the input must be a scalar; no outputs."""
    rank = op.inputs[0].shape.rank
    if rank is not None and rank != 0:
        raise ValueError(f"input must be a scalar, but has rank: {rank} for "
                         f"'{op.name}' ({op.type}) with input shapes: "
                         f"{op.inputs[0].shape}.")
    return []


(register_op("Print").input("input: T").input("data: U").output("output: T")
    .set_is_stateful().attr("T: type").attr("U: list(type) >= 0")
    .attr("message: string = ''").attr("first_n: int = -1").attr("summarize: int = 3")
    .set_shape_fn(cs.unchanged_shape))
register_op("Timestamp").output("ts: double").set_is_stateful().set_shape_fn(cs.scalar)
(register_op("PrintV2").input("input: string").set_is_stateful()
    .attr("output_stream: string = 'stderr'").attr("end: string = '\\n'")
    .set_shape_fn(_scalar_input))
