"""Ref variables and the TF 1.x variable API: VariableV2 / Assign / AssignAdd / Scatter* /
CountUpTo kernels, the executor's deref of refs, OpDefs and GraphDefs against TF 2.21's
(tests/data/variables_*, made by tests/data/make_variable_fixtures.py), errors in TF's
classes and words, sharing across signatures and sessions, concurrency."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import graph_pb2, op_def_pb2

DATA = Path(__file__).parent / "data"
pytestmark = pytest.mark.usefixtures("segments_mode", "executor_type")

VALUES = json.loads((DATA / "variables_values.json").read_text())


def _graph_def(name: str) -> graph_pb2.GraphDef:
    return graph_pb2.GraphDef.FromString((DATA / f"variables_{name}.pb").read_bytes())


def test_op_defs_equal_tf():
    """The variable OpDefs are TF 2.21's field for field (docs aside)."""
    tf_ops = op_def_pb2.OpList.FromString((DATA / "variables_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == 34
    assert_equal_to_tf(tf_ops)


# -- TF-written GraphDefs ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["ref", "resource", "while", "cond"])
async def test_tf_graph_defs_import_and_run(name):
    """GraphDefs TF wrote (tf.compat.v1.Variable, get_variable, resource variables, a
    variable updated in a while loop) run here to TF's values."""
    spec = VALUES[name]
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(_graph_def(name), name="")
    async with af.Session(graph=g) as sess:
        await sess.run(spec["init"])
        values = await sess.run(spec["fetch"])
        if spec["targets"]:
            await sess.run(spec["targets"])
        after = await sess.run(spec["after"])
    for got, want in zip(values + after, spec["values"] + spec["after_values"], strict=True):
        np.testing.assert_allclose(got, want)


def _variable_nodes(graph_def: graph_pb2.GraphDef, prefixes) -> dict:
    """name -> (op, inputs, attrs) of the nodes under the given names."""
    out = {}
    for node in graph_def.node:
        if node.name == "init" or any(node.name == p or node.name.startswith(p + "/")
                                      for p in prefixes):
            out[node.name] = (node.op, list(node.input), dict(node.attr))
    return out


@pytest.mark.parametrize("use_resource", [False, True])
def test_builders_write_tf_nodes(use_resource):
    """af.Variable / get_variable / variable_scope / global_variables_initializer write
    the nodes TF 1.x writes for the same program: names, ops, inputs and attrs."""
    g = af.Graph()
    with g.as_default():
        af.Variable([1.0, 2.0], name="v", use_resource=use_resource)
        af.get_variable("w", shape=[2, 3], initializer=af.ones_initializer(),
                        use_resource=use_resource)
        with af.variable_scope("scope"):
            af.get_variable("c", initializer=af.constant_initializer(7), shape=[],
                            dtype=af.int64, use_resource=use_resource)
        if not use_resource:
            af.assign_add(g.get_operation_by_name("v").outputs[0], [10.0, 20.0], name="add")
        af.global_variables_initializer()
    prefixes = ["v", "w", "scope/c"] + ([] if use_resource else ["add"])
    want = _variable_nodes(_graph_def("resource" if use_resource else "ref"), prefixes)
    got = _variable_nodes(g.as_graph_def(), prefixes)
    assert sorted(got) == sorted(want)
    for name, (op, inputs, attrs) in want.items():
        assert got[name][:2] == (op, inputs), name
        assert got[name][2] == attrs, name


def test_cond_builder_writes_tf_nodes():
    """A ref variable updated in a cond's branches: RefSwitch into each branch, RefMerge
    of the two refs, as TF's cond writes them (Const values aside)."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable(1.0, name="v")
        p = af.placeholder_with_default(True, [], name="p")
        out = af.cond(p, lambda: af.assign_add(v, 10.0), lambda: af.assign_sub(v, 1.0))
        af.identity(out, name="out")
        af.global_variables_initializer()
    for want, got in zip(_graph_def("cond").node, g.as_graph_def().node, strict=True):
        assert (got.name, got.op, list(got.input)) == (want.name, want.op, list(want.input))
        assert sorted(got.attr) == sorted(want.attr), want.name
        for key in want.attr:
            if key != "value":
                assert got.attr[key] == want.attr[key], (want.name, key)


# -- ref variable semantics ------------------------------------------------------------------
async def test_uninitialized_read_is_tf_error():
    """Reading an uninitialized variable: FailedPreconditionError naming it, from the
    node that reads it (v/read) and from a fetch of the variable itself, in TF's words."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable([1.0, 2.0], name="v")
        plus = v + 1
        inc = af.assign_add(v, [1.0, 1.0])
        is_init = af.is_variable_initialized(v)
        report = af.report_uninitialized_variables()
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.FailedPreconditionError) as e:
            await sess.run(plus)
        assert e.value.message.startswith("Attempting to use uninitialized value v\n")
        assert e.value.node_def.name == "v/read"
        with pytest.raises(errors.FailedPreconditionError,
                           match="^Attempting to use uninitialized value v\n"):
            await sess.run(v)
        with pytest.raises(errors.FailedPreconditionError,
                           match="^Attempting to use uninitialized value v\n"):
            await sess.run(inc)
        assert not await sess.run(is_init)
        assert list(await sess.run(report)) == [b"v"]
        await sess.run(v.initializer)
        np.testing.assert_array_equal(await sess.run(plus), [2.0, 3.0])
        assert await sess.run(is_init)
        assert list(await sess.run(report)) == []


async def test_assign_validate_shape_and_values():
    g = af.Graph()
    with g.as_default():
        v = af.Variable([1.0, 2.0], name="v")
        x = af.placeholder(af.float32)
        assign = af.assign(v, x)
        loose = af.assign(v, x, validate_shape=False)
        sub = af.assign_sub(v, x)
    async with af.Session(graph=g) as sess:
        # While uninitialized, the declared shape is the lhs shape (as TF).
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^Assign requires shapes of both tensors to match. lhs "
                                 r"shape= \[2\] rhs shape= \[3\]"):
            await sess.run(assign, {x: [1.0, 2.0, 3.0]})
        np.testing.assert_array_equal(await sess.run(loose, {x: [[1.0, 2.0, 3.0]]}),
                                      [[1.0, 2.0, 3.0]])
        with pytest.raises(errors.InvalidArgumentError, match=r"lhs shape= \[1,3\] rhs "
                                                              r"shape= \[2\]"):
            await sess.run(v.initializer)
        np.testing.assert_array_equal(await sess.run(sub, {x: [[1.0, 1.0, 1.0]]}),
                                      [[0.0, 1.0, 2.0]])
        with pytest.raises(errors.InvalidArgumentError,
                           match="^Parameters and update must be the same size"):
            await sess.run(sub, {x: [1.0]})


async def test_fetched_value_is_a_copy():
    """A fetched variable is the value at the fetch: a later in-place update does not
    change it (TF's client copies a buffer it does not own)."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable([1.0, 2.0], name="v")
        inc = af.assign_add(v, [1.0, 1.0])
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        before = await sess.run(v)
        await sess.run(inc)
        np.testing.assert_array_equal(before, [1.0, 2.0])
        np.testing.assert_array_equal(await sess.run(v), [2.0, 3.0])
        before[0] = 100.0  # the caller's copy is writable and its own
        np.testing.assert_array_equal(await sess.run(v), [2.0, 3.0])


async def test_feed_a_variable():
    """A variable may be fed (its uses read the fed value; nothing needs initializing),
    as in TF 1.x."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable([1.0, 2.0], name="v")
        y = v * 2
    async with af.Session(graph=g) as sess:
        np.testing.assert_array_equal(await sess.run(y, {v: [5.0, 6.0]}), [10.0, 12.0])
        np.testing.assert_array_equal(await sess.run(y, {v.value(): [7.0, 6.0]}),
                                      [14.0, 12.0])
        np.testing.assert_array_equal(await sess.run(v, {v: [5.0, 6.0]}), [5.0, 6.0])


async def test_variable_on_another_device():
    """Ops that take a variable's ref are colocated with it (TF's _class); reads from
    another device go through _Send/_Recv of its value."""
    g = af.Graph()
    with g.as_default():
        with af.device("/cpu:1"):
            v = af.Variable([1.0, 2.0], name="v")
            r = af.Variable([1.0, 2.0], name="r", use_resource=True)
        inc = af.assign_add(v, [1.0, 1.0])
        y = v * 2
        r_inc = r.assign_add([1.0, 1.0])
        init = af.global_variables_initializer()
    assert inc.op.get_attr("_class") == [b"loc:@v"]
    config = af.ConfigProto(device_count={"CPU": 2})
    async with af.Session(graph=g, config=config) as sess:
        await sess.run(init)
        np.testing.assert_array_equal(await sess.run(inc), [2.0, 3.0])
        np.testing.assert_array_equal(await sess.run(y), [4.0, 6.0])
        np.testing.assert_array_equal(await sess.run(r_inc), [2.0, 3.0])
        options, metadata = af.RunOptions(output_partition_graphs=True), af.RunMetadata()
        await sess.run(inc, options=options, run_metadata=metadata)
    placed = {n.name: n.device for part in metadata.partition_graphs for n in part.node}
    assert placed["AssignAdd"].endswith("CPU:1") and placed["v"].endswith("CPU:1")


async def test_count_up_to():
    g = af.Graph()
    with g.as_default():
        c = af.Variable(0, name="c")
        up = c.count_up_to(2)
    async with af.Session(graph=g) as sess:
        await sess.run(c.initializer)
        assert [await sess.run(up), await sess.run(up)] == [0, 1]
        with pytest.raises(errors.OutOfRangeError, match="^Reached limit of 2"):
            await sess.run(up)


@pytest.mark.parametrize("fn,want", [
    (af.scatter_update, [[10.0, 10.0], [3.0, 4.0], [30.0, 30.0]]),
    (af.scatter_add, [[11.0, 12.0], [3.0, 4.0], [35.0, 36.0]]),
    (af.scatter_sub, [[-9.0, -8.0], [3.0, 4.0], [-25.0, -24.0]]),
    (af.scatter_mul, [[10.0, 20.0], [3.0, 4.0], [150.0, 180.0]]),
    (af.scatter_div, [[0.1, 0.2], [3.0, 4.0], [5 / 30, 6 / 30]]),
    (af.scatter_min, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
    (af.scatter_max, [[10.0, 10.0], [3.0, 4.0], [30.0, 30.0]]),
])
async def test_scatter(fn, want):
    g = af.Graph()
    with g.as_default():
        v = af.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="v")
        op = fn(v, [0, 2], [[10.0, 10.0], [30.0, 30.0]])
        bad = fn(v, af.placeholder_with_default(np.array([5], np.int32), [None]),
                 [[1.0, 1.0]])
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        np.testing.assert_allclose(await sess.run(op), want, rtol=1e-6)
        with pytest.raises(errors.InvalidArgumentError, match=r"^indices\[0\] = 5 is not in "
                                                              r"\[0, 3\)"):
            await sess.run(bad)


async def test_scatter_duplicates_and_int_div():
    """Duplicate indices apply one after the other; integer division truncates (C)."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable([0, -7, 9], name="v")
        add = af.scatter_add(v, [0, 0, 0], [1, 2, 3])
        div = af.scatter_div(v, [1, 2, 2], [2, 2, -2])
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        np.testing.assert_array_equal(await sess.run(add), [6, -7, 9])
        np.testing.assert_array_equal(await sess.run(div), [6, -3, -2])


async def test_scatter_nd():
    g = af.Graph()
    with g.as_default():
        v = af.Variable(np.zeros((2, 2), np.float32), name="v")
        upd = af.scatter_nd_update(v, [[0, 1], [1, 0]], [5.0, 6.0])
        add = af.scatter_nd_add(v, [[0, 1], [0, 1]], [1.0, 1.0])
        sub = af.scatter_nd_sub(v, [[1]], [[1.0, 1.0]])
        bad = af.scatter_nd_add(v, af.placeholder_with_default(
            np.array([[5, 0]], np.int32), [None, 2]), [1.0])
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        np.testing.assert_array_equal(await sess.run(upd), [[0, 5], [6, 0]])
        np.testing.assert_array_equal(await sess.run(add), [[0, 7], [6, 0]])
        np.testing.assert_array_equal(await sess.run(sub), [[0, 7], [5, -1]])
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"^indices\[0\] = \[5, 0\] does not index into shape "
                                 r"\[2,2\]"):
            await sess.run(bad)


async def test_shared_name_and_container():
    """Two VariableV2 of one shared_name are one variable (any shape, as TF); another
    container is another variable; a dtype clash is TF's InternalError."""
    g = af.Graph()
    with g.as_default():
        w1 = apply_op("VariableV2", name="w1", shape=[2], dtype=af.float32,
                      shared_name="shared")
        w2 = apply_op("VariableV2", name="w2", shape=[3], dtype=af.float32,
                      shared_name="shared")
        other = apply_op("VariableV2", name="w3", shape=[2], dtype=af.float32,
                         shared_name="shared", container="other")
        clash = apply_op("VariableV2", name="w4", shape=[2], dtype=af.int32,
                         shared_name="shared")
        init = af.assign(w1, [5.0, 6.0])
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        np.testing.assert_array_equal(await sess.run(w2), [5.0, 6.0])
        with pytest.raises(errors.FailedPreconditionError):
            await sess.run(other)
        with pytest.raises(errors.InternalError, match=r"^Output 0 of type float_ref does not "
                                                       r"match declared output type "
                                                       r"int32_ref for node \{\{node w4\}\}"):
            await sess.run(clash)


async def test_variable_outlives_runs_and_signatures():
    """One variable seen from different fetch signatures (different executors) and
    across runs; Session.reset drops it; close frees it."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable(0.0, name="v")
        inc = af.assign_add(v, 1.0)
        x = af.placeholder(af.float32, [])
        inc_x = af.assign_add(v, x)
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        await sess.run(inc)
        await sess.run([inc, v.value()])
        await sess.run(inc_x, {x: 10.0})
        assert await sess.run(v) == 12.0
        af.Session.reset("", ["localhost"])  # resets, then closes every session (TF)
        with pytest.raises(errors.CancelledError, match="Session has been closed."):
            await sess.run(v)
    async with af.Session(graph=g) as sess:  # a new session: the variable is new
        with pytest.raises(errors.FailedPreconditionError):
            await sess.run(v)
        await sess.run(v.initializer)
        assert await sess.run(v) == 0.0
    with pytest.raises(RuntimeError, match="closed Session"):
        await sess.run(v)


async def test_variable_in_while_loop():
    """A variable updated in each iteration of a while loop (built here)."""
    g = af.Graph()
    with g.as_default():
        acc = af.Variable(0.0, name="acc")

        def body(i):
            with af.control_dependencies([af.assign_add(acc, af.cast(i, af.float32))]):
                return i + 1

        out = af.while_loop(lambda i: i < 10, body, [af.constant(0)])
    async with af.Session(graph=g) as sess:
        await sess.run(acc.initializer)
        assert await sess.run(out) == 10
        assert await sess.run(acc) == 45.0


async def test_stateful_kernel_shared_across_signatures():
    """A seeded random op fetched from two signatures continues one sequence, as in TF
    (one kernel per session: TF's OpSegment); a second session starts it again."""
    g = af.Graph()
    with g.as_default():
        af.set_random_seed(7)
        r = af.random_uniform([3], seed=1, name="r")
        other = af.identity(r, name="other")
    want = VALUES["shared_kernel"]
    async with af.Session(graph=g) as sess:
        got = [await sess.run(r), (await sess.run([r, other]))[0], await sess.run(other)]
    np.testing.assert_array_equal(np.float32(got), np.float32(want))
    async with af.Session(graph=g) as sess:
        np.testing.assert_array_equal(await sess.run(other), np.float32(want[0]))


@pytest.mark.executor_types()  # the default executor's thread pool
@pytest.mark.parametrize("on_pool", [False, True])
async def test_concurrent_assign_add_loses_nothing(on_pool, monkeypatch):
    """Thousands of gathered assign_add runs, inline and with the kernel on the pool."""
    from aioflow.kernels.state import variable_kernels
    threads = set()
    compute = variable_kernels.AssignAddOp.compute

    def recording(self, ctx, inputs):
        threads.add(threading.current_thread().name.startswith("aioflow-CPU-pool"))
        return compute(self, ctx, inputs)

    monkeypatch.setattr(variable_kernels.AssignAddOp, "compute", recording)
    if on_pool:
        monkeypatch.setattr(variable_kernels.AssignAddOp, "expensive", True)
    g = af.Graph()
    with g.as_default():
        v = af.Variable(np.zeros(4, np.int64), name="v")
        inc = af.assign_add(v, np.ones(4, np.int64)).op
    async with af.Session(graph=g) as sess:
        await sess.run(v.initializer)
        await asyncio.gather(*[sess.run(inc) for _ in range(3000)])
        np.testing.assert_array_equal(await sess.run(v), [3000] * 4)
    assert threads == {on_pool}


def test_variable_api():
    """Collections, reuse, initial_value, and TF's messages for misuse."""
    g = af.Graph()
    with g.as_default():
        v = af.Variable(1.0, name="v")
        t = af.Variable(2.0, name="t", trainable=False)
        loc = af.get_local_variable("loc", shape=[], initializer=af.zeros_initializer())
        with af.variable_scope("s"):
            w = af.get_variable("w", [2], initializer=af.zeros_initializer())
        with af.variable_scope("s", reuse=True):
            assert af.get_variable("w", [2]) is w
            with pytest.raises(ValueError, match="^Variable s/x does not exist"):
                af.get_variable("x", [2])
        with af.variable_scope("s", reuse=af.AUTO_REUSE):
            assert af.get_variable("w", [2]) is w
        with pytest.raises(ValueError, match="^Variable s/w already exists, disallowed"), \
                af.variable_scope("s"):
            af.get_variable("w", [2])
        with pytest.raises(TypeError, match="be a mutable tensor"):
            af.assign_add(af.constant(1.0), 1.0)
        f = af.get_variable("f", [2])  # the default float initializer: glorot_uniform
        assert f.initial_value.op.type == "AddV2"  # RandomUniform * (max - min) + min
    with g.as_default():
        assert af.global_variables() == [v, t, w, f]
        assert af.trainable_variables() == [v, w, f]
        assert af.local_variables() == [loc]
        assert v.initial_value.op.name == "v/initial_value"
        assert w.name == "s/w:0" and w.op.name == "s/w"
        assert v.dtype == af.float32._as_ref and v.shape.as_list() == []
