"""OpDefs of TF's TensorList ops (tensorflow/core/ops/list_ops.cc): the variant lists that
TF 2's tf.TensorArray is made of, and that a Keras RNN's loop reads and writes when it is
frozen with convert_variables_to_constants_v2 (which lowers its While to v1 control flow
and keeps the lists).

The shape functions are TF's without handle data (aioflow does not track the element
shape a variant carries): an element's shape comes from the op's element_shape input.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework.constant_value import constant_value, constant_value_as_shape
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape
from aioflow.proto import full_type_pb2

_UNKNOWN = TensorShape(None)
_SCALAR = TensorShape([])
_SHAPE_TYPE = "shape_type: {int32, int64}"


def _array_of(attr: str) -> full_type_pb2.FullTypeDef:
    """TFT_ARRAY[TFT_TENSOR[TFT_VAR attr]]: TF's full_type::Unary(TFT_ARRAY, attr)."""
    return full_type_pb2.FullTypeDef(
        type_id=full_type_pb2.TFT_ARRAY,
        args=[full_type_pb2.FullTypeDef(
            type_id=full_type_pb2.TFT_TENSOR,
            args=[full_type_pb2.FullTypeDef(type_id=full_type_pb2.TFT_VAR, s=attr)])])


def _rank_error(op, index: int, rank: int, at_least: bool = False) -> ValueError:
    shape = op.inputs[index].shape
    words = "at least rank" if at_least else "rank"
    return ValueError(f"Shape must be {words} {rank} but is rank {shape.rank} for "
                      f"'{op.name}' ({op.type}) with input shapes: "
                      f"{', '.join(str(t.shape) for t in op.inputs)}.")


def _check_rank(op, index: int, rank: int) -> None:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise _rank_error(op, index, rank)


def _check_rank_at_least(op, index: int, rank: int) -> None:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank < rank:
        raise _rank_error(op, index, rank, at_least=True)


def _element_shape(op, index: int) -> TensorShape:
    """TF's MakeShapeFromShapeTensorTreatScalarAsUnknownShape: a scalar (-1) is an unknown
    shape, a vector holds the dims (-1 unknown)."""
    tensor = op.inputs[index]
    if tensor.shape.rank == 0:
        return _UNKNOWN
    value = constant_value(tensor)
    if value is not None and np.ndim(value) == 0:
        return _UNKNOWN
    try:
        return constant_value_as_shape(tensor)
    except ValueError:
        return _UNKNOWN


def _handle(op) -> list[TensorShape]:
    return [_SCALAR]


def _resize_shape(op) -> list[TensorShape]:
    _check_rank(op, 1, 0)
    return [_SCALAR]


def _split_shape(op) -> list[TensorShape]:
    _check_rank_at_least(op, 0, 1)
    _check_rank(op, 2, 1)
    return [_SCALAR]


def _from_tensor_shape(op) -> list[TensorShape]:
    _check_rank_at_least(op, 0, 1)
    return [_SCALAR]


def _scatter_into_shape(op) -> list[TensorShape]:
    _check_rank_at_least(op, 1, 1)
    _check_rank(op, 2, 1)
    return [_SCALAR]


def _get_item_shape(op) -> list[TensorShape]:
    return [_element_shape(op, 2)]


def _stack_shape(op) -> list[TensorShape]:
    n = op.get_attr("num_elements")
    return [TensorShape([n if n >= 0 else None]).concatenate(_element_shape(op, 1))]


def _gather_shape(op) -> list[TensorShape]:
    return [op.inputs[1].shape.concatenate(_element_shape(op, 2))]


def _pop_back_shape(op) -> list[TensorShape]:
    return [_SCALAR, _UNKNOWN]


def _concat_shape(op) -> list[TensorShape]:
    element = _element_shape(op, 1)
    if element.rank is None or element.rank == 0:
        value = _UNKNOWN
    else:
        value = TensorShape([None]).concatenate(element.as_list()[1:])
    return [value, TensorShape([None])]


def _scalar(op) -> list[TensorShape]:
    return [_SCALAR]


def _unknown(op) -> list[TensorShape]:
    return [_UNKNOWN]


(register_op("EmptyTensorList").input("element_shape: shape_type")
    .input("max_num_elements: int32").output("handle: variant").attr("element_dtype: type")
    .attr(_SHAPE_TYPE).set_type_constructor(_array_of("element_dtype"))
    .set_shape_fn(_handle))
(register_op("TensorListReserve").input("element_shape: shape_type")
    .input("num_elements: int32").output("handle: variant").attr("element_dtype: type")
    .attr(_SHAPE_TYPE).set_type_constructor(_array_of("element_dtype"))
    .set_shape_fn(_handle))
(register_op("TensorListFromTensor").input("tensor: element_dtype")
    .input("element_shape: shape_type").output("output_handle: variant")
    .attr("element_dtype: type").attr(_SHAPE_TYPE)
    .set_type_constructor(_array_of("element_dtype")).set_shape_fn(_from_tensor_shape))
(register_op("TensorListGetItem").input("input_handle: variant").input("index: int32")
    .input("element_shape: Tshape").output("item: element_dtype").attr("element_dtype: type")
    .attr("Tshape: {int32, int64} = DT_INT32").set_shape_fn(_get_item_shape))
(register_op("TensorListSetItem").input("input_handle: variant").input("index: int32")
    .input("item: element_dtype").output("output_handle: variant").attr("element_dtype: type")
    .attr("resize_if_index_out_of_bounds: bool = false")
    .set_type_constructor(_array_of("element_dtype")).set_shape_fn(_handle))
(register_op("TensorListStack").input("input_handle: variant").input("element_shape: int32")
    .output("tensor: element_dtype").attr("element_dtype: type")
    .attr("num_elements: int = -1").set_shape_fn(_stack_shape))
(register_op("TensorListLength").input("input_handle: variant").output("length: int32")
    .set_shape_fn(_scalar))
(register_op("TensorListElementShape").input("input_handle: variant")
    .output("element_shape: shape_type").attr(_SHAPE_TYPE).set_shape_fn(_unknown))
(register_op("TensorListPushBack").input("input_handle: variant")
    .input("tensor: element_dtype").output("output_handle: variant")
    .attr("element_dtype: type").set_type_constructor(_array_of("element_dtype"))
    .set_shape_fn(_handle))
(register_op("TensorListPopBack").input("input_handle: variant")
    .input("element_shape: int32").output("output_handle: variant")
    .output("tensor: element_dtype").attr("element_dtype: type")
    .set_shape_fn(_pop_back_shape))
(register_op("TensorListGather").input("input_handle: variant").input("indices: int32")
    .input("element_shape: int32").output("values: element_dtype")
    .attr("element_dtype: type").set_shape_fn(_gather_shape))
(register_op("TensorListScatterIntoExistingList").input("input_handle: variant")
    .input("tensor: element_dtype").input("indices: int32").output("output_handle: variant")
    .attr("element_dtype: type").set_type_constructor(_array_of("element_dtype"))
    .set_shape_fn(_scatter_into_shape))
(register_op("TensorListConcatV2").input("input_handle: variant")
    .input("element_shape: shape_type").input("leading_dims: int64")
    .output("tensor: element_dtype").output("lengths: int64").attr("element_dtype: type")
    .attr(_SHAPE_TYPE).set_shape_fn(_concat_shape))
(register_op("TensorListSplit").input("tensor: element_dtype")
    .input("element_shape: shape_type").input("lengths: int64")
    .output("output_handle: variant").attr("element_dtype: type").attr(_SHAPE_TYPE)
    .set_type_constructor(_array_of("element_dtype")).set_shape_fn(_split_shape))
(register_op("TensorListResize").input("input_handle: variant").input("size: int32")
    .output("output_handle: variant").set_shape_fn(_resize_shape))
