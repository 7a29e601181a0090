"""TensorArray V3 kernels and the control-flow kernels run directly on NumPy values (no
graph, no executor), against TF's semantics and error messages."""

from __future__ import annotations

import types

import numpy as np
import pytest

from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.kernels.control_flow import control_flow_kernels
from aioflow.kernels.data_flow import tensor_array_kernels
from tests.kernel_testutil import create, run1, run_kernel

F32 = dtypes.float32


@pytest.fixture
def ctx():
    """A fake per-step context: the TensorArray kernels only use `step_resources`."""
    return types.SimpleNamespace(step_resources={})


def call(ctx, op_type, inputs, **attrs):
    return list(create(op_type, inputs, **attrs).compute(ctx, list(inputs)))


def new_ta(ctx, size=3, dtype=F32, **attrs):
    handle, flow = call(ctx, "TensorArrayV3", [np.int32(size)], dtype=dtype, **attrs)
    return handle, flow


def write(ctx, handle, index, value, flow=None):
    flow = np.float32(0) if flow is None else flow
    value = np.asarray(value)
    if value.dtype == np.float64:
        value = value.astype(np.float32)
    return call(ctx, "TensorArrayWriteV3", [handle, np.int32(index), value, flow])[0]


def read(ctx, handle, index, dtype=F32):
    return call(ctx, "TensorArrayReadV3", [handle, np.int32(index), np.float32(0)],
                dtype=dtype)[0]


def gather(ctx, handle, indices, dtype=F32, element_shape=None):
    return call(ctx, "TensorArrayGatherV3",
                [handle, np.asarray(indices, np.int32), np.float32(0)], dtype=dtype,
                element_shape=tensor_shape.as_shape(element_shape))[0]


def test_create_outputs_handle_and_flow(ctx):
    handle, flow = new_ta(ctx, 3, tensor_array_name="arr")
    assert isinstance(handle, np.ndarray) and handle.dtype == object and handle.shape == ()
    ta = tensor_array_kernels.get_tensor_array(handle)
    assert ta.name.startswith("arr_") and ta.size() == 3
    assert flow.dtype == np.float32 and float(flow) == 0.0
    assert list(ctx.step_resources.values()) == [ta]
    # Without tensor_array_name, the node name is used.
    handle2, _ = call(ctx, "TensorArrayV3", [np.int32(0)], dtype=F32)
    assert tensor_array_kernels.get_tensor_array(handle2).name.startswith("TensorArrayV3_")


def test_create_errors(ctx):
    with pytest.raises(errors.InvalidArgumentError, match="Size should be >= 0."):
        new_ta(ctx, -1)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"TensorArray size must be scalar, but had shape: \[2\]"):
        call(ctx, "TensorArrayV3", [np.array([1, 2], np.int32)], dtype=F32)


def test_write_read_passes_flow(ctx):
    handle, _ = new_ta(ctx, 3, clear_after_read=False)
    flow = write(ctx, handle, 1, [1.0, 2.0], flow=np.float32(7))
    assert float(flow) == 7.0
    np.testing.assert_array_equal(read(ctx, handle, 1), [1.0, 2.0])
    np.testing.assert_array_equal(read(ctx, handle, 1), [1.0, 2.0])


def test_write_twice_fails(ctx):
    handle, _ = new_ta(ctx, 3)
    write(ctx, handle, 2, [1.0])
    with pytest.raises(errors.InvalidArgumentError,
                       match="Could not write to TensorArray index 2 because it has already "
                             "been written to."):
        write(ctx, handle, 2, [1.0])


def test_write_after_read_fails(ctx):
    handle, _ = new_ta(ctx, 3, clear_after_read=False)
    write(ctx, handle, 0, 1.0)
    read(ctx, handle, 0)
    with pytest.raises(errors.InvalidArgumentError, match="because it has already been read"):
        ta = tensor_array_kernels.get_tensor_array(handle)
        ta.write(0, np.float32(1.0))


def test_write_out_of_bounds_fails_unless_dynamic(ctx):
    handle, _ = new_ta(ctx, 5)
    name = tensor_array_kernels.get_tensor_array(handle).name
    with pytest.raises(errors.InvalidArgumentError) as err:
        write(ctx, handle, 5, 1.0)
    assert str(err.value) == (f"TensorArray {name}: Tried to write to index 5 but array is "
                              "not resizeable and size is: 5")
    with pytest.raises(errors.InvalidArgumentError, match="Tried to write to index -1"):
        write(ctx, handle, -1, 1.0)
    dyn, _ = new_ta(ctx, 0, dynamic_size=True)
    write(ctx, dyn, 4, np.float32(3.0))
    size = call(ctx, "TensorArraySizeV3", [dyn, np.float32(0)])[0]
    assert size == 5 and size.dtype == np.int32


def test_write_dtype_mismatch(ctx):
    handle, _ = new_ta(ctx, 3)
    with pytest.raises(errors.InvalidArgumentError,
                       match="TensorArray dtype is float but Op is trying to write dtype "
                             "int32."):
        write(ctx, handle, 0, np.array([1], np.int32))
    write(ctx, handle, 0, np.array([1.0], np.float32))
    with pytest.raises(errors.InvalidArgumentError,
                       match="TensorArray dtype is float but Op requested dtype double."):
        read(ctx, handle, 0, dtype=dtypes.float64)


def test_write_shape_must_match_element_shape(ctx):
    handle, _ = new_ta(ctx, 3, element_shape=tensor_shape.TensorShape([2]))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"because the value shape is \[3\] which is incompatible with "
                             r"the TensorArray's inferred element shape: \[2\] \(consider "
                             r"setting infer_shape=False\)."):
        write(ctx, handle, 0, [1.0, 2.0, 3.0])
    # identical_element_shapes: the first write fixes the element shape.
    same, _ = new_ta(ctx, 3, identical_element_shapes=True)
    write(ctx, same, 0, [1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="incompatible"):
        write(ctx, same, 1, [1.0])


def test_read_unwritten(ctx):
    handle, _ = new_ta(ctx, 3)
    name = tensor_array_kernels.get_tensor_array(handle).name
    with pytest.raises(errors.InvalidArgumentError) as err:
        read(ctx, handle, 1)
    assert str(err.value).startswith(
        f"TensorArray {name}: Could not read from TensorArray index 1.  Furthermore, the "
        "element shape is not fully defined: <unknown>.  It is possible you are working")
    # With a fully defined element shape, an unwritten index reads as zeros.
    zeros, _ = new_ta(ctx, 3, element_shape=tensor_shape.TensorShape([2, 2]))
    value = read(ctx, zeros, 2)
    np.testing.assert_array_equal(value, np.zeros([2, 2], np.float32))
    assert value.dtype == np.float32


def test_read_out_of_range(ctx):
    handle, _ = new_ta(ctx, 2)
    with pytest.raises(errors.InvalidArgumentError,
                       match="Tried to read from index 2 but array size is: 2"):
        read(ctx, handle, 2)


def test_read_twice_with_clear_after_read(ctx):
    handle, _ = new_ta(ctx, 3)
    write(ctx, handle, 1, [1.0])
    read(ctx, handle, 1)
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Could not read index 1 twice because it was cleared after a "
                             r"previous read \(perhaps try setting clear_after_read = "
                             r"false\?\)."):
        read(ctx, handle, 1)


def test_gather_and_stack(ctx):
    handle, _ = new_ta(ctx, 3, clear_after_read=False)
    for i in range(3):
        write(ctx, handle, i, np.full([2], i, np.float32))
    np.testing.assert_array_equal(gather(ctx, handle, [2, 0]), [[2, 2], [0, 0]])
    np.testing.assert_array_equal(gather(ctx, handle, [0, 1, 2]),
                                  np.repeat(np.arange(3, dtype=np.float32), 2).reshape(3, 2))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"TensorArray was passed element_shape \[3\] which does not "
                             r"match the Tensor at index 0: \[2\]"):
        gather(ctx, handle, [0], element_shape=[3])
    shaped, _ = new_ta(ctx, 1, element_shape=tensor_shape.TensorShape([2]))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"PartialTensorShape: Incompatible shapes during merge: \[2\] "
                             r"vs. \[3\]"):
        gather(ctx, shaped, [0], element_shape=[3])


def test_gather_inconsistent_shapes(ctx):
    handle, _ = new_ta(ctx, 2)
    write(ctx, handle, 0, [1.0])
    write(ctx, handle, 1, [1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"TensorArray has inconsistent shapes.  Index 0 has shape: \[1\] "
                             r"but index 1 has shape: \[2\]"):
        gather(ctx, handle, [0, 1])


def test_gather_empty(ctx):
    handle, _ = new_ta(ctx, 0)
    out = gather(ctx, handle, np.zeros([0], np.int32), element_shape=[3, 5])
    assert out.shape == (0, 3, 5) and out.dtype == np.float32
    with pytest.raises(errors.UnimplementedError,
                       match="TensorArray has size zero, but element shape <unknown> is not "
                             "fully defined. Currently only static shapes are supported when "
                             "packing zero-size TensorArrays."):
        gather(ctx, handle, np.zeros([0], np.int32))


def test_scatter(ctx):
    handle, _ = new_ta(ctx, 4, clear_after_read=False)
    value = np.arange(6, dtype=np.float32).reshape(3, 2)
    flow = call(ctx, "TensorArrayScatterV3",
                [handle, np.array([3, 0, 1], np.int32), value, np.float32(1)])[0]
    assert float(flow) == 1.0
    np.testing.assert_array_equal(read(ctx, handle, 3), [0, 1])
    np.testing.assert_array_equal(read(ctx, handle, 1), [4, 5])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Max scatter index must be < array size \(4 vs. 4\)"):
        call(ctx, "TensorArrayScatterV3",
             [handle, np.array([4], np.int32), value[:1], np.float32(0)])
    with pytest.raises(errors.InvalidArgumentError,
                       match="Expected len\\(indices\\) == values.shape\\[0\\], but saw: 1 vs. 3"):
        call(ctx, "TensorArrayScatterV3", [handle, np.array([2], np.int32), value,
                                           np.float32(0)])
    with pytest.raises(errors.InvalidArgumentError, match="at least a vector"):
        call(ctx, "TensorArrayScatterV3", [handle, np.array([], np.int32), np.float32(1),
                                           np.float32(0)])
    dyn, _ = new_ta(ctx, 0, dynamic_size=True)
    call(ctx, "TensorArrayScatterV3", [dyn, np.array([2, 0], np.int32), value[:2],
                                       np.float32(0)])
    assert tensor_array_kernels.get_tensor_array(dyn).size() == 3


def test_concat_and_split(ctx):
    handle, _ = new_ta(ctx, 3, clear_after_read=False)
    value = np.arange(12, dtype=np.float32).reshape(6, 2)
    call(ctx, "TensorArraySplitV3", [handle, value, np.array([1, 2, 3], np.int64),
                                     np.float32(0)])
    np.testing.assert_array_equal(read(ctx, handle, 1), value[1:3])
    out, lengths = call(ctx, "TensorArrayConcatV3", [handle, np.float32(0)], dtype=F32)
    np.testing.assert_array_equal(out, value)
    np.testing.assert_array_equal(lengths, [1, 2, 3])
    assert lengths.dtype == np.int64
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Expected sum of lengths to be equal to values.shape\[0\], but "
                             r"sum of lengths is 5 and value's shape is: \[6,2\]"):
        other, _ = new_ta(ctx, 3)
        call(ctx, "TensorArraySplitV3", [other, value, np.array([1, 1, 3], np.int64),
                                         np.float32(0)])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"TensorArray's size is not equal to the size of lengths \(3 vs. "
                             r"2\), and the TensorArray is not marked as dynamically "
                             r"resizeable"):
        other, _ = new_ta(ctx, 3)
        call(ctx, "TensorArraySplitV3", [other, value, np.array([3, 3], np.int64),
                                         np.float32(0)])


def test_concat_errors_and_empty(ctx):
    handle, _ = new_ta(ctx, 2)
    write(ctx, handle, 0, np.float32(1.0))
    write(ctx, handle, 1, np.float32(1.0))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Concat saw a scalar shape at index 0 but requires at least "
                             "vectors.  Did you mean to call pack?"):
        call(ctx, "TensorArrayConcatV3", [handle, np.float32(0)], dtype=F32)
    empty, _ = new_ta(ctx, 0)
    out, lengths = call(ctx, "TensorArrayConcatV3", [empty, np.float32(0)], dtype=F32,
                        element_shape_except0=tensor_shape.TensorShape([5]))
    assert out.shape == (0, 5) and lengths.shape == (0,)
    with pytest.raises(errors.UnimplementedError, match="element_shape_except0 <unknown>"):
        call(ctx, "TensorArrayConcatV3", [empty, np.float32(0)], dtype=F32)


def test_close(ctx):
    handle, _ = new_ta(ctx, 2)
    name = tensor_array_kernels.get_tensor_array(handle).name
    assert call(ctx, "TensorArrayCloseV3", [handle]) == []
    with pytest.raises(errors.InvalidArgumentError,
                       match=f"TensorArray {name} has already been closed."):
        call(ctx, "TensorArraySizeV3", [handle, np.float32(0)])
    with pytest.raises(errors.InvalidArgumentError, match="has already been closed"):
        write(ctx, handle, 0, 1.0)


def test_kernels_are_inline_unless_they_move_many_elements():
    """One-element kernels run inline; scatter, split, gather and concat go to the pool
    when they move many elements (the TensorArray takes a lock around each operation)."""
    from aioflow.framework.op_kernel import OpKernel

    classes = {c.__name__: c for c in vars(tensor_array_kernels).values()
               if isinstance(c, type) and issubclass(c, OpKernel) and c is not OpKernel
               and not c.__name__.startswith("_")}  # registered kernels, not their bases
    assert len(classes) == 10  # with TensorArrayGradV3
    bulk = {"TensorArrayScatterOp", "TensorArraySplitOp", "TensorArrayGatherOp",
            "TensorArrayConcatOp"}
    assert all((c.expensive is None) == (name in bulk) and not c.is_async
               for name, c in classes.items())


def test_type_and_shape_strings():
    assert tensor_array_kernels.type_string(dtypes.float32) == "float"
    assert tensor_array_kernels.type_string(dtypes.float64) == "double"
    assert tensor_array_kernels.type_string(dtypes.int64) == "int64"
    assert tensor_array_kernels.shape_string(tensor_shape.TensorShape(None)) == "<unknown>"
    assert tensor_array_kernels.shape_string(tensor_shape.TensorShape([None, 2])) == "[?,2]"
    assert tensor_array_kernels.shape_string((2, 3)) == "[2,3]"


# -- control-flow kernels ------------------------------------------------------------------

def test_switch_routes_by_pred():
    x = np.array([1.0, 2.0], np.float32)
    f, t = run_kernel("Switch", [x, np.bool_(True)])
    assert f is None and t is x
    f, t = run_kernel("Switch", [x, np.array(False)])
    assert t is None and f is x


def test_merge_takes_first_live_input():
    x = np.array([3], np.int32)
    kernel = create("Merge", [x, x])
    out, index = kernel.compute(None, [None, x])
    assert out is x and index == 1 and isinstance(index, np.int32)
    out, index = kernel.compute(None, [x, None])
    assert index == 0


@pytest.mark.parametrize("op", ["Enter", "Exit", "NextIteration"])
def test_frame_ops_forward(op):
    x = np.arange(3)
    attrs = {"frame_name": "f"} if op == "Enter" else {}
    assert run1(op, [x], **attrs) is x


def test_loop_cond_and_control_trigger():
    assert bool(run1("LoopCond", [np.bool_(True)]))
    assert run_kernel("ControlTrigger", []) == []


def test_abort():
    with pytest.raises(errors.AbortedError, match="Abort_op intentional failure; boom"):
        run_kernel("Abort", [], error_msg="boom")


def test_assert_passes_and_fails():
    assert run_kernel("Assert", [np.bool_(True), np.arange(3)]) == []
    data = [np.array(b"x > 0"), np.arange(1, 7, dtype=np.int32).reshape(2, 3),
            np.array([1.5, 2.0], np.float32), np.array([True, False])]
    with pytest.raises(errors.InvalidArgumentError) as err:
        run_kernel("Assert", [np.array(False)] + data, summarize=3)
    assert str(err.value) == "assertion failed: [x > 0] [[1 2 3]...] [1.5 2] [1 0]"
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"In\[0\] should be a scalar: \[2\]"):
        run_kernel("Assert", [np.array([True, True]), np.arange(3)])


def test_summarize_value_matches_tf():
    s = control_flow_kernels.summarize_value
    assert s(np.arange(1, 5).reshape(2, 2), 3) == "[1 2][3...]..."
    assert s(np.arange(5), 3) == "0 1 2..."
    assert s(np.arange(5), -1) == "0 1 2 3 4"
    assert s(np.float32(0.1), 3) == "0.1"
    # A double prints with up to 15 significant digits, a float with 6 (TF 2.21's
    # StrCat; tests/data/logging_ops_tf.json has TF's own text for many more values).
    assert s(np.array([1e10, 1e-5]), 3) == "10000000000 1e-05"
    assert s(np.float32(1e10), 3) == "1e+10"
    assert s(np.array(b'a"\n'), 3) == 'a\\"\\n'


def test_check_numerics():
    x = np.array([1.0, 2.0], np.float32)
    assert run1("CheckNumerics", [x], message="m") is x
    with pytest.raises(errors.InvalidArgumentError, match="^bad : Tensor had NaN values$"):
        run1("CheckNumerics", [np.array([np.nan], np.float32)], message="bad")
    with pytest.raises(errors.InvalidArgumentError, match="^bad : Tensor had Inf values$"):
        run1("CheckNumerics", [np.array([np.inf], np.float64)], message="bad")
    with pytest.raises(errors.InvalidArgumentError, match="Tensor had Inf and NaN values"):
        run1("CheckNumerics", [np.array([np.inf, np.nan], np.float32)], message="bad")


def test_restore_puts_back_what_reads_writes_and_close_changed(ctx):
    """What a compiled while loop relies on (runtime/loop_segments.py): a checkpoint
    taken before reads that clear, writes, a grown dynamic array and a close is restored
    whole, and the array then behaves as it did at the checkpoint."""
    handle, _ = new_ta(ctx, 2, dynamic_size=True)
    ta = tensor_array_kernels.get_tensor_array(handle)
    write(ctx, handle, 0, [1.0, 2.0])
    token = ta.checkpoint()
    np.testing.assert_array_equal(read(ctx, handle, 0), [1.0, 2.0])  # cleared
    write(ctx, handle, 1, [3.0, 4.0])
    write(ctx, handle, 5, [5.0, 6.0])  # grows the array
    ta.close()
    ta.restore(token)
    assert ta.size() == 2
    np.testing.assert_array_equal(read(ctx, handle, 0), [1.0, 2.0])
    with pytest.raises(errors.InvalidArgumentError, match="twice"):
        read(ctx, handle, 0)
    write(ctx, handle, 1, [7.0, 8.0])  # unwritten again
    np.testing.assert_array_equal(read(ctx, handle, 1), [7.0, 8.0])


def test_read_and_write_kernels_give_compiled_loops_the_same_results_and_errors(ctx):
    """Their compiled_fn (a compiled loop's call) returns compute's output, and on
    anything compute checks (a handle of another dtype, an index that is not a scalar)
    raises compute's error."""
    handle, flow = new_ta(ctx, 2)
    writer = create("TensorArrayWriteV3", [handle, np.int32(0), np.ones(2, np.float32), flow])
    reader = create("TensorArrayReadV3", [handle, np.int32(0), flow], dtype=F32)
    assert writer.compiled_fn()(handle, np.int32(0), np.ones(2, np.float32), flow) is flow
    np.testing.assert_array_equal(reader.compiled_fn()(handle, np.array(0, np.int32), flow),
                                  np.ones(2))
    with pytest.raises(errors.InvalidArgumentError, match="index must be scalar"):
        reader.compiled_fn()(handle, np.array([1], np.int32), flow)
    ints, _ = new_ta(ctx, 2, dtypes.int32)
    with pytest.raises(errors.InvalidArgumentError, match="TensorArray dtype is int32"):
        writer.compiled_fn()(ints, np.int32(1), np.ones(2, np.float32), flow)
    assert reader.undoable_state(handle) is tensor_array_kernels.get_tensor_array(handle)
    assert reader.undoable_state(np.float32(0)) is None
