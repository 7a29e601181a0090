"""Constant roots delivered once, when the partition is built (runtime/constant_fill.py):
an untraced run starts with their outputs in their consumers' input slots and does not
call their kernels; a traced run runs them (step stats list them); a Const gated by a
control edge still runs each step."""

from __future__ import annotations

import numpy as np
import pytest

import aioflow as af
from aioflow.kernels.array.array_kernels import ConstOp

pytestmark = pytest.mark.executor_types()  # the default executor's propagator


@pytest.fixture
def const_calls(monkeypatch):
    """The names of the Const nodes whose kernel ran, in order."""
    calls = []
    compute = ConstOp.compute

    def counted(self, ctx, inputs):
        calls.append(self.name)
        return compute(self, ctx, inputs)

    monkeypatch.setattr(ConstOp, "compute", counted)
    return calls


def _add(a, b):
    return (a + b).astype(np.float32)


async def test_constants_are_delivered_once_not_run_every_step(const_calls):
    g = af.Graph()
    with g.as_default():
        a = af.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
        b = af.constant(np.full((2, 3), 0.5, np.float32), name="b")
        # py_func is never compiled into a segment: its inputs are plain edges.
        y = af.py_func(_add, [a, b], af.float32, name="add")
    async with af.Session(graph=g) as sess:
        first = await sess.run(y)
        calls_after_first = len(const_calls)
        for _ in range(3):
            np.testing.assert_array_equal(await sess.run(y), first)
    np.testing.assert_array_equal(first, np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5)
    assert len(const_calls) == calls_after_first  # no Const kernel ran in later steps
    assert sorted(set(const_calls)) == ["a", "b"]


async def test_a_delivered_constant_is_the_same_read_only_array_each_run():
    seen = []

    def keep(v):
        seen.append(v)
        return v.copy()

    g = af.Graph()
    with g.as_default():
        c = af.constant(np.ones(4, np.float32), name="c")
        y = af.py_func(keep, [c], af.float32, name="keep")
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            await sess.run(y)
    assert seen[0] is seen[1]
    assert not seen[0].flags.writeable


async def test_a_traced_run_still_runs_and_lists_its_constants(const_calls):
    g = af.Graph()
    with g.as_default():
        a = af.constant(np.float32(2.0), name="a")
        y = af.py_func(lambda v: v * np.float32(3), [a], af.float32, name="triple")
    async with af.Session(graph=g) as sess:
        await sess.run(y)
        before = len(const_calls)
        md = af.RunMetadata()
        out = await sess.run(y, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE),
                             run_metadata=md)
        assert out == np.float32(6.0)
        assert len(const_calls) == before + 1
        names = {ns.node_name for dev in md.step_stats.dev_stats for ns in dev.node_stats}
        assert {"a", "triple"} <= names
        assert await sess.run(y) == np.float32(6.0)  # and untraced again after it


async def test_a_constant_gated_by_a_control_edge_runs_each_step(const_calls):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        gate = af.py_func(lambda v: v, [x], af.float32, name="gate")
        with af.control_dependencies([gate]):
            c = af.constant(np.float32(10.0), name="gated")
        y = af.py_func(_add, [c, x], af.float32, name="add")
    async with af.Session(graph=g) as sess:
        for v in (1.0, 2.0, 3.0):
            assert await sess.run(y, {x: v}) == np.float32(10.0 + v)
    assert const_calls.count("gated") == 3


async def test_a_constant_fetched_directly(const_calls):
    g = af.Graph()
    with g.as_default():
        c = af.constant(np.array([1, 2, 3], np.int32), name="c")
        x = af.placeholder(af.int32, [3], name="x")
        y = af.py_func(lambda a, b: a * b, [c, x], af.int32, name="mul")
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            got_c, got_y = await sess.run([c, y], {x: np.array([2, 2, 2], np.int32)})
            np.testing.assert_array_equal(got_c, [1, 2, 3])
            np.testing.assert_array_equal(got_y, [2, 4, 6])
