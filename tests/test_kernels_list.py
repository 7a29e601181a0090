"""TensorList ops (EmptyTensorList, TensorListReserve/FromTensor/GetItem/SetItem/Stack/...):
OpDefs equal to TF 2.21's, and the programs of tests/data/make_list_fixtures.py run on
aioflow's kernels to TensorFlow's values and errors (tests/data/list_cases.*); lists are
values in a graph too (shared by CSE and the constant folder, never changed in place)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import run_kernel
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import dtypes, errors, op_def_registry
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import op_def_pb2

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import make_list_fixtures  # noqa: E402

CASES = {c["id"]: c for c in json.loads((DATA / "list_cases.json").read_text())}
VALUES = np.load(DATA / "list_cases.npz", allow_pickle=True)
PROGRAMS = {p.__name__: p for p in make_list_fixtures.PROGRAMS}


def _op(name, **kwargs):
    """make_list_fixtures' `op`, on aioflow's CPU kernels."""
    op_def = op_def_registry.get(name)
    inputs = [kwargs.pop(arg.name) for arg in op_def.input_arg]
    attrs = {k: dtypes.as_dtype(v) if k in ("element_dtype", "shape_type") else v
             for k, v in kwargs.items()}
    outs = run_kernel(name, inputs, **attrs)
    return tuple(outs) if len(outs) > 1 else outs[0]


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "list_op_defs.pb").read_bytes())
    assert [op.name for op in tf_ops.op] == make_list_fixtures.OP_NAMES
    assert_equal_to_tf(tf_ops)


def test_every_program_has_a_recorded_outcome():
    assert set(CASES) == set(PROGRAMS)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_program_matches_tensorflow(case_id):
    case = CASES[case_id]
    if case["outcome"] == "error":
        with pytest.raises(getattr(errors, case["error_class"])) as info:
            PROGRAMS[case_id](_op)
        assert info.value.message == case["message"]
        return
    outs = PROGRAMS[case_id](_op)
    assert len(outs) == case["n_outputs"]
    for i, got in enumerate(outs):
        want = VALUES[f"{case_id}:{i}"]
        got = np.asarray(got)
        assert got.dtype == want.dtype, (i, got.dtype, want.dtype)
        assert got.shape == want.shape, (i, got.shape, want.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"output {i}")


def test_negative_indices_tf_crashes_on_are_invalid_argument():
    """TF 2.21 crashes the process on these; aioflow refuses them."""
    lst = _op("TensorListFromTensor", tensor=np.ones((3, 2), np.float32),
              element_shape=np.int32(-1))
    with pytest.raises(errors.InvalidArgumentError, match="Trying to modify element -1"):
        _op("TensorListSetItem", input_handle=lst, index=np.int32(-1),
            item=np.ones(2, np.float32), resize_if_index_out_of_bounds=True)
    with pytest.raises(errors.InvalidArgumentError, match="must all be non-negative"):
        _op("TensorListScatterIntoExistingList", input_handle=lst,
            tensor=np.ones((1, 2), np.float32), indices=np.int32([-1]))
    with pytest.raises(errors.InvalidArgumentError, match="index must be a scalar"):
        _op("TensorListGetItem", input_handle=lst, index=np.int32([0]),
            element_shape=np.int32(-1), element_dtype="float32")


def test_a_value_that_is_not_a_list_is_invalid_argument():
    not_a_list = np.empty((), object)
    not_a_list[()] = b"abc"
    with pytest.raises(errors.InvalidArgumentError, match="Input handle is not a list"):
        _op("TensorListLength", input_handle=not_a_list)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Input list must be a scalar saw: \[2\]"):
        _op("TensorListLength", input_handle=np.empty(2, object))


async def test_a_list_of_optionals_takes_pushes_and_pops_them():
    """while_v2's gradient accumulates an If's Optional outputs in a variant list: pushing
    one is no type error (a variant is held in an object array, as a string is), and
    pushing a string onto that list still is one (TF's message)."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        lst = apply_op("EmptyTensorList", element_shape=np.zeros([0], np.int32),
                       max_num_elements=-1, element_dtype=af.variant)
        lst = apply_op("TensorListPushBack", input_handle=lst,
                       tensor=apply_op("OptionalFromValue", components=[x * 2.0]))
        _, optional = apply_op("TensorListPopBack", input_handle=lst, element_shape=-1,
                               element_dtype=af.variant)
        value = apply_op("OptionalGetValue", optional=optional, output_types=[af.float32],
                         output_shapes=[[2]])[0]
        bad = apply_op("TensorListPushBack", input_handle=lst, tensor=af.constant(b"s"))
    async with af.Session(graph=g) as sess:
        np.testing.assert_array_equal(await sess.run(value, {x: [1.0, 2.0]}), [2.0, 4.0])
        with pytest.raises(errors.InvalidArgumentError,
                           match="op elements string but list elements variant"):
            await sess.run(bad, {x: [1.0, 2.0]})


def _graph_with_shared_lists():
    """Two identical TensorListReserve nodes (CSE merges them; the constant folder
    evaluates them), each then written with a different value: the stacks must differ."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")
        shape = af.constant(np.int32([2]))
        stacks = []
        for k in range(2):
            lst = apply_op("TensorListReserve", element_shape=shape,
                           num_elements=af.constant(np.int32(3)), element_dtype=af.float32,
                           name=f"reserve{k}")
            lst = apply_op("TensorListSetItem", input_handle=lst,
                           index=af.constant(np.int32(k)), item=x * float(k + 1),
                           name=f"set{k}")
            stacks.append(apply_op("TensorListStack", input_handle=lst, element_shape=shape,
                                   element_dtype=af.float32, num_elements=3,
                                   name=f"stack{k}"))
    return g, x, stacks


@pytest.mark.parametrize("opt_level", ["L1", "L0"])
async def test_lists_are_values_in_a_graph(opt_level):
    g, x, stacks = _graph_with_shared_lists()
    assert stacks[0].shape.as_list() == [3, 2]  # the shape function: [num_elements] + shape
    config = af.ConfigProto(graph_options=af.GraphOptions(optimizer_options=af.OptimizerOptions(
        opt_level=getattr(af.OptimizerOptions, opt_level))))
    async with af.Session(graph=g, config=config) as sess:
        a, b = await sess.run(stacks, {x: [1.0, 2.0]})
    np.testing.assert_array_equal(a, [[1, 2], [0, 0], [0, 0]])
    np.testing.assert_array_equal(b, [[0, 0], [2, 4], [0, 0]])


def test_get_item_shape_comes_from_the_element_shape_input():
    g = af.Graph()
    with g.as_default():
        lst = apply_op("TensorListReserve", element_shape=af.constant(np.int32(-1)),
                       num_elements=af.constant(np.int32(3)), element_dtype=af.float32)
        item = apply_op("TensorListGetItem", input_handle=lst, index=af.constant(np.int32(0)),
                        element_shape=af.constant(np.int32([-1, 8])), element_dtype=af.float32)
        unknown = apply_op("TensorListGetItem", input_handle=lst,
                           index=af.constant(np.int32(0)),
                           element_shape=af.constant(np.int32(-1)), element_dtype=af.float32)
        gathered = apply_op("TensorListGather", input_handle=lst,
                            indices=af.constant(np.int32([0, 1])),
                            element_shape=af.constant(np.int32([4])), element_dtype=af.float32)
    assert lst.shape.as_list() == []
    assert item.shape.as_list() == [None, 8]
    assert unknown.shape.rank is None
    assert gathered.shape.as_list() == [2, 4]


def test_slots_a_scatter_adds_are_uninitialized():
    """Read as zeros (TF 2.21 fills them with empty tensors its Stack copies as garbage)."""
    lst = _op("TensorListReserve", element_shape=np.int32([2]), num_elements=np.int32(2),
              element_dtype="float32")
    lst = _op("TensorListScatterIntoExistingList", input_handle=lst,
              tensor=np.float32([[1, 2]]), indices=np.int32([4]))
    stacked = _op("TensorListStack", input_handle=lst, element_shape=np.int32([2]),
                  element_dtype="float32")
    np.testing.assert_array_equal(stacked, [[0, 0]] * 4 + [[1, 2]])


def test_stacking_elements_a_scatter_put_out_of_shape_is_an_error():
    """ScatterIntoExistingList checks no shapes (as TF); stacking such a list is TF's merge
    error here (TF skips the check for a fully defined list shape and copies garbage)."""
    lst = _op("TensorListReserve", element_shape=np.int32([2]), num_elements=np.int32(2),
              element_dtype="float32")
    lst = _op("TensorListScatterIntoExistingList", input_handle=lst,
              tensor=np.float32([[1, 2, 3]]), indices=np.int32([1]))
    with pytest.raises(errors.InvalidArgumentError, match=r"merge: \[2\] vs. \[3\]"):
        _op("TensorListStack", input_handle=lst, element_shape=np.int32(-1),
            element_dtype="float32")
