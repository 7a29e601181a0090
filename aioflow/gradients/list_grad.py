"""Gradient functions of the TensorList ops (TF's list_ops.py): a list's gradient is a list
of its elements' gradients (a read's gradient is a write, a stack's an unstack, ...)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops
from aioflow.ops.constant_op import constant


def _build_element_shape(shape):
    """TF's _build_element_shape: a tensor as it is; unknown -> -1; a scalar -> an empty
    int32 vector; dims with None -> -1."""
    if isinstance(shape, ops.Tensor):
        return shape
    if isinstance(shape, tensor_shape.TensorShape):
        shape = shape.as_list() if shape.rank is not None else None
    if shape is None:
        return -1
    if not shape:
        return constant([], dtype=dtypes.int32)
    return [d if d is not None else -1 for d in shape]


def _element_shape_of(handle):
    return apply_op("TensorListElementShape", input_handle=handle, shape_type=dtypes.int32)


def _empty_list(element_dtype, element_shape):
    return apply_op("EmptyTensorList", element_shape=_build_element_shape(element_shape),
                    element_dtype=element_dtype, max_num_elements=-1)


@RegisterGradient("TensorListPushBack")
def _push_back_grad(op, dresult):
    return apply_op("TensorListPopBack", input_handle=dresult,
                    element_shape=array_ops.shape(op.inputs[1]),
                    element_dtype=op.get_attr("element_dtype"))


@RegisterGradient("TensorListPopBack")
def _pop_back_grad(op, dlist, delement):
    if dlist is None:
        dlist = _empty_list(delement.dtype, _element_shape_of(op.outputs[0]))
    if delement is None:
        delement = array_ops.zeros_like(op.outputs[1])
    return apply_op("TensorListPushBack", input_handle=dlist, tensor=delement), None


@RegisterGradient("TensorListStack")
def _stack_grad(unused_op, dtensor):
    return apply_op("TensorListFromTensor", tensor=dtensor,
                    element_shape=_build_element_shape(dtensor.shape[1:])), None


@RegisterGradient("TensorListConcatV2")
def _concat_v2_grad(op, dtensor, unused_dlengths):
    dlist = apply_op("TensorListSplit", tensor=dtensor,
                     element_shape=_build_element_shape(_element_shape_of(op.inputs[0])),
                     lengths=op.outputs[1])
    return dlist, None, None


@RegisterGradient("TensorListSplit")
def _split_grad(op, dlist):
    tensor, _, lengths = op.inputs
    element_shape = array_ops.slice(array_ops.shape(tensor), [1], [-1])
    element_shape = array_ops.concat([[-1], element_shape], axis=0)
    return apply_op("TensorListConcatV2", input_handle=dlist, element_shape=element_shape,
                    leading_dims=lengths, element_dtype=op.inputs[0].dtype)[0], None, None


@RegisterGradient("TensorListFromTensor")
def _from_tensor_grad(op, dlist):
    t = op.inputs[0]
    if t.shape.rank and t.shape.dims[0].value is not None:
        num_elements = t.shape.dims[0].value
    else:
        num_elements = None
    if dlist is None:
        dlist = _empty_list(t.dtype, _element_shape_of(op.outputs[0]))
    tensor_grad = apply_op("TensorListStack", input_handle=dlist,
                           element_shape=array_ops.slice(array_ops.shape(t), [1], [-1]),
                           element_dtype=t.dtype,
                           num_elements=-1 if num_elements is None else num_elements)
    return tensor_grad, None


@RegisterGradient("TensorListGetItem")
def _get_item_grad(op, ditem):
    list_size = apply_op("TensorListLength", input_handle=op.inputs[0])
    reserved = apply_op("TensorListReserve", element_shape=_element_shape_of(op.inputs[0]),
                        num_elements=list_size, element_dtype=ditem.dtype)
    list_grad = apply_op("TensorListSetItem", input_handle=reserved, index=op.inputs[1],
                         item=ditem)
    return list_grad, None, None


@RegisterGradient("TensorListSetItem")
def _set_item_grad(op, dlist):
    input_list, index, item = op.inputs
    list_grad = apply_op("TensorListSetItem", input_handle=dlist, index=index,
                         item=array_ops.zeros_like(item))
    element_grad = apply_op("TensorListGetItem", input_handle=dlist, index=index,
                            element_shape=_build_element_shape(array_ops.shape(item)),
                            element_dtype=item.dtype)
    if op.get_attr("resize_if_index_out_of_bounds"):
        input_list_size = apply_op("TensorListLength", input_handle=input_list)
        list_grad = apply_op("TensorListResize", input_handle=list_grad, size=input_list_size)
    return list_grad, None, element_grad


@RegisterGradient("TensorListResize")
def _resize_grad(op, dlist):
    input_list_size = apply_op("TensorListLength", input_handle=op.inputs[0])
    return apply_op("TensorListResize", input_handle=dlist, size=input_list_size), None


@RegisterGradient("TensorListGather")
def _gather_grad(op, dtensor):
    input_list, indices, _ = op.inputs
    element_shape = _element_shape_of(input_list)
    num_elements = apply_op("TensorListLength", input_handle=input_list)
    dlist = apply_op("TensorListReserve", element_shape=element_shape,
                     num_elements=num_elements, element_dtype=dtensor.dtype)
    dlist = apply_op("TensorListScatterIntoExistingList", input_handle=dlist,
                     tensor=dtensor, indices=indices)
    return dlist, None, None


@RegisterGradient("TensorListScatterIntoExistingList")
def _scatter_into_existing_list_grad(op, dlist):
    _, tensor, indices = op.inputs
    dtensor = apply_op("TensorListGather", input_handle=dlist, indices=indices,
                       element_shape=array_ops.slice(array_ops.shape(tensor), [1], [-1]),
                       element_dtype=tensor.dtype)
    zeros = array_ops.zeros_like(tensor)
    dlist = apply_op("TensorListScatterIntoExistingList", input_handle=dlist, tensor=zeros,
                     indices=indices)
    return dlist, dtensor, None
