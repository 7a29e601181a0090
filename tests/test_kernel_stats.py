"""Learned inline-or-pool decisions (runtime/kernel_stats.py, TF's KernelStats): kernels
whose cost depends on their inputs are timed now and then, and the executor follows
what they cost rather than the static element-count rule."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import aioflow as af
from aioflow.runtime import kernel_stats
from aioflow.runtime.node_item import NodeItem

TRACE = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE)


async def _threads_of(sess, fetch, feed, name: str, runs: int) -> list[bool]:
    """Per run: whether node `name` ran on a pool thread (not the loop's)."""
    loop_tid = threading.get_native_id()
    out = []
    for _ in range(runs):
        md = af.RunMetadata()
        await sess.run(fetch, feed, options=TRACE, run_metadata=md)
        (ns,) = [ns for dev in md.step_stats.dev_stats for ns in dev.node_stats
                 if ns.node_name == name]
        out.append(ns.thread_id != loop_tid)
    return out


def _cheap_on_large_input():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [100000], name="x")
        y = af.negative(x, name="neg")  # over 65536 elements: the static rule's pool
    return g, y, {x: np.ones(100000, np.float32)}


def _expensive_on_small_input():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [60000], name="x")
        y = af.nn.top_k(x, k=60000, name="topk")[0]  # a sort under the rule's threshold
    return g, y, {x: np.random.default_rng(0).random(60000, dtype=np.float32)}


async def test_a_cheap_kernel_the_rule_sends_to_the_pool_comes_back_inline():
    g, y, feed = _cheap_on_large_input()
    async with af.Session(graph=g) as sess:
        on_pool = await _threads_of(sess, y, feed, "neg", 8)
        value = await sess.run(y, feed)
    assert on_pool[0]  # untimed: the static rule, pessimistic
    assert not any(on_pool[5:])  # timed cheap (past its first calls' page faults): inline
    np.testing.assert_array_equal(value, -feed[next(iter(feed))])


async def test_an_expensive_kernel_the_rule_runs_inline_moves_to_the_pool():
    g, y, feed = _expensive_on_small_input()
    async with af.Session(graph=g) as sess:
        on_pool = await _threads_of(sess, y, feed, "topk", 4)
        value = await sess.run(y, feed)
    assert not on_pool[0]  # the static rule: under its threshold, inline
    assert all(on_pool[2:])  # learned expensive: the pool
    np.testing.assert_array_equal(value, np.sort(feed[next(iter(feed))])[::-1])


async def test_adaptive_off_keeps_the_static_rule(monkeypatch):
    monkeypatch.setenv("AIOFLOW_ADAPTIVE", "0")
    g, y, feed = _cheap_on_large_input()
    async with af.Session(graph=g) as sess:
        assert all(await _threads_of(sess, y, feed, "neg", 5))
    g, y, feed = _expensive_on_small_input()
    async with af.Session(graph=g) as sess:
        assert not any(await _threads_of(sess, y, feed, "topk", 4))


async def test_errors_of_a_sampled_call_name_the_node():
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float32, [None], name="a")
        b = af.placeholder(af.float32, [None], name="b")
        out = af.add(a, b, name="bad_add")
    async with af.Session(graph=g) as sess:
        for _ in range(3):  # learned cheap first
            await sess.run(out, {a: np.ones(4, np.float32), b: np.ones(4, np.float32)})
        with pytest.raises(af.errors.InvalidArgumentError, match="bad_add"):
            await sess.run(out, {a: np.ones(4, np.float32), b: np.ones(3, np.float32)})


def _item() -> NodeItem:
    item = NodeItem()
    item.cost_rate = None
    item.cost_size = 0
    item.cost_countdown = 0
    item.cost_verify = False
    item.cost_samples = 0
    return item


def test_the_estimate_is_a_moving_average_per_element():
    item = _item()
    kernel_stats.learn(item, 4e-3, 1000)  # the first sample is the estimate
    assert item.cost_rate == pytest.approx(4e-6) and item.cost_size == 1000
    kernel_stats.learn(item, 0.0, 1000)  # below: falls by DECAY_DOWN
    assert item.cost_rate == pytest.approx(4e-6 * (1 - kernel_stats.DECAY_DOWN))
    kernel_stats.learn(item, 6e-3, 1000)  # above: rises by DECAY_UP
    assert item.cost_rate == pytest.approx(2e-6 + 4e-6 * kernel_stats.DECAY_UP)
    assert kernel_stats.learned_expensive(item)  # 3 ms at 1000 elements
    assert kernel_stats.next_countdown(item) == 0  # still warming up
    for _ in range(kernel_stats.WARMUP):
        kernel_stats.learn(item, 3e-3, 1000)
    assert kernel_stats.next_countdown(item) == kernel_stats.SAMPLE_EVERY


def test_a_clock_sample_that_calls_a_node_expensive_is_checked_in_cpu_time():
    """A call descheduled by the OS looks expensive by the clock: it is not learned; the
    next call is timed in CPU time, which decides."""
    item = _item()

    def sleepy(ctx, args):  # holds the clock, not the CPU
        time.sleep(0.002)
        return (args[0],)

    kernel_stats.timed_inline(item, sleepy, 1, None, [1.0])
    assert item.cost_rate is None and item.cost_verify and item.cost_countdown == 0
    kernel_stats.timed_inline(item, sleepy, 1, None, [1.0])
    assert not item.cost_verify and not kernel_stats.learned_expensive(item)

    def busy(ctx, args):  # really expensive: its CPU time says so too
        end = time.thread_time() + 0.002
        while time.thread_time() < end:
            pass
        return (args[0],)

    item = _item()
    kernel_stats.timed_inline(item, busy, 1, None, [1.0])
    kernel_stats.timed_inline(item, busy, 1, None, [1.0])
    assert kernel_stats.learned_expensive(item)


async def test_a_segment_with_a_member_learned_expensive_is_not_compiled(monkeypatch):
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "1")  # compile after a few runs node by node
    from aioflow.runtime.executor import observe_steps

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [60000], name="x")
        y = af.nn.top_k(x * 2.0, k=60000, name="topk")[0] + 1.0
    feed = {x: np.random.default_rng(1).random(60000, dtype=np.float32)}
    states = []
    async with af.Session(graph=g) as sess:
        with observe_steps(states.extend):
            for _ in range(8):
                value = await sess.run(y, feed)
    np.testing.assert_allclose(value, np.sort(feed[x] * 2)[::-1] + 1, rtol=1e-6)
    impl = states[-1].impl
    topk = next(item for item in impl.items if item.name == "topk")
    assert kernel_stats.learned_expensive(topk)
    for segment in impl.segments:
        assert topk not in segment.members or segment.fn is None
