"""OpDefs of TF's v1 control-flow ops (tensorflow/core/ops/control_flow_ops.cc): Switch,
Merge, Enter, Exit, NextIteration, LoopCond, ControlTrigger, Abort (and their Ref forms);
plus Assert (logging_ops.cc) and CheckNumerics (array_ops.cc) when no other module has
declared them."""

from __future__ import annotations

from aioflow.framework import op_def_registry
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)
_SCALAR = TensorShape([])


def _switch_shape(op) -> list[TensorShape]:
    """Both outputs have the data input's shape (the predicate must be a scalar)."""
    pred = op.inputs[1].shape
    if pred.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {pred.rank} for '{op.name}' "
                         f"({op.type}) with input shapes: {op.inputs[0].shape}, {pred}.")
    shape = op.inputs[0].shape
    return [shape, shape]


def _merge_shape(op) -> list[TensorShape]:
    """TF's MergeShape: the first input's shape, with every dimension on which the inputs
    disagree made unknown (unknown if the ranks differ); value_index is a scalar."""
    out = op.inputs[0].shape
    if out.rank is None:
        return [_UNKNOWN, _SCALAR]
    dims = out.as_list()
    for t in op.inputs[1:]:
        shape = t.shape
        if shape.rank is None or shape.rank != len(dims):
            return [_UNKNOWN, _SCALAR]
        for d, value in enumerate(shape.as_list()):
            if value != dims[d]:
                dims[d] = None
    return [TensorShape(dims), _SCALAR]


def _enter_shape(op) -> list[TensorShape]:
    """Unknown, except for a loop constant, which keeps its input's shape (as TF)."""
    is_constant = op._get_attr_proto("is_constant")
    if is_constant is not None and is_constant.b:
        return [op.inputs[0].shape]
    return [_UNKNOWN]


def _unchanged(op) -> list[TensorShape]:
    return [op.inputs[0].shape]


def _loop_cond_shape(op) -> list[TensorShape]:
    shape = op.inputs[0].shape
    if shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {shape.rank} for '{op.name}' "
                         f"(LoopCond) with input shapes: {shape}.")
    return [_SCALAR]


def _no_outputs(op) -> list[TensorShape]:
    return []


(register_op("Switch").input("data: T").input("pred: bool").output("output_false: T")
    .output("output_true: T").attr("T: type").set_shape_fn(_switch_shape))
(register_op("RefSwitch").input("data: Ref(T)").input("pred: bool")
    .output("output_false: Ref(T)").output("output_true: Ref(T)").attr("T: type")
    .set_allows_uninitialized_input().set_shape_fn(_switch_shape))
(register_op("Merge").input("inputs: N * T").output("output: T").output("value_index: int32")
    .attr("T: type").attr("N: int >= 1").set_shape_fn(_merge_shape))
(register_op("RefMerge").input("inputs: Ref(N * T)").output("output: Ref(T)")
    .output("value_index: int32").attr("T: type").attr("N: int >= 1")
    .set_shape_fn(_merge_shape))
(register_op("Enter").input("data: T").output("output: T").attr("T: type")
    .attr("frame_name: string").attr("is_constant: bool = false")
    .attr("parallel_iterations: int = 10").set_shape_fn(_enter_shape))
(register_op("RefEnter").input("data: Ref(T)").output("output: Ref(T)").attr("T: type")
    .attr("frame_name: string").attr("is_constant: bool = false")
    .attr("parallel_iterations: int = 10").set_shape_fn(_unchanged))
(register_op("Exit").input("data: T").output("output: T").attr("T: type")
    .set_shape_fn(_unchanged))
(register_op("RefExit").input("data: Ref(T)").output("output: Ref(T)").attr("T: type")
    .set_shape_fn(_unchanged))
(register_op("NextIteration").input("data: T").output("output: T").attr("T: type")
    .set_shape_fn(_unchanged))
(register_op("RefNextIteration").input("data: Ref(T)").output("output: Ref(T)")
    .attr("T: type").set_shape_fn(_unchanged))
(register_op("LoopCond").input("input: bool").output("output: bool")
    .set_shape_fn(_loop_cond_shape))
register_op("ControlTrigger").set_shape_fn(_no_outputs)
(register_op("Abort").attr("error_msg: string = ''").attr("exit_without_error: bool = false")
    .set_shape_fn(_no_outputs))


def _declared(name: str) -> bool:
    return name in op_def_registry._registry


# Assert (logging_ops.cc) and CheckNumerics (array_ops.cc) belong to other op families;
# declare them here only if their own modules have not.
if not _declared("Assert"):
    (register_op("Assert").input("condition: bool").input("data: T").set_is_stateful()
        .attr("T: list(type)").attr("summarize: int = 3").set_shape_fn(_no_outputs))
if not _declared("CheckNumerics"):
    (register_op("CheckNumerics").input("tensor: T").output("output: T")
        .attr("T: {bfloat16, half, float, double}").attr("message: string")
        .set_is_stateful().set_shape_fn(_unchanged))

# The N-way Switch TF's Case lowering makes: `data` goes to output `output_index` (out of
# range: the last), the other outputs are dead.
(register_op("_SwitchN").input("data: T").input("output_index: int32")
    .output("outputs: num_outs * T").attr("num_outs: int >= 1").attr("T: type")
    .set_shape_fn(lambda op: [op.inputs[0].shape] * len(op.outputs)))
