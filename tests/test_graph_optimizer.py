"""GraphOptimizer: constant folding, dead-node removal and CSE on the runtime graph, checked
on structure and, through a Session whose partitions are optimized, on values."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors, tensor_util
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.passes.constant_folding import MAX_CONSTANT_SIZE_IN_BYTES
from aioflow.passes.graph_optimizer import optimize_graph
from aioflow.proto import config_pb2
from aioflow.runtime.kernel_library import load_builtin_kernels

L0 = config_pb2.OptimizerOptions.L0

# Constant folding asks the kernel registry what it can evaluate; a Session loads the
# built-in kernels, tests that optimize a graph without one must load them themselves.
load_builtin_kernels()

pytestmark = pytest.mark.usefixtures("segments_mode")


def to_graph(g):
    return convert_graph_def_to_graph(g.as_graph_def())


def ops(graph, op):
    return [n for n in graph.op_nodes() if n.type_string == op]


def by_name(graph, name):
    return next(n for n in graph.op_nodes() if n.name == name)


def const_value(node):
    return tensor_util.make_ndarray(node.def_.attr["value"].tensor)


def data_srcs(node):
    return [e.src for e in node.data_inputs()]


def control_srcs(node):
    return {e.src.name for e in node.in_edges if e.is_control_edge}


def constant_chain():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[2], name="x")
        c1 = af.constant([1.0, 2.0], name="c1")
        c2 = af.constant([3.0, 4.0], name="c2")
        c3 = af.constant(2.0, name="c3")
        folded = af.multiply(af.add(c1, c2, name="sum"), c3, name="prod")
        y = af.multiply(x, folded, name="y")
    return g, x, y


def test_constant_subgraph_folds_into_one_const():
    g, _, _ = constant_chain()
    graph = to_graph(g)
    assert optimize_graph(graph, config_pb2.OptimizerOptions())
    consts = ops(graph, "Const")
    assert len(consts) == 1
    const = consts[0]
    assert const.name.startswith("prod/_") and "__cf__" in const.name
    np.testing.assert_allclose(const_value(const), (np.array([1, 2]) + [3, 4]) * 2.0)
    assert const.def_.attr["dtype"].type == af.float32.as_datatype_enum
    assert const.output_types == [af.float32.as_datatype_enum]
    y = by_name(graph, "y")
    assert data_srcs(y)[1] is const
    assert {n.name for n in graph.op_nodes()} == {"x", "y", const.name}
    # The Const is a root: it hangs off the source (so the executor starts it).
    assert any(e.src.is_source for e in const.in_edges)


async def test_folded_graph_computes_the_same(run_with_partition_graphs):
    # A Session optimizes its partitions (default OptimizerOptions: L1); RunMetadata's
    # partition_graphs are the graphs as they ran.
    g, x, y = constant_chain()
    async with af.Session(graph=g) as sess:
        out, parts = await run_with_partition_graphs(
            sess, y, {x: np.array([1.0, -1.0], np.float32)})
    np.testing.assert_allclose(out, [8.0, -12.0])
    (part,) = parts.values()
    assert not any(n.op in ("AddV2", "Add") for n in part.node)
    (const,) = [n for n in part.node if n.op == "Const"]
    assert const.device == next(n for n in part.node if n.name == "y").device


async def test_fetching_a_constant_expression_folds_it(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        s = af.reduce_sum(af.constant([[1, 2], [3, 4]]) * 3)
    async with af.Session(graph=g) as sess:
        value, parts = await run_with_partition_graphs(sess, s)
    assert int(value) == 30
    (part,) = parts.values()
    assert {n.op for n in part.node} == {"Const", "_Retval"}


def test_stateful_ops_are_not_folded_nor_merged():
    g = af.Graph()
    with g.as_default():
        c = af.constant(1.0)
        p1 = af.py_func(lambda v: v + 1, [c], af.float32, name="p1")
        p2 = af.py_func(lambda v: v + 1, [c], af.float32, name="p2")
        _ = af.add(p1, p2, name="out")
    graph = to_graph(g)
    optimize_graph(graph, config_pb2.OptimizerOptions())
    assert {n.name for n in ops(graph, "PyFunc")} == {"p1", "p2"}
    out = by_name(graph, "out")
    assert [n.name for n in data_srcs(out)] == ["p1", "p2"]


def cse_graph():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[2, 2], name="x")
        c = af.constant(np.ones((2, 2), np.float32), name="c")
        a = af.add(x, c, name="a")
        b = af.add(x, c, name="b")
        m1 = af.matmul(a, b, name="m1")
        m2 = af.matmul(a, b, transpose_a=True, name="m2")
        out = af.add(m1, m2, name="out")
    return g, x, out


def test_cse_merges_identical_nodes_but_not_different_attrs():
    g, _, _ = cse_graph()
    graph = to_graph(g)
    assert optimize_graph(graph, config_pb2.OptimizerOptions())
    names = {n.name for n in graph.op_nodes()}
    (kept,) = names & {"a", "b"}
    a = by_name(graph, kept)
    for name in ("m1", "m2"):
        assert data_srcs(by_name(graph, name)) == [a, a]
    assert {"m1", "m2"} <= names  # transpose_a differs: both stay


def test_cse_matches_commutative_inputs_in_either_order():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        y = af.placeholder(af.float32, name="y")
        af.multiply(af.add(x, y, name="xy"), af.add(y, x, name="yx"), name="out")
        af.subtract(x, y, name="s1")
        af.subtract(y, x, name="s2")
    graph = to_graph(g)
    optimize_graph(graph, config_pb2.OptimizerOptions())
    names = {n.name for n in graph.op_nodes()}
    assert ("xy" in names) != ("yx" in names)
    assert {"s1", "s2"} <= names  # Sub is not commutative


async def test_cse_graph_computes_the_same():
    g, x, out = cse_graph()
    xv = np.arange(4, dtype=np.float32).reshape(2, 2)
    async with af.Session(graph=g) as sess:
        got = await sess.run(out, {x: xv})
    a = xv + 1
    np.testing.assert_allclose(got, a @ a + a.T @ a)


def test_cse_merges_control_consumers_and_keeps_control_inputs_apart():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        p = af.py_func(lambda v: v, [x], af.float32, name="p")
        a = af.identity(x, name="a")
        b = af.identity(x, name="b")
        with af.control_dependencies([p]):
            af.identity(x, name="c")  # a control input: not the same as a or b
        with af.control_dependencies([a]):
            af.identity(p, name="after_a")
        with af.control_dependencies([b]):
            af.identity(p, name="after_b")
    graph = to_graph(g)
    optimize_graph(graph, config_pb2.OptimizerOptions())
    names = {n.name for n in graph.op_nodes()}
    (kept,) = names & {"a", "b"}
    assert "c" in names
    # after_a and after_b are now the same too (same input, same control input): merged.
    (after,) = names & {"after_a", "after_b"}
    assert control_srcs(by_name(graph, after)) == {kept}


def test_attrs_are_compared_in_full():
    """As TF's EqualAttrs: every attr counts, underscore ones included."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        af.identity(x, name="a")
        b = af.identity(x, name="b")
        with af.control_dependencies([b]):  # marks b with _has_manual_control_dependencies
            af.identity(x, name="after_b")
    graph = to_graph(g)
    optimize_graph(graph, config_pb2.OptimizerOptions())
    assert {"a", "b"} <= {n.name for n in graph.op_nodes()}


def test_while_loop_body_constants_keep_the_pivot_control_input():
    g = af.Graph()
    with g.as_default():
        out = af.while_loop(lambda i: i < 10,
                            lambda i: i + af.constant(2) * af.constant(3, name="three"),
                            [af.constant(0)])
    graph = to_graph(g)
    before = {n.name: control_srcs(n) for n in graph.op_nodes()}
    three = next(n for n in before if n.endswith("three"))
    pivot_deps = before[three]
    assert pivot_deps  # the builder hangs body constants off the loop's pivot
    assert optimize_graph(graph, config_pb2.OptimizerOptions())
    folded = [n for n in ops(graph, "Const") if "__cf__" in n.name]
    assert len(folded) == 1
    assert int(const_value(folded[0])) == 6
    assert control_srcs(folded[0]) == pivot_deps
    del out


async def test_while_loop_and_cond_compute_the_same(run_with_partition_graphs):
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, shape=[], name="n")
        i, acc = af.while_loop(
            lambda i, a: i < n,
            lambda i, a: (i + 1, a + af.constant(2) * af.constant(3) + i),
            [af.constant(0), af.constant(0)])
        r = af.cond(n > 3, lambda: acc + af.constant(1) * af.constant(5),
                    lambda: acc - af.constant(2) * af.constant(5))
    async with af.Session(graph=g) as sess:
        values, parts = await run_with_partition_graphs(sess, [i, acc, r], {n: 5})
        assert [int(v) for v in values] == [5, 40, 45]
        assert [int(v) for v in await sess.run([i, acc, r], {n: 2})] == [2, 13, 3]
    assert parts and all(any("__cf__" in m.name for m in p.node) for p in parts.values())


def test_l0_does_nothing_unless_asked():
    g, _, _ = constant_chain()
    graph = to_graph(g)
    before = sorted(n.name for n in graph.op_nodes())
    assert not optimize_graph(graph, config_pb2.OptimizerOptions(opt_level=L0))
    assert sorted(n.name for n in graph.op_nodes()) == before

    g2, _, _ = cse_graph()
    graph2 = to_graph(g2)
    assert not optimize_graph(graph2, config_pb2.OptimizerOptions(
        opt_level=L0, do_constant_folding=True))  # nothing to fold there; no CSE
    assert {"a", "b"} <= {n.name for n in graph2.op_nodes()}

    assert optimize_graph(graph, config_pb2.OptimizerOptions(
        opt_level=L0, do_constant_folding=True))
    assert len(ops(graph, "Const")) == 1

    assert optimize_graph(graph2, config_pb2.OptimizerOptions(
        opt_level=L0, do_common_subexpression_elimination=True))
    assert len({"a", "b"} & {n.name for n in graph2.op_nodes()}) == 1


def test_kernel_errors_leave_the_node_unfolded():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        bad = af.gather(af.constant([1.0, 2.0, 3.0]), af.constant(7), name="bad")
        ok = af.add(af.constant(1.0), af.constant(2.0), name="ok")
        af.add(bad, x, name="out")
        af.add(ok, x, name="out2")
    graph = to_graph(g)
    assert optimize_graph(graph, config_pb2.OptimizerOptions())
    assert "bad" in {n.name for n in graph.op_nodes()}
    assert "ok" not in {n.name for n in graph.op_nodes()}
    assert data_srcs(by_name(graph, "out"))[0].name == "bad"


async def test_kernel_error_is_reported_by_the_run():
    g = af.Graph()
    with g.as_default():
        bad = af.gather(af.constant([1.0, 2.0, 3.0]), af.constant(7), name="bad")
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match="bad"):
            await sess.run(bad)


def test_large_outputs_are_not_folded():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        big = af.add(af.constant(np.zeros(100, np.float32)), 1.0, name="big")
        af.multiply(x, big, name="y")
    graph = to_graph(g)
    opts = config_pb2.OptimizerOptions(max_folded_constant_in_bytes=64)
    optimize_graph(graph, opts)
    assert "big" in {n.name for n in graph.op_nodes()}
    assert MAX_CONSTANT_SIZE_IN_BYTES == 10 * 1024 * 1024  # TF's default limit
    optimize_graph(graph, config_pb2.OptimizerOptions())
    assert "big" not in {n.name for n in graph.op_nodes()}


def test_control_inputs_move_to_the_replacement_const():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        p = af.py_func(lambda v: v, [x], af.float32, name="p")
        with af.control_dependencies([p]):
            c = af.constant(2.0, name="c")
        af.multiply(x, af.add(c, 1.0, name="c1"), name="y")
    graph = to_graph(g)
    assert optimize_graph(graph, config_pb2.OptimizerOptions())
    (const,) = [n for n in ops(graph, "Const") if "__cf__" in n.name]
    assert const.name.startswith("c1/_")
    assert control_srcs(const) == {"p"}
    assert float(const_value(const)) == 3.0
    assert {"c", "c1"}.isdisjoint(n.name for n in graph.op_nodes())


def test_replacement_names_are_unique():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, name="x")
        s = af.add(af.constant(1.0), af.constant(2.0), name="s")
        af.multiply(x, s, name="y1")
        af.subtract(x, af.identity(s, name="sid"), name="y2")
    graph = to_graph(g)
    optimize_graph(graph, config_pb2.OptimizerOptions())
    names = [n.name for n in graph.op_nodes()]
    assert len(names) == len(set(names))


async def test_session_config_turns_the_optimizer_on_and_off():
    """Default OptimizerOptions (L1) fold constants in the partition graphs a run reports;
    opt_level L0 (what the benchmarks use) leaves them as built."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, shape=[], name="x")
        y = af.multiply(x, af.add(af.constant(2.0), af.constant(3.0)), name="y")

    async def partition_ops(config):
        meta = af.RunMetadata()
        async with af.Session(graph=g, config=config) as sess:
            assert await sess.run(y, {x: 2.0}, options=af.RunOptions(
                output_partition_graphs=True), run_metadata=meta) == 10.0
        return sorted(n.op for n in meta.partition_graphs[0].node)

    assert await partition_ops(None) == ["Const", "Mul", "_Arg", "_Retval"]
    raw = af.ConfigProto()
    raw.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
    assert await partition_ops(raw) == ["AddV2", "Const", "Const", "Mul", "_Arg", "_Retval"]
