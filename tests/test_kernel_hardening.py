"""Regression tests for the kernel part of the hardening issue, each checked side by side
with TF 2.21 (class and message):

1. kernels whose output is not bounded by their input size decide inline vs pool by the
   output they will produce; a TensorArray costs nothing to create and moves many
   elements in bulk;
2. py_func / async_py_func results are checked as TF's py_func checks them;
3. kernel edge cases (empty axes, masks, infinite limits, ranks) and kernels whose error
   was a wrapped Python exception.
"""

from __future__ import annotations

import re
import threading
import tracemalloc
import types

import ml_dtypes
import numpy as np
import pytest
from kernel_testutil import create, run1, run_kernel

import aioflow as af
from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.kernels.array import array_kernels
from aioflow.kernels.data_flow import tensor_array_kernels

i32, i64, f32 = np.int32, np.int64, np.float32
LIMIT = array_kernels.OUTPUT_POOL_ABOVE


def invalid(message: str):
    """pytest.raises for TF's InvalidArgumentError with exactly this message."""
    return pytest.raises(errors.InvalidArgumentError, match=f"^{re.escape(message)}$")


# -- 1. output-sized pool decisions -----------------------------------------------------------

SMALL_AND_LARGE = [
    # (op, small inputs, large inputs): large ones produce > OUTPUT_POOL_ABOVE elements
    ("Fill", [i32([4, 4]), f32(1)], [i32([20000, 15000]), f32(1)]),
    ("Range", [i32(0), i32(100), i32(1)], [i32(0), i32(300_000_000), i32(1)]),
    ("Range", [f32(0), f32(100), f32(1)], [f32(0), f32(3e8), f32(1)]),
    ("Tile", [np.ones(10, f32), i32([3])], [np.ones(10_000, f32), i32([30_000])]),
    ("Pad", [np.ones(10, f32), i32([[1, 2]])], [np.ones(10, f32), i32([[0, 600_000_000]])]),
    ("PadV2", [np.ones(10, f32), i32([[1, 2]]), f32(0)],
     [np.ones(10, f32), i32([[0, 600_000_000]]), f32(0)]),
    ("BroadcastTo", [f32(1), i32([3, 3])], [f32(1), i32([30000, 30000])]),
    ("OneHot", [i32([1, 2]), i32(4), f32(1), f32(0)], [i32([1, 2]), i32(10**6), f32(1), f32(0)]),
    ("GatherV2", [np.ones((10, 1000), f32), i32([1, 2]), i32(0)],
     [np.ones((10, 1000), f32), np.zeros(1000, i32), i32(0)]),
    ("GatherNd", [np.ones((10, 1000), f32), i32([[1]])],
     [np.ones((10, 100_000), f32), np.zeros((3, 1), i32)]),
    ("SelectV2", [np.ones((3, 1), bool), f32(1), np.ones((1, 3), f32)],
     [np.ones((3000, 1), bool), f32(1), np.ones((1, 3000), f32)]),
    # (a Concat below 2**20 elements goes to the pool only beside other work:
    # tests/test_kernels_array.py)
    ("ConcatV2", [np.ones(4, f32), np.ones(4, f32), i32(0)],
     [np.ones(4, f32), np.ones(2 * 10**6, f32), i32(0)]),
]


@pytest.mark.parametrize("op, small, large", SMALL_AND_LARGE,
                         ids=[f"{case[0]}-{i}" for i, case in enumerate(SMALL_AND_LARGE)])
def test_output_sized_kernels_go_to_the_pool_only_for_large_outputs(op, small, large):
    kernel = create(op, small)
    assert kernel.expensive is None
    assert not kernel.is_expensive(small)
    assert kernel.is_expensive(large)


@pytest.mark.parametrize("op, inputs", [
    ("Fill", [i32([[2]]), f32(1)]), ("Fill", [i32(-5), f32(1)]),
    ("Range", [f32(0), f32(np.inf), f32(1)]), ("Range", [i32(0), i32(5), i32(0)]),
    ("Range", [i32([0, 1]), i32(5), i32(1)]), ("Tile", [np.ones(3, f32), i32([[2]])]),
    ("Pad", [np.ones(3, f32), i32([1, 2])]), ("BroadcastTo", [f32(1), i32(3)]),
    ("OneHot", [i32([1]), i32([2, 3]), f32(1), f32(0)]),
    ("GatherV2", [np.ones(3, f32), i32([0]), i32(7)]),
])
def test_output_size_checks_never_raise_on_bad_inputs(op, inputs):
    """Bad shape inputs run inline: compute, not the size check, reports TF's error."""
    assert create(op, [np.asarray(v) for v in inputs]).is_expensive(inputs) is False


def test_like_kernels_go_to_the_pool_by_their_input_size():
    for op in ("ZerosLike", "OnesLike"):
        kernel = create(op, [np.ones(3, f32)])
        assert kernel.expensive is None and kernel.pool_above == LIMIT
    assert run1("ZerosLike", [np.array([b"a"], dtype=object)]).tolist() == [b""]
    assert run1("ZerosLike", [np.ones((2, 3), np.int16)]).dtype == np.int16


@pytest.mark.parametrize("shape, reps", [((3,), [2]), ((2, 3), [2, 3]), ((), []),
                                         ((2, 0), [3, 2]), ((1, 2, 3), [0, 1, 2])])
def test_tile_matches_numpy(shape, reps):
    """Tile copies by broadcasting (np.tile's repeat holds the GIL, stalling the loop from
    the pool)."""
    x = np.arange(int(np.prod(shape)), dtype=f32).reshape(shape)
    out = run1("Tile", [x, i32(reps)])
    np.testing.assert_array_equal(out, np.tile(x, reps))
    assert out.shape == np.tile(x, reps).shape


def test_broadcast_to_is_materialized_and_writable():
    """As TF's: a writable array (a read-only broadcast view was copied again, on the loop,
    by the fetch)."""
    out = run1("BroadcastTo", [f32([1, 2]), i32([3, 2])])
    assert out.flags.writeable and out.flags.c_contiguous
    np.testing.assert_array_equal(out, [[1, 2]] * 3)
    x = np.ones((2, 2), f32)
    assert run1("BroadcastTo", [x, i32([2, 2])]) is x


async def test_large_outputs_run_off_the_event_loop(graph):
    """Traced run: the pool runs the large Fill/Range/Tile/Pad/BroadcastTo, the loop the
    small ones (2**20 elements: above the limit, cheap enough for a test)."""
    n = 1 << 20
    dims = af.placeholder(af.int32, [None])
    limit = af.placeholder(af.int32, [])
    reps = af.placeholder(af.int32, [1])
    pads = af.placeholder(af.int32, [1, 2])
    outs = [af.fill(dims, 1.0, name="fill"), af.range(limit, name="range"),
            af.tile(af.constant([1.0, 2.0]), reps, name="tile"),
            af.pad(af.constant([1.0]), pads, name="pad"),
            af.broadcast_to(af.constant(1.0), dims, name="broadcast_to")]
    sums = [af.reduce_sum(o) for o in outs]
    loop_tid = threading.get_native_id()
    async with af.Session(graph=graph) as sess:
        for size, on_pool in ((4, False), (n, True)):
            md = af.RunMetadata()
            await sess.run(sums, {dims: [size], limit: size, reps: [size // 2],
                                  pads: [[0, size - 1]]}, run_metadata=md,
                           options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE))
            tids = {ns.node_name: ns.thread_id for dev in md.step_stats.dev_stats
                    for ns in dev.node_stats}
            for name in ("fill", "range", "tile", "pad", "broadcast_to"):
                assert (tids[name] != loop_tid) == on_pool, (name, size)


# -- 1. TensorArray ---------------------------------------------------------------------------

@pytest.fixture
def ctx():
    """A per-step context: the TensorArray kernels use `step_resources` only."""
    return types.SimpleNamespace(step_resources={})


def call(ctx, op_type, inputs, **attrs):
    return list(create(op_type, inputs, **attrs).compute(ctx, list(inputs)))


def new_ta(ctx, size, dtype=dtypes.float32, **attrs):
    handle, _ = call(ctx, "TensorArrayV3", [i32(size)], dtype=dtype, **attrs)
    return handle, tensor_array_kernels.get_tensor_array(handle)


def scatter(ctx, handle, indices, value):
    return call(ctx, "TensorArrayScatterV3", [handle, i32(indices), value, f32(0)])


def gather(ctx, handle, indices, element_shape=None):
    return call(ctx, "TensorArrayGatherV3", [handle, i32(indices), f32(0)],
                dtype=dtypes.float32, element_shape=tensor_shape.as_shape(element_shape))[0]


def _peak_bytes(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("size", [30_000_000, 2**31 - 1])
def test_creating_a_large_tensor_array_costs_nothing(ctx, size):
    """Was 20 s and 2.6 GB for 3e7 elements (a Python object per element); TF's takes 1.4 s
    and 2.3 GB."""
    (handle, ta), peak = _peak_bytes(lambda: new_ta(ctx, size, element_shape=[]))
    assert peak < 1 << 20
    assert ta.size() == size
    assert float(call(ctx, "TensorArrayReadV3", [handle, i32(size - 1), f32(0)],
                      dtype=dtypes.float32)[0]) == 0.0


def test_unstack_then_stack_is_bulk(ctx):
    """1e6 elements scattered and gathered: a few vectorized passes; 9 bytes of state per
    element and transient index arrays (a Python object per element before: > 100 bytes)."""
    n = 1_000_000
    values = np.arange(n, dtype=f32)
    handle, ta = new_ta(ctx, n, element_shape=[])
    _, peak = _peak_bytes(lambda: scatter(ctx, handle, np.arange(n), values))
    assert peak < 48 * n
    out, peak = _peak_bytes(lambda: gather(ctx, handle, np.arange(n)))
    assert peak < 48 * n
    np.testing.assert_array_equal(out, values)
    with invalid(f"TensorArray {ta.name}: Could not read index 5 twice because it was "
                 "cleared after a previous read (perhaps try setting clear_after_read = "
                 "false?)."):
        gather(ctx, handle, np.arange(5, 200))


def test_bulk_scatter_fails_as_writes_in_order_would(ctx):
    handle, ta = new_ta(ctx, 300)
    indices = list(range(100)) + [7]
    with invalid(f"TensorArray {ta.name}: Could not write to TensorArray index 7 because it "
                 "has already been written to."):
        scatter(ctx, handle, indices, np.zeros(101, f32))
    handle, ta = new_ta(ctx, 300, element_shape=[], clear_after_read=False)
    call(ctx, "TensorArrayReadV3", [handle, i32(150), f32(0)], dtype=dtypes.float32)
    with invalid(f"TensorArray {ta.name}: Could not write to TensorArray index 150 because "
                 "it has already been read."):
        scatter(ctx, handle, range(100, 200), np.zeros(100, f32))
    assert gather(ctx, handle, range(100, 150)).tolist() == [0.0] * 50  # written before it
    dyn, ta = new_ta(ctx, 0, dynamic_size=True)
    scatter(ctx, dyn, range(500, 400, -1), np.arange(100, dtype=f32))
    assert ta.size() == 501
    np.testing.assert_array_equal(gather(ctx, dyn, range(401, 501)),
                                  np.arange(99, -1, -1, dtype=f32))


def test_bulk_gather_of_many_writes_and_unwritten_zeros(ctx):
    handle, ta = new_ta(ctx, 400, element_shape=[2], clear_after_read=False)
    scatter(ctx, handle, range(0, 200, 2), np.ones((100, 2), f32))
    scatter(ctx, handle, range(1, 200, 2), np.full((100, 2), 2, f32))
    out = gather(ctx, handle, range(400))
    expected = np.zeros((400, 2), f32)
    expected[0:200:2], expected[1:200:2] = 1, 2
    np.testing.assert_array_equal(out, expected)
    unknown, ta = new_ta(ctx, 200)
    scatter(ctx, unknown, range(100), np.ones(100, f32))
    with pytest.raises(errors.InvalidArgumentError,
                       match=f"^TensorArray {ta.name}: Could not read from TensorArray index "
                             r"100.  Furthermore, the element shape is not fully defined"):
        gather(ctx, unknown, range(200))


def test_bulk_gather_reports_the_first_inconsistent_shape(ctx):
    handle, _ = new_ta(ctx, 200)
    scatter(ctx, handle, range(100), np.ones((100, 2), f32))
    scatter(ctx, handle, range(100, 200), np.ones((100, 3), f32))
    with invalid("TensorArray has inconsistent shapes.  Index 0 has shape: [2] but index "
                 "100 has shape: [3]"):
        gather(ctx, handle, range(200))


def test_bulk_split_and_concat(ctx):
    n = 100
    lengths = np.arange(n, dtype=i64) % 3
    value = np.arange(int(lengths.sum()) * 2, dtype=f32).reshape(-1, 2)
    handle, ta = new_ta(ctx, n, clear_after_read=False)
    call(ctx, "TensorArraySplitV3", [handle, value, lengths, f32(0)])
    out, got_lengths = call(ctx, "TensorArrayConcatV3", [handle, f32(0)], dtype=dtypes.float32)
    np.testing.assert_array_equal(out, value)
    np.testing.assert_array_equal(got_lengths, lengths)
    start = int(lengths[:5].sum())
    np.testing.assert_array_equal(
        call(ctx, "TensorArrayReadV3", [handle, i32(5), f32(0)], dtype=dtypes.float32)[0],
        value[start:start + 2])
    with invalid("TensorArray has inconsistent shapes.  Index 0 has shape: [0,2] but index 1 "
                 "has shape: [1,2]"):
        gather(ctx, handle, range(n))


# -- 2. py_func results ----------------------------------------------------------------------

# (result, Tout, error class, TF 2.21's message with the token as {}): TF's py_func converts
# nothing; these were converted silently (None -> nan, 1e300 -> inf, "1.5" -> 1.5, an
# object array with None -> nan) or failed as UnknownError(OverflowError) (2**40).
PY_FUNC_ERRORS = [
    (None, af.float32, errors.InvalidArgumentError,
     "{} returns 0 values, but expects to see 1 values."),
    (np.float64(1e300), af.float32, errors.InvalidArgumentError,
     "0-th value returned by {} is double, but expects float"),
    (1.5, af.float32, errors.InvalidArgumentError,
     "0-th value returned by {} is double, but expects float"),
    ("1.5", af.float32, errors.InvalidArgumentError,
     "0-th value returned by {} is string, but expects float"),
    (np.array([1.0, None], dtype=object), af.float32, errors.InternalError,
     "Unsupported object type float"),
    (np.array([b"a", None], dtype=object), af.string, errors.InternalError,
     "Unsupported object type NoneType"),
    (2**40, af.int32, errors.InvalidArgumentError,
     "0-th value returned by {} is int64, but expects int32"),
    (2**70, af.int64, errors.InternalError, "Unsupported object type int"),
    (np.array([1], np.int32), af.float32, errors.InvalidArgumentError,
     "0-th value returned by {} is int32, but expects float"),
    ([1.0, 2.0], af.float32, errors.InvalidArgumentError,
     "{} returns 2 values, but expects to see 1 values."),
    (np.float32(1), [af.float32, af.float32], errors.InvalidArgumentError,
     "{} returns 1 values, but expects to see 2 values."),
    ((np.float32(1), None), [af.float32, af.float64], errors.InternalError,
     "Unsupported object type NoneType"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), af.float32, errors.InternalError,
     "Unsupported numpy type: NPY_DATETIME"),
    (np.zeros(2, dtype=[("a", "f4")]), af.float32, errors.InternalError,
     "Unsupported numpy data type"),
]


@pytest.mark.parametrize("result, tout, cls, message", PY_FUNC_ERRORS,
                         ids=[f"{i}-{type(c[0]).__name__}" for i, c in enumerate(PY_FUNC_ERRORS)])
@pytest.mark.parametrize("kind", ["py_func", "async_py_func"])
async def test_py_func_results_are_checked_as_tf_checks_them(graph, kind, result, tout, cls,
                                                             message):
    def func():
        return result

    async def coro():
        return result

    y = af.py_func(func, [], tout) if kind == "py_func" else af.async_py_func(coro, [], tout)
    token = (y[0] if isinstance(y, list) else y).op.get_attr("token")
    token = token.decode() if isinstance(token, bytes) else token
    async with af.Session(graph=graph) as sess:
        with pytest.raises(cls) as err:
            await sess.run(y)
    assert type(err.value) is cls
    assert err.value.message.split("\n")[0] == message.format(token)


@pytest.mark.parametrize("result, tout, expected", [
    (np.float32(1.5), af.float32, np.float32(1.5)),
    ("abc", af.string, b"abc"),
    (b"xy", af.string, b"xy"),
    (np.array(["a", "b"]), af.string, np.array([b"a", b"b"], dtype=object)),
    (np.array(["a", b"b"], dtype=object), af.string, np.array([b"a", b"b"], dtype=object)),
    (2**64 - 1, af.uint64, np.uint64(2**64 - 1)),
    (5, af.int64, np.int64(5)),
    ([np.float32(1)], [af.float32], [np.float32(1)]),
])
async def test_py_func_results_of_the_declared_types_pass(graph, result, tout, expected):
    y = af.py_func(lambda: result, [], tout)
    async with af.Session(graph=graph) as sess:
        out = await sess.run(y)
    if isinstance(expected, list):
        assert [type(v) for v in out] == [type(v) for v in expected] and out == expected
    else:
        assert np.asarray(out).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(out, expected)


async def test_py_func_with_no_outputs_accepts_none_and_empty_tuple(graph):
    ops_ = [af.py_func(lambda: None, [], []), af.py_func(lambda: (), [], [])]
    bad = af.py_func(lambda: 1.0, [], [])
    async with af.Session(graph=graph) as sess:
        await sess.run(ops_)
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"returns 1 values, but expects to see 0 values\.\n"):
            await sess.run(bad)


# -- 3. kernel edge cases, side by side with TF 2.21 ------------------------------------------

def execute(op, inputs, **attrs):
    """The kernel's outputs as the executor gets them: the per-call pool question first."""
    kernel = create(op, inputs, **attrs)
    if kernel.expensive is None:
        kernel.is_expensive(list(inputs))
    return list(kernel.compute(None, list(inputs)))


Z23 = np.zeros((2, 3), f32)

# (op, inputs, attrs, TF 2.21's message): each was a wrapped Python exception, another
# class, or another message.
TF_ERRORS = [
    ("Range", [f32(0), f32(np.inf), f32(1)], {},
     "Requires ((limit - start) / delta) <= 9223372036854775807"),
    ("Range", [f32(np.nan), f32(1), f32(1)], {}, "Requires start <= limit when delta > 0: nan/1"),
    ("Range", [f32(0), f32(1), f32(np.nan)], {}, "Requires start >= limit when delta < 0: 0/1"),
    ("Range", [f32(1234567.0), f32(-1.5), f32(1)], {},
     "Requires start <= limit when delta > 0: 1.23457e+06/-1.5"),
    ("Range", [np.float64(0.1), np.float64(-1e20), np.float64(1)], {},
     "Requires start <= limit when delta > 0: 0.1/-1e+20"),
    ("Range", [np.zeros((1, 1), f32), f32(1), f32(1)], {},
     "start must be a scalar, not shape [1,1]"),
    ("BatchMatMulV2", [Z23, f32(1)], {}, "In[1] ndims must be >= 2: 0"),
    ("BatchMatMulV2", [f32(1), Z23], {}, "In[0] ndims must be >= 2: 0"),
    ("BatchMatMul", [f32(1), np.zeros((2, 2), f32)], {},
     "In[0] and In[1] has different ndims: [] vs. [2,2]"),
    ("MatMul", [np.zeros(2, f32), f32(1)], {}, "In[0] and In[1] has different ndims: [2] vs. []"),
    ("Cumsum", [Z23, i32(-3)], {}, "ScanOp: Expected scan axis in the range [-2, 2), but got -1"),
    ("Split", [i32([1]), Z23], {"num_split": 1}, "split_dim must be a scalar but has rank 1"),
    ("Split", [i32(5), Z23], {"num_split": 1},
     "-input rank(-2) <= split_dim < input rank (2), but got 5"),
    ("SplitV", [Z23, i32([7]), i32(1)], {"num_split": 1},
     "If there is only one output, it must have the same size as the input. Input size: 3 "
     "output size: 7"),
    ("SplitV", [Z23, i32([3]), i32([1, 2])], {"num_split": 1},
     "split_dim_tensor must have exactly one element."),
    ("StridedSlice", [np.zeros((4, 1), f32), i32([[0]]), i32([[1]]), i32([[1]])], {},
     "Expected begin, end, and strides to be 1D equal size tensors, but got shapes [1,1], "
     "[1,1], and [1,1] instead."),
    ("StridedSlice", [f32(1), i32([0]), i32([1]), i32([1])], {},
     "Attempting to slice scalar input."),
    ("StridedSlice", [np.zeros((4, 1), f32), i32([0]), i32([1]), i32([1])],
     {"ellipsis_mask": 5}, "Multiple ellipses in slice spec not allowed"),
    ("GatherV2", [Z23, i32([0]), i32(2)], {}, "Shape must be at least rank 3 but is rank 2"),
    ("GatherV2", [Z23, i32([0]), i32(-5)], {}, "Shape must be at least rank 5 but is rank 2"),
    ("GatherV2", [f32(1), i32([0]), i32(0)], {}, "params must be at least 1 dimensional"),
    ("GatherV2", [Z23, i32([0]), i32([0])], {}, "axis must be scalar"),
    ("GatherV2", [Z23, i32([[0], [1]]), i32(1)], {"batch_dims": -3},
     "Expected batch_dims in the range [-2, 2], but got -3"),
    ("GatherV2", [Z23, i32([[0], [1]]), i32(1)], {"batch_dims": 2},
     "batch_dims (2) must be less than rank(params) (2)."),
    ("GatherV2", [np.zeros((3, 3), f32), i32([[0], [1]]), i32(1)], {"batch_dims": 1},
     "params.shape[0]: 3 should be equal to indices.shape[0]: 2"),
    ("Fill", [i32([2]), np.ones((1, 1), f32)], {},
     "value must represent a scalar, got shape [1,1]"),
    ("BroadcastTo", [np.zeros(2, f32), i32([[3, 2]])], {},
     "shape must be a vector of {int32,int64}, got shape [1,2]"),
    ("BroadcastTo", [np.zeros(3, f32), i32([1])], {},
     "Unable to broadcast tensor of shape [3] to tensor of shape [1]"),
    ("ConcatV2", [f32([1]), f32(2), i32(0)], {},
     "ConcatOp : Can't concatenate scalars (use tf.stack instead)"),
    ("ConcatV2", [f32([1]), f32([2]), i32([0, 1])], {},
     "axis tensor should be a scalar integer, but got shape [2]"),
    ("Tile", [Z23, i32([[2, 1]])], {}, "Expected multiples to be 1-D, but got shape [1,2]"),
    ("Select", [np.array([True, False]), f32(1), f32(2)], {},
     "'then' must be at least a vector, but saw shape: []"),
    ("Select", [np.array([True, False]), np.zeros(2, f32), np.zeros(3, f32)], {},
     "Inputs to operation Select of type Select must have the same size and shape.  "
     "Input 0: [2] != input 2: [3]"),
    ("Select", [np.array([True, False]), Z23, np.zeros((3, 3), f32)], {},
     "'then' and 'else' must have the same size.  but received: [2,3] vs. [3,3]"),
    ("OneHot", [i32([0, 1]), i32([3]), f32(1), f32(0)], {}, "depth must be a scalar, but got: [1]"),
    ("Transpose", [Z23, i32([[1, 0]])], {}, "perm must be rank 1, got shape [1,2]"),
    ("Reshape", [Z23, i32([[6]])], {}, "sizes input must be 1-D, not [1,1]"),
]


@pytest.mark.parametrize("op, inputs, attrs, message", TF_ERRORS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(TF_ERRORS)])
def test_kernel_errors_are_tfs(op, inputs, attrs, message):
    with invalid(message):
        execute(op, inputs, **attrs)


@pytest.mark.parametrize("op", ["TruncateDiv", "TruncateMod"])
def test_truncate_div_and_mod_by_zero_are_tfs_internal_error(op):
    with pytest.raises(errors.InternalError, match=re.escape(
            "Unexpected error in binary operator (only integer div and mod should have errors)")):
        execute(op, [i32([1, 2]), i32([1, 0])])


@pytest.mark.parametrize("op", ["Cumsum", "Cumprod"])
@pytest.mark.parametrize("exclusive, reverse", [(True, False), (True, True), (False, True)])
def test_scans_over_an_empty_axis_are_empty(op, exclusive, reverse):
    for x, axis in ((np.zeros(0, f32), 0), (np.zeros((2, 0), f32), 1), (np.zeros((0, 2), f32), 0)):
        out = run1(op, [x, i32(axis)], exclusive=exclusive, reverse=reverse)
        assert out.shape == x.shape and out.dtype == x.dtype


@pytest.mark.parametrize("begin, end, strides, masks, expected", [
    # ellipsis, new-axis and shrink bits past the spec's length: TF ignores them (an ellipsis
    # bit there leaves the implicit ellipsis at the end)
    ([0], [1], [1], dict(ellipsis_mask=4), [[0.0]]),
    ([-1], [-1], [2], dict(begin_mask=4, end_mask=2, ellipsis_mask=4, new_axis_mask=4,
                           shrink_axis_mask=7), [3.0]),
    ([0, 0, 0], [1, 1, 1], [1, 1, 1], dict(ellipsis_mask=1, new_axis_mask=2,
                                            shrink_axis_mask=4), [[0.0], [1.0], [2.0], [3.0]]),
    ([0, 0], [1, 1], [1, 1], dict(ellipsis_mask=8, new_axis_mask=8, shrink_axis_mask=6),
     [0.0]),
    ([1, 0], [2, 1], [1, 1], dict(ellipsis_mask=4, new_axis_mask=4, shrink_axis_mask=1), [1.0]),
])
def test_strided_slice_mask_bits_past_the_spec(begin, end, strides, masks, expected):
    x = np.arange(4, dtype=f32).reshape(4, 1)
    out = run1("StridedSlice", [x, i32(begin), i32(end), i32(strides)], **masks)
    np.testing.assert_array_equal(out, np.asarray(expected, f32))
    assert np.shape(out) == np.shape(expected)


@pytest.mark.parametrize("op, inputs, attrs, expected", [
    ("Fill", [i32(3), f32(1)], {}, np.ones(3, f32)),  # a scalar dims is one dimension
    ("Fill", [i32([2]), f32([7])], {}, np.full(2, 7, f32)),
    ("Reshape", [Z23, i32(6)], {}, np.zeros(6, f32)),
    ("ConcatV2", [f32([1]), f32([2]), i32([0])], {}, f32([1, 2])),
    ("SplitV", [Z23, i32([3]), i32(1)], {"num_split": 1}, Z23),
    ("Split", [i32(1), Z23], {"num_split": 1}, Z23),
    ("GatherV2", [Z23, i32([[0], [1]]), i32(-1)], {"batch_dims": -1}, np.zeros((2, 1), f32)),
])
def test_tf_accepts_these_and_so_do_we(op, inputs, attrs, expected):
    outs = execute(op, inputs, **attrs)
    np.testing.assert_array_equal(outs[0], expected)
    assert np.shape(outs[0]) == expected.shape


def _random_session(seed: int):
    """A seeded random sequence of TensorArray operations (scatters, splits, gathers,
    concats, one-element reads and writes, some failing), as (outcome, ...) records."""
    rng = np.random.default_rng(seed)
    ctx = types.SimpleNamespace(step_resources={})
    n = int(rng.integers(64, 200))
    dynamic, clear = bool(rng.integers(2)), bool(rng.integers(2))
    shape = [None, [2], []][int(rng.integers(3))]
    attrs = {} if shape is None else {"element_shape": tensor_shape.TensorShape(shape)}
    handle, ta = new_ta(ctx, 0 if dynamic and rng.integers(2) else n, dynamic_size=dynamic,
                        clear_after_read=clear, **attrs)
    records = []
    for _ in range(6):
        kind = int(rng.integers(5))
        count = int(rng.integers(60, 140))
        indices = rng.integers(-1 if rng.random() < 0.1 else 0, n + 5, count)
        if rng.random() < 0.5:
            indices = rng.permutation(n)[:count] if count <= n else indices
        try:
            if kind == 0:
                value = rng.random((len(indices), 2)).astype(f32)
                scatter(ctx, handle, indices, value if shape != [] else value[:, 0])
                out = None
            elif kind == 1:
                out = gather(ctx, handle, indices)
            elif kind == 2:
                lengths = rng.integers(0, 3, ta.size()).astype(i64)
                value = rng.random((int(lengths.sum()), 2)).astype(f32)
                call(ctx, "TensorArraySplitV3", [handle, value, lengths, f32(0)])
                out = None
            elif kind == 3:
                out = call(ctx, "TensorArrayConcatV3", [handle, f32(0)], dtype=dtypes.float32)
            else:
                i = int(indices[0])
                out = call(ctx, "TensorArrayReadV3", [handle, i32(i), f32(0)],
                           dtype=dtypes.float32)[0]
            outs = out if isinstance(out, list) else [out]
            records.append(("ok", kind, [(np.shape(o), np.asarray(o).tolist()) for o in outs],
                            ta.size()))
        except errors.OpError as e:
            records.append(("error", kind, type(e).__name__,
                            e.message.replace(ta.name, "TA"), ta.size()))
    return records


@pytest.mark.parametrize("seed", range(80))
def test_bulk_operations_match_element_by_element(seed, monkeypatch):
    """Scatter/split/gather/concat in bulk end as TF's element-by-element loops do: the
    same values, the same first error, the same size."""
    bulk = _random_session(seed)
    monkeypatch.setattr(tensor_array_kernels, "_BULK", 1 << 30)  # the reference: one by one
    assert bulk == _random_session(seed)


# -- kernels of the new families: long-profile fuzz findings (wrapped raw exceptions) ---------

def test_sparse_segment_cost_estimate_takes_a_scalar_data_input():
    # is_expensive called len() of a NumPy scalar (TypeError); compute then says why
    kernel = create("SparseSegmentSum", [np.uint32(3), i32([0]), i32([0])])
    assert kernel.is_expensive([np.uint32(3), i32([0]), i32([0])]) is False


@pytest.mark.parametrize("indices, updates, message", [
    (i32([[0]]), f32(1), "Dimensions [0,1) of indices[shape=[1,1]] = 1 must match dimensions "
                         "[0,1) of updates[shape=[]] = none"),
    (i32(0), f32([1]), "Dimensions [0,1) of indices[shape=[]] = none must match dimensions "
                       "[0,1) of updates[shape=[1]] = 1"),
])
def test_scatter_with_a_scalar_has_no_dimension_zero(indices, updates, message):
    # TF reads an undefined size there (its message prints garbage); aioflow says "none"
    with invalid(message):
        run1("ScatterNdNonAliasingAdd", [np.zeros(3, f32), indices, updates])


@pytest.mark.parametrize("rows, cols, message", [
    (i32([3, 4]), i32(-1), "num_rows must be a scalar"),
    (i32(-1), np.zeros(0, i32), "num_cols must be a scalar"),
])
def test_matrix_diag_v3_row_and_column_counts_are_scalars(rows, cols, message):
    with invalid(message):  # TF 2.21's words (checked)
        run1("MatrixDiagV3", [np.ones(3, f32), i32(0), rows, cols, f32(0)])


def test_unique_v2_of_strings_along_an_axis_and_of_an_empty_axis():
    x = np.array([[b"a", b"b"], [b"c", b"d"], [b"a", b"b"]], dtype=object)
    values, idx = run_kernel("UniqueV2", [x, i64([0])])
    assert values.tolist() == [[b"a", b"b"], [b"c", b"d"]] and idx.tolist() == [0, 1, 0]
    values, idx = run_kernel("UniqueV2", [np.zeros((3, 0), f32), i64([1])])
    assert values.shape == (3, 0) and idx.shape == (0,)


def test_unsorted_segment_max_of_bfloat16_fills_empty_segments_with_the_lowest_value():
    bf16 = dtypes.bfloat16.as_numpy_dtype
    out = run1("UnsortedSegmentMax", [np.array([1, 2], bf16), i32([0, 0]), i32(2)])
    assert out.dtype == bf16 and float(out[0]) == 2.0
    assert float(out[1]) == float(ml_dtypes.finfo(bf16).min)


def test_einsum_labels_are_bytes_as_in_tf():
    # TF 2.21 takes any byte as a label: b"\xff,i->" sums the outer product (4.0, checked);
    # decoding the equation as UTF-8 raised UnicodeDecodeError
    out = run1("Einsum", [np.ones(2, f32), np.ones(2, f32)], equation=b"\xff,i->")
    assert out == f32(4.0)


def test_fill_and_tile_past_numpys_reach_are_tfs_oom():
    """Fill and Tile of a shape NumPy cannot hold: TF's ResourceExhaustedError (OOM), not a
    wrapped 'array is too big' ValueError (the fuzzer's); a -0.0 fill stays -0.0."""
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor"):
        run_kernel("Fill", [np.array([2**40, 2**40], np.int64), np.float32(1)])
    with pytest.raises(errors.ResourceExhaustedError, match="OOM when allocating tensor"):
        run_kernel("Tile", [np.ones((2, 2), np.float32), np.array([2**40, 2**40], np.int64)])
    (out,) = run_kernel("Fill", [np.array([2], np.int32), np.float32(-0.0)])
    assert np.signbit(out).all()
