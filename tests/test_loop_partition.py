"""While loops whose nodes span devices: TF's control loops (graph_partition.cc's
AddControlFlow) and per-iteration transfers.

tests/data/make_loop_partition_fixture.py made the GraphDefs and recorded TF 2.21's
partition graphs (optimizers off). aioflow must build the same partitions node for
node: names (the control loops' "_cloop" nodes and the transfer nodes come from one
counter, in TF's order), ops, devices, inputs in order and attrs. Only what names TF's
own runtime objects differs: edge ids inside `tensor_name`, device incarnations, and the
`_src`/`_dst`/`_XlaHasReferenceVars` attrs aioflow does not write.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.runtime.executor import observe_steps

pytestmark = pytest.mark.usefixtures("segments_mode")  # compiled segments on and off

DATA = Path(__file__).resolve().parent / "data"
TWO_CPUS = af.ConfigProto(device_count={"CPU": 2})
_NOT_COMPARED = {"_src", "_dst", "_XlaHasReferenceVars", "send_device_incarnation"}


def _load(name: str):
    spec = json.loads((DATA / f"{name}.json").read_text())
    graph_def = af.GraphDef()
    graph_def.ParseFromString((DATA / f"{name}.pb").read_bytes())
    tf_md = af.RunMetadata()
    tf_md.ParseFromString((DATA / f"{name}_parts.pb").read_bytes())
    return spec, graph_def, tf_md, np.load(DATA / f"{name}.npz")


def _nodes(run_metadata) -> dict[str, tuple]:
    """name -> (op, device, inputs, attrs), the edge id in tensor_name normalised."""
    out = {}
    for part in run_metadata.partition_graphs:
        for node in part.node:
            attrs = {}
            for key, value in node.attr.items():
                if key in _NOT_COMPARED:
                    continue
                if key == "tensor_name":
                    attrs[key] = re.sub(r"^edge_\d+_", "edge_N_", value.s.decode())
                else:
                    attrs[key] = value.SerializeToString(deterministic=True)
            out[node.name] = (node.op, node.device, list(node.input), attrs)
    return out


async def _run(graph_def, spec, arrays, opt_level=af.OptimizerOptions.L0):
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(graph_def, name="")
    config = af.ConfigProto()
    config.CopyFrom(TWO_CPUS)
    config.graph_options.optimizer_options.opt_level = opt_level
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        values = await asyncio.wait_for(sess.run(
            spec["fetches"], {k: arrays[f"feed:{k}"] for k in spec["feeds"]},
            options=af.RunOptions(output_partition_graphs=True), run_metadata=md), 30)
    return values, md


@pytest.mark.parametrize("name", ["loop_two_cpus", "loop_nested_two_cpus"])
async def test_partitions_and_values_match_tensorflows(name):
    spec, graph_def, tf_md, arrays = _load(name)
    values, md = await _run(graph_def, spec, arrays)
    for fetch, value in zip(spec["fetches"], values, strict=True):
        np.testing.assert_array_equal(value, arrays[f"fetch:{fetch}"])
    ours, theirs = _nodes(md), _nodes(tf_md)
    assert sorted(ours) == sorted(theirs)
    for node_name, node in theirs.items():
        assert ours[node_name] == node, node_name
    assert len(md.partition_graphs) == 2


@pytest.mark.parametrize("name", ["loop_two_cpus", "loop_nested_two_cpus"])
async def test_values_with_the_optimizer_on(name):
    spec, graph_def, _, arrays = _load(name)
    values, _ = await _run(graph_def, spec, arrays, af.OptimizerOptions.L1)
    for fetch, value in zip(spec["fetches"], values, strict=True):
        np.testing.assert_array_equal(value, arrays[f"fetch:{fetch}"])


def _split_loop(n_iters: int, parallel_iterations: int, devices=("/cpu:0", "/cpu:1")):
    """acc <- acc * 1.01 + i (on devices[1]), a counter on devices[0]; the result."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [4], name="x")

        def body(i, acc):
            with af.device(devices[1]):
                scaled = acc * 1.01 + af.cast(i, af.float32)
            with af.device(devices[0]):
                return i + 1, scaled

        with af.device(devices[0]):
            _, out = af.while_loop(lambda i, acc: i < n_iters, body, [af.constant(0), x],
                                   parallel_iterations=parallel_iterations)
    return g, x, out


def _expected(n_iters: int, xv):
    acc = xv.copy()
    for i in range(n_iters):
        acc = acc * np.float32(1.01) + np.float32(i)
    return acc


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_builder_loop_split_over_devices_matches_one_device(parallel_iterations):
    xv = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    g, x, out = _split_loop(50, parallel_iterations)
    g1, x1, out1 = _split_loop(50, parallel_iterations, ("/cpu:0", "/cpu:0"))
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        split = await asyncio.wait_for(sess.run(out, {x: xv}), 30)
        again = await asyncio.wait_for(sess.run(out, {x: xv}), 30)  # a second step
    async with af.Session(graph=g1) as sess:
        single = await sess.run(out1, {x1: xv})
    np.testing.assert_allclose(split, _expected(50, xv), rtol=1e-5)
    np.testing.assert_array_equal(split, single)
    np.testing.assert_array_equal(again, single)


async def test_no_transfer_is_left_in_the_rendezvous():
    xv = np.ones(4, np.float32)
    g, x, out = _split_loop(7, 10)
    steps = []
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        with observe_steps(steps.append):
            await asyncio.wait_for(sess.run(out, {x: xv}), 30)
    rendezvous = steps[0][0].ctx.rendezvous
    assert rendezvous is not None and len(rendezvous) == 0


async def test_zero_iterations_across_devices():
    xv = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    g, x, out = _split_loop(0, 10)
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        np.testing.assert_array_equal(await asyncio.wait_for(sess.run(out, {x: xv}), 30), xv)


async def test_an_error_in_the_other_devices_body_names_the_node_and_ends_the_step():
    g = af.Graph()
    with g.as_default():
        def body(i, acc):
            with af.device("/cpu:1"):
                checked = af.check_numerics(acc / af.cast(2 - i, af.float32),
                                            "acc", name="checked")
            return i + 1, checked

        _, out = af.while_loop(lambda i, acc: i < 5, body, [af.constant(0), af.constant(1.0)])
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        with pytest.raises(errors.InvalidArgumentError, match="checked"):
            await asyncio.wait_for(sess.run(out), 30)
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()


async def test_a_cond_inside_a_loop_split_over_devices():
    g = af.Graph()
    with g.as_default():
        def body(i, acc):
            with af.device("/cpu:1"):
                acc = af.cond(af.equal(i % 2, 0), lambda: acc + 1.0, lambda: acc * 3.0)
            return i + 1, acc

        _, out = af.while_loop(lambda i, acc: i < 6, body, [af.constant(0), af.constant(1.0)])
    expected = 1.0
    for i in range(6):
        expected = expected + 1.0 if i % 2 == 0 else expected * 3.0
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        assert await asyncio.wait_for(sess.run(out), 30) == pytest.approx(expected)


async def test_the_leader_on_the_other_device_and_three_devices():
    """The LoopCond on /cpu:1 (its device leads: /cpu:0 and /cpu:2 follow through their
    control loops), the body spread over all three."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")

        def cond(i, acc):
            with af.device("/cpu:1"):
                return af.less(i, 5)

        def body(i, acc):
            with af.device("/cpu:2"):
                acc = acc * 2.0
            with af.device("/cpu:1"):
                acc = acc - 1.0
            return i + 1, acc

        _, out = af.while_loop(cond, body, [af.constant(0), x])
    xv = np.array([1.0, 0.5, -1.0], np.float32)
    expected = xv.copy()
    for _ in range(5):
        expected = expected * 2 - 1
    config = af.ConfigProto(device_count={"CPU": 3})
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        value = await asyncio.wait_for(sess.run(
            out, {x: xv}, options=af.RunOptions(output_partition_graphs=True),
            run_metadata=md), 30)
    np.testing.assert_array_equal(value, expected)
    loops = {part.node[0].device[-5:]: sum(n.name.startswith("_cloop") for n in part.node)
             for part in md.partition_graphs}
    # One control loop per device that receives a value inside the frame: all three
    # (the leader too: the body's result comes back to it from /cpu:2), as TF builds.
    assert loops == {"CPU:0": 4, "CPU:1": 4, "CPU:2": 4}


def _dead_across_devices_loop(n_iters: int, parallel_iterations: int):
    """A cond inside the loop whose Switch is on /cpu:0 and whose true branch is on
    /cpu:1: on odd iterations the value sent to /cpu:1 is dead, and so is the branch's
    result sent back (the Merge on /cpu:0 then takes the false branch's)."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")

        def body(i, acc):
            with af.device("/cpu:0"):
                even = af.equal(i % 2, 0)

                def on_cpu1():
                    with af.device("/cpu:1"):
                        return acc * 2.0 + 1.0

                acc = af.cond(even, on_cpu1, lambda: acc - 3.0)
                return i + 1, acc

        with af.device("/cpu:0"):
            _, out = af.while_loop(lambda i, acc: i < n_iters, body, [af.constant(0), x],
                                   parallel_iterations=parallel_iterations)
    return g, x, out


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_a_dead_value_sent_in_a_loop_is_dead_on_the_other_device(parallel_iterations):
    """Deadness crosses the direct hand-off both ways, whichever side comes first (the
    receiver waiting already, or the value sent before its receiver starts)."""
    xv = np.array([1.0, -2.0, 0.25], np.float32)
    expected = xv.copy()
    for i in range(9):
        expected = expected * np.float32(2) + np.float32(1) if i % 2 == 0 else expected - 3
    g, x, out = _dead_across_devices_loop(9, parallel_iterations)
    steps = []
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        md = af.RunMetadata()
        with observe_steps(steps.append):
            value = await asyncio.wait_for(sess.run(
                out, {x: xv}, options=af.RunOptions(output_partition_graphs=True),
                run_metadata=md), 30)
    np.testing.assert_array_equal(value, expected)
    # The branch really runs on /cpu:1: its partition receives the Switch's output.
    ops = {part.node[0].device[-5:]: [n.op for n in part.node] for part in md.partition_graphs}
    assert "_Recv" in ops["CPU:1"] and "_Send" in ops["CPU:1"]
    assert len(steps[0][0].ctx.rendezvous) == 0


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_a_traced_split_loop_records_every_iterations_transfers(parallel_iterations):
    """FULL_TRACE runs the transfers timed: same values, and each transfer node of the
    loop has a stats entry per iteration it ran live in: a Recv for the 6 iterations and
    the 7th (which receives the False predicate or a dead value), a Send of the predicate
    7 times, the other Sends 6 (a dead node is not timed)."""
    xv = np.ones(4, np.float32)
    g, x, out = _split_loop(6, parallel_iterations)
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        md = af.RunMetadata()
        value = await asyncio.wait_for(sess.run(
            out, {x: xv}, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE,
                                                output_partition_graphs=True),
            run_metadata=md), 30)
    np.testing.assert_allclose(value, _expected(6, xv), rtol=1e-6)
    counts = {}
    for dev in md.step_stats.dev_stats:
        for ns in dev.node_stats:
            counts[ns.node_name] = counts.get(ns.node_name, 0) + 1
    expected = {}
    for part in md.partition_graphs:
        for node in part.node:
            if node.op in ("_Recv", "_HostRecv"):
                expected[node.name] = 7
            elif node.op in ("_Send", "_HostSend"):
                expected[node.name] = 7 if node.input[0].endswith("LoopCond") else 6
    assert len(expected) == 10
    assert {name: counts.get(name) for name in expected} == expected


async def test_the_split_loop_needs_no_turn_of_the_event_loop_per_transfer():
    """The direct hand-off: a Send completes the Recv waiting on the other partition in
    the same drain, so 300 iterations (1,200 transfers) run in a few turns of the loop
    when the run's time budget allows it."""
    xv = np.ones(4, np.float32)
    g, x, out = _split_loop(300, 10)
    async with af.Session(graph=g, config=TWO_CPUS, time_budget_ms=60_000) as sess:
        await sess.run(out, {x: xv})  # built and warm
        turns = 0
        running = True

        async def ticker():
            nonlocal turns
            while running:
                turns += 1
                await asyncio.sleep(0)

        tick = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        start = turns
        value = await asyncio.wait_for(sess.run(out, {x: xv}), 30)
        spent = turns - start
        running = False
        await tick
    np.testing.assert_allclose(value, _expected(300, xv), rtol=1e-4)
    assert spent <= 10, spent


async def test_cancelling_a_split_loop_while_a_recv_waits_releases_everything():
    """The body on /cpu:1 stops at iteration 3 (an awaited coroutine that never ends)
    while /cpu:0 waits for its result: the deadline aborts both partitions, the waiting
    Recvs are released by the rendezvous's abort, and nothing is left behind."""
    never = asyncio.Event()

    async def stall(i, acc):
        if int(i) == 3:
            await never.wait()
        return acc

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2], name="x")

        def body(i, acc):
            with af.device("/cpu:1"):
                acc = af.async_py_func(stall, [i, acc * 2.0], af.float32)
                acc.set_shape([2])
            return i + 1, acc

        _, out = af.while_loop(lambda i, acc: i < 8, body, [af.constant(0), x])
    steps = []
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        with observe_steps(steps.append):
            with pytest.raises(errors.DeadlineExceededError):
                await asyncio.wait_for(sess.run(
                    out, {x: np.ones(2, np.float32)},
                    options=af.RunOptions(timeout_in_ms=300)), 30)
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()
        states = steps[0]
        assert [state.in_flight for state in states] == [0, 0]
        assert len(states[0].ctx.rendezvous) == 0
        # The session still runs the loop to its end afterwards.
        never.set()
        value = await asyncio.wait_for(sess.run(out, {x: np.ones(2, np.float32)}), 30)
    np.testing.assert_array_equal(value, np.full(2, 2.0 ** 8, np.float32))


async def test_the_other_devices_body_runs_as_one_segment(monkeypatch):
    """On /cpu:1 the body's multiply, its add and the multiply's constant (gated by the
    control loop's Identity) form one compiled segment: they feed only the add."""
    from aioflow.runtime.direct_session import DirectSession

    monkeypatch.setenv("AIOFLOW_SEGMENTS", "1")  # in both of this module's modes
    g, x, out = _split_loop(5, 1)
    direct = DirectSession(config=TWO_CPUS)
    try:
        direct.extend(g.as_graph_def())
        eak = direct.get_executors((x.name,), (out.name,), ())
        (cpu1,) = [e for e in eak.executors if e.device.name.endswith("CPU:1")]
        members = [[m.op for m in s.members] for s in cpu1.segments]
        assert any({"Identity", "Const", "Mul", "AddV2"} <= set(ops) for ops in members), \
            members
    finally:
        direct.close()


def _watch_propagation(monkeypatch) -> dict:
    """Records, for the partitions' `process` calls, how deep they nest and how many the
    runner made; and every `activate` (the propagation of outputs to successors) whose
    state's own `process` is not the innermost one on the stack."""
    from aioflow.runtime.frame_state import ControlFlowExecutorState

    seen = {"calls": 0, "max_depth": 0, "foreign": 0, "activations": 0}
    stack = []
    process, activate = ControlFlowExecutorState.process, ControlFlowExecutorState.activate

    def watched_process(self, deadline):
        seen["calls"] += 1
        stack.append(self)
        seen["max_depth"] = max(seen["max_depth"], len(stack))
        try:
            return process(self, deadline)
        finally:
            stack.pop()

    def watched_activate(self, *args):
        seen["activations"] += 1
        if not stack or stack[-1] is not self:
            seen["foreign"] += 1
        return activate(self, *args)

    monkeypatch.setattr(ControlFlowExecutorState, "process", watched_process)
    monkeypatch.setattr(ControlFlowExecutorState, "activate", watched_activate)
    return seen


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_each_partition_propagates_only_in_its_own_process(monkeypatch,
                                                                 parallel_iterations):
    """One place propagates: the loop's value goes to /cpu:1 and back every iteration,
    and each hand-off is queued on the receiving partition, whose own `process` (called
    by the runner in the same slice, never nested in the sender's) propagates it."""
    xv = np.ones(4, np.float32)
    g, x, out = _split_loop(200, parallel_iterations)
    async with af.Session(graph=g, config=TWO_CPUS, time_budget_ms=60_000) as sess:
        await sess.run(out, {x: xv})  # built and warm
        seen = _watch_propagation(monkeypatch)
        value = await asyncio.wait_for(sess.run(out, {x: xv}), 30)
    np.testing.assert_allclose(value, _expected(200, xv), rtol=1e-4)
    assert seen["max_depth"] == 1, seen
    assert seen["foreign"] == 0, seen
    assert seen["activations"] >= 200, seen  # (propagation was watched)
    assert seen["calls"] >= 400, seen  # each hand-off: the receiver's own process


async def test_an_error_in_the_other_partitions_body_stops_both_partitions():
    """The body on /cpu:1 fails at iteration 4, between two hand-offs of the loop's
    value: the error names its node and iteration, /cpu:0 runs nothing after it (its
    ready queue is empty, nothing is in flight), and the rendezvous holds nothing."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")

        def body(i, acc):
            with af.device("/cpu:1"):
                acc = af.check_numerics(acc * af.cast(4 - i, af.float32) ** -1.0, "acc",
                                        name="inverse_checked")
            return i + 1, acc

        _, out = af.while_loop(lambda i, acc: i < 10, body, [af.constant(0), x])
    steps = []
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        with observe_steps(steps.append):
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"inverse_checked.*iteration 4"):
                await asyncio.wait_for(sess.run(out, {x: np.ones(3, np.float32)}), 30)
        for state in steps[0]:
            assert state.error is not None
            assert not state.ready and not state.completed and state.in_flight == 0
        assert len(steps[0][0].ctx.rendezvous) == 0


async def test_cancelling_a_running_split_loop_mid_way_releases_everything():
    """A long split loop cancelled while its partitions are being drained (slice after
    slice, no Recv left waiting on anything outside the step): the deadline aborts both
    partitions, no task or rendezvous entry is left, and the session runs it again."""
    g, x, out = _split_loop(2_000_000, 10)
    g_short, x_short, out_short = _split_loop(30, 10)
    xv = np.ones(4, np.float32)
    steps = []
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        before = set(asyncio.all_tasks())
        with observe_steps(steps.append):
            with pytest.raises(errors.DeadlineExceededError):
                await asyncio.wait_for(sess.run(
                    out, {x: xv}, options=af.RunOptions(timeout_in_ms=200)), 30)
        await asyncio.sleep(0)
        assert set(asyncio.all_tasks()) - before == set()
        states = steps[0]
        assert [state.in_flight for state in states] == [0, 0]
        assert all(not state.ready and state.error is not None for state in states)
        assert len(states[0].ctx.rendezvous) == 0
        # A task cancelled from outside mid-loop ends the same way.
        task = asyncio.ensure_future(sess.run(out, {x: xv}))
        await asyncio.sleep(0.1)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [state.in_flight for state in steps[0]] == [0, 0]
    async with af.Session(graph=g_short, config=TWO_CPUS) as sess:
        value = await asyncio.wait_for(sess.run(out_short, {x_short: xv}), 30)
    np.testing.assert_allclose(value, _expected(30, xv), rtol=1e-5)


@pytest.mark.parametrize("parallel_iterations", [1, 10])
async def test_nested_loops_split_over_devices_match_numpy(parallel_iterations):
    """An outer loop on /cpu:0 whose inner loop's body is on /cpu:1 (a control loop per
    device per frame, frames nested on both sides): TF's result, and the same as on one
    device."""
    def build(inner_device):
        g = af.Graph()
        with g.as_default():
            x = af.placeholder(af.float32, [3], name="x")

            def outer(i, acc):
                def inner(j, a):
                    with af.device(inner_device):
                        a = a * 0.5 + af.cast(i * j, af.float32)
                    return j + 1, a

                _, acc = af.while_loop(lambda j, a: j < i + 1, inner, [af.constant(0), acc],
                                       parallel_iterations=parallel_iterations)
                return i + 1, acc + 1.0

            with af.device("/cpu:0"):
                _, out = af.while_loop(lambda i, acc: i < 6, outer, [af.constant(0), x],
                                       parallel_iterations=parallel_iterations)
        return g, x, out

    xv = np.array([1.0, -3.0, 8.0], np.float32)
    expected = xv.copy()
    for i in range(6):
        for j in range(i + 1):
            expected = expected * np.float32(0.5) + np.float32(i * j)
        expected = expected + np.float32(1)
    g, x, out = build("/cpu:1")
    async with af.Session(graph=g, config=TWO_CPUS) as sess:
        md = af.RunMetadata()
        split = await asyncio.wait_for(sess.run(
            out, {x: xv}, options=af.RunOptions(output_partition_graphs=True),
            run_metadata=md), 30)
    g1, x1, out1 = build("/cpu:0")
    async with af.Session(graph=g1, config=TWO_CPUS) as sess:
        single = await asyncio.wait_for(sess.run(out1, {x1: xv}), 30)
    np.testing.assert_allclose(split, expected, rtol=1e-6)
    np.testing.assert_array_equal(split, single)
    assert len(md.partition_graphs) == 2  # the inner body really runs on /cpu:1
