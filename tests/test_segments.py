"""Compiled segments (runtime/segments.py, loop_segments.py): graphs compute the same
values, raise the same errors, follow the same deadness, cancel and trace the same with
segments compiled (AIOFLOW_SEGMENTS=eager: compiled at first use; "1": the default, after
a few runs) as without them ("0"); and the executor really builds and runs them."""

from __future__ import annotations

import asyncio
import inspect
import re

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors, intra_op_threads
from aioflow.kernels.data_flow.stack_kernels import Stack
from aioflow.runtime.direct_session import DirectSession
from aioflow.runtime.executor import ExecutorImpl, observe_steps
from aioflow.runtime.loop_segments import LoopSegment
from aioflow.runtime.segments import MAX_FALLBACKS, MAX_MEMBERS

#: AIOFLOW_SEGMENTS per mode. "lazy" is the default: interpreted until a segment's third
#: entry, so runs on either side of its compilation are compared too.
MODES = {"off": "0", "eager": "eager", "lazy": "1"}
BIG = 100_000  # elements: over the cwise kernels' pool threshold (65536)


@pytest.fixture(autouse=True)
def _segments_default(monkeypatch):
    """These tests are about the segments themselves: they start from the default mode
    whatever AIOFLOW_SEGMENTS the whole run uses (a test or fixture may then set it)."""
    monkeypatch.delenv("AIOFLOW_SEGMENTS", raising=False)


async def run_in_modes(monkeypatch, graph, fetches, feeds: list) -> dict[str, list]:
    """Per mode, a fresh Session on `graph` running `fetches` with each feed dict in turn
    (executors read AIOFLOW_SEGMENTS when they are built: at a Session's first run)."""
    out = {}
    for mode, value in MODES.items():
        monkeypatch.setenv("AIOFLOW_SEGMENTS", value)
        async with af.Session(graph=graph) as sess:
            out[mode] = [await asyncio.wait_for(sess.run(fetches, feed), 30) for feed in feeds]
    return out


def assert_identical(got, want, where="") -> None:
    """Same structure, dtypes, shapes and values (bit for bit, NaN equal to NaN)."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), where
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_identical(g, w, f"{where}[{k}]")
        return
    if want is None:
        assert got is None, where
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{where}: {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{where}: {got.shape} != {want.shape}"
    np.testing.assert_array_equal(got, want, err_msg=where)
    assert got.tobytes() == want.tobytes(), f"{where}: not bit for bit (signed zeros?)"


def assert_all_modes(results: dict[str, list], expected: list) -> None:
    for mode, runs in results.items():
        for k, (got, want) in enumerate(zip(runs, expected, strict=True)):
            assert_identical(got, want, f"{mode} run {k}")


def executors_for(graph, feeds, fetches, **session_kw) -> tuple:
    """The DirectSession and the executors a Session would build to feed `feeds` and
    fetch `fetches` (tensors; operations are targets); close the session after."""
    direct = DirectSession(**session_kw)
    direct.extend(graph.as_graph_def())
    eak = direct.get_executors(tuple(t.name for t in feeds),
                               tuple(t.name for t in fetches if isinstance(t, af.Tensor)),
                               tuple(t.name for t in fetches if not isinstance(t, af.Tensor)))
    return direct, eak


# -- graphs ------------------------------------------------------------------------------------

def chain_of_adds(n=200):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        y = x
        for i in range(n):
            y = y + float(i) if i % 3 else y * 1.0001
    xs = [np.array(v, np.float32) for v in ([1.0, -2.0, 0.5], [3.0, 1e30, -0.0])]
    want = []
    for xv in xs:
        v = xv
        for i in range(n):
            v = v + np.float32(i) if i % 3 else v * np.float32(1.0001)
        want.append([v])
    return g, [y], [{x: v} for v in xs], want


def fan_out_and_join(width=40):
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [4], name="x")
        branches = [x * float(k) + float(k) for k in range(width)]
        summed = af.add_n(branches, name="summed")
        level = branches
        while len(level) > 1:  # a tree of pairwise adds
            level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        tree = af.identity(level[0], name="tree")
        grouped = af.group(*[af.identity(b) for b in branches[:10]], name="grouped")
    xs = [np.arange(4, dtype=np.float32) - 1.5, np.full(4, 7.25, np.float32)]
    want = []
    for xv in xs:
        bs = [xv * np.float32(k) + np.float32(k) for k in range(width)]
        total = bs[0]
        for b in bs[1:]:
            total = total + b
        level = bs
        while len(level) > 1:
            level = [level[i] + level[i + 1] if i + 1 < len(level) else level[i]
                     for i in range(0, len(level), 2)]
        want.append([total, level[0], None])
    return g, [summed, tree, grouped], [{x: v} for v in xs], want


def mixed_dtypes():
    g = af.Graph()
    with g.as_default():
        i8 = af.placeholder(af.int8, [None], name="i8")
        i32 = af.placeholder(af.int32, [None], name="i32")
        u8 = af.placeholder(af.uint8, [None], name="u8")
        wrap8 = i8 * af.constant(3, af.int8) + af.constant(100, af.int8)
        wrap32 = (i32 + af.constant(2**31 - 1)) * af.constant(2)
        wrapu = u8 - af.constant(7, af.uint8) * u8
        half = af.cast(wrap8, af.float16) * af.constant(0.1, af.float16) + af.constant(
            1.5, af.float16)
        half = half * half - af.constant(3.0, af.float16)
        both = af.cast(half, af.float32) + af.cast(wrap32, af.float32)
        flags = af.logical_and(wrap8 > af.constant(0, af.int8), wrap32 < 0)
    feeds, want = [], []
    for a, b, c in (([1, 50, -128, 127], [1, 2, -5, 0], [0, 3, 255, 37]),
                    ([0, 0, 0, 0], [2**31 - 1, -(2**31), 7, 8], [1, 2, 3, 4])):
        av, bv, cv = np.int8(a), np.int32(b), np.uint8(c)
        feeds.append({i8: av, i32: bv, u8: cv})
        with np.errstate(all="ignore"):
            w8 = av * np.int8(3) + np.int8(100)
            w32 = (bv + np.int32(2**31 - 1)) * np.int32(2)
            wu = cv - np.uint8(7) * cv
            h = w8.astype(np.float16) * np.float16(0.1) + np.float16(1.5)
            h = h * h - np.float16(3.0)
            want.append([w8, w32, wu, h, h.astype(np.float32) + w32.astype(np.float32),
                         np.logical_and(w8 > 0, w32 < 0)])
    return g, [wrap8, wrap32, wrapu, half, both, flags], feeds, want


def broadcasting():
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float64, [3, 1], name="a")
        b = af.placeholder(af.float64, [1, 4], name="b")
        c = af.constant(np.array([1.0, -1.0, 0.5, 2.0]))
        prod = a + b * c
        mx = af.maximum(a, b) - c
        out = af.minimum(prod, mx) / (af.abs(c) + 1.0)
    av = np.array([[1.0], [-2.0], [3.5]])
    bv = np.array([[0.25, -4.0, 8.0, 1.0]])
    cv = np.array([1.0, -1.0, 0.5, 2.0])
    p, m = av + bv * cv, np.maximum(av, bv) - cv
    # (abs(c) + 1 folds to a Const, and a division by a Const is a multiplication by its
    # reciprocal, as in TF's default session: passes/div_to_reciprocal_mul.py)
    want = [[p, m, np.minimum(p, m) * (1.0 / (np.abs(cv) + 1.0))]]
    return g, [prod, mx, out], [{a: av, b: bv}], want


GRAPHS = {"chain_of_adds": chain_of_adds, "fan_out_and_join": fan_out_and_join,
          "mixed_dtypes": mixed_dtypes, "broadcasting": broadcasting}


@pytest.mark.parametrize("name", sorted(GRAPHS))
async def test_values_are_the_same_with_segments_on_and_off(monkeypatch, name):
    g, fetches, feeds, want = GRAPHS[name]()
    # Each feed three times: the lazy mode compiles on the third entry.
    feeds, want = feeds * 3, want * 3
    assert_all_modes(await run_in_modes(monkeypatch, g, fetches, feeds), want)


@pytest.mark.parametrize("name", sorted(GRAPHS))
async def test_the_graphs_run_compiled(monkeypatch, name):
    """With AIOFLOW_SEGMENTS=eager each of these graphs has segments, and a run goes
    through their generated code (compiled, no fallback): the equality test above
    compares the compiled path, not a fallback."""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    g, fetches, feeds, want = GRAPHS[name]()
    direct, eak = executors_for(g, list(feeds[0]), fetches)
    try:
        values = await direct.run_executors(eak, list(feeds[0].values()))
        (impl,) = eak.executors
        assert impl.segments
        for segment in impl.segments:
            assert segment.fn is not None and segment.fallbacks == 0, segment.item.name
    finally:
        direct.close()
    assert_identical(values, [w for f, w in zip(fetches, want[0], strict=True)
                              if isinstance(f, af.Tensor)])


async def test_a_large_input_falls_back_to_the_pool_and_later_runs_still_work(monkeypatch):
    """A segment whose input is too large to stay on the loop runs its members node by
    node (the big ones on the pool); small runs after big ones run compiled again, and
    after MAX_FALLBACKS big runs the segment stops trying."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        y = x
        for k in range(12):
            y = (y + float(k)) * 0.5
    small, big = np.arange(10, dtype=np.float32), np.linspace(-1, 1, BIG, dtype=np.float32)
    order = [small, big, small, big, big, small] + [big] * MAX_FALLBACKS + [small]

    def reference(v):
        for k in range(12):
            v = (v + np.float32(k)) * np.float32(0.5)
        return v

    want = [reference(v) for v in order]
    results = await run_in_modes(monkeypatch, g, y, [{x: v} for v in order])
    assert_all_modes(results, want)

    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    direct, eak = executors_for(g, [x], [y])
    try:
        (impl,) = eak.executors
        (segment,) = impl.segments
        for v in order[:3]:  # small, big, small
            assert_identical(await direct.run_executors(eak, [v]), [reference(v)])
        assert segment.fallbacks == 1 and segment.fn is not None
        for v in [big] * MAX_FALLBACKS:
            assert_identical(await direct.run_executors(eak, [v]), [reference(v)])
        assert segment.fn is None  # gave up compiling: always interpreted now
        assert_identical(await direct.run_executors(eak, [small]), [reference(small)])
    finally:
        direct.close()


async def test_inputs_broadcasting_to_a_large_output_leave_the_segment(monkeypatch):
    """Two small inputs of other shapes ((n, 1) and (1, n)) may broadcast to a large
    output: the compiled segment falls back, and node by node the executor sends the
    member to the pool by its output size; values identical in every mode."""
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float32, [None, None], name="a")
        b = af.placeholder(af.float32, [None, None], name="b")
        y = (a + b) * 2.0 - 1.0
    small = {a: np.ones((3, 1), np.float32), b: np.full((1, 3), 2.0, np.float32)}
    large = {a: np.ones((300, 1), np.float32), b: np.full((1, 300), 2.0, np.float32)}
    order = [small, small, large, small]
    want = [(v[a] + v[b]) * np.float32(2) - np.float32(1) for v in order]
    assert_all_modes(await run_in_modes(monkeypatch, g, y, order), want)

    monkeypatch.setenv("AIOFLOW_SEGMENTS", "eager")
    direct, eak = executors_for(g, [a, b], [y])
    try:
        (impl,) = eak.executors
        (segment,) = impl.segments
        for v, expected in zip(order, want, strict=True):
            assert_identical(await direct.run_executors(eak, [v[a], v[b]]), [expected])
        assert segment.fallbacks == 1 and segment.fn is not None
        # The fed values (read by _Arg members) decide whether the members must test
        # their broadcasts: the large run left before computing a + b, not after it.
        assert "uniform = uniform_shapes((ctx.args[0], ctx.args[1],)" in segment.source
    finally:
        direct.close()


# -- errors name the original node -------------------------------------------------------------

@pytest.mark.usefixtures("segments_mode")
async def test_integer_division_by_zero_in_a_segment_names_the_node():
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.int32, [None], name="x")
        d = af.placeholder(af.int32, [None], name="d")
        q = af.math.floordiv(x * 3 + 1, d - 1, name="bad_div")
        out = (q + 7) * 2
    async with af.Session(graph=g) as sess:
        ok = np.int32([5, 6, -7])
        for _ in range(2):  # compiled (eager) and run through the generated code first
            assert_identical(await sess.run(out, {x: ok, d: np.int32([2, 3, 4])}),
                             ((ok * 3 + 1) // np.int32([1, 2, 3]) + 7) * 2)
        with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero") as e:
            await sess.run(out, {x: ok, d: np.int32([2, 1, 4])})
        assert "bad_div" in e.value.message
        assert e.value.node_def.name == "bad_div"
        # The segment still runs afterwards.
        assert_identical(await sess.run(out, {x: ok, d: np.int32([3, 3, 3])}),
                         ((ok * 3 + 1) // np.int32([2, 2, 2]) + 7) * 2)


@pytest.mark.usefixtures("segments_mode")
async def test_shape_mismatch_in_a_segment_names_the_node():
    g = af.Graph()
    with g.as_default():
        a = af.placeholder(af.float32, [None], name="a")
        b = af.placeholder(af.float32, [None], name="b")
        s = af.add(a * 2.0, b - 1.0, name="bad_add")
        out = af.sqrt(af.abs(s)) + 1.0
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            await sess.run(out, {a: np.ones(3, np.float32), b: np.ones(3, np.float32)})
        with pytest.raises(errors.InvalidArgumentError, match=r"Incompatible shapes") as e:
            await sess.run(out, {a: np.ones(3, np.float32), b: np.ones(4, np.float32)})
        assert "bad_add" in e.value.message and e.value.node_def.name == "bad_add"


@pytest.mark.usefixtures("segments_mode")
async def test_error_in_a_compiled_loop_names_the_node_frame_and_iteration():
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [], name="n")
        out = af.while_loop(
            lambda i, acc: i < n,
            lambda i, acc: (i + 1, acc + af.math.floordiv(100, 3 - i, name="div")),
            [af.constant(0), af.constant(0)])
    async with af.Session(graph=g) as sess:
        for _ in range(2):
            i, acc = await sess.run(out, {n: 3})
            assert (int(i), int(acc)) == (3, 100 // 3 + 100 // 2 + 100 // 1)
        with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero") as e:
            await sess.run(out, {n: 6})
    assert re.search(r"\{\{node [^}]*div\}\}", e.value.message), e.value.message
    assert "while-loop frame" in e.value.message and "iteration 3" in e.value.message


# -- deadness and frames -----------------------------------------------------------------------

async def test_cond_with_segments_in_both_branches(monkeypatch):
    """The untaken branch's chain is dead: its segment runs node by node (dead), the
    Merge takes the live branch; values as without segments."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        p = af.placeholder(af.bool, [], name="p")

        def taken():
            y = x
            for k in range(20):
                y = y * 1.5 - float(k)
            return y

        def untaken():
            y = x
            for k in range(20):
                y = af.abs(y) + float(k)
            return y

        out = af.cond(p, taken, untaken)
        final = out * 2.0 + 1.0
    xv = np.array([1.0, -2.0, 0.25], np.float32)

    def ref(pv):
        y = xv
        for k in range(20):
            y = y * np.float32(1.5) - np.float32(k) if pv else np.abs(y) + np.float32(k)
        return [y, y * np.float32(2.0) + np.float32(1.0)]

    preds = [True, False, False, True, True, False, True]
    results = await run_in_modes(monkeypatch, g, [out, final], [{x: xv, p: v} for v in preds])
    assert_all_modes(results, [ref(v) for v in preds])


@pytest.mark.parametrize("n", [0, 1, 5, 300])
async def test_while_loop_of_cheap_ops(monkeypatch, n):
    g = af.Graph()
    with g.as_default():
        limit = af.placeholder(af.int32, [], name="limit")
        v = af.placeholder(af.float64, [2], name="v")
        out = af.while_loop(
            lambda i, acc, w: i < limit,
            lambda i, acc, w: (i + 1, (acc * 3 + i) % 1000, w * 0.5 + af.cast(i, af.float64)),
            [af.constant(0), af.constant(1), v])
    vv = np.array([2.0, -8.0])
    i, acc, w = 0, 1, vv
    while i < n:
        i, acc, w = i + 1, (acc * 3 + i) % 1000, w * 0.5 + np.float64(i)
    want = [np.int32(i), np.int32(acc), w]
    results = await run_in_modes(monkeypatch, g, out, [{limit: n, v: vv}] * 3)
    assert_all_modes(results, [want] * 3)


async def test_cond_inside_a_loop_and_a_loop_inside_an_untaken_cond(monkeypatch):
    g = af.Graph()
    with g.as_default():
        n = af.placeholder(af.int32, [], name="n")
        p = af.placeholder(af.bool, [], name="p")

        def body(i, acc):
            bonus = af.cond(af.equal(i % 3, 0), lambda: i * 10 + 1, lambda: i - 1)
            return i + 1, acc + bonus

        looped = af.while_loop(lambda i, a: i < n, body, [af.constant(0), af.constant(0)])[1]
        gated = af.cond(p, lambda: af.while_loop(lambda j: j < n, lambda j: j + 2,
                                                 [af.constant(0)]) * 3,
                        lambda: n + 100)

    def ref(nv, pv):
        acc = sum(i * 10 + 1 if i % 3 == 0 else i - 1 for i in range(nv))
        j = 0
        while j < nv:
            j += 2
        return [np.int32(acc), np.int32(j * 3 if pv else nv + 100)]

    cases = [(7, True), (7, False), (0, True), (12, False), (12, True), (5, True)]
    results = await run_in_modes(monkeypatch, g, [looped, gated],
                                 [{n: a, p: b} for a, b in cases])
    assert_all_modes(results, [ref(a, b) for a, b in cases])


# -- cancellation --------------------------------------------------------------------------------

@pytest.mark.usefixtures("segments_mode")
async def test_cancelling_a_run_of_segments_and_an_async_kernel_leaves_nothing_behind():
    started = asyncio.Event()
    cancelled = []

    async def slow(v):
        started.set()
        try:
            await asyncio.sleep(float(v))
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return v

    g = af.Graph()
    with g.as_default():
        delay = af.placeholder(af.float32, [], name="delay")
        x = af.placeholder(af.float32, [8], name="x")
        pre = x
        for k in range(30):
            pre = pre * 0.5 + float(k)
        waited = af.async_py_func(slow, [delay], af.float32, name="slow")
        waited.set_shape([])
        post = pre + waited
        for k in range(30):
            post = post - float(k) * 0.25
    xv = np.ones(8, np.float32)
    async with af.Session(graph=g) as sess:
        first = await sess.run(post, {delay: 0.0, x: xv})  # compiled (eager) before
        before = set(asyncio.all_tasks())
        task = asyncio.ensure_future(sess.run(post, {delay: 30.0, x: xv}))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # What the run started ends within a few loop turns (how many depends on where
        # the cancellation found the step): nothing is left sleeping its 30 s.
        left = set(asyncio.all_tasks()) - before
        await asyncio.wait_for(asyncio.gather(*left, return_exceptions=True), 5)
        assert cancelled == [True]
        # The session still runs, to the same values.
        assert_identical(await asyncio.wait_for(sess.run(post, {delay: 0.0, x: xv}), 5), first)


# -- step stats --------------------------------------------------------------------------------

@pytest.mark.usefixtures("segments_mode")
async def test_full_trace_lists_every_node_of_the_partition():
    """A traced run runs a compiled segment's nodes one by one: the step stats name every
    node of the partition graph, as without segments, and no segment item."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [5], name="x")
        y = x
        for k in range(100):  # more than one segment's worth of members
            y = y * 0.75 + float(k)
        z = af.identity(af.sqrt(af.abs(y)), name="z")
    xv = np.arange(5, dtype=np.float32)
    trace = af.RunOptions(trace_level=af.RunOptions.FULL_TRACE, output_partition_graphs=True)
    async with af.Session(graph=g) as sess:
        plain = [await sess.run(z, {x: xv}) for _ in range(2)]  # compiled, run compiled
        md = af.RunMetadata()
        traced = await sess.run(z, {x: xv}, options=trace, run_metadata=md)
        after = await sess.run(z, {x: xv})
    assert_identical(traced, plain[0])
    assert_identical(after, plain[0])
    assert_identical(plain[1], plain[0])
    (part,) = md.partition_graphs
    names = [ns.node_name for dev in md.step_stats.dev_stats for ns in dev.node_stats]
    assert not [n for n in names if "_segment" in n]
    assert len(names) == len(set(names))  # each node once
    assert set(names) - {"_SOURCE"} == {n.name for n in part.node}
    assert len(part.node) > 200


# -- the executor builds segments ----------------------------------------------------------------

def _input_names(node_def) -> list[str]:
    return [i.lstrip("^").split(":")[0] for i in node_def.input]


def _assert_segments_sound(impl) -> None:
    """Every segment: members in topological order, of one frame, at most MAX_MEMBERS,
    its generated source compiles, and it is convex (no path leaves it and comes back)."""
    graph_def = impl.graph.to_graph_def()
    consumers: dict[str, list[str]] = {n.name: [] for n in graph_def.node}
    for n in graph_def.node:
        for src in _input_names(n):
            consumers[src].append(n.name)
    for n in graph_def.node:  # no back edges: convex within one iteration
        if n.op == "NextIteration":
            consumers[n.name] = []
    for segment in impl.segments:
        members = [m.name for m in segment.members]
        position = {name: k for k, name in enumerate(members)}
        if isinstance(segment, LoopSegment):  # its Enters, then its frame's nodes
            frames = [m.frame_name for m in segment.members if not m.is_enter]
            assert len(set(frames)) == 1 and frames[0] == segment.members[-1].frame_name
        else:
            assert 2 <= len(members) <= MAX_MEMBERS
            assert len({m.frame_name for m in segment.members}) == 1
        for m in segment.members:
            for src in _input_names(m.node_def):
                if src in position and not m.is_merge:
                    assert position[src] < position[m.name], (segment.item.name, m.name)
        source, namespace = segment.generate()
        compile(source, f"<{segment.item.name}>", "exec")
        # Convex: nothing outside the segment is reachable from it and reaches it.
        if isinstance(segment, LoopSegment):
            continue  # a compiled loop spans its frame (its back edges are inside it)
        outside_reached, stack = set(), [c for m in members for c in consumers[m]
                                         if c not in position]
        while stack:
            name = stack.pop()
            if name in outside_reached:
                continue
            outside_reached.add(name)
            for c in consumers[name]:
                assert c not in position, f"{segment.item.name}: {name} -> {c} re-enters"
                stack.append(c)


def test_the_executor_builds_sound_segments_only_when_asked():
    g, (fetch,), feeds, _ = chain_of_adds(300)
    (x,) = feeds[0]
    direct, eak = executors_for(g, [x], [fetch])
    try:
        (impl,) = eak.executors
        assert len(impl.segments) >= 300 // MAX_MEMBERS
        member_names = {m.name for s in impl.segments for m in s.members}
        assert {n for n in member_names if n.startswith("add")}, member_names
        _assert_segments_sound(impl)
        assert ExecutorImpl(impl.graph, impl.device, segments=False).segments == []
        assert ExecutorImpl(impl.graph, impl.device, inline_all=True).segments == []
    finally:
        direct.close()
    if "compile_segments" in inspect.signature(DirectSession).parameters:
        direct, eak = executors_for(g, [x], [fetch], compile_segments=False)
        try:
            assert eak.executors[0].segments == []
        finally:
            direct.close()


def test_segments_form_in_cond_branches_and_loop_bodies_and_stay_convex():
    """Around non-compilable nodes (py_func, async kernels, control flow) segments form
    on either side and stay convex."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        p = af.placeholder(af.bool, [], name="p")
        a = x * 2.0 + 1.0
        b = af.py_func(lambda v: v, [a], af.float32, name="opaque")
        c = (a - 3.0) * (b + 1.0)  # a member fed from both sides of the py_func
        d = af.cond(p, lambda: (c * 2.0 + 1.0) * 3.0, lambda: af.abs(c) - 1.0 + x)

        async def later(v):
            return v

        def body(i, acc):
            s = af.async_py_func(later, [i * 2 + 1], af.int32)
            s.set_shape([])
            return i + 1, (acc + s) * 1

        loop = af.while_loop(lambda i, acc: i < 5, body, [af.constant(0), af.constant(0)])
    direct, eak = executors_for(g, [x, p], [d, loop[1]])
    try:
        (impl,) = eak.executors
        _assert_segments_sound(impl)
        frames = {s.item.frame_name for s in impl.segments}
        assert any(frames - {""}), "no segment inside the loop frame"
        branch = [s for s in impl.segments if all(m.name.startswith("cond/") for m in s.members)]
        assert branch, [[m.name for m in s.members] for s in impl.segments]
    finally:
        direct.close()


def test_compiled_while_loops_are_segments_too():
    g = af.Graph()
    with g.as_default():
        out = af.while_loop(lambda i, a: i < 10, lambda i, a: (i + 1, a * 2 + i),
                            [af.constant(0), af.constant(1)])
    direct, eak = executors_for(g, [], list(out))
    try:
        (impl,) = eak.executors
        loops = [s for s in impl.segments if isinstance(s, LoopSegment)]
        assert loops
        (loop,) = loops
        assert any(m.is_enter for m in loop.members) and any(m.is_merge for m in loop.members)
        _assert_segments_sound(impl)
    finally:
        direct.close()


# -- parallelism ---------------------------------------------------------------------------------

@pytest.mark.usefixtures("segments_mode")
@pytest.mark.parametrize("pi, expected", [(1, 1), (4, 4)])
async def test_an_async_kernel_fed_by_a_segment_keeps_its_parallelism_in_a_loop(pi, expected):
    """The async kernel's input comes from a chain of cheap ops (a segment in the loop
    body) that depends only on the counter: iterations still overlap up to
    parallel_iterations, as without segments (the segment does not wait for the async
    kernel's output, which its other chain consumes)."""
    in_flight = 0
    peak = 0

    async def slow(v):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return v

    g = af.Graph()
    with g.as_default():
        def body(i, acc):
            fed = (i * 3 + 1) * 2 - 2  # a segment of cheap ops on the counter
            s = af.async_py_func(slow, [fed], af.int32)
            s.set_shape([])
            return i + 1, (acc + s) * 1 + 0

        out = af.while_loop(lambda i, a: i < 12, body, [af.constant(0), af.constant(0)],
                            parallel_iterations=pi)
    async with af.Session(graph=g) as sess:
        for _ in range(2):  # interpreted and compiled alike (lazy would compile later)
            peak = 0
            i, acc = await asyncio.wait_for(sess.run(out), 10)
            assert (int(i), int(acc)) == (12, sum((k * 3 + 1) * 2 - 2 for k in range(12)))
            assert peak == expected


# -- resource variables in compiled regions ------------------------------------------------------

def reading_loop():
    """A while loop whose body reads a resource variable each iteration (a Keras RNN's
    kernels), and the same loop inside an untaken or taken cond."""
    g = af.Graph()
    with g.as_default():
        w = af.Variable(np.array([0.5, -1.5, 2.0], np.float32), name="w", use_resource=True)
        n = af.placeholder(af.int32, [], name="n")
        p = af.placeholder(af.bool, [], name="p")

        def loop():
            return af.while_loop(
                lambda i, acc: i < n,
                lambda i, acc: (i + 1, acc * af.identity(w.read_value(), name="read_w") + 1.0),
                [af.constant(0), af.zeros([3])])[1]

        out = loop()
        gated = af.cond(p, loop, lambda: af.ones([3]) * -7.0)
    return g, w, n, p, out, gated


def reading_loop_values(wv, nv: int) -> np.ndarray:
    acc = np.zeros(3, np.float32)
    for _ in range(nv):
        acc = acc * wv + np.float32(1.0)
    return acc


def test_a_loop_reading_a_resource_variable_compiles_as_one_loop():
    g, _, n, p, out, _ = reading_loop()
    direct, eak = executors_for(g, [n, p], [out])
    try:
        (impl,) = eak.executors
        loops = [s for s in impl.segments if isinstance(s, LoopSegment)]
        assert [m.op for s in loops for m in s.members].count("ReadVariableOp") == 1, \
            [[m.op for m in s.members] for s in loops]
        _assert_segments_sound(impl)
    finally:
        direct.close()


@pytest.mark.usefixtures("segments_mode")
async def test_a_compiled_loop_reads_the_variables_current_value():
    """No value is kept from an earlier run: an assign between runs is seen by the next;
    in an untaken cond the loop (and its read) is dead."""
    g, w, n, p, out, gated = reading_loop()
    with g.as_default():
        new_w = af.placeholder(af.float32, [3], name="new_w")
        assign = w.assign(new_w)
        init = af.global_variables_initializer()
    wv = np.array([0.5, -1.5, 2.0], np.float32)
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        for nv in (0, 1, 4, 4, 4, 9):
            got, got_gated = await sess.run([out, gated], {n: nv, p: nv % 2 == 0})
            np.testing.assert_array_equal(got, reading_loop_values(wv, nv))
            np.testing.assert_array_equal(
                got_gated, reading_loop_values(wv, nv) if nv % 2 == 0 else np.full(3, -7.0))
            wv = np.array([nv, 0.25, -1.0], np.float32)
            await sess.run(assign, {new_w: wv})


@pytest.mark.usefixtures("segments_mode")
async def test_an_uninitialized_variable_read_in_a_compiled_loop_fails_naming_the_read():
    g, _, n, p, out, gated = reading_loop()
    async with af.Session(graph=g) as sess:
        for _ in range(3):  # the segment's compiled attempt, then the node that fails
            with pytest.raises(errors.FailedPreconditionError, match="Could not find variable"
                               ) as e:
                await sess.run(out, {n: 3, p: False})
            assert e.value.node_def.op == "ReadVariableOp", e.value.message
            assert f"{{{{node {e.value.node_def.name}}}}}" in e.value.message
            assert "while-loop frame" in e.value.message
        # a loop that does not run reads nothing; an untaken branch's loop is dead
        await sess.run(gated, {n: 3, p: False})
        np.testing.assert_array_equal(await sess.run(out, {n: 0, p: False}), np.zeros(3))


# -- ref variables in compiled segments ----------------------------------------------------------

def ref_variable_graph():
    """Two ref variables (VariableV2), their `/read` Identities, a product and a sum of
    them with a fed matrix, and an assign of one from a placeholder (as a TF 1.x layer)."""
    g = af.Graph()
    with g.as_default():
        w = af.Variable(np.array([[1.0, -2.0], [0.5, 3.0]], np.float32), name="w",
                        use_resource=False)
        b = af.Variable(np.array([0.25, -1.0], np.float32), name="b", use_resource=False)
        x = af.placeholder(af.float32, [None, 2], name="x")
        out = af.identity(af.matmul(x, w) + b, name="out")
        new_w = af.placeholder(af.float32, [2, 2], name="new_w")
        assign = w.assign(new_w)
    return g, w, b, x, out, new_w, assign


def test_ref_variables_and_their_reads_join_a_segment():
    """A training step's 20 VariableV2 and 8 `/read` Identities were 28 executor items;
    now the lookups and the derefs run in one compiled segment."""
    g, _, _, x, out, new_w, assign = ref_variable_graph()
    # (the assign, not compilable, also takes w's ref: the lookups' segment then has
    # consumers in more than one place and is not merged into the product's)
    direct, eak = executors_for(g, [x, new_w], [out, assign.op])
    try:
        (impl,) = eak.executors
        ops = [m.op for s in impl.segments for m in s.members]
        assert ops.count("VariableV2") == 2 and ops.count("Identity") >= 2, ops
        assert not [i for i in impl.items[:impl.num_node_items]
                    if i.op == "VariableV2" and i.member_of is None]
        # the reads are barriers to their consumers: the product stays out of that segment
        assert not [s for s in impl.segments
                    if {"VariableV2", "MatMul"} <= {m.op for m in s.members}]
        _assert_segments_sound(impl)
    finally:
        direct.close()


@pytest.mark.usefixtures("segments_mode")
async def test_a_segment_reads_a_ref_variables_current_value_and_names_an_uninitialized_read():
    """An assign between runs is seen by the next run (the segment keeps no value); an
    uninitialized variable fails naming its read, as node by node."""
    g, w, b, x, out, new_w, assign = ref_variable_graph()
    xv = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    async with af.Session(graph=g) as sess:
        for _ in range(3):  # interpreted, then compiled: the same error
            with pytest.raises(errors.FailedPreconditionError,
                               match="Attempting to use uninitialized value") as e:
                await sess.run(out, {x: xv})
            assert e.value.node_def.op == "Identity", e.value.message
            assert e.value.node_def.name in ("w/read", "b/read"), e.value.message
        await sess.run([w.initializer, b.initializer])
        wv = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
        bv = np.array([0.25, -1.0], np.float32)
        for k in range(6):
            np.testing.assert_array_equal(await sess.run(out, {x: xv}), xv @ wv + bv)
            wv = np.array([[k, 1.0], [-0.5, 2.0 * k]], np.float32)
            await sess.run(assign, {new_w: wv})


async def test_reads_in_another_segment_than_their_variables_stay_compiled():
    """More variables than a segment holds: the lookups fill one segment and their reads
    another, whose entering values are refs (no `size`); it runs compiled all the same."""
    n = MAX_MEMBERS + 6
    g = af.Graph()
    with g.as_default():
        vs = [af.Variable(np.full(3, k, np.float32), name=f"v{k}", use_resource=False)
              for k in range(n)]
        total = af.add_n([v.value() for v in vs], name="total")
        init = af.global_variables_initializer()
    async with af.Session(graph=g) as sess:
        await sess.run(init)
        for _ in range(6):
            np.testing.assert_array_equal(await sess.run(total),
                                          np.full(3, n * (n - 1) / 2, np.float32))
        (eak,) = [e for e in sess._direct._executors.values() if "total:0" in e.fetches]
        (impl,) = eak.executors
        reads = [s for s in impl.segments
                 if any(m.op == "Identity" for m in s.members)
                 and not any(m.op == "VariableV2" for m in s.members)]
        assert reads, [[m.op for m in s.members] for s in impl.segments]
        assert all(s.fn is not None and s.fallbacks == 0 for s in reads), \
            [(s.fn, s.fallbacks) for s in reads]


# -- TensorArrays in compiled loops ---------------------------------------------------------------

def mapping_graphs():
    """map_fn and scan over a fed [n, 4] matrix (while loops reading and writing
    TensorArrays), and their NumPy values."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None, 4], name="x")
        mapped = af.map_fn(lambda e: af.reduce_sum(e * e + 1.0), x)
        scanned = af.scan(lambda a, e: a * 0.5 + e, x)

    def values(xv):
        acc, rows = None, []
        for row in xv:
            acc = row if acc is None else acc * np.float32(0.5) + row
            rows.append(acc)
        return [np.array([np.sum(r * r + np.float32(1.0), dtype=np.float32) for r in xv],
                         np.float32).reshape(len(xv)),
                np.array(rows, np.float32).reshape(xv.shape)]
    return g, x, [mapped, scanned], values


def test_map_fn_and_scan_loops_compile_with_their_tensor_array_ops():
    g, x, outs, _ = mapping_graphs()
    direct, eak = executors_for(g, [x], outs)
    try:
        (impl,) = eak.executors
        loops = [s for s in impl.segments if isinstance(s, LoopSegment)]
        ops = sorted(op for s in loops for op in {m.op for m in s.members}
                     if op.startswith("TensorArray"))
        assert ops == ["TensorArrayReadV3", "TensorArrayReadV3",
                       "TensorArrayWriteV3", "TensorArrayWriteV3"], ops
        _assert_segments_sound(impl)
    finally:
        direct.close()


@pytest.mark.parametrize("n", [0, 1, 7, 150])
async def test_map_fn_and_scan_give_the_same_values_in_every_mode(monkeypatch, n):
    g, x, outs, values = mapping_graphs()
    xv = np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)
    if n == 0:
        outs = outs[:1]  # (scan of no element has no initializer: TF's error)
    results = await run_in_modes(monkeypatch, g, outs, [{x: xv}] * 3)
    assert_all_modes(results, [values(xv)[:len(outs)]] * 3)


@pytest.mark.usefixtures("segments_mode")
async def test_an_error_in_a_compiled_tensor_array_loop_names_its_node_and_iteration():
    """The compiled loop has read (and cleared) elements and written results when the
    division fails at row 5: it puts both arrays back, so the loop run node by node
    fails at the same place, not on a second read of row 0."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.int32, [None], name="x")
        out = af.map_fn(lambda e: af.math.floordiv(100, e, name="div"), x)
    good = np.arange(1, 9, dtype=np.int32)
    bad = good.copy()
    bad[5] = 0
    async with af.Session(graph=g) as sess:
        for _ in range(3):
            np.testing.assert_array_equal(await sess.run(out, {x: good}), 100 // good)
        for _ in range(3):
            with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"
                               ) as e:
                await sess.run(out, {x: bad})
            assert re.search(r"\{\{node [^}]*div\}\}", e.value.message), e.value.message
            assert "iteration 5" in e.value.message, e.value.message
        np.testing.assert_array_equal(await sess.run(out, {x: good}), 100 // good)


@pytest.mark.usefixtures("segments_mode")
async def test_a_compiled_tensor_array_loop_falling_back_midway_starts_again_from_the_start():
    """Pieces of a split are read, doubled and written one per iteration; the third is
    too large to stay on the loop, so the compiled loop gives up there after two writes:
    the arrays are put back and the loop runs node by node to the same values."""
    g = af.Graph()
    with g.as_default():
        value = af.placeholder(af.float32, [None], name="value")
        lengths = af.placeholder(af.int64, [None], name="lengths")
        n = af.size(lengths)
        pieces = af.TensorArray(af.float32, size=n, infer_shape=False).split(value, lengths)
        doubled = af.TensorArray(af.float32, size=n, infer_shape=False)

        def body(i, ta):
            return i + 1, ta.write(i, pieces.read(i) * 2.0)

        _, doubled = af.while_loop(lambda i, ta: i < n, body, [af.constant(0), doubled])
        out = doubled.concat()
    small = {value: np.arange(6, dtype=np.float32), lengths: np.array([1, 2, 3])}
    large_value = np.arange(BIG + 3, dtype=np.float32)
    large = {value: large_value, lengths: np.array([1, 2, BIG])}
    async with af.Session(graph=g) as sess:
        for feed in [small] * 3 + [large] * 2 + [small]:
            np.testing.assert_array_equal(await sess.run(out, feed), feed[value] * 2.0)


# -- stacks in compiled loops: while-loop gradients ----------------------------------------------

def loop_gradient_graph():
    """The gradient of n iterations of v = tanh(v) * 1.01 (TF 1's: the forward loop
    pushes each tanh on a stack, the gradient loop pops them behind a ControlTrigger)."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        n = af.placeholder(af.int32, [], name="n")
        _, y = af.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, af.tanh(v) * 1.01),
                             [af.constant(0), x])
        (dx,) = af.gradients(af.reduce_sum(y), [x])

    def values(xv, nv):
        v, tanhs = xv, []
        for _ in range(nv):
            tanhs.append(np.tanh(v))
            v = tanhs[-1] * np.float32(1.01)
        grad = np.ones_like(xv)
        for t in reversed(tanhs):
            grad = grad * np.float32(1.01) * (1 - t * t)
        return [v, grad]
    return g, x, n, [y, dx], values


def test_a_while_loop_gradient_compiles_its_forward_and_gradient_loops():
    g, x, n, outs, _ = loop_gradient_graph()
    direct, eak = executors_for(g, [x, n], outs)
    try:
        (impl,) = eak.executors
        loops = [{m.op for m in s.members} for s in impl.segments
                 if isinstance(s, LoopSegment)]
        assert len(loops) == 2, loops
        forward, backward = sorted(loops, key=lambda ops: "StackPopV2" in ops)
        assert "StackPushV2" in forward and "StackPopV2" not in forward
        assert {"StackPopV2", "ControlTrigger", "TanhGrad"} <= backward
        _assert_segments_sound(impl)
    finally:
        direct.close()


@pytest.mark.parametrize("nv", [0, 1, 7, 150])
async def test_loop_gradients_give_the_same_values_in_every_mode(monkeypatch, nv):
    g, x, n, outs, values = loop_gradient_graph()
    xv = np.linspace(-2, 2, 5, dtype=np.float32)
    results = await run_in_modes(monkeypatch, g, outs, [{x: xv, n: nv}] * 3)
    for runs in results.values():
        for got in runs:
            for a, b in zip(got, values(xv, nv), strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert_all_modes(results, [results["off"][0]] * 3)


def nested_loop_gradient_graph():
    """Five outer iterations of four inner ones, v = tanh(v) * 1.01 + j / 100, and its
    gradient: the inner loops (forward pushing, gradient popping, one stack shared by
    every inner instance) compile; the outer ones, holding a loop, do not."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")

        def outer(j, v):
            _, w = af.while_loop(
                lambda i, u: i < 4,
                lambda i, u: (i + 1, af.tanh(u) * 1.01 + af.cast(j, af.float32) * 0.01),
                [af.constant(0), v])
            return j + 1, w

        _, y = af.while_loop(lambda j, v: j < 5, outer, [af.constant(0), x])
        (dx,) = af.gradients(af.reduce_sum(y), [x])

    def values(xv):
        v, tanhs = xv.astype(np.float64), []
        for j in range(5):
            for _ in range(4):
                tanhs.append(np.tanh(v))
                v = tanhs[-1] * 1.01 + j * 0.01
        grad = np.ones_like(v)
        for t in reversed(tanhs):
            grad = grad * 1.01 * (1 - t * t)
        return [v, grad]
    return g, x, [y, dx], values


async def test_nested_loop_gradients_compile_their_inner_loops(monkeypatch):
    g, x, outs, values = nested_loop_gradient_graph()
    direct, eak = executors_for(g, [x], outs)
    try:
        (impl,) = eak.executors
        stacks = sorted(tuple(sorted({m.op for m in s.members} & {"StackPushV2", "StackPopV2"}))
                        for s in impl.segments if isinstance(s, LoopSegment))
        assert stacks == [("StackPopV2",), ("StackPushV2",)], stacks
    finally:
        direct.close()
    xv = np.linspace(-1, 1, 7, dtype=np.float32)
    results = await run_in_modes(monkeypatch, g, outs, [{x: xv}] * 3)
    for got, want in zip(results["off"][0], values(xv), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4)
    assert_all_modes(results, [results["off"][0]] * 3)


def pieces_gradient_graph():
    """Pieces of a split read one per iteration (of unknown shapes), summed as
    sum(tanh(piece) * w): the gradient loop pops each tanh and the shapes that
    reduce_sum's and Mul's gradients need; and the NumPy values of the sum and d/dw."""
    g = af.Graph()
    with g.as_default():
        value = af.placeholder(af.float32, [None], name="value")
        lengths = af.placeholder(af.int64, [None], name="lengths")
        w = af.placeholder(af.float32, [], name="w")
        pieces = af.TensorArray(af.float32, size=af.size(lengths),
                                infer_shape=False).split(value, lengths)

        def body(i, acc):
            return i + 1, acc + af.reduce_sum(af.tanh(pieces.read(i)) * w)

        _, total = af.while_loop(lambda i, acc: i < af.size(lengths), body,
                                 [af.constant(0), af.constant(0.0)])
        grads = af.gradients(total, [w])

    def values(feed):
        t = np.tanh(feed[value])
        return [np.sum(t * feed[w]), np.sum(t)]
    return g, value, lengths, w, [total, *grads], values


async def test_a_compiled_gradient_loop_falling_back_midway_puts_its_stacks_back(
        monkeypatch, segments_mode):
    """The third piece is too large to stay on the loop: the forward loop gives up there
    after two pushes, the gradient loop after popping the fourth piece's tanh. Each puts
    its stack back (restored checkpoints saw those pops), so the loops run node by node
    to the same values: without the restore the gradient loop would pop the wrong
    tanhs, or find its stack empty."""
    restored = []
    real_restore = Stack.restore

    def restore(self, token):
        restored.append((len(self.values), token.floor, len(token.popped)))
        real_restore(self, token)

    monkeypatch.setattr(Stack, "restore", restore)
    g, value, lengths, w, outs, values = pieces_gradient_graph()
    rng = np.random.default_rng(0)
    small = {value: rng.standard_normal(9).astype(np.float32), lengths: np.array([1, 2, 3, 3]),
             w: np.float32(0.5)}
    large = {value: rng.standard_normal(BIG + 6).astype(np.float32),
             lengths: np.array([1, 2, BIG, 3]), w: np.float32(-1.5)}
    async with af.Session(graph=g) as sess:
        for feed in [small] * 3 + [large] * 2 + [small]:
            got = await sess.run(outs, feed)
            for a, b in zip(got, values(feed), strict=True):
                np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-5)
    if segments_mode == "segments":
        assert any(popped for _, _, popped in restored), restored  # the gradient loop's
        assert any(length > floor for length, floor, _ in restored), restored  # forward's
    else:
        assert not restored


# -- loop invariants run once, before a compiled loop ----------------------------------------------

def invariant_loop():
    """v + 100 // d per iteration: 100 // d reads only a loop invariant (d) and a
    constant."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.int32, [3], name="x")
        d = af.placeholder(af.int32, [], name="d")
        n = af.placeholder(af.int32, [], name="n")
        _, out = af.while_loop(
            lambda i, v: i < n, lambda i, v: (i + 1, v + af.math.floordiv(100, d, name="div")),
            [af.constant(0), x])
    return g, x, d, n, out


def test_a_compiled_loop_computes_its_invariants_before_the_loop():
    g, x, d, n, out = invariant_loop()
    direct, eak = executors_for(g, [x, d, n], [out])
    try:
        (impl,) = eak.executors
        (loop,) = [s for s in impl.segments if isinstance(s, LoopSegment)]
        (div,) = [m for m in loop.members if m.op == "FloorDiv"]
        source, _ = loop.generate()
        assert source.index(f"v{div.id} = ") < source.index("while True"), source
        (add,) = [m for m in loop.members if m.name.endswith("while/add_1")]  # v + ...
        assert source.index(f"v{add.id} = ") > source.index("while True"), source
    finally:
        direct.close()


@pytest.mark.usefixtures("segments_mode")
async def test_a_failing_invariant_fails_only_a_loop_that_runs_it():
    """Run before the loop, 100 // 0 raises in a loop of no iteration too: the loop then
    runs node by node, where (as in TF) the division never runs; a loop that runs it
    fails naming the node in its first iteration."""
    g, x, d, n, out = invariant_loop()
    xv = np.array([1, 2, 3], np.int32)
    async with af.Session(graph=g) as sess:
        for _ in range(3):
            np.testing.assert_array_equal(await sess.run(out, {x: xv, d: 0, n: 0}), xv)
            np.testing.assert_array_equal(await sess.run(out, {x: xv, d: 7, n: 4}),
                                          xv + 4 * (100 // 7))
            with pytest.raises(errors.InvalidArgumentError, match="Integer division by zero"
                               ) as e:
                await sess.run(out, {x: xv, d: 0, n: 2})
            assert re.search(r"\{\{node [^}]*div\}\}", e.value.message), e.value.message
            assert "iteration 0" in e.value.message, e.value.message


# -- a loop of products holds one BLAS section a slice ------------------------------------------

class _CountingBlas:
    """Stands for OpenBLAS's thread count (intra_op_threads.BlasThreads): 2 outside the
    sections; counts the calls that set it."""

    def __init__(self):
        self.count, self.sets = 2, 0

    def get(self) -> int:
        return self.count

    def set(self, n: int) -> None:
        self.count = n
        self.sets += 1


@pytest.mark.usefixtures("segments_mode")
@pytest.mark.usefixtures("numpy_products")  # OpenBLAS's products, not oneDNN's GEMM
async def test_a_compiled_loop_of_products_sets_blass_threads_once_a_slice(
        monkeypatch, segments_mode):
    """v = tanh(v @ w), 50 iterations of products large enough for OpenBLAS to thread:
    each runs BLAS single-threaded. Node by node every product sets the count and puts
    it back (100 calls); a compiled loop's slice does it once for all of them."""
    blas = _CountingBlas()
    monkeypatch.setattr(intra_op_threads, "_blas", blas)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [32, 96], name="x")
        w = af.constant(np.random.default_rng(0).standard_normal((96, 96)).astype(np.float32)
                        * np.float32(0.1))
        _, y = af.while_loop(lambda i, v: i < 50, lambda i, v: (i + 1, af.tanh(af.matmul(v, w))),
                             [af.constant(0), x])
    xv = np.ones((32, 96), np.float32)
    async with af.Session(graph=g) as sess:
        first = await sess.run(y, {x: xv})
        blas.sets = 0
        assert_identical(await sess.run(y, {x: xv}), first)
    assert blas.count == 2
    if segments_mode == "segments":
        assert 2 <= blas.sets <= 10, blas.sets
    else:
        assert blas.sets == 100


# -- a step that is one compiled segment ---------------------------------------------------------

def one_segment_graph():
    """x / y * 2 + 1 (fed [None] vectors) with a variable read: one segment, the whole
    step; the same beside a py_func (not compilable): not the whole step."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        y = af.placeholder(af.float32, [None], name="y")
        w = af.Variable(3.0, name="w", use_resource=True)
        out = af.add(af.truediv(x, y) * 2.0, w.read_value(), name="out")
        beside = out + af.py_func(lambda: np.float32(1), [], af.float32)
    return g, x, y, w, out, beside


def test_a_step_that_is_one_segment_is_known_at_build():
    g, x, y, _, out, beside = one_segment_graph()
    for fetch, whole in ((out, True), (beside, False)):
        direct, eak = executors_for(g, [x, y], [fetch])
        try:
            (impl,) = eak.executors
            assert (impl.whole_segment is not None) == whole
            assert (eak.whole is not None) == whole
        finally:
            direct.close()


async def test_a_step_that_is_one_segment_runs_as_one_call_with_the_same_results():
    """Once compiled, its runs start no executor state; a run failing in it, a large
    input and a traced run go through the executor (the error names the node, the
    step stats list every node) and give the same results as before."""
    g, x, y, w, out, _ = one_segment_graph()
    started = []
    feed = {x: np.array([1.0, -2.0], np.float32), y: np.array([0.0, 4.0], np.float32)}
    want = np.array([np.inf, 2.0], np.float32)  # 1/0: inf, no warning (TF's semantics)
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized|not find"):
            await sess.run(out, feed)
        await sess.run(w.initializer)
        with observe_steps(started.append):
            for _ in range(5):
                np.testing.assert_array_equal(await sess.run(out, feed), want)
            assert 0 < len(started) < 5  # compiled after a few runs node by node
            started.clear()
            np.testing.assert_array_equal(await sess.run(out, feed), want)
            assert not started
            with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes") as e:
                await sess.run(out, {x: np.ones(2, np.float32), y: np.ones(3, np.float32)})
            assert e.value.node_def.name.startswith("truediv"), e.value.message
            large = {x: np.ones(BIG, np.float32), y: np.full(BIG, 4.0, np.float32)}
            np.testing.assert_array_equal(await sess.run(out, large), np.full(BIG, 3.5))
            md = af.RunMetadata()
            await sess.run(out, feed, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE),
                           run_metadata=md)
            names = {ns.node_name for dev in md.step_stats.dev_stats for ns in dev.node_stats}
            assert {"out", "truediv", "mul"} <= names, names
            assert len(started) == 3
            started.clear()
            np.testing.assert_array_equal(await sess.run(out, feed), want)
            assert not started


def test_a_blocking_session_runs_a_one_segment_step_on_the_callers_thread():
    """Once compiled, SyncSession runs such a step here (no step starts on its loop), to
    the same values; an error, a fed fetch and a traced run go through the loop (an
    error and a traced run through its executor)."""
    g, x, y, w, out, _ = one_segment_graph()
    started = []
    feed = {x: np.array([1.0, -2.0], np.float32), y: np.array([0.0, 4.0], np.float32)}
    want = np.array([np.inf, 2.0], np.float32)
    with af.SyncSession(graph=g) as sess:
        sess.run(w.initializer)
        with observe_steps(started.append):
            for _ in range(5):
                np.testing.assert_array_equal(sess.run(out, feed), want)
            started.clear()
            got = sess.run({"out": out, "again": [out]}, feed)
            np.testing.assert_array_equal(got["out"], want)
            np.testing.assert_array_equal(got["again"][0], want)
            assert not started
            with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes") as e:
                sess.run(out, {x: np.ones(2, np.float32), y: np.ones(3, np.float32)})
            assert e.value.node_def.name.startswith("truediv"), e.value.message
            np.testing.assert_array_equal(sess.run([out, x], feed)[1], feed[x])  # fed fetch
            sess.run(out, feed, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE),
                     run_metadata=af.RunMetadata())
            assert len(started) == 2  # (the loop runs the fed fetch's step as one call)
            call = sess.make_callable(out, [y, x])
            np.testing.assert_array_equal(call(feed[y], feed[x]), want)
            assert len(started) == 2
            with pytest.raises(errors.InvalidArgumentError, match="Incompatible shapes"):
                call(np.ones(3, np.float32), np.ones(2, np.float32))
            assert len(started) == 3
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(out, feed)


# -- runs sinking into the run that consumes them ------------------------------------------------

def sinking_graph(shared: bool):
    """(x * 2 + 1) + p, p from a py_func (not compilable): the multiply-add waits for x
    only, the last add for p too; the multiply-add feeds nothing but that add, or (shared)
    a second py_func too."""
    pv = np.array([12.0, 0.0, -3.0], np.float32)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [3], name="x")
        p = af.py_func(lambda: pv, [], af.float32, name="p")
        p.set_shape([3])
        inner = af.add(x * 2.0, 1.0, name="inner")
        out = af.add(inner, p, name="out")
        fetches = [out, af.py_func(lambda v: v - 1, [inner], af.float32)] if shared else [out]
    feeds = {x: np.array([1.0, -2.0, 0.5], np.float32)}
    want_inner = feeds[x] * np.float32(2) + np.float32(1)
    expected = [want_inner + pv] + ([want_inner - 1] if shared else [])
    return g, [x], fetches, feeds, expected


@pytest.mark.parametrize("shared", [False, True])
async def test_a_run_feeding_only_a_later_run_joins_it(monkeypatch, shared):
    """The multiply-add joins the last add's segment (it holds back nothing: only that
    add consumes it), unless a kernel outside consumes it too (which would then wait for
    p)."""
    g, feed_list, fetches, feeds, expected = sinking_graph(shared)
    direct, eak = executors_for(g, feed_list, fetches)
    try:
        (impl,) = eak.executors
        _assert_segments_sound(impl)
        owner = {m.name: s.item.name for s in impl.segments for m in s.members}
        assert "inner" in owner and "mul" in owner
        if shared:
            assert owner.get("out") != owner["inner"]
        else:
            assert owner.get("out") == owner["inner"] == owner["mul"]
    finally:
        direct.close()
    results = await run_in_modes(monkeypatch, g, fetches, [feeds] * 4)
    assert_all_modes(results, [expected] * 4)


def test_sinking_refuses_a_merge_that_a_path_would_leave_and_reenter():
    """Run A (node 2) feeds only run B (nodes 0 and 3), but B's node 0 reaches A through
    node 1: as one step, B would wait for A and A for B."""
    from aioflow.runtime.segments import _sink

    succ = [[1], [2], [3], []]
    chunks = [([0, 3], ("f", 1, frozenset({9}))), ([2], ("f", 0, frozenset()))]
    assert sorted(map(sorted, _sink(chunks, [0, 1, 2, 3], succ, frozenset()))) == [[0, 3], [2]]
    succ[0] = [3]  # no path from B to A: A joins B
    assert _sink(chunks, [0, 1, 2, 3], succ, frozenset()) == [[0, 2, 3]]
    # ... unless B's late input 9 is an async kernel (it may never deliver)
    assert sorted(map(sorted, _sink(chunks, [0, 1, 2, 3], succ, frozenset({9})))) == [[0, 3], [2]]


@pytest.mark.parametrize("segments", ["1", "eager"])
async def test_an_error_is_not_held_back_behind_a_dequeue(monkeypatch, segments):
    """A failing Reshape's run feeds only the run that also waits for an empty queue's
    dequeue: joined into that run, its error waited for the dequeue (the step hung until
    its deadline); TF 2.21 fails the step at once with the Reshape's error."""
    monkeypatch.setenv("AIOFLOW_SEGMENTS", segments)
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [None], name="x")
        q = af.FIFOQueue(3, [af.float32], shapes=[[3]])
        d = q.dequeue()
        a = af.reshape(x * 2.0, [3], name="bad_reshape")
        b = af.sqrt(a + 1.0) + d
    async with af.Session(graph=g) as sess:
        options = af.RunOptions(timeout_in_ms=20_000)
        with pytest.raises(errors.InvalidArgumentError, match="bad_reshape"):
            await sess.run(b, {x: np.ones(4, np.float32)}, options=options)
