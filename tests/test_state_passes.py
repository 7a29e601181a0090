"""The state passes of the registry (issue #11, point 4): ParallelConcatRemovePass
(PRE_PLACEMENT, phase 0) with `af.parallel_stack` and the `_ParallelConcat*` kernels,
ResourceVariableReadPass (POST_REWRITE_FOR_EXEC, phase 0) with `_UnsafeReadVariable`,
and graph dumps after each grouping (AIOFLOW_DUMP_GRAPH_PREFIX)."""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest
from google.protobuf import text_format

import aioflow as af
from aioflow.framework import errors, op_def_registry
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.var import Var
from aioflow.kernels.array.parallel_concat_kernels import check_update
from aioflow.kernels.state.unsafe_read_kernels import VariableBuffer
from aioflow.passes import graph_dump, resource_variable_read
from aioflow.passes.registry import Grouping, global_registry
from aioflow.proto import graph_pb2, op_def_pb2
from tests.op_def_compare import ours

# TF 2.21's OpDefs (op_def_registry.get(name)), without documentation.
TF_OP_DEFS = {
    "ParallelConcat": """name: "ParallelConcat"
        input_arg { name: "values" type_attr: "T" number_attr: "N" }
        output_arg { name: "output" type_attr: "T" }
        attr { name: "N" type: "int" has_minimum: true minimum: 1 }
        attr { name: "T" type: "type" }
        attr { name: "shape" type: "shape" }""",
    "_ParallelConcatStart": """name: "_ParallelConcatStart"
        output_arg { name: "output" type_attr: "dtype" }
        attr { name: "shape" type: "shape" }
        attr { name: "dtype" type: "type" }
        is_stateful: true""",
    "_ParallelConcatUpdate": """name: "_ParallelConcatUpdate"
        input_arg { name: "value" type_attr: "T" }
        input_arg { name: "update" type_attr: "T" }
        output_arg { name: "output" type_attr: "T" }
        attr { name: "T" type: "type" }
        attr { name: "loc" type: "int" }""",
}

# The nodes TF 2.21's tf.parallel_stack([Const, Const_1]) adds: (name, op, inputs).
TF_PARALLEL_STACK = [
    ("parallel_stack/ExpandDims/dim", "Const", []),
    ("parallel_stack/ExpandDims", "ExpandDims", ["Const", "parallel_stack/ExpandDims/dim"]),
    ("parallel_stack/ExpandDims_1/dim", "Const", []),
    ("parallel_stack/ExpandDims_1", "ExpandDims", ["Const_1", "parallel_stack/ExpandDims_1/dim"]),
    ("parallel_stack/ParallelConcat", "ParallelConcat",
     ["parallel_stack/ExpandDims", "parallel_stack/ExpandDims_1"]),
]


def _passes_at(grouping: Grouping, phase: int) -> list[str]:
    return [name for name, _fn in global_registry()._passes[grouping].get(phase, [])]


async def _run_with_partitions(sess, fetches, feed_dict=None):
    """(values, the partition graphs' nodes by name) of one run."""
    md = af.RunMetadata()
    values = await sess.run(fetches, feed_dict, options=af.RunOptions(
        output_partition_graphs=True), run_metadata=md)
    nodes = {n.name: n for part in md.partition_graphs for n in part.node}
    return values, nodes


# -- ParallelConcat ---------------------------------------------------------------------------

def test_the_passes_are_registered_at_tf_groupings_and_phases():
    assert "ParallelConcatRemovePass" in _passes_at(Grouping.PRE_PLACEMENT, 0)
    assert "ResourceVariableReadPass" in _passes_at(Grouping.POST_REWRITE_FOR_EXEC, 0)


@pytest.mark.parametrize("name", sorted(TF_OP_DEFS))
def test_op_defs_equal_tf(name):
    expected = text_format.Parse(TF_OP_DEFS[name], op_def_pb2.OpDef())
    assert ours(name) == expected


def test_unsafe_read_variable_has_read_variable_ops_signature():
    unsafe, read = op_def_registry.get("_UnsafeReadVariable"), op_def_registry.get(
        "ReadVariableOp")
    assert unsafe.input_arg == read.input_arg and unsafe.output_arg == read.output_arg
    assert unsafe.attr == read.attr and unsafe.is_stateful


def test_parallel_stack_writes_tfs_nodes(graph):
    a, b = af.constant([1.0, 2.0]), af.constant([3.0, 4.0])
    out = af.parallel_stack([a, b])
    nodes = graph.as_graph_def().node[2:]
    assert [(n.name, n.op, list(n.input)) for n in nodes] == TF_PARALLEL_STACK
    assert out.shape.as_list() == [2, 2]
    assert nodes[-1].attr["N"].i == 2
    assert [d.size for d in nodes[-1].attr["shape"].shape.dim] == [2, 2]


@pytest.mark.parametrize("dtype,shape,count", [
    (np.float32, (3,), 2), (np.int64, (2, 3), 4), (np.float64, (), 3), (np.int32, (1, 2, 2), 1)])
async def test_parallel_stack_equals_stack(graph, dtype, shape, count):
    rng = np.random.default_rng(7)
    values = [(rng.standard_normal(shape) * 10).astype(dtype) for _ in range(count)]
    ph = [af.placeholder(af.as_dtype(dtype), shape) for _ in range(count)]
    parallel, packed = af.parallel_stack(ph), af.stack(ph)
    async with af.Session(graph=graph) as sess:
        got, want = await sess.run([parallel, packed], dict(zip(ph, values, strict=True)))
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and got.shape == (count, *shape)


async def test_parallel_concat_equals_concat(graph):
    rows = [np.arange(i, i + 6, dtype=np.float32).reshape(1, 2, 3) for i in range(5)]
    inputs = [af.constant(r) for r in rows]
    out = apply_op("ParallelConcat", values=inputs, shape=[5, 2, 3])
    async with af.Session(graph=graph) as sess:
        got, want = await sess.run([out, af.concat(inputs, 0)])
    np.testing.assert_array_equal(got, want)


async def test_the_rewritten_graph_is_start_updates_and_identity(graph, tmp_path,
                                                                 monkeypatch):
    monkeypatch.setenv(graph_dump.ENV, str(tmp_path))
    x = af.placeholder(af.float32, [2], name="x")
    gate = af.no_op(name="gate")
    rows = [af.expand_dims(x, 0), af.expand_dims(x * 2.0, 0)]
    with af.control_dependencies([gate]):
        out = apply_op("ParallelConcat", name="pc", values=rows, shape=[2, 2])
    async with af.Session(graph=graph) as sess:
        value, nodes = await _run_with_partitions(sess, out, {x: [1.0, 2.0]})
    np.testing.assert_array_equal(value, [[1.0, 2.0], [2.0, 4.0]])
    assert not [n for n in nodes.values() if n.op == "ParallelConcat"]
    start = nodes["pc/Internal/_0"]
    assert start.op == "_ParallelConcatStart"
    pre = {n.name: n for n in _dumped(tmp_path)["pre_placement.pbtxt"].node}
    assert list(pre[start.name].input) == ["^gate"]  # the ParallelConcat's control input
    assert [d.size for d in start.attr["shape"].shape.dim] == [2, 2]
    assert start.attr["dtype"].type == af.float32.as_datatype_enum
    updates = [nodes["pc/Internal/_1"], nodes["pc/Internal/_2"]]
    assert [u.op for u in updates] == ["_ParallelConcatUpdate"] * 2
    assert [u.attr["loc"].i for u in updates] == [0, 1]
    assert [u.input[0] for u in updates] == [start.name] * 2
    identity = nodes["pc"]
    assert identity.op == "Identity"
    assert list(identity.input) == [start.name, "^pc/Internal/_1", "^pc/Internal/_2"]


async def test_each_run_fills_a_fresh_buffer(graph, segments_mode):
    x = af.placeholder(af.float32, [3])
    out = af.parallel_stack([x, x + 1.0, x * 2.0])
    async with af.Session(graph=graph) as sess:  # compiled segments from the third run
        got = [await sess.run(out, {x: np.full(3, i, np.float32)}) for i in range(6)]
    for i, value in enumerate(got):
        np.testing.assert_array_equal(value, [[i] * 3, [i + 1] * 3, [2 * i] * 3])


async def test_a_session_extended_with_parallel_concat_rewrites_it(graph):
    x = af.placeholder(af.float32, [2])
    y = x * 3.0
    async with af.Session(graph=graph) as sess:
        assert global_registry().needs_whole_graph(graph.as_graph_def().node) is False
        np.testing.assert_array_equal(await sess.run(y, {x: [1.0, 2.0]}), [3.0, 6.0])
        with graph.as_default():
            out = af.parallel_stack([x, y])
        assert global_registry().needs_whole_graph([out.op.node_def]) is True
        np.testing.assert_array_equal(await sess.run(out, {x: [1.0, 2.0]}),
                                      [[1.0, 2.0], [3.0, 6.0]])


@pytest.mark.parametrize("inputs,shape,message", [
    ([[1.0, 2.0]], [1, 2], "Size of first dimension must be 1."),
    ([[[1.0, 2.0]]], [1, 3], "Dimension 1 in both shapes must be equal, but are 2 and 3. "
                             "Shapes are [1,2] and [1,3].\n\tFrom merging shape 0"),
    ([[[1.0, 2.0]]], [None, 2], "shape attr must be fully defined."),
    ([1.0], [1], "The rank of all input shapes must be greater than 0, but input 0 had "
                 "rank 0."),
])
def test_parallel_concat_shape_errors_are_tfs(graph, inputs, shape, message):
    with pytest.raises(ValueError) as e:
        apply_op("ParallelConcat", values=[af.constant(v) for v in inputs], shape=shape)
    assert str(e.value).startswith(message)


def test_inputs_of_unknown_shape_are_refused_as_tf(graph):
    with pytest.raises(ValueError, match="All input shapes must be fully defined."):
        apply_op("ParallelConcat", values=[af.placeholder(af.float32)] * 2, shape=[2, 2])
    with pytest.raises(ValueError, match="shape attr must be fully defined."):
        af.parallel_stack([af.placeholder(af.float32), af.placeholder(af.float32)])


@pytest.mark.parametrize("value,update,message", [
    ((2, 2), (2,), "value and update shape doesn't match: [2,2] vs. [2]"),
    ((2, 2), (1, 3), "value and update shape doesn't match [2,2] vs. [1,3]"),
    ((2, 2), (2, 2), "update shape doesn't match: [2,2] vs. [2,2]")])
def test_the_update_kernel_checks_shapes_as_tf(value, update, message):
    with pytest.raises(errors.InvalidArgumentError) as e:
        check_update(np.zeros(value), np.zeros(update))
    assert e.value.message == message


# -- ResourceVariableReadPass -------------------------------------------------------------------

def _resource_variable(value):
    v = af.get_variable("v", initializer=af.constant(value), use_resource=True)
    return v, af.global_variables_initializer()


@pytest.fixture
def unsafe_reads(monkeypatch):
    monkeypatch.setenv(resource_variable_read.ENV, "1")


async def test_the_read_pass_is_off_by_default(graph, monkeypatch):
    monkeypatch.delenv(resource_variable_read.ENV, raising=False)
    v, init = _resource_variable(np.arange(4.0))
    async with af.Session(graph=graph) as sess:
        await sess.run(init)
        value, nodes = await _run_with_partitions(sess, v)
    assert "_UnsafeReadVariable" not in {n.op for n in nodes.values()}
    assert type(value) is np.ndarray and value.flags.writeable


async def test_a_fetched_read_becomes_unsafe_read_variable(graph, unsafe_reads):
    v, init = _resource_variable(np.arange(4.0))
    read = v.value()
    async with af.Session(graph=graph) as sess:
        await sess.run(init)
        value, nodes = await _run_with_partitions(sess, read)
    assert read.op.type == "ReadVariableOp"
    assert "ReadVariableOp" not in {n.op for n in nodes.values()}
    unsafe = nodes[read.op.name]  # named as the read: errors name the user's node
    assert unsafe.op == "_UnsafeReadVariable" and list(unsafe.input) == ["v"]
    assert unsafe.attr["dtype"].type == af.float64.as_datatype_enum
    np.testing.assert_array_equal(value, np.arange(4.0))
    assert isinstance(value, VariableBuffer) and not value.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        value[0] = 9.0
    assert type(value + 1) is np.ndarray and type(value.sum()) is np.float64


async def test_a_read_with_other_consumers_is_kept(graph, unsafe_reads):
    v, init = _resource_variable(np.arange(3.0))
    read = v.value()
    doubled = read * 2.0
    async with af.Session(graph=graph) as sess:
        await sess.run(init)
        (value, twice), nodes = await _run_with_partitions(sess, [read, doubled])
    assert nodes[read.op.name].op == "ReadVariableOp"
    assert type(value) is np.ndarray and value.flags.writeable
    np.testing.assert_array_equal(twice, [0.0, 2.0, 4.0])


async def test_later_updates_never_change_a_fetched_value(graph, unsafe_reads):
    v, init = _resource_variable(np.zeros(4, np.float32))
    add = v.assign_add(np.ones(4, np.float32), read_value=False)
    scatter = apply_op("ResourceScatterUpdate", resource=v.handle, indices=[2],
                       updates=np.array([7.0], np.float32))
    assign = v.assign(np.full(4, 5.0, np.float32), read_value=False)
    async with af.Session(graph=graph) as sess:
        await sess.run(init)
        before = await sess.run(v)
        await sess.run(add)
        after_add = await sess.run(v)
        await sess.run(scatter)
        after_scatter = await sess.run(v)
        await sess.run(assign)
        after_assign = await sess.run(v)
    np.testing.assert_array_equal(before, [0, 0, 0, 0])
    np.testing.assert_array_equal(after_add, [1, 1, 1, 1])
    np.testing.assert_array_equal(after_scatter, [1, 1, 7, 1])
    np.testing.assert_array_equal(after_assign, [5, 5, 5, 5])


async def test_a_variable_holding_a_view_is_lent_safely(graph, unsafe_reads):
    v = af.get_variable("v", [4], initializer=af.zeros_initializer(), use_resource=True)
    x = af.placeholder(af.float32, [2, 2])
    assign = v.assign(af.reshape(x + 0.0, [4]), read_value=False)  # a view of x + 0
    add = v.assign_add(np.ones(4, np.float32), read_value=False)
    async with af.Session(graph=graph) as sess:
        await sess.run(assign, {x: np.zeros((2, 2), np.float32)})
        fetched = await sess.run(v)
        await sess.run(add)
        np.testing.assert_array_equal(fetched, [0, 0, 0, 0])
        np.testing.assert_array_equal(await sess.run(v), [1, 1, 1, 1])


async def test_an_unsafe_read_of_a_missing_variable_fails_as_read_variable_op(
        graph, unsafe_reads):
    v = af.get_variable("v", [2], initializer=af.zeros_initializer(), use_resource=True)
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="Could not find variable v"):
            await sess.run(v)


# -- copy-on-write of resource variables, as the read pass relies on -------------------------

def test_an_update_copies_a_buffer_that_is_a_view_before_writing():
    """A reader's view of a view has the base array as its base: the reference count
    alone would not see it, so Var.writable copies such a buffer first."""
    var = Var("v", af.float32)
    var.value = np.zeros((2, 4), np.float32).reshape(8)  # a writable view
    reader = var.value.view()
    reader.flags.writeable = False
    buf = var.writable()
    buf += 1.0
    np.testing.assert_array_equal(reader, np.zeros(8))
    assert var.value is buf and buf.base is None


@pytest.mark.parametrize("unsafe", ["0", "1"])
async def test_reads_concurrent_with_updates_are_never_torn(graph, monkeypatch, unsafe):
    """Reads take the variable's lock: an update on a pool thread finishes before a read
    views the buffer, and one starting after it sees the reader and copies."""
    monkeypatch.setenv(resource_variable_read.ENV, unsafe)
    size = 2_000_000
    v = af.get_variable("v", [size], initializer=af.zeros_initializer(), use_resource=True)
    add = v.assign_add(af.ones([size]), read_value=False)
    read = v.read_value()
    torn = []
    async with af.Session(graph=graph) as sess:
        await sess.run(af.global_variables_initializer())

        async def reader():
            for _ in range(25):
                value = await sess.run(read)
                if value.min() != value.max():
                    torn.append(value)

        async def writer():
            for _ in range(25):
                await sess.run(add)

        await asyncio.gather(reader(), writer(), writer(), reader())
        assert (await sess.run(read))[:1] == [50.0]
    assert not torn


# -- graph dumps --------------------------------------------------------------------------------

def _dumped(folder) -> dict[str, graph_pb2.GraphDef]:
    return {p.name: text_format.Parse(p.read_text(), graph_pb2.GraphDef())
            for p in sorted(folder.iterdir())}


async def test_graphs_are_dumped_after_each_grouping(graph, tmp_path, monkeypatch):
    monkeypatch.setenv(graph_dump.ENV, str(tmp_path))
    x = af.placeholder(af.float32, [2], name="x")
    out = af.parallel_stack([x, x], name="ps")
    y = af.add(x, 1.0, name="y")
    async with af.Session(graph=graph) as sess:
        await sess.run(out, {x: [1.0, 2.0]})
        await sess.run(y, {x: [1.0, 2.0]})
    files = _dumped(tmp_path)
    partition = "post_partitioning_partition__job_localhost_replica_0_task_0_device_CPU_0"
    assert set(files) == {"pre_placement.pbtxt", "post_placement.pbtxt",
                          "post_rewrite_for_exec.pbtxt", "post_rewrite_for_exec_1.pbtxt",
                          partition + ".pbtxt", partition + "_1.pbtxt"}
    pre = {n.name: n for n in files["pre_placement.pbtxt"].node}
    assert pre["ps/ParallelConcat"].op == "Identity"  # the pass ran before the dump
    assert not any(n.device for n in pre.values())
    assert all(n.device for n in files["post_placement.pbtxt"].node)
    ops = {n.op for n in files["post_rewrite_for_exec.pbtxt"].node}
    assert {"_Arg", "_Retval", "_ParallelConcatStart"} <= ops
    assert "y" in {n.name for n in files["post_rewrite_for_exec_1.pbtxt"].node}


async def test_nothing_is_dumped_without_the_variable(graph, tmp_path, monkeypatch):
    monkeypatch.delenv(graph_dump.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    async with af.Session(graph=graph) as sess:
        await sess.run(af.constant(1.0) + 1.0)
    assert not list(tmp_path.iterdir())
    assert global_registry().needs_whole_graph([]) is False


async def test_a_dash_dumps_to_the_log(graph, monkeypatch, caplog):
    monkeypatch.setenv(graph_dump.ENV, "-")
    y = af.add(af.constant(1.0, name="a"), 1.0, name="y")
    with caplog.at_level(logging.INFO, logger="aioflow.graph_dump"):
        async with af.Session(graph=graph) as sess:
            await sess.run(y)
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("pre_placement:") and 'name: "y"' in m for m in messages)


def test_a_repeated_name_gets_a_counter_and_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.setenv(graph_dump.ENV, str(tmp_path / "dumps"))
    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "g_x_1.pbtxt").write_text("kept")
    paths = [graph_dump.dump_graph_def("g/x", graph_pb2.GraphDef()) for _ in range(3)]
    assert [p.rsplit("/", 1)[1] for p in paths] == ["g_x.pbtxt", "g_x_2.pbtxt", "g_x_3.pbtxt"]
    assert (tmp_path / "dumps" / "g_x_1.pbtxt").read_text() == "kept"


def test_parallel_concat_update_of_a_read_only_value_writes_a_copy():
    """_ParallelConcatUpdate on a buffer that is not _ParallelConcatStart's (a Const's
    read-only value): the row is written in a copy and the input is left as it was (the
    fuzzer found a raw 'assignment destination is read-only')."""
    from tests.kernel_testutil import run_kernel

    value = np.zeros((2, 3), np.float32)
    value.flags.writeable = False
    (out,) = run_kernel("_ParallelConcatUpdate", [value, np.ones((1, 3), np.float32)],
                        loc=1)
    np.testing.assert_array_equal(out, [[0, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(value, np.zeros((2, 3)))
