"""OpDefs of TF's TensorArray V3 ops (tensorflow/core/ops/data_flow_ops.cc)."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)
_SCALAR = TensorShape([])


def _check_rank(op, index: int, rank: int) -> None:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.rank} for "
                         f"'{op.name}' ({op.type}) with input shapes: "
                         f"{', '.join(str(t.shape) for t in op.inputs)}.")


def _tensor_array_shape(op) -> list[TensorShape]:
    _check_rank(op, 0, 0)
    # TF gives the resource handle shape [2] (the legacy string-pair handle).
    return [TensorShape([2]), _SCALAR]


def _write_shape(op) -> list[TensorShape]:
    _check_rank(op, 1, 0)
    _check_rank(op, 3, 0)
    return [_SCALAR]


def _read_shape(op) -> list[TensorShape]:
    _check_rank(op, 1, 0)
    _check_rank(op, 2, 0)
    return [_UNKNOWN]


def _gather_shape(op) -> list[TensorShape]:
    """[len(indices)] + the element_shape attr."""
    _check_rank(op, 1, 1)
    _check_rank(op, 2, 0)
    indices = op.inputs[1].shape
    element = op.get_attr("element_shape")
    lead = indices if indices.rank is not None else TensorShape([None])
    return [lead.concatenate(element)]


def _scatter_shape(op) -> list[TensorShape]:
    _check_rank(op, 1, 1)
    _check_rank(op, 3, 0)
    indices, value = op.inputs[1].shape, op.inputs[2].shape
    if value.rank == 0:
        raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                         f"({op.type}).")
    if indices.rank == 1 and value.rank is not None:
        n, m = indices.as_list()[0], value.as_list()[0]
        if n is not None and m is not None and n != m:
            raise ValueError(f"Dimensions must be equal, but are {m} and {n} for "
                             f"'{op.name}' ({op.type}).")
    return [_SCALAR]


def _concat_shape(op) -> list[TensorShape]:
    _check_rank(op, 1, 0)
    return [_UNKNOWN, TensorShape([None])]


def _split_shape(op) -> list[TensorShape]:
    _check_rank(op, 2, 1)
    _check_rank(op, 3, 0)
    return [_SCALAR]


def _scalar(op) -> list[TensorShape]:
    return [_SCALAR]


def _no_outputs(op) -> list[TensorShape]:
    return []


(register_op("TensorArrayV3").input("size: int32").attr("dtype: type")
    .attr("element_shape: shape = { unknown_rank: true }").attr("dynamic_size: bool = false")
    .attr("clear_after_read: bool = true").attr("identical_element_shapes: bool = false")
    .attr("tensor_array_name: string = ''").output("handle: resource").output("flow: float")
    .set_is_stateful().set_shape_fn(_tensor_array_shape))
(register_op("TensorArrayWriteV3").input("handle: resource").input("index: int32")
    .input("value: T").input("flow_in: float").output("flow_out: float").attr("T: type")
    .set_shape_fn(_write_shape))
(register_op("TensorArrayReadV3").input("handle: resource").input("index: int32")
    .input("flow_in: float").output("value: dtype").attr("dtype: type")
    .set_shape_fn(_read_shape))
(register_op("TensorArrayGatherV3").input("handle: resource").input("indices: int32")
    .input("flow_in: float").output("value: dtype").attr("dtype: type")
    .attr("element_shape: shape = { unknown_rank: true }").set_shape_fn(_gather_shape))
(register_op("TensorArrayScatterV3").input("handle: resource").input("indices: int32")
    .input("value: T").input("flow_in: float").output("flow_out: float").attr("T: type")
    .set_shape_fn(_scatter_shape))
(register_op("TensorArrayConcatV3").input("handle: resource").input("flow_in: float")
    .output("value: dtype").output("lengths: int64").attr("dtype: type")
    .attr("element_shape_except0: shape = { unknown_rank: true }")
    .set_shape_fn(_concat_shape))
(register_op("TensorArraySplitV3").input("handle: resource").input("value: T")
    .input("lengths: int64").input("flow_in: float").output("flow_out: float")
    .attr("T: type").set_shape_fn(_split_shape))
(register_op("TensorArraySizeV3").input("handle: resource").input("flow_in: float")
    .output("size: int32").set_shape_fn(_scalar))
(register_op("TensorArrayGradV3").input("handle: resource").input("flow_in: float")
    .output("grad_handle: resource").output("flow_out: float").attr("source: string")
    .set_is_stateful().set_shape_fn(lambda op: [TensorShape([2]), TensorShape([])]))
register_op("TensorArrayCloseV3").input("handle: resource").set_shape_fn(_no_outputs)
