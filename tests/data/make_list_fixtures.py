"""Writes tests/data/list_cases.{json,npz}: what TensorFlow 2.21's TensorList kernels
(the variant lists behind tf.TensorArray in TF 2 and behind the loops of a Keras RNN frozen
with convert_variables_to_constants_v2) compute, or the error they raise, program by
program; and tests/data/list_op_defs.pb, TF's OpDefs of those ops (an OpList).

A program (`PROGRAMS` below) is a function of `op`: `op("TensorListReserve",
element_shape=..., num_elements=..., element_dtype="float32")` runs one raw op on NumPy
inputs (and the list handles earlier ops returned) and returns its outputs (a tuple when
there are several); the program returns the values to compare (never a list handle).
Here `op` runs `tf.raw_ops.<Op>` eagerly with oneDNN off (the kernel itself, no shape
function in the way); tests/test_kernels_list.py runs the same programs on aioflow's
kernels. The outcome is the outputs, or the error class and message of the first op that
failed (eager's "{{function_node ...}}" prefix and " [Op:...]" suffix removed).

Run from the project root with a TensorFlow 2.21 environment (see tests/data/README.md):

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_list_fixtures.py

This module does not import TensorFlow at import time: the tests import `PROGRAMS`.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
f32, i32, i64 = np.float32, np.int32, np.int64

OP_NAMES = [
    "EmptyTensorList", "TensorListReserve", "TensorListFromTensor", "TensorListGetItem",
    "TensorListSetItem", "TensorListStack", "TensorListLength", "TensorListElementShape",
    "TensorListPushBack", "TensorListPopBack", "TensorListGather",
    "TensorListScatterIntoExistingList", "TensorListConcatV2", "TensorListSplit",
    "TensorListResize",
]

X = np.arange(24, dtype=f32).reshape(4, 2, 3) - 5.5
V = np.array([[1.5, -2.0], [3.0, 4.25], [-1.0, 0.5]], f32)


def _reserve(op, shape, n, dtype="float32"):
    return op("TensorListReserve", element_shape=np.asarray(shape, i32),
              num_elements=i32(n), element_dtype=dtype)


def _from(op, value, shape=-1):
    return op("TensorListFromTensor", tensor=value, element_shape=np.asarray(shape, i32))


def _stack(op, handle, shape=-1, dtype="float32", **attrs):
    return op("TensorListStack", input_handle=handle, element_shape=np.asarray(shape, i32),
              element_dtype=dtype, **attrs)


def _set(op, handle, index, item, **attrs):
    return op("TensorListSetItem", input_handle=handle, index=i32(index), item=item, **attrs)


def _get(op, handle, index, shape=-1, dtype="float32"):
    return op("TensorListGetItem", input_handle=handle, index=i32(index),
              element_shape=np.asarray(shape, i32), element_dtype=dtype)


def _length(op, handle):
    return op("TensorListLength", input_handle=handle)


# -- values ----------------------------------------------------------------------------------

def reserve_set_stack(op):
    lst = _reserve(op, [2], 3)
    lst = _set(op, lst, 1, V[0])
    return [_stack(op, lst, [2]), _length(op, lst)]


def reserve_unknown_shape_stack_infers_zeros(op):
    lst = _reserve(op, -1, 4)
    lst = _set(op, lst, 0, V[1])
    lst = _set(op, lst, 2, V[2])
    return [_stack(op, lst, -1), _stack(op, lst, [-1]), _stack(op, lst, [2], num_elements=4)]


def reserve_partial_shape(op):
    lst = _reserve(op, [-1, 2], 2)
    lst = _set(op, lst, 1, V)
    return [_stack(op, lst, [3, -1]), _get(op, lst, 0, [3, 2]), _get(op, lst, 0, -1)]


def stack_empty_list_with_known_shape(op):
    return [_stack(op, _reserve(op, [2, 0], 0), [2, 0]),
            _stack(op, _reserve(op, [3], 0), -1)]


def get_item_uninitialized_is_zeros(op):
    lst = _reserve(op, [2, 2], 3, "int64")
    return [_get(op, lst, 1, -1, "int64"), _get(op, lst, 2, [2, 2], "int64")]


def from_tensor_get_gather(op):
    lst = _from(op, X, [-1, 3])
    gathered = op("TensorListGather", input_handle=lst, indices=i32([3, 0, 0, 2]),
                  element_shape=i32(-1), element_dtype="float32")
    empty = op("TensorListGather", input_handle=lst, indices=np.zeros(0, i32),
               element_shape=i32([2, 3]), element_dtype="float32")
    return [_get(op, lst, 2), _get(op, lst, 0, [2, 3]), gathered, empty, _length(op, lst),
            _stack(op, lst)]


def from_tensor_vector_and_empty(op):
    a = _from(op, np.array([1, 2, 3], i64))
    b = _from(op, np.zeros((0, 5), f32), [5])
    return [_get(op, a, 1, -1, "int64"), _stack(op, a, -1, "int64"), _length(op, b),
            _stack(op, b, [5])]


def element_shape_int32_and_int64(op):
    outs = []
    for shape in ([-1, 3], -1, [], [4, 0]):
        lst = _reserve(op, shape, 1)
        for st in ("int32", "int64"):
            outs.append(op("TensorListElementShape", input_handle=lst, shape_type=st))
    outs.append(op("TensorListElementShape", input_handle=_from(op, X), shape_type="int32"))
    return outs


def set_item_overwrites_and_keeps_input(op):
    # a Keras RNN (return_sequences=False) rewrites index 0 every step
    l0 = _from(op, V)
    l1 = _set(op, l0, 0, np.array([9.0, 9.0], f32))
    l2 = _set(op, l1, 0, np.array([7.0, 8.0], f32))
    return [_stack(op, l0), _stack(op, l1), _stack(op, l2)]


def set_item_resizes_when_asked(op):
    lst = _reserve(op, [2], 0)
    lst = _set(op, lst, 3, V[0], resize_if_index_out_of_bounds=True)
    lst = _set(op, lst, 1, V[1], resize_if_index_out_of_bounds=True)
    return [_length(op, lst), _stack(op, lst, [2])]


def push_back_pop_back(op):
    lst = op("EmptyTensorList", element_shape=i32([2]), max_num_elements=i32(-1),
             element_dtype="float32")
    for row in V:
        lst = op("TensorListPushBack", input_handle=lst, tensor=row)
    shorter, last = op("TensorListPopBack", input_handle=lst, element_shape=i32([2]),
                       element_dtype="float32")
    return [last, _length(op, shorter), _stack(op, shorter), _stack(op, lst)]


def pop_back_uninitialized(op):
    lst = _reserve(op, [3], 2)
    _, last = op("TensorListPopBack", input_handle=lst, element_shape=i32([3]),
                 element_dtype="float32")
    return [last]


def push_back_strings_and_bools(op):
    s = op("EmptyTensorList", element_shape=i32(-1), max_num_elements=i32(3),
           element_dtype="string")
    s = op("TensorListPushBack", input_handle=s, tensor=np.array([b"a", b"bc"], object))
    s = op("TensorListPushBack", input_handle=s, tensor=np.array([b"", b"\xc3\xa9"], object))
    b = _from(op, np.array([[True, False], [False, False]]))
    return [_stack(op, s, -1, "string"), _get(op, s, 1, -1, "string"),
            _stack(op, b, -1, "bool")]


def scatter_into_existing_list(op):
    lst = _reserve(op, [2], 5)
    lst = op("TensorListScatterIntoExistingList", input_handle=lst, tensor=V,
             indices=i32([4, 0, 1]))
    lst = op("TensorListScatterIntoExistingList", input_handle=lst,
             tensor=np.zeros((0, 2), f32), indices=np.zeros(0, i32))
    return [_length(op, lst), _stack(op, lst, [2])]


def scatter_grows_the_list(op):
    # Only the written slots are read: the slots TF 2.21 adds are not uninitialized but
    # empty float tensors (shape [0]), which its Stack copies as garbage memory.
    lst = _reserve(op, [2], 2)
    lst = op("TensorListScatterIntoExistingList", input_handle=lst, tensor=V,
             indices=i32([4, 0, 1]))
    return [_length(op, lst)] + [_get(op, lst, i) for i in (0, 1, 4)]


def split_and_concat(op):
    value = np.arange(10, dtype=f32).reshape(5, 2)
    lst = op("TensorListSplit", tensor=value, element_shape=i32([-1, 2]),
             lengths=i64([2, 0, 3]))
    t, lengths = op("TensorListConcatV2", input_handle=lst, element_shape=i32([-1, 2]),
                    leading_dims=np.zeros(0, i64), element_dtype="float32")
    return [t, lengths, _length(op, lst), _get(op, lst, 2)]


def concat_with_uninitialized(op):
    lst = _reserve(op, [-1, 2], 3)
    lst = _set(op, lst, 1, V)
    t, lengths = op("TensorListConcatV2", input_handle=lst, element_shape=i32([-1, 2]),
                    leading_dims=i64([1, 0, 2]), element_dtype="float32")
    lst2 = _reserve(op, [2, 3], 2)
    t2, lengths2 = op("TensorListConcatV2", input_handle=lst2, element_shape=i64([2, 3]),
                      leading_dims=np.zeros(0, i64), element_dtype="float32")
    return [t, lengths, t2, lengths2]


def resize(op):
    lst = _from(op, V)
    longer = op("TensorListResize", input_handle=lst, size=i32(5))
    shorter = op("TensorListResize", input_handle=lst, size=i32(1))
    return [_stack(op, longer, [2]), _stack(op, shorter), _length(op, lst)]


def keras_rnn_pattern(op):
    """What a lowered Keras LSTM loop does: unstack the time-major input, read step t,
    write step t (and rewrite index 0), stack."""
    xs = np.arange(12, dtype=f32).reshape(3, 2, 2)
    inputs = _from(op, xs, [2, 2])
    outs = _reserve(op, [2, 2], 3)
    last = _reserve(op, [2, 2], 1)
    for t in range(3):
        step = _get(op, inputs, t, [2, 2])
        outs = _set(op, outs, t, np.asarray(step) + t)
        last = _set(op, last, 0, np.asarray(step) - t)
    return [_stack(op, outs, [2, 2], num_elements=3), _stack(op, last, [2, 2], num_elements=1)]


# -- errors ----------------------------------------------------------------------------------

def err_get_item_out_of_range(op):
    return [_get(op, _from(op, V), 3)]


def err_get_item_negative(op):
    return [_get(op, _from(op, V), -1)]


def err_get_item_uninitialized_unknown_shape(op):
    return [_get(op, _reserve(op, [-1, 2], 2), 0, -1)]


def err_get_item_wrong_dtype(op):
    return [_get(op, _from(op, V), 0, -1, "int32")]


def err_set_item_out_of_range(op):
    return [_stack(op, _set(op, _from(op, V), 3, V[0]))]


def err_set_item_negative(op):
    return [_stack(op, _set(op, _from(op, V), -1, V[0]))]


# (A negative index with resize_if_index_out_of_bounds=True crashes TF 2.21's process: no
# case records it; aioflow refuses it as it does without the resize.)


def err_set_item_incompatible_shape(op):
    return [_stack(op, _set(op, _reserve(op, [2], 2), 0, V))]


def err_set_item_wrong_dtype(op):
    return [_stack(op, _set(op, _from(op, V), 0, np.array([1, 2], i32)))]


def err_stack_wrong_dtype(op):
    return [_stack(op, _from(op, V), -1, "int32")]


def err_stack_num_elements(op):
    return [_stack(op, _from(op, V), -1, num_elements=2)]


def err_stack_empty_unknown_shape(op):
    return [_stack(op, _reserve(op, [-1, 2], 0), [-1, 2])]


def err_stack_only_uninitialized(op):
    return [_stack(op, _reserve(op, -1, 2), [3, -1])]


def err_stack_incompatible_element_shape(op):
    return [_stack(op, _from(op, V), [3])]


def err_stack_incompatible_rank(op):
    return [_stack(op, _from(op, V), [2, 1])]


def err_element_shape_bad_scalar(op):
    return [_length(op, _reserve(op, 3, 2))]


def err_element_shape_below_minus_one(op):
    return [_length(op, _reserve(op, [2, -2], 2))]


def err_reserve_negative(op):
    return [_length(op, _reserve(op, [2], -1))]


def err_reserve_num_elements_not_scalar(op):
    return [_length(op, op("TensorListReserve", element_shape=i32([2]),
                           num_elements=i32([2]), element_dtype="float32"))]


def err_from_tensor_scalar(op):
    return [_length(op, _from(op, f32(1.0)))]


def err_from_tensor_incompatible_shape(op):
    return [_length(op, _from(op, X, [2, 4]))]


def err_push_back_full(op):
    lst = op("EmptyTensorList", element_shape=i32(-1), max_num_elements=i32(1),
             element_dtype="float32")
    lst = op("TensorListPushBack", input_handle=lst, tensor=V[0])
    lst = op("TensorListPushBack", input_handle=lst, tensor=V[1])
    return [_length(op, lst)]


def err_push_back_incompatible_shape(op):
    lst = op("EmptyTensorList", element_shape=i32([3]), max_num_elements=i32(-1),
             element_dtype="float32")
    return [_length(op, op("TensorListPushBack", input_handle=lst, tensor=V[0]))]


def err_push_back_wrong_dtype(op):
    lst = op("EmptyTensorList", element_shape=i32(-1), max_num_elements=i32(-1),
             element_dtype="int32")
    return [_length(op, op("TensorListPushBack", input_handle=lst, tensor=V[0]))]


def err_empty_list_max_not_scalar(op):
    return [_length(op, op("EmptyTensorList", element_shape=i32(-1),
                           max_num_elements=i32([1]), element_dtype="float32"))]


def err_pop_back_empty(op):
    lst = op("EmptyTensorList", element_shape=i32([2]), max_num_elements=i32(-1),
             element_dtype="float32")
    return list(op("TensorListPopBack", input_handle=lst, element_shape=i32([2]),
                   element_dtype="float32"))[1:]


def err_gather_out_of_range(op):
    return [op("TensorListGather", input_handle=_from(op, V), indices=i32([0, 3]),
               element_shape=i32(-1), element_dtype="float32")]


def err_gather_out_of_range_known_shape(op):
    return [op("TensorListGather", input_handle=_from(op, V, [2]), indices=i32([1, 5]),
               element_shape=i32(-1), element_dtype="float32")]


def err_gather_negative_known_shape(op):
    return [op("TensorListGather", input_handle=_from(op, V, [2]), indices=i32([-1]),
               element_shape=i32(-1), element_dtype="float32")]


def err_gather_negative(op):
    return [op("TensorListGather", input_handle=_from(op, V), indices=i32([-1]),
               element_shape=i32(-1), element_dtype="float32")]


def err_gather_empty_unknown_shape(op):
    return [op("TensorListGather", input_handle=_from(op, V), indices=np.zeros(0, i32),
               element_shape=i32(-1), element_dtype="float32")]


def err_scatter_length_mismatch(op):
    return [_length(op, op("TensorListScatterIntoExistingList",
                           input_handle=_reserve(op, [2], 2), tensor=V, indices=i32([0, 1])))]


# (A negative index crashes TF 2.21's TensorListScatterIntoExistingList: no case records
# it; aioflow refuses it.)


def err_scatter_wrong_dtype(op):
    return [_length(op, op("TensorListScatterIntoExistingList",
                           input_handle=_reserve(op, [2], 2, "int32"), tensor=V[:1],
                           indices=i32([0])))]


def err_split_unused_values(op):
    return [_length(op, op("TensorListSplit", tensor=V, element_shape=i32(-1),
                           lengths=i64([1, 1])))]


def err_split_too_long(op):
    return [_length(op, op("TensorListSplit", tensor=V, element_shape=i32(-1),
                           lengths=i64([2, 2])))]


def err_split_negative_length(op):
    return [_length(op, op("TensorListSplit", tensor=V, element_shape=i32(-1),
                           lengths=i64([-1, 4])))]


def err_split_scalar(op):
    return [_length(op, op("TensorListSplit", tensor=f32(1), element_shape=i32(-1),
                           lengths=i64([1])))]


def err_concat_scalars(op):
    return list(op("TensorListConcatV2", input_handle=_from(op, np.arange(3, dtype=f32)),
                   element_shape=i32(-1), leading_dims=np.zeros(0, i64),
                   element_dtype="float32"))


def err_concat_uninitialized_no_leading_dims(op):
    lst = _set(op, _reserve(op, [-1, 2], 2), 0, V)
    lst = _set(op, lst, 1, V[:2])
    lst = op("TensorListResize", input_handle=lst, size=i32(3))
    return list(op("TensorListConcatV2", input_handle=lst, element_shape=i32([-1, 2]),
                   leading_dims=np.zeros(0, i64), element_dtype="float32"))


def err_concat_first_dim_mismatch(op):
    lst = _set(op, _reserve(op, -1, 2), 0, V)
    return list(op("TensorListConcatV2", input_handle=lst, element_shape=i32([2, 2]),
                   leading_dims=np.zeros(0, i64), element_dtype="float32"))


def err_concat_empty_unknown(op):
    return list(op("TensorListConcatV2", input_handle=_reserve(op, -1, 0),
                   element_shape=i32([-1, -1]), leading_dims=np.zeros(0, i64),
                   element_dtype="float32"))


def err_split_element_shape_scalar_rank(op):
    return [_length(op, op("TensorListSplit", tensor=V, element_shape=np.zeros(0, i32),
                           lengths=i64([3])))]


def err_split_incompatible(op):
    return [_length(op, op("TensorListSplit", tensor=V, element_shape=i32([-1, 3]),
                           lengths=i64([3])))]


def err_resize_negative(op):
    return [_length(op, op("TensorListResize", input_handle=_from(op, V), size=i32(-1)))]


PROGRAMS = [v for k, v in list(globals().items())
            if callable(v) and not k.startswith("_") and k not in ("main",)
            and getattr(v, "__module__", None) == __name__]


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    import tensorflow as tf
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.framework import op_def_registry

    def op(name, **kwargs):
        kwargs = {k: tf.as_dtype(v) if k in ("element_dtype", "shape_type") else v
                  for k, v in kwargs.items()}
        out = getattr(tf.raw_ops, name)(**kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    records, arrays = [], {}
    for program in PROGRAMS:
        record = {"id": program.__name__}
        try:
            outs = program(op)
        except Exception as e:  # noqa: BLE001
            message = re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(e))
            message = re.sub(r" \[Op:\w+\]( name: \S*)?$", "", message)
            record.update(outcome="error", error_class=type(e).__name__, message=message)
        else:
            record.update(outcome="ok", n_outputs=len(outs))
            for i, o in enumerate(outs):
                arrays[f"{program.__name__}:{i}"] = np.asarray(o)
        records.append(record)
    with open(os.path.join(HERE, "list_cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    np.savez_compressed(os.path.join(HERE, "list_cases.npz"), **arrays)
    op_list = op_def_pb2.OpList(op=[op_def_registry.get(name) for name in OP_NAMES])
    with open(os.path.join(HERE, "list_op_defs.pb"), "wb") as f:
        f.write(op_list.SerializeToString(deterministic=True))


if __name__ == "__main__":
    main()
