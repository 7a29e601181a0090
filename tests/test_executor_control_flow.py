"""The frame/iteration propagator: throttling, memory, concurrency, errors in loops."""

from __future__ import annotations

import asyncio
import time
import tracemalloc

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors

pytestmark = pytest.mark.usefixtures("segments_mode", "executor_type")  # segments; executors


def counting_loop(parallel_iterations: int = 10):
    g = af.Graph()
    with g.as_default():
        limit = af.placeholder(af.int32, shape=[], name="limit")
        out = af.while_loop(lambda i, a: i < limit, lambda i, a: (i + 1, a + i),
                            [af.constant(0), af.constant(0)],
                            parallel_iterations=parallel_iterations)
    return g, limit, out


@pytest.mark.parametrize("pi", [1, 10])
async def test_counting_loop(pi):
    g, limit, out = counting_loop(pi)
    async with af.Session(graph=g) as sess:
        for n in (0, 1, 7, 1000):
            i, acc = await sess.run(out, {limit: n})
            assert (int(i), int(acc)) == (n, n * (n - 1) // 2)


@pytest.mark.parametrize("pi, expected", [(1, 1), (4, 4)])
async def test_parallel_iterations_bounds_iterations_in_flight(pi, expected):
    """The body's slow part depends only on the counter, so iterations can overlap — up
    to `parallel_iterations` of them (TF's next_iter_roots throttling)."""
    in_flight = 0
    peak = 0

    async def slow(i):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return i

    g = af.Graph()
    with g.as_default():
        def body(i, acc):
            s = af.async_py_func(slow, [i], af.int32)
            s.set_shape([])
            return i + 1, acc + s

        out = af.while_loop(lambda i, a: i < 12, body, [af.constant(0), af.constant(0)],
                            parallel_iterations=pi)
    async with af.Session(graph=g) as sess:
        i, acc = await sess.run(out)
    assert (int(i), int(acc)) == (12, sum(range(12)))
    assert peak == expected


async def test_loop_memory_does_not_grow_with_iterations():
    g, limit, out = counting_loop(10)
    async with af.Session(graph=g) as sess:
        for _ in range(3):  # warm: a compiled loop is compiled on its third run
            await sess.run(out, {limit: 100})
        peaks = []
        for n in (2000, 20000):
            tracemalloc.start()
            i, _ = await sess.run(out, {limit: n})
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            assert int(i) == n
    # Ten times the iterations, about the same peak: iterations are freed as they finish.
    assert peaks[1] < peaks[0] * 1.5 + 64 * 1024, peaks


async def test_concurrent_loop_runs_get_their_own_answers():
    g, limit, out = counting_loop(10)
    async with af.Session(graph=g) as sess:
        ns = list(range(0, 400, 13))
        results = await asyncio.gather(*(sess.run(out, {limit: n}) for n in ns))
    for n, (i, acc) in zip(ns, results, strict=True):
        assert (int(i), int(acc)) == (n, n * (n - 1) // 2)


async def test_nested_loops_and_cond_inside():
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, shape=[])

        def outer_body(i, total):
            inner = af.while_loop(lambda j, s: j < i, lambda j, s: (j + 1, s + j),
                                  [af.constant(0), af.constant(0)])[1]
            bonus = af.cond(af.equal(i % 2, 0), lambda: af.constant(100), lambda: af.constant(0))
            return i + 1, total + inner + bonus

        out = af.while_loop(lambda i, t: i < n, outer_body, [af.constant(0), af.constant(0)])
    async with af.Session(graph=g) as sess:
        i, total = await sess.run(out, {n: 6})
    expected = sum(k * (k - 1) // 2 + (100 if k % 2 == 0 else 0) for k in range(6))
    assert (int(i), int(total)) == (6, expected)


async def test_error_in_iteration_k_names_node_frame_and_iteration_and_stops():
    calls = []

    def check(i):
        calls.append(int(i))
        if i == 5:
            raise ValueError(f"bad iteration {i}")
        return i

    g = af.Graph()
    with g.as_default():
        def body(i):
            c = af.py_func(check, [i], af.int32, name="checker")
            c.set_shape([])
            return c + 1

        out = af.while_loop(lambda i: i < 1000, body, [af.constant(0)], name="loop",
                            parallel_iterations=1)
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            await sess.run(out)
        await asyncio.sleep(0.05)
    message = str(info.value)
    assert "bad iteration 5" in message
    assert "loop/checker" in message
    assert "loop/while_context" in message and "iteration 5" in message
    assert calls == [0, 1, 2, 3, 4, 5]


async def test_an_exit_fed_from_inside_the_body_fails_the_step_naming_it():
    """An Exit fed by a body node (a mutated GraphDef; TF's while_loop feeds every Exit
    from its Switch) would deliver every iteration and make its consumer ready before
    the consumer's other input: the step fails with TF's class, naming the Exit."""
    g = af.Graph()
    with g.as_default():
        af.while_loop(lambda i: i < 5, lambda i: i + 1, [af.constant(0)], name="w")
    gd = g.as_graph_def()
    bad = gd.node.add(name="w/bad_exit", op="Exit", input=["w/add"])
    bad.attr["T"].type = af.int32.as_datatype_enum
    out = gd.node.add(name="out", op="AddV2", input=["w/bad_exit", "w/Exit"])
    out.attr["T"].type = af.int32.as_datatype_enum
    g2 = af.Graph()
    with g2.as_default():
        af.import_graph_def(gd, name="")
    async with af.Session(graph=g2) as sess:
        for _ in range(3):  # segments compile after a few runs: the same error each time
            with pytest.raises(errors.InvalidArgumentError,
                               match="'w/bad_exit' delivered a value in more than one"):
                await sess.run("out:0")
        assert int(await sess.run("w/Exit:0")) == 5


async def test_untaken_branch_loop_finishes_dead_and_merges():
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.bool, shape=[])

        def loop_branch():
            return af.while_loop(lambda i: i < 10, lambda i: i + 1, [af.constant(0)])

        out = af.cond(p, loop_branch, lambda: af.constant(-1))
    async with af.Session(graph=g) as sess:
        assert int(await sess.run(out, {p: True})) == 10
        assert int(await sess.run(out, {p: False})) == -1


async def test_long_loop_yields_to_the_loop():
    g, limit, out = counting_loop(10)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    async with af.Session(graph=g) as sess:
        t = asyncio.ensure_future(ticker())
        start = time.perf_counter()
        # Long enough to span many slices also when the loop runs compiled.
        await sess.run(out, {limit: 200000})
        elapsed = time.perf_counter() - start
        t.cancel()
    assert ticks >= max(3, int(elapsed / 0.01)), (ticks, elapsed)


async def test_fetching_a_dead_tensor_is_an_error():
    g = af.Graph()
    with g.as_default():
        p = af.placeholder(af.bool, shape=[])
        x = af.constant(np.float32(1.0))
        from aioflow.ops.control_flow_ops import switch

        _, t = switch(x, p)
    async with af.Session(graph=g) as sess:
        assert float(await sess.run(t, {p: True})) == 1.0
        with pytest.raises(errors.InvalidArgumentError, match="does not have value"):
            await sess.run(t, {p: False})
