"""OpDefs of TF's Roll, InvertPermutation, ListDiff (manip_ops.cc, array_ops.cc), LinSpace
and Bincount (math_ops.cc), FakeQuantWithMinMax{Args,Vars,VarsPerChannel} (array_ops.cc:
the quantization that quantization-aware-trained graphs keep). Spelled as TF 2.21's
(tests/test_misc_ops.py compares them with tests/data/misc_ops_tf.json)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_INDEX = "{int32, int64}"


def _vector(op) -> list[TensorShape]:
    return [TensorShape([None])]


def _per_channel(op) -> list[TensorShape]:
    data, low = op.inputs[0].shape, op.inputs[1].shape
    if data.rank and low.rank == 1:
        a, b = data.as_list()[-1], low.as_list()[0]
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b} for "
                             f"'{op.name}' ({op.type}) with input shapes: {data}, {low}, "
                             f"{op.inputs[2].shape}.")
    return [data]


(register_op("Roll").input("input: T").input("shift: Tshift").input("axis: Taxis")
    .output("output: T").attr("T: type").attr(f"Tshift: {_INDEX}").attr(f"Taxis: {_INDEX}")
    .set_shape_fn(cs.unchanged_shape))
(register_op("InvertPermutation").input("x: T").output("y: T")
    .attr(f"T: {_INDEX} = DT_INT32").set_shape_fn(cs.unchanged_shape))
(register_op("ListDiff").input("x: T").input("y: T").output("out: T").output("idx: out_idx")
    .attr("T: type").attr(f"out_idx: {_INDEX} = DT_INT32")
    .set_shape_fn(lambda op: [TensorShape([None]), TensorShape([None])]))
(register_op("LinSpace").input("start: T").input("stop: T").input("num: Tidx")
    .output("output: T").attr("T: {bfloat16, half, float, double}")
    .attr(f"Tidx: {_INDEX} = DT_INT32").set_shape_fn(_vector))
(register_op("Bincount").input("arr: int32").input("size: int32").input("weights: T")
    .output("bins: T").attr("T: {int32, int64, float, double}").set_shape_fn(_vector))
(register_op("FakeQuantWithMinMaxArgs").input("inputs: float").output("outputs: float")
    .attr("min: float = -6.0").attr("max: float = 6.0").attr("num_bits: int = 8")
    .attr("narrow_range: bool = false").set_shape_fn(cs.unchanged_shape))
(register_op("FakeQuantWithMinMaxVars").input("inputs: float").input("min: float")
    .input("max: float").output("outputs: float").attr("num_bits: int = 8")
    .attr("narrow_range: bool = false").set_shape_fn(cs.unchanged_shape))
(register_op("FakeQuantWithMinMaxVarsPerChannel").input("inputs: float").input("min: float")
    .input("max: float").output("outputs: float").attr("num_bits: int = 8")
    .attr("narrow_range: bool = false").set_shape_fn(_per_channel))
