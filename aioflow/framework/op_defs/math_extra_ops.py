"""OpDefs of TF's special functions and the array ops a text or embedding model adds:
Lgamma, Digamma, ClipByValue, Unique/UniqueV2/UniqueWithCounts(V2), BroadcastArgs,
ReverseSequence, Bucketize, TensorScatterUpdate/Add/Sub/Max/Min and ScatterNdNonAliasingAdd
(tensorflow/core/ops/{math,array}_ops.cc)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_FLOAT = "{bfloat16, half, float, double}"


def _vector(op) -> list[TensorShape]:
    return [TensorShape([None])]


def _unique(op) -> list[TensorShape]:
    """y: [?]; idx: x's length; count: [?]."""
    x = op.inputs[0].shape
    idx = TensorShape([x.as_list()[0]]) if x.rank == 1 else TensorShape([None])
    return [TensorShape([None]), idx] + [TensorShape([None])] * (len(op.outputs) - 2)


def _unique_v2(op) -> list[TensorShape]:
    x = op.inputs[0].shape
    y = cs.UNKNOWN if x.rank is None else cs._of_rank(x.rank)
    return [y, TensorShape([None])] + [TensorShape([None])] * (len(op.outputs) - 2)


for _name in ("Lgamma", "Digamma"):
    (register_op(_name).input("x: T").output("y: T").attr(f"T: {_FLOAT}")
        .set_shape_fn(cs.unchanged_shape))
(register_op("ClipByValue").input("t: T").input("clip_value_min: T").input("clip_value_max: T")
    .output("output: T").attr("T: numbertype").set_shape_fn(cs.unchanged_shape))
(register_op("Unique").input("x: T").output("y: T").output("idx: out_idx").attr("T: type")
    .attr("out_idx: {int32, int64} = DT_INT32").set_shape_fn(_unique))
(register_op("UniqueWithCounts").input("x: T").output("y: T").output("idx: out_idx")
    .output("count: out_idx").attr("T: type").attr("out_idx: {int32, int64} = DT_INT32")
    .set_shape_fn(_unique))
(register_op("UniqueV2").input("x: T").input("axis: Taxis").output("y: T")
    .output("idx: out_idx").attr("T: type").attr("Taxis: {int32, int64} = DT_INT64")
    .attr("out_idx: {int32, int64} = DT_INT32").set_shape_fn(_unique_v2))
(register_op("UniqueWithCountsV2").input("x: T").input("axis: Taxis").output("y: T")
    .output("idx: out_idx").output("count: out_idx").attr("T: type")
    .attr("Taxis: {int32, int64} = DT_INT64").attr("out_idx: {int32, int64} = DT_INT32")
    .set_shape_fn(_unique_v2))
(register_op("BroadcastArgs").input("s0: T").input("s1: T").output("r0: T")
    .attr("T: {int32, int64} = DT_INT32").set_shape_fn(_vector))
(register_op("ReverseSequence").input("input: T").input("seq_lengths: Tlen").output("output: T")
    .attr("seq_dim: int").attr("batch_dim: int = 0").attr("T: type")
    .attr("Tlen: {int32, int64} = DT_INT64").set_shape_fn(cs.unchanged_shape))
(register_op("Bucketize").input("input: T").output("output: int32")
    .attr("T: {int32, int64, float, double}").attr("boundaries: list(float)")
    .set_shape_fn(cs.unchanged_shape))
(register_op("TensorScatterUpdate").input("tensor: T").input("indices: Tindices")
    .input("updates: T").output("output: T").attr("T: type")
    .attr("Tindices: {int16, int32, int64, uint16}").attr("bad_indices_policy: string = ''")
    .set_shape_fn(cs.unchanged_shape))
for _name in ("TensorScatterAdd", "TensorScatterSub", "TensorScatterMax", "TensorScatterMin"):
    (register_op(_name).input("tensor: T").input("indices: Tindices").input("updates: T")
        .output("output: T").attr("T: type").attr("Tindices: {int32, int64}")
        .attr("bad_indices_policy: string = ''").set_shape_fn(cs.unchanged_shape))
(register_op("ScatterNdNonAliasingAdd").input("input: T").input("indices: Tindices")
    .input("updates: T").output("output: T")
    .attr("T: {numbertype, bool}").attr("Tindices: {int32, int64}")
    .attr("bad_indices_policy: string = ''").set_shape_fn(cs.unchanged_shape))
