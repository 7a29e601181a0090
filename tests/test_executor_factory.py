"""Executor factories (ConfigProto.experimental.executor_type, TF's ExecutorFactory) and
schedule_override: the single-threaded executor runs every kernel inline, in a fixed or
seeded order, to the default executor's values; an unknown type is TF's NotFoundError."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel
from aioflow.runtime import executor_factory
from aioflow.runtime.executor import observe_steps
from aioflow.runtime.executor_factory import ShuffledReady, schedule_override
from aioflow.runtime.node_item import ASYNC, FORWARD, INLINE
from tests.conftest import DATA

# TF 2.21's answer (tests/data/make_direct_session_tf.py wrote it).
_UNKNOWN = json.loads((DATA / "direct_session_tf.json").read_text())["unknown_executor_type"]

_order: list[str] = []
_threads: set[int] = set()


class _Record(OpKernel):
    """Records the order nodes run in, and on which thread (pool kernel by default)."""

    expensive = True

    def compute(self, ctx, inputs):
        _order.append(self.name)
        _threads.add(threading.get_ident())
        return (inputs[0],)


def _config(executor_type: str) -> af.ConfigProto:
    config = af.ConfigProto()
    config.experimental.executor_type = executor_type
    return config


def _fan(graph, user_op, n=12):
    """`n` independent recording nodes joined by an AddN: many ready at once."""
    record = user_op("TestExecRecord", _Record)
    x = af.placeholder(af.float32, [], name="x")
    branches = [record(x=x * float(i), name=f"r{i}") for i in range(n)]
    return x, af.add_n(branches)


async def test_unknown_executor_type_is_tf_not_found(graph):
    x = af.placeholder(af.float32, [])
    y = x + 1.0
    async with af.Session(config=_config("FOO")) as sess:
        with pytest.raises(errors.NotFoundError) as e:
            await sess.run(y, {x: 1.0})
        assert _UNKNOWN["error"] == "NotFoundError"
        assert e.value.message == _UNKNOWN["message"]
    with pytest.raises(errors.NotFoundError):
        with schedule_override("FOO", None):
            pass


@pytest.mark.parametrize("type_name", ["", "DEFAULT", "SINGLE_THREADED_EXECUTOR"])
async def test_registered_types_run(graph, type_name):
    x = af.placeholder(af.float32, [None, None])
    y = af.matmul(x, x) + 1.0
    value = np.random.default_rng(0).standard_normal((300, 300)).astype(np.float32)
    async with af.Session(config=_config(type_name)) as sess:
        np.testing.assert_allclose(await sess.run(y, {x: value}), value @ value + 1.0,
                                   rtol=1e-4, atol=1e-3)


async def test_single_threaded_runs_pool_kernels_inline(graph, user_op):
    x, total = _fan(graph, user_op)
    seen = []
    _threads.clear()
    async with af.Session(config=_config("SINGLE_THREADED_EXECUTOR")) as sess:
        with observe_steps(seen.append):
            assert await sess.run(total, {x: 2.0}) == pytest.approx(2.0 * sum(range(12)))
    assert _threads == {threading.get_ident()}  # on the loop's thread, not the pool's
    modes = {item.mode for states in seen for s in states for item in s.items}
    assert modes <= {INLINE, FORWARD, ASYNC}
    assert all(not s.impl.segments for states in seen for s in states)
    _threads.clear()
    async with af.Session() as sess:  # the default executor sends them to the pool
        await sess.run(total, {x: 2.0})
    assert threading.get_ident() not in _threads


async def _order_of(sess, x, total, seed):
    _order.clear()
    with schedule_override("SINGLE_THREADED_EXECUTOR", seed):
        assert await sess.run(total, {x: 1.0}) == pytest.approx(sum(range(12)))
    return list(_order)


async def test_seeded_order_is_reproducible_and_shuffled(graph, user_op):
    x, total = _fan(graph, user_op)
    async with af.Session() as sess:
        fixed = [await _order_of(sess, x, total, None) for _ in range(2)]
        assert fixed[0] == fixed[1]
        seeded = {seed: await _order_of(sess, x, total, seed) for seed in (1, 2, 3)}
        assert await _order_of(sess, x, total, 2) == seeded[2]
        orders = {tuple(o) for o in [fixed[0], *seeded.values()]}
        assert len(orders) > 2  # the seeds give different schedules
        assert all(sorted(o) == sorted(fixed[0]) for o in orders)


async def test_override_applies_to_steps_started_inside(graph, user_op):
    x, total = _fan(graph, user_op, n=3)
    seen = []
    async with af.Session() as sess:
        with observe_steps(seen.append):
            await sess.run(total, {x: 1.0})
            with schedule_override("SINGLE_THREADED_EXECUTOR", 5):
                await sess.run(total, {x: 1.0})
            await sess.run(total, {x: 1.0})
    kinds = [type(states[0].ready) for states in seen]
    assert kinds[1] is ShuffledReady and kinds[0] is not ShuffledReady
    assert kinds[2] is not ShuffledReady
    assert executor_factory.current_override() is None


def test_shuffled_ready_pops_every_item_once():
    ready = ShuffledReady(7)
    ready.extend(range(50))
    ready.append(50)
    out = [ready.popleft() for _ in range(51)]
    assert sorted(out) == list(range(51)) and out != list(range(51))
    assert not ready


@pytest.mark.usefixtures("segments_mode")
async def test_executor_type_fixture_overrides_every_step(executor_type, graph, user_op):
    """The conftest fixture that runs the core and control-flow modules under each
    executor really reaches their steps (pytest-asyncio runs the test in its context)."""
    x, total = _fan(graph, user_op, n=3)
    seen = []
    async with af.Session() as sess:
        with observe_steps(seen.append):
            await sess.run(total, {x: 1.0})
    (state,) = seen[0]
    inline = all(item.mode in (INLINE, FORWARD, ASYNC) for item in state.items)
    assert inline == (executor_type != "DEFAULT")
    assert isinstance(state.ready, ShuffledReady) == executor_type.endswith("shuffled")


async def test_single_threaded_runs_partitions_and_control_flow(graph):
    """Beyond TF's single-threaded executor: several partitions, a cond and a while loop
    (the default executor's values)."""
    x = af.placeholder(af.float32, [], name="x")
    with af.device("/device:CPU:1"):
        y = af.cond(x > 0.0, lambda: x * 2.0, lambda: x - 1.0)
    _, total = af.while_loop(lambda i, acc: i < 5, lambda i, acc: (i + 1, acc + y),
                             [af.constant(0), af.constant(0.0)])
    results = {}
    for name in ("DEFAULT", "SINGLE_THREADED_EXECUTOR"):
        config = _config(name)
        config.device_count["CPU"] = 2
        async with af.Session(config=config) as sess:
            results[name] = [await sess.run(total, {x: v}) for v in (3.0, -3.0)]
    assert results["SINGLE_THREADED_EXECUTOR"] == results["DEFAULT"] == [30.0, -20.0]
