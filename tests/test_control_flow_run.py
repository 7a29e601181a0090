"""v1 control flow runs to TensorFlow's values: every cf_* fixture GraphDef (imported) and
the same program built with aioflow's builders, through the awaitable Session; plus
runtime errors of untaken/taken branches, Assert, CheckNumerics and TensorArrays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aioflow.client.session import Session
from aioflow.framework import errors, ops
from aioflow.framework.importer import import_graph_def
from aioflow.proto import graph_pb2
from tests.test_control_flow_builders import NEEDS_DYNAMIC_INDEX_SHAPE, _program_params, af, build

pytestmark = pytest.mark.usefixtures("segments_mode", "executor_type")  # segments; executors

DATA = Path(__file__).parent / "data"
MANIFEST = json.loads((DATA / "fixtures.json").read_text())
CF = sorted(name for name in MANIFEST if name.startswith("cf_"))


def _values(name: str):
    with np.load(DATA / f"{name}.npz", allow_pickle=False) as z:
        feeds = {k[len("feed:"):]: z[k] for k in z.files if k.startswith("feed:")}
        expected = {k[len("fetch:"):]: z[k] for k in z.files if k.startswith("fetch:")}
    return feeds, expected


def _imported(graph_def: graph_pb2.GraphDef) -> ops.Graph:
    graph = ops.Graph()
    with graph.as_default():
        import_graph_def(graph_def, name="")
    return graph


async def _run_and_check(graph: ops.Graph, name: str) -> None:
    feeds, expected = _values(name)
    fetches = MANIFEST[name]["fetches"]
    async with Session(graph=graph) as sess:
        values = await sess.run(fetches, feed_dict=feeds)
        again = await sess.run(fetches, feed_dict=feeds)
    for fetch, value, value2 in zip(fetches, values, again, strict=True):
        want = expected[fetch]
        got = np.asarray(value)
        assert got.dtype == want.dtype, fetch
        assert got.shape == want.shape, fetch
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=fetch)
        np.testing.assert_array_equal(np.asarray(value2), got)


@pytest.mark.parametrize("name", CF)
async def test_imported_fixture_runs_to_tf_values(name, load_graph_def):
    await _run_and_check(_imported(load_graph_def(name)), name)


@pytest.mark.parametrize("name", _program_params())
async def test_built_program_runs_to_tf_values(name):
    graph, _ = build(name)
    await _run_and_check(graph, name)


@pytest.mark.parametrize("source", ["imported", "built"])
async def test_taken_bad_branch_fails_in_a_failing_node(source, load_graph_def):
    name = "cf_cond_untaken_fails"
    graph = _imported(load_graph_def(name)) if source == "imported" else build(name)[0]
    feeds, _ = _values(name)
    feeds["pred:0"] = np.array(False)
    async with Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError) as err:
            await sess.run("out:0", feed_dict=feeds)
    assert err.value.node_name in MANIFEST[name]["failing_nodes"]


async def test_assert_and_check_numerics_messages():
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        checked = af.check_numerics(af.math.log(x), "log of x", name="check")
        ok = af.Assert(af.reduce_all(x > 0.0), ["x must be positive:", x], summarize=2,
                       name="positive")
        with af.control_dependencies([ok]):
            out = af.identity(x, name="out")
    async with Session(graph=graph) as sess:
        np.testing.assert_allclose(await sess.run(out, {x: [1.0, 2.0]}), [1.0, 2.0])
        with pytest.raises(errors.InvalidArgumentError) as err:
            await sess.run(out, {x: [1.0, -2.0, 3.0]})
        assert "assertion failed: [x must be positive:] [1 -2...]" in str(err.value)
        with pytest.raises(errors.InvalidArgumentError, match="log of x : Tensor had NaN"):
            await sess.run(checked, {x: [-1.0]})


async def test_tensor_array_runtime_errors_name_the_node():
    graph = af.Graph()
    with graph.as_default():
        ta = af.TensorArray(af.float32, size=2, name="ta")
        twice = ta.write(0, 1.0).write(0, 2.0, name="second")
        stacked = twice.stack()
        unread = af.TensorArray(af.float32, size=2, name="unread").read(1, name="r")
    async with Session(graph=graph) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match="because it has already been written to") as err:
            await sess.run(stacked)
        assert err.value.node_name == "second/second"
        with pytest.raises(errors.InvalidArgumentError,
                           match="element shape is not fully defined") as err:
            await sess.run(unread)
        assert err.value.node_name == "r"


async def test_while_loop_with_tensor_array_and_cond_inside():
    graph = af.Graph()
    with graph.as_default():
        n = af.placeholder(af.int32, [], name="n")
        ta = af.TensorArray(af.int32, size=0, dynamic_size=True)

        def body(i, ta):
            v = af.cond(af.equal(i % 3, 0), lambda: i * 10, lambda: -i)
            return i + 1, ta.write(i, v)

        _, ta = af.while_loop(lambda i, ta: i < n, body, [af.constant(0), ta])
        out = ta.stack()
        total = af.reduce_sum(out)
    async with Session(graph=graph) as sess:
        got, t = await sess.run([out, total], {n: 7})
    want = np.array([0, -1, -2, 30, -4, -5, 60], np.int32)
    np.testing.assert_array_equal(got, want)
    assert t == want.sum()


@NEEDS_DYNAMIC_INDEX_SHAPE
async def test_loop_parallel_iterations_and_max_iterations():
    graph = af.Graph()
    with graph.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        n = af.shape(x)[0]
        outs = []
        for p in (1, 2, 32):
            _, acc = af.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a + x[i] * 2.0),
                                   [af.constant(0), af.constant(0.0)], parallel_iterations=p)
            outs.append(acc)
        capped = af.while_loop(lambda i: i < 100, lambda i: i + 1, [af.constant(0)],
                               maximum_iterations=af.constant(4))
    values = np.linspace(-1.0, 1.0, 11, dtype=np.float32) ** 2
    async with Session(graph=graph) as sess:
        got = await sess.run(outs + [capped], {x: values})
    for acc in got[:3]:
        np.testing.assert_allclose(acc, 2.0 * values.sum(), rtol=1e-5)
    assert got[3] == 4


async def test_tensor_arrays_through_cond_and_namedtuple_loop_vars():
    import collections

    Pair = collections.namedtuple("Pair", "i ta")
    graph = af.Graph()
    with graph.as_default():
        p = af.placeholder(af.bool, [], name="p")
        ta = af.TensorArray(af.float32, size=2)
        branched = af.cond(p, lambda: ta.write(0, 1.0).write(1, 2.0),
                           lambda: ta.write(0, 5.0).write(1, 6.0))
        assert isinstance(branched, af.TensorArray)
        (res,) = af.while_loop(
            lambda v: v.i < 3,
            lambda v: (Pair(v.i + 1, v.ta.write(v.i, af.cast(v.i, af.float32) * 2.0)),),
            [Pair(af.constant(0), af.TensorArray(af.float32, size=3))])
        assert isinstance(res, Pair) and isinstance(res.ta, af.TensorArray)
        fetches = [branched.stack(), res.ta.stack(), res.i]
    async with Session(graph=graph) as sess:
        a, b, i = await sess.run(fetches, {p: True})
        np.testing.assert_array_equal(a, [1.0, 2.0])
        np.testing.assert_array_equal(b, [0.0, 2.0, 4.0])
        assert i == 3
        a, _, _ = await sess.run(fetches, {p: False})
        np.testing.assert_array_equal(a, [5.0, 6.0])


@pytest.mark.parametrize(("x", "want"), [(-3, -1.0), (2, 2.0), (7, 7.0)])
async def test_case_without_default_uses_the_last_pair(x, want):
    graph = af.Graph()
    with graph.as_default():
        xt = af.placeholder(af.int32, [], name="x")
        out = af.case([(xt < 0, lambda: af.constant(-1.0)),
                       (xt < 5, lambda: af.cast(xt, af.float32)),
                       (xt >= 5, lambda: af.cast(xt, af.float32))])
    async with Session(graph=graph) as sess:
        assert await sess.run(out, {xt: x}) == want


async def test_case_exclusive_violation_fails():
    graph = af.Graph()
    with graph.as_default():
        xt = af.placeholder(af.int32, [], name="x")
        out = af.case([(xt < 10, lambda: af.constant(1.0)),
                       (xt < 5, lambda: af.constant(2.0))],
                      default=lambda: af.constant(0.0), exclusive=True)
    async with Session(graph=graph) as sess:
        assert await sess.run(out, {xt: 7}) == 1.0
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"Input error: exclusive=True: more than 1 conditions "
                                 r"\(Less:0, Less_1:0\) evaluated as True:\] \[1 1\]"):
            await sess.run(out, {xt: 3})
