"""Traced runs: RunOptions.trace_level fills RunMetadata.step_stats; af.Timeline turns it
into a Chrome trace."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import numpy as np
import pytest

import aioflow as af
from aioflow.framework.op_kernel import OpKernel

pytestmark = pytest.mark.usefixtures("segments_mode")  # compiled segments on and off

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"


def _graph():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [256, 256], name="x")
        mm = af.matmul(x, x, name="mm")  # big enough for the thread pool
        s = af.reduce_sum(mm, name="s")
        ident = af.identity(s, name="ident")  # forwarded by the executor

        async def later(v):
            await asyncio.sleep(0.01)
            return v

        out = af.async_py_func(later, [ident], af.float32, name="later")
    return g, x, out


def _by_name(run_metadata):
    return {ns.node_name: (dev, ns) for dev in run_metadata.step_stats.dev_stats
            for ns in dev.node_stats}


@pytest.mark.usefixtures("numpy_products")  # a product big enough for the pool
async def test_full_trace_times_every_node_where_it_ran():
    g, x, out = _graph()
    xv = np.ones((256, 256), np.float32)
    async with af.Session(graph=g) as sess:
        md = af.RunMetadata()
        value = await sess.run(out, {x: xv}, run_metadata=md,
                               options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE))
    assert value == pytest.approx(float((xv @ xv).sum()))
    stats = _by_name(md)
    assert {"mm", "s", "ident", "later", "_arg_x_0_0", "_retval_later_0_0"} <= set(stats)
    assert [d.device for d in md.step_stats.dev_stats] == [CPU0]
    dev = md.step_stats.dev_stats[0]
    loop_tid = threading.get_native_id()
    mm_dev, mm = stats["mm"]
    assert mm.thread_id != loop_tid  # the pool ran it ...
    assert dev.thread_names[mm.thread_id].startswith("aioflow-CPU")
    assert stats["s"][1].thread_id == loop_tid  # ... and the loop the cheap nodes
    assert dev.thread_names[loop_tid] == threading.current_thread().name
    assert stats["later"][1].all_end_rel_micros >= 10_000  # the await is its op time
    for _, ns in stats.values():
        assert ns.op_start_rel_micros <= ns.op_end_rel_micros <= ns.all_end_rel_micros
        assert ns.all_start_nanos // 1000 == ns.all_start_micros
    # Nodes ran in dependency order on one clock.
    order = [stats[n][1].all_start_micros for n in ("mm", "s", "ident", "later")]
    assert order == sorted(order)
    assert stats["s"][1].all_start_micros >= mm.all_start_micros + mm.all_end_rel_micros
    assert mm.timeline_label == "mm = MatMul(_arg_x_0_0, _arg_x_0_0)"
    assert stats["s"][1].timeline_label.startswith("s = Sum(mm, ")
    # Outputs are described.
    (output,) = mm.output
    assert output.slot == 0 and output.tensor_description.dtype == af.float32.as_datatype_enum
    assert [d.size for d in output.tensor_description.shape.dim] == [256, 256]


async def test_software_trace_describes_outputs_too():
    # As TF 2.21: outputs are described at SOFTWARE_TRACE as well as FULL_TRACE.
    g, x, out = _graph()
    async with af.Session(graph=g) as sess:
        md = af.RunMetadata()
        await sess.run(out, {x: np.ones((256, 256), np.float32)}, run_metadata=md,
                       options=af.RunOptions(trace_level=af.RunOptions.SOFTWARE_TRACE))
    (output,) = _by_name(md)["mm"][1].output
    assert [d.size for d in output.tensor_description.shape.dim] == [256, 256]


async def test_untraced_runs_collect_nothing():
    g, x, out = _graph()
    async with af.Session(graph=g) as sess:
        md = af.RunMetadata()
        await sess.run(out, {x: np.ones((256, 256), np.float32)}, run_metadata=md)
        assert not md.step_stats.dev_stats
        md2 = af.RunMetadata()
        await sess.run(out, {x: np.ones((256, 256), np.float32)}, run_metadata=md2,
                       options=af.RunOptions(trace_level=af.RunOptions.NO_TRACE))
        assert not md2.step_stats.dev_stats


async def test_trace_of_a_loop_and_of_two_devices():
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [], name="n")
        with af.device("/cpu:1"):
            _, total = af.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i),
                                     [af.constant(0), af.constant(0)])
        out = af.identity(total, name="out")
    config = af.ConfigProto(device_count={"CPU": 2})
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        assert await sess.run(out, {n: 4}, run_metadata=md,
                              options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE)) == 6
    devices = {d.device: d for d in md.step_stats.dev_stats}
    assert set(devices) == {CPU0, CPU1}
    names1 = [ns.node_name for ns in devices[CPU1].node_stats]
    # The loop body's add ran once per iteration (4), each recorded.
    assert sum(1 for name in names1 if name == "while/add") == 4
    send = next(ns for ns in devices[CPU1].node_stats if ns.timeline_label.split(" = ")[1]
                .startswith("_Send("))
    assert send.timeline_label.endswith(f"@{CPU0})")


async def test_timeline_is_a_chrome_trace_of_the_step():
    g, x, out = _graph()
    async with af.Session(graph=g) as sess:
        md = af.RunMetadata()
        await sess.run(out, {x: np.ones((256, 256), np.float32)}, run_metadata=md,
                       options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE))
    trace = json.loads(af.Timeline(md.step_stats).generate_chrome_trace_format())
    events = trace["traceEvents"]
    ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
    assert set(ops) == set(_by_name(md))
    assert ops["mm"]["name"] == "MatMul" and ops["mm"]["args"]["input0"] == "_arg_x_0_0"
    assert min(e["ts"] for e in ops.values()) == 0
    assert all(e["dur"] >= 0 for e in ops.values())
    names = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert names == [{"name": "process_name", "ph": "M", "pid": 0,
                      "args": {"name": f"{CPU0} Compute"}}]
    threads = {e["tid"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {e["tid"] for e in ops.values()} <= threads
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "t"}
    assert starts and set(starts) == set(ends)
    # mm -> s is drawn from the end of mm to the start of s.
    mm_to_s = next(i for i, e in starts.items()
                   if e["name"] == "mm" and ends[i]["tid"] == ops["s"]["tid"])
    assert starts[mm_to_s]["ts"] == ops["mm"]["ts"] + ops["mm"]["dur"]
    assert ends[mm_to_s]["ts"] >= starts[mm_to_s]["ts"]
    no_flow = json.loads(af.Timeline(md.step_stats).generate_chrome_trace_format(
        show_dataflow=False))
    assert not [e for e in no_flow["traceEvents"] if e["ph"] in ("s", "t")]


async def test_small_inputs_broadcasting_to_a_large_output_run_on_the_pool(monkeypatch):
    """(n, 1) + (1, n) has two small inputs and n * n outputs: the static rule decides by
    the broadcast output's size (it held the loop 110 ms at n = 15000), equal shapes and
    small products stay inline. (The static rule alone: learned costs would override it,
    see test_kernel_stats.py.)"""
    monkeypatch.setenv("AIOFLOW_ADAPTIVE", "0")
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float32, [None, None], name="a")
        b = af.placeholder(af.float32, [None, None], name="b")
        out = af.add(a, b, name="bcast")
    loop_tid = threading.get_native_id()
    cases = [((300, 1), (1, 300), True), ((200, 200), (200, 200), False),
             ((1, 300), (300, 1), True), ((30, 1), (1, 30), False)]
    async with af.Session(graph=g) as sess:
        for sa, sb, on_pool in cases:
            md = af.RunMetadata()
            value = await sess.run(out, {a: np.ones(sa, np.float32), b: np.ones(sb, np.float32)},
                                   run_metadata=md,
                                   options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE))
            assert value.shape == np.broadcast_shapes(sa, sb)
            assert (_by_name(md)["bcast"][1].thread_id != loop_tid) == on_pool, (sa, sb)


class _Sleepy(OpKernel):
    """Holds its pool thread 30 ms."""

    expensive = True

    def compute(self, ctx, inputs):
        time.sleep(0.03)
        return (inputs[0],)


async def test_a_node_waiting_in_the_pool_queue_is_scheduled_before_it_starts(user_op):
    """Two pool kernels on a one-thread pool: the second waits for the first, which its
    stats show as all_start - scheduled (TF's scheduled_micros); inline nodes are
    scheduled when their drain began, never after they start."""
    sleepy = user_op("StepStatsSleepyPool", _Sleepy)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        a = sleepy(x=x, name="first")
        b = sleepy(x=x + 1.0, name="second")
        out = a + b
    # A pool of its own (the process-wide pool is shared and sized by its first user).
    config = af.ConfigProto(inter_op_parallelism_threads=1, use_per_session_threads=True)
    async with af.Session(graph=g, config=config) as sess:
        md = af.RunMetadata()
        assert await sess.run(out, {x: 1.0}, run_metadata=md,
                              options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE)) == 3.0
    stats = {name: ns for name, (_, ns) in _by_name(md).items()}
    waits = sorted(stats[n].all_start_nanos - stats[n].scheduled_nanos
                   for n in ("first", "second"))
    assert waits[1] >= 20_000_000  # waited for the other's 30 ms on the one thread
    assert stats["first"].scheduled_micros != stats["first"].all_start_micros or \
        stats["second"].scheduled_micros != stats["second"].all_start_micros
    for ns in stats.values():
        assert ns.scheduled_nanos <= ns.all_start_nanos
    assert "_SOURCE" in stats and not stats["_SOURCE"].HasField("memory_stats")


async def test_timeline_shows_memory_alive_per_allocator():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [1000], name="x")
        a = af.reshape(x * 2.0, [10, 100], name="a")  # a view: no new bytes
        b = af.multiply(x, 3.0, name="b")
        out = af.reduce_sum(a + af.reshape(b, [10, 100]), name="out")
    async with af.Session(graph=g) as sess:
        md = af.RunMetadata()
        await sess.run(out, {x: np.ones(1000, np.float32)}, run_metadata=md,
                       options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE))
    trace = json.loads(af.Timeline(md.step_stats).generate_chrome_trace_format(
        show_memory=True))["traceEvents"]
    counters = [e for e in trace if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"cpu"}
    values = [e["args"]["cpu"] for e in counters]
    assert min(values) >= 0 and values[-1] == 0  # all freed once read
    assert max(values) >= 8000  # x * 2.0 (read through its view a) and b together
    assert [e["ts"] for e in counters] == sorted(e["ts"] for e in counters)
    assert any(e["ph"] == "M" and e["args"].get("name") == "Allocators" for e in trace)
    plain = json.loads(af.Timeline(md.step_stats).generate_chrome_trace_format())
    assert not [e for e in plain["traceEvents"] if e["ph"] == "C"]
