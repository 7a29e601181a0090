"""Building steps: incremental extend (same graph, same errors as converting everything,
nothing changed by a bad extension), builds off the event loop, the cached path staying
on it, the run gate, deadlines that a stuck kernel cannot stretch, large fetches copied
off the loop, compile_segments, and the collector pause."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import numpy as np
import pytest
from google.protobuf import text_format

import aioflow as af
from aioflow.client import session as session_mod
from aioflow.framework import errors
from aioflow.framework.gc_util import paused_gc
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.passes.registry import Grouping, global_registry
from aioflow.proto import attr_value_pb2, graph_pb2
from aioflow.runtime import direct_session as ds_mod
from aioflow.runtime import executor_factory
from aioflow.runtime.direct_session import DirectSession
from aioflow.runtime.placer import place

CONST = """
node { name: "%s" op: "Const" %s
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1.0 } } } }
"""
ADD = """
node { name: "%s" op: "AddV2" input: "%s" input: "%s"
  attr { key: "T" value { type: DT_FLOAT } } }
"""


def parse(text: str) -> graph_pb2.GraphDef:
    return text_format.Parse(text, graph_pb2.GraphDef())


def const(name: str, extra: str = "") -> str:
    return CONST % (name, extra)


def structure(graph) -> tuple:
    """Everything the executor builder reads of a graph, by name."""
    nodes = []
    for node in graph.op_nodes():
        ins = sorted((e.src.name, e.src_output, e.dst_input) for e in node.in_edges)
        outs = sorted((e.dst.name, e.src_output, e.dst_input) for e in node.out_edges)
        nodes.append((node.name, node.type_string, node.assigned_device_name, ins, outs,
                      list(node.input_types), list(node.output_types)))
    return tuple(nodes)


def full_conversion(direct: DirectSession) -> tuple:
    """What TF's Extend would hold: the merged GraphDef converted and placed anew."""
    graph = convert_graph_def_to_graph(direct.graph_def)
    place(graph, direct.device_mgr, direct.config.allow_soft_placement)
    return structure(graph)


def chain_graph_def(n: int) -> graph_pb2.GraphDef:
    gd = graph_pb2.GraphDef()
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = af.float32.as_datatype_enum
    prev = "x"
    for i in range(n):
        node = gd.node.add(name=f"add_{i}", op="AddV2", input=[prev, "x"])
        node.attr["T"].type = af.float32.as_datatype_enum
        prev = node.name
    out = gd.node.add(name="out", op="Identity", input=[prev])
    out.attr["T"].type = af.float32.as_datatype_enum
    return gd


# -- incremental extend ------------------------------------------------------------------

def test_extensions_build_the_graph_a_full_conversion_builds():
    direct = DirectSession(af.ConfigProto(device_count={"CPU": 2}))
    direct.extend(parse(const("a") + const("b")))
    direct.extend(parse(ADD % ("c", "a", "b")))  # a and b lose their sink edges
    direct.extend(parse(ADD % ("d", "c", "a") + const("e", 'input: "^d"')))
    # A node joining a's colocation group with a device request moves the whole group,
    # as TF's re-placement of the merged graph would.
    direct.extend(parse("""
        node { name: "f" op: "Identity" input: "a" device: "/cpu:1"
          attr { key: "T" value { type: DT_FLOAT } }
          attr { key: "_class" value { list { s: "loc:@a" } } } }"""))
    assert structure(direct._state.graph) == full_conversion(direct)
    assert direct._state.by_name["a"].assigned_device_name.endswith("CPU:1")
    direct.close()


async def test_extend_then_run_matches_values(graph):
    x = af.placeholder(af.float32, [], name="x")
    y = x * 2.0
    async with af.Session(graph=graph) as sess:
        assert await sess.run(y, {x: 3.0}) == 6.0
        for i in range(40):  # small extensions: converted on the loop
            y = y + 1.0
            assert await sess.run(y, {x: 3.0}) == 7.0 + i
        assert structure(sess._direct._state.graph) == full_conversion(sess._direct)


BAD_EXTENSIONS = {
    "unknown op": 'node { name: "bad" op: "NoSuchOp" }',
    "unknown input": ADD % ("bad", "a", "missing"),
    "bad output index": ADD % ("bad", "a:3", "a"),
    "duplicate in the extension": const("bad") + const("bad"),
    "cycle": ADD % ("p", "a", "q") + ADD % ("q", "p", "a"),
    "wrong input dtype": """
        node { name: "i" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
          attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } } }
        node { name: "bad" op: "AddV2" input: "a" input: "i"
          attr { key: "T" value { type: DT_FLOAT } } }""",
    "placement": const("bad", 'device: "/device:GPU:7"'),
}


@pytest.mark.parametrize("case", sorted(BAD_EXTENSIONS))
def test_a_bad_extension_fails_as_a_full_conversion_and_changes_nothing(case):
    direct = DirectSession()
    direct.extend(parse(const("a") + ADD % ("b", "a", "a")))
    before = structure(direct._state.graph)
    edges = direct._state.graph.num_edges
    bad = parse(const("ok") + BAD_EXTENSIONS[case])
    merged = direct.graph_def
    merged.node.extend(bad.node)
    with pytest.raises(errors.InvalidArgumentError) as expected:
        graph = convert_graph_def_to_graph(merged)
        place(graph, direct.device_mgr, False)
    with pytest.raises(errors.InvalidArgumentError) as got:
        direct.extend(bad)
    assert str(got.value) == str(expected.value)
    assert structure(direct._state.graph) == before
    assert direct._state.graph.num_edges == edges
    assert [n.name for n in direct.graph_def.node] == ["a", "b"]
    direct.extend(parse(const("ok") + ADD % ("c", "b", "ok")))  # the session goes on
    assert structure(direct._state.graph) == full_conversion(direct)
    direct.close()


def test_extend_with_a_name_already_there_names_it():
    direct = DirectSession()
    direct.extend(parse(const("a")))
    with pytest.raises(errors.InvalidArgumentError, match="includes node 'a', which was "
                                                          "created by a previous call"):
        direct.extend(parse(const("b") + const("a")))
    assert [n.name for n in direct.graph_def.node] == ["a"]
    direct.close()


def test_placement_passes_see_the_whole_graph():
    seen = []

    def record(options):
        seen.append(sorted(n.name for n in options.graph.op_nodes()))

    registry = global_registry()
    registry.register(Grouping.PRE_PLACEMENT, 0, "test_record", record)
    try:
        direct = DirectSession()
        direct.extend(parse(const("a")))
        direct.extend(parse(ADD % ("b", "a", "a")))
    finally:
        registry.unregister(Grouping.PRE_PLACEMENT, "test_record")
    assert seen == [["a"], ["a", "b"]]
    direct.extend(parse(ADD % ("c", "b", "a")))  # incremental again
    assert structure(direct._state.graph) == full_conversion(direct)
    direct.close()


def test_node_defs_between_writes_what_as_graph_def_writes(graph):
    a = af.constant(1.0, name="a")
    b = af.placeholder(af.float32, [2], name="b")
    with af.device("/cpu:0"), af.control_dependencies([b.op, a.op]):
        c = af.add(a, 2.0, name="c")
    with af.control_dependencies([c.op]):
        af.identity(c)
    af.while_loop(lambda i: i < 3.0, lambda i: i + 1, [a])
    expected = graph.as_graph_def(from_version=1).node
    got, _, types = session_mod._node_defs_between(graph, 1, graph.version)
    assert list(got) == list(expected)
    assert types == [None] * len(got)  # (known for imported ops only)


# -- off the loop ----------------------------------------------------------------------------

class _ThreadRecorder:
    """A POST_REWRITE_FOR_EXEC pass recording the thread each build runs on."""

    def __init__(self):
        self.threads: list[str] = []

    def __call__(self, options):
        self.threads.append(threading.current_thread().name)

    def __enter__(self):
        global_registry().register(Grouping.POST_REWRITE_FOR_EXEC, 0, "test_thread", self)
        return self

    def __exit__(self, *exc):
        global_registry().unregister(Grouping.POST_REWRITE_FOR_EXEC, "test_thread")


async def test_a_new_signature_is_built_off_the_loop_and_a_cached_one_is_not(
        graph, monkeypatch):
    x = af.placeholder(af.float32, [], name="x")
    y = x + 1.0
    loop_thread = threading.current_thread().name
    async with af.Session(graph=graph) as sess:
        with _ThreadRecorder() as recorder:
            assert await sess.run(y, {x: 1.0}) == 2.0
        assert recorder.threads and recorder.threads[0].startswith("aioflow-build")
        assert recorder.threads[0] != loop_thread

        async def no_hop(*args):
            raise AssertionError("a cached signature hopped to a build thread")

        monkeypatch.setattr(session_mod, "run_in_build_thread", no_hop)
        monkeypatch.setattr(ds_mod, "run_in_build_thread", no_hop)
        assert await sess.run(y, {x: 2.0}) == 3.0
        with graph.as_default():
            z = y * 2.0  # a small extension is converted on the loop...
        assert await sess.run(y, {x: 3.0}) == 4.0
        with pytest.raises(AssertionError, match="hopped"):
            await sess.run(z, {x: 3.0})  # ...but a new signature is built off it


async def test_a_large_extension_is_converted_off_the_loop():
    threads = []
    registry = global_registry()
    registry.register(Grouping.PRE_PLACEMENT, 0, "test_thread",
                      lambda options: threads.append(threading.current_thread().name))
    try:
        g = af.Graph()
        with g.as_default():
            af.import_graph_def(chain_graph_def(200), name="")
        async with af.Session(graph=g) as sess:
            assert await sess.run("out:0", {"x:0": 1.0}) == 201.0
    finally:
        registry.unregister(Grouping.PRE_PLACEMENT, "test_thread")
    assert threads and all(t.startswith("aioflow-build") for t in threads)


async def test_the_loop_keeps_beating_while_a_big_graph_builds():
    """The first run of a 10,000-node chain builds for hundreds of milliseconds; a 1 ms
    heartbeat keeps beating meanwhile (timing thresholds are loose: CI machines are
    shared; benchmarks/session_build.py measures the lag)."""
    g = af.Graph()
    with g.as_default():
        af.import_graph_def(chain_graph_def(10_000), name="")
    beats = []
    done = False

    async def beat():
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            beats.append(time.perf_counter() - start)

    async with af.Session(graph=g) as sess:
        heart = asyncio.ensure_future(beat())
        await asyncio.sleep(0)
        start = time.perf_counter()
        assert await sess.run("out:0", {"x:0": 1.0}) == 10_001.0
        wall = time.perf_counter() - start
        done = True
        await heart
    assert wall > 0.05
    assert len(beats) >= wall / 0.02  # a blocked loop would beat once
    assert np.median(beats) < 0.005


async def test_two_runs_asking_for_one_new_signature_build_it_once(graph, monkeypatch):
    built = []
    real = executor_factory.ExecutorImpl  # the executor factories build them

    def counting(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(executor_factory, "ExecutorImpl", counting)
    x = af.placeholder(af.float32, [], name="x")
    y = x * 3.0
    async with af.Session(graph=graph) as sess:
        out = await asyncio.gather(*(sess.run(y, {x: float(i)}) for i in range(5)))
    assert out == [0.0, 3.0, 6.0, 9.0, 12.0]
    assert len(built) == 1


async def test_a_failed_build_is_not_cached(graph, monkeypatch):
    calls = []
    real = ds_mod.optimize_graph

    def failing_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.2)  # long enough for the second run to join this build
            raise errors.InternalError(None, None, "injected build failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(ds_mod, "optimize_graph", failing_once)
    x = af.placeholder(af.float32, [], name="x")
    y = x + 5.0
    async with af.Session(graph=graph) as sess:
        results = await asyncio.gather(sess.run(y, {x: 1.0}), sess.run(y, {x: 1.0}),
                                       return_exceptions=True)
        assert all(isinstance(r, errors.InternalError) for r in results)  # one build
        assert await sess.run(y, {x: 1.0}) == 6.0
        assert not sess._direct._building


# -- the run gate --------------------------------------------------------------------------

async def test_a_burst_of_runs_lets_timers_fire_before_all_have_started(graph, monkeypatch):
    started = []
    real = DirectSession.run_executors

    def counting(self, *args, **kwargs):
        started.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DirectSession, "run_executors", counting)
    x = af.placeholder(af.float32, [], name="x")
    y = af.identity(x)
    config = af.ConfigProto()
    config.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
    async with af.Session(graph=graph, config=config) as sess:
        await sess.run(y, {x: 1.0})
        started.clear()
        seen_at_timer = []
        asyncio.get_running_loop().call_later(0, lambda: seen_at_timer.append(len(started)))
        n = 3000
        out = await asyncio.gather(*(sess.run(y, {x: float(i)}) for i in range(n)))
    assert out == [float(i) for i in range(n)]
    assert len(started) == n
    assert seen_at_timer and seen_at_timer[0] < n


async def test_a_run_cancelled_while_waiting_at_the_gate_is_skipped(graph):
    x = af.placeholder(af.float32, [], name="x")
    y = af.identity(x)
    async with af.Session(graph=graph) as sess:
        await sess.run(y, {x: 1.0})
        await asyncio.sleep(0)  # a new turn
        gate = sess._gate
        gate.spent = gate.budget  # this turn's budget is spent: the next runs wait
        first = asyncio.ensure_future(sess.run(y, {x: 1.0}))
        second = asyncio.ensure_future(sess.run(y, {x: 2.0}))
        await asyncio.sleep(0)
        assert len(gate.waiters) == 2
        first.cancel()
        assert await second == 2.0
        with pytest.raises(asyncio.CancelledError):
            await first
        assert not gate.waiters


# -- deadlines ------------------------------------------------------------------------------

async def test_a_deadline_holds_against_a_kernel_that_swallows_cancellation(graph):
    finished = asyncio.Event()

    async def stubborn(v):
        try:
            await asyncio.sleep(3)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)
        finished.set()
        return v

    y = af.async_py_func(stubborn, [af.constant(1.0)], af.float32)
    errors_logged = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda loop, context: errors_logged.append(context))
    async with af.Session(graph=graph) as sess:
        start = time.perf_counter()
        with pytest.raises(errors.DeadlineExceededError,
                           match="^Timed out waiting for notification"):
            await sess.run(y, options=af.RunOptions(timeout_in_ms=200))
        took = time.perf_counter() - start
        assert took < 0.45  # 3.2 s before: the run waited for the kernel
        assert not finished.is_set()  # left to finish on its own
        assert await sess.run(af.constant(2.0)) == 2.0  # the session goes on
        await asyncio.wait_for(finished.wait(), 5)
        await asyncio.sleep(0.05)
        assert not sess._direct._active_steps
    assert not errors_logged  # the abandoned step's error was retrieved


async def test_a_deadline_still_waits_briefly_for_kernels_that_stop(graph):
    stopped = []

    async def polite(v):
        try:
            await asyncio.sleep(3)
        finally:
            stopped.append(1)
        return v

    y = af.async_py_func(polite, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            await sess.run(y, options=af.RunOptions(timeout_in_ms=50))
        assert stopped == [1]  # the step ended whole before the run raised
        assert not sess._direct._active_steps


async def test_cancelling_a_run_with_a_deadline_cancels_its_step(graph):
    stopped = []

    async def slow(v):
        try:
            await asyncio.sleep(3)
        finally:
            stopped.append(1)
        return v

    y = af.async_py_func(slow, [af.constant(1.0)], af.float32)
    async with af.Session(graph=graph) as sess:
        task = asyncio.ensure_future(sess.run(y, options=af.RunOptions(timeout_in_ms=5000)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert stopped == [1]


# -- fetches ---------------------------------------------------------------------------------

async def test_large_read_only_fetches_are_copied_off_the_loop(graph, monkeypatch):
    threads = []
    real = session_mod._fetched

    def recording(value):
        threads.append(threading.current_thread())
        return real(value)

    monkeypatch.setattr(session_mod, "_fetched", recording)
    x = af.placeholder(af.float32, [None, None])
    y = af.identity(x)  # forwards the fed array: read-only in, read-only out
    async with af.Session(graph=graph) as sess:
        for side, off_loop in ((1024, True), (4, False)):
            fed = np.ones((side, side), np.float32)
            fed.setflags(write=False)
            value = await sess.run(y, {x: fed})
            assert value.flags.writeable and value.shape == (side, side)
            assert value.sum() == side * side and value is not fed
            assert (threads[-1] is not threading.current_thread()) is off_loop


# -- options ---------------------------------------------------------------------------------

async def test_compile_segments_false_builds_no_segments(graph, monkeypatch):
    monkeypatch.delenv("AIOFLOW_SEGMENTS", raising=False)
    x = af.placeholder(af.float32, [], name="x")
    y = x
    for _ in range(20):
        y = y * 1.0 + 1.0
    for compile_segments, expect in ((True, True), (False, False)):
        config = af.ConfigProto()
        config.graph_options.optimizer_options.opt_level = af.OptimizerOptions.L0
        async with af.Session(graph=graph, config=config,
                              compile_segments=compile_segments) as sess:
            assert await sess.run(y, {x: 0.0}) == 20.0
            (eak,) = sess._direct._executors.values()
            assert bool(eak.executors[0].segments) is expect


def test_sync_session_takes_compile_segments(graph, monkeypatch):
    monkeypatch.delenv("AIOFLOW_SEGMENTS", raising=False)
    x = af.placeholder(af.float32, [], name="x")
    y = x
    for _ in range(20):
        y = y * 1.0 + 1.0
    with af.SyncSession(graph=graph, compile_segments=False) as sync:
        assert sync.run(y, {x: 1.0}) == 21.0
        (eak,) = sync._session._direct._executors.values()
        assert not eak.executors[0].segments


async def test_partition_graph_defs_are_made_only_when_asked(graph):
    x = af.placeholder(af.float32, [], name="x")
    y = x + 1.0
    async with af.Session(graph=graph) as sess:
        await sess.run(y, {x: 1.0})
        (eak,) = sess._direct._executors.values()
        assert eak._partition_graph_defs is None
        meta = af.RunMetadata()
        await sess.run(y, {x: 1.0}, options=af.RunOptions(output_partition_graphs=True),
                       run_metadata=meta)
        assert len(meta.partition_graphs) == 1
        assert any(n.op == "_Retval" for n in meta.partition_graphs[0].node)


# -- the collector -----------------------------------------------------------------------------

def test_overlapping_pauses_on_threads_restore_the_collector_once():
    assert gc.isenabled()
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with paused_gc():
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=worker)
    with paused_gc():
        thread.start()
        inside.wait(5)
    assert not gc.isenabled()  # the worker's pause is still on
    release.set()
    thread.join(5)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # young objects aged, nothing left frozen


def test_a_pause_leaves_a_disabled_collector_disabled():
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


async def test_a_run_cancelled_while_a_shared_build_runs_does_not_cancel_it(graph, monkeypatch):
    release = threading.Event()
    real = ds_mod.optimize_graph

    def slow(*args, **kwargs):
        release.wait(5)
        return real(*args, **kwargs)

    monkeypatch.setattr(ds_mod, "optimize_graph", slow)
    x = af.placeholder(af.float32, [], name="x")
    y = x - 1.0
    async with af.Session(graph=graph) as sess:
        first = asyncio.ensure_future(sess.run(y, {x: 1.0}))
        second = asyncio.ensure_future(sess.run(y, {x: 2.0}))
        for _ in range(200):  # until both wait for the one build
            await asyncio.sleep(0.005)
            if sess._direct._building:
                break
        await asyncio.sleep(0.05)
        first.cancel()
        release.set()
        assert await second == 1.0
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await sess.run(y, {x: 3.0}) == 2.0
        assert not sess._direct._building


def test_a_gate_does_not_keep_its_loop_alive():
    import weakref

    from aioflow.runtime import run_gate

    loop = asyncio.new_event_loop()
    gate = run_gate.get_gate(loop)
    assert run_gate.get_gate(loop) is gate
    ref = weakref.ref(loop)
    loop.close()
    del loop
    gc.collect()
    assert ref() is None


async def test_every_op_of_a_graph_is_checked_once_where_it_is_made(graph):
    """Builders, import_graph_def and Graph.create_op validate each op when it is made
    (Operation._checked), so the session does not validate it again on extend; raw attrs
    that do not fit the OpDef are TF's ValueError from create_op, and the graph is left
    as it was (it was a run-time error of every later run before)."""
    with graph.as_default():
        a = af.constant(1.0)
        b = af.placeholder(af.float32, [])
        c = af.add(a, b)
        with pytest.raises(ValueError, match=r"NodeDef missing attr 'T' from Op<name=Add>"):
            graph.create_op("Add", [a, b], [af.float32], attrs={}, compute_shapes=False)
        t_float = attr_value_pb2.AttrValue(type=af.float32.as_datatype_enum)
        raw = graph.create_op("Add", [a, b], [af.float32], compute_shapes=False,
                              attrs={"T": t_float})
    assert all(op._checked for op in graph.get_operations())
    assert [t.op.name for t in raw.inputs] == [a.op.name, b.op.name]
    async with af.Session(graph=graph) as sess:
        assert await sess.run([c, raw.outputs[0]], {b: 2.0}) == [3.0, 3.0]
