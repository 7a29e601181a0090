"""Pool jobs that run their node's chain of ready successors (executor_state.py), as TF's
executor runs a ready expensive successor on the thread that finished its input; and
calls a kernel would run inline that go to a free pool thread when the loop has other
work (`OpKernel.worth_a_thread`): other runs wait for it, or the run has another such
call ready (parallel branches, as an Inception block's)."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework import intra_op_threads as intra_op_threads_mod
from aioflow.framework.intra_op_threads import cores_shared, sharing_jobs
from aioflow.framework.op_kernel import OpKernel
from aioflow.kernels.nn.conv_kernels import intra_op_threads
from aioflow.kernels.onednn import backend
from aioflow.runtime import executor as executor_mod
from aioflow.runtime import executor_state, loop_runner
from aioflow.runtime.loop_runner import LoopRunner

_ran: list = []  # (kernel name, thread ident, cores shared) of every call, in order
_release = threading.Event()
_blocked = threading.Event()


class _PoolStep(OpKernel):
    """x + 1 on the pool."""

    expensive = True

    def compute(self, ctx, inputs):
        _ran.append((self.name, threading.get_ident(), cores_shared()))
        return [inputs[0] + 1]


class _PoolFails(OpKernel):
    expensive = True

    def compute(self, ctx, inputs):
        _ran.append((self.name, threading.get_ident(), cores_shared()))
        raise ValueError("this input is not welcome")


class _PoolBlocks(OpKernel):
    """x + 1 on the pool, once the test releases it."""

    expensive = True

    def compute(self, ctx, inputs):
        _ran.append((self.name, threading.get_ident(), cores_shared()))
        _blocked.set()
        _release.wait(30)
        return [inputs[0] + 1]


class _WorthAThread(OpKernel):
    """x + 1, inline by its own rule, but worth a thread when the loop is busy; records
    (name, thread, whether a shared job is in flight)."""

    expensive = None
    learns_cost = False

    def is_expensive(self, inputs):
        return False

    def worth_a_thread(self, inputs):
        return True

    def compute(self, ctx, inputs):
        _ran.append((self.name, threading.get_ident(), sharing_jobs() > 0))
        return [inputs[0] + 1]


class _Branch(OpKernel):
    """x + 1, worth a thread, recording (name, thread, the team a primitive of any size
    would get now). A call on a pool thread waits until the loop thread has made
    `_Branch.inline` calls, and those wait until a pool call has begun (when
    `_Branch.pooled`), so that the pool's calls are in flight while the loop's run (the
    loop busy: it lends its core only once it is idle)."""

    expensive = None
    learns_cost = False
    inline = 0
    pooled = 0
    loop_thread = None
    inline_done = threading.Event()
    pool_began = threading.Event()

    def is_expensive(self, inputs):
        return False

    def worth_a_thread(self, inputs):
        return True

    def compute(self, ctx, inputs):
        tid = threading.get_ident()
        _ran.append((self.name, tid, backend.team_size(1 << 30)))
        if tid == _Branch.loop_thread:
            if _Branch.pooled:
                assert _Branch.pool_began.wait(30)
            if sum(t == tid for _, t, _ in _ran) == _Branch.inline:
                _Branch.inline_done.set()
        else:
            _Branch.pool_began.set()
            assert _Branch.inline_done.wait(30)
        return [inputs[0] + 1]


class _Lender(OpKernel):
    """x + 1, worth a thread, recording (name, thread, the team a primitive of any size
    would get now); the call named "c0" first waits until the loop's runner has lent
    its core (`_Lender.lent`, set by the test's wrapper of loop_runner.lend_core)."""

    expensive = None
    learns_cost = False
    lent = threading.Event()

    def is_expensive(self, inputs):
        return False

    def worth_a_thread(self, inputs):
        return True

    def compute(self, ctx, inputs):
        if self.name == "c0":
            assert _Lender.lent.wait(30)
        _ran.append((self.name, threading.get_ident(), backend.team_size(1 << 30)))
        return [inputs[0] + 1]


def _expect_branches(inline: int, pooled: int) -> None:
    """Arm `_Branch` for a run of `inline` calls on the loop thread, `pooled` on the pool."""
    _Branch.loop_thread = threading.get_ident()
    _Branch.inline, _Branch.pooled = inline, pooled
    _Branch.inline_done.clear()
    _Branch.pool_began.clear()


@pytest.fixture(name="ops")
def ops_fixture(user_op):
    _ran.clear()
    _release.clear()
    _blocked.clear()
    return {name: user_op(name, kernel) for name, kernel in (
        ("ChainTestPoolStep", _PoolStep), ("ChainTestPoolFails", _PoolFails),
        ("ChainTestPoolBlocks", _PoolBlocks), ("ChainTestWorthAThread", _WorthAThread),
        ("ChainTestBranch", _Branch), ("ChainTestLender", _Lender))}


@pytest.fixture(name="completions")
def completions_fixture(monkeypatch):
    """The completions pool threads hand back to the loop, counted."""
    count = [0]
    post = LoopRunner.post_completion

    def counted(self, *args):
        count[0] += 1
        post(self, *args)

    monkeypatch.setattr(LoopRunner, "post_completion", counted)
    return count


def _x():
    return af.placeholder(af.float32, [4], name="x")


FEED = np.arange(4, dtype=np.float32)


async def test_a_pool_thread_runs_the_chain_of_successors_it_alone_holds_back(ops, completions):
    g = af.Graph()
    with g.as_default():
        x = _x()
        step = ops["ChainTestPoolStep"]
        y = step(x=step(x=step(x=x, name="a"), name="b"), name="c")
    async with af.Session(graph=g) as sess:
        value = await sess.run(y, {x: FEED})
    np.testing.assert_array_equal(value, FEED + 3)
    assert [name for name, _, _ in _ran] == ["a", "b", "c"]
    threads = {tid for _, tid, _ in _ran}
    assert len(threads) == 1 and threading.get_ident() not in threads  # one pool thread
    assert completions[0] == 1  # no round trip through the loop between them


async def test_a_node_whose_output_goes_elsewhere_too_ends_the_chain(ops, completions):
    g = af.Graph()
    with g.as_default():
        x = _x()
        step = ops["ChainTestPoolStep"]
        a = step(x=x, name="a")
        b = step(x=step(x=a, name="b"), name="b2")
        d = af.negative(a, name="d")  # a's output is read here too: propagated by the loop
    async with af.Session(graph=g) as sess:
        vb, vd = await sess.run([b, d], {x: FEED})
    np.testing.assert_array_equal(vb, FEED + 3)
    np.testing.assert_array_equal(vd, -(FEED + 1))
    assert completions[0] == 2  # a alone, then b with b2 chained


async def test_a_successor_waiting_for_another_input_is_not_chained(ops, completions):
    g = af.Graph()
    with g.as_default():
        x = _x()
        step = ops["ChainTestPoolStep"]
        a = step(x=x, name="a")
        late = step(x=x, name="late")
        y = af.add(a, late, name="sum")  # inline: never chained either
        z = step(x=y, name="z")
    async with af.Session(graph=g) as sess:
        value = await sess.run(z, {x: FEED})
    np.testing.assert_array_equal(value, 2 * FEED + 3)
    assert completions[0] == 3


async def test_a_cheap_python_successor_is_not_chained(ops, completions):
    """Only heavy successors (always on the pool, or worth a thread: work that lets go
    of the GIL) join a chain: cheap Python kernels on a pool thread would hold the GIL
    against the loop."""
    g = af.Graph()
    with g.as_default():
        x = _x()
        step = ops["ChainTestPoolStep"]
        y = step(x=af.negative(step(x=x, name="a"), name="neg"), name="c")
    async with af.Session(graph=g) as sess:
        np.testing.assert_array_equal(await sess.run(y, {x: FEED}), -(FEED + 1) + 1)
    assert completions[0] == 2


async def test_an_error_in_a_chained_successor_names_that_node(ops, completions):
    g = af.Graph()
    with g.as_default():
        x = _x()
        y = ops["ChainTestPoolFails"](x=ops["ChainTestPoolStep"](x=x, name="a"), name="b")
    async with af.Session(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError, match=r"this input is not welcome"
                           r"(.|\n)*\{\{node b\}\}") as info:
            await sess.run(y, {x: FEED})
        assert info.value.node_def.name == "b"
        assert [name for name, _, _ in _ran] == ["a", "b"]
        assert _ran[0][1] == _ran[1][1] != threading.get_ident()  # b ran on a's thread
        assert completions[0] == 1
        _ran.clear()
        np.testing.assert_array_equal(await sess.run("a:0", {x: FEED}), FEED + 1)  # usable


async def test_cancelling_a_step_stops_its_chain_before_the_next_node(ops):
    g = af.Graph()
    with g.as_default():
        x = _x()
        y = ops["ChainTestPoolStep"](x=ops["ChainTestPoolBlocks"](x=x, name="a"), name="b")
    states = []
    async with af.Session(graph=g) as sess:
        with executor_mod.observe_steps(states.extend):
            task = asyncio.ensure_future(sess.run(y, {x: FEED}))
            assert await asyncio.to_thread(_blocked.wait, 30)  # a runs, b is chained
            task.cancel()
            while states[0].error is None:  # the step aborts on the loop
                await asyncio.sleep(0)
            _release.set()  # a returns: the chain must end there
            with pytest.raises(asyncio.CancelledError):
                await task
        assert [name for name, _, _ in _ran] == ["a"]
        assert states[0].in_flight == 0
        _release.set()
        np.testing.assert_array_equal(await sess.run(y, {x: FEED}), FEED + 2)


async def test_a_call_worth_a_thread_goes_to_the_pool_only_while_other_runs_wait(ops):
    """Alone (nothing else worth a thread for the loop: a cheap branch is no reason)
    the call runs inline; while another run waits for
    the loop it goes to a pool thread as a shared job (primitives split no work while
    the loop has work too: cores_shared)."""
    g = af.Graph()
    with g.as_default():
        x = _x()
        y = x
        for i in range(40):  # (node by node, a tiny budget: runs take turns every 32)
            y = af.negative(y, name=f"n{i}")
        worth = ops["ChainTestWorthAThread"](x=y, name="worth")
        other = af.negative(x, name="other")  # a branch of its own: not a reason
    async with af.Session(graph=g, compile_segments=False, time_budget_ms=0.001) as sess:
        vw, vo = await sess.run([worth, other], {x: FEED})
        np.testing.assert_array_equal(vw, FEED + 1)
        np.testing.assert_array_equal(vo, -FEED)
        assert _ran == [("worth", threading.get_ident(), False)]  # alone: inline
        _ran.clear()
        # (its executor built before the two runs: neither starts late behind a build)
        np.testing.assert_array_equal(await sess.run(worth, {x: FEED}), FEED + 1)
        assert _ran == [("worth", threading.get_ident(), False)]
        _ran.clear()
        both = await asyncio.gather(sess.run(worth, {x: FEED}), sess.run(worth, {x: FEED}))
    for value in both:
        np.testing.assert_array_equal(value, FEED + 1)
    # The first run reaches `worth` while the second waits for its next turn: a pool
    # thread, cores shared (the second's call may come first, or go to the pool too).
    assert len(_ran) == 2
    assert any(tid != threading.get_ident() and shared for _, tid, shared in _ran)
    assert sharing_jobs() == 0  # ended before its outputs came back


@pytest.mark.parametrize("branches", [2, 3])
async def test_a_runs_ready_branches_worth_a_thread_go_to_the_pool_but_one(ops, branches):
    """Branches of one run ready together, each worth a thread: the first ones go to pool
    threads (at most BRANCH_JOBS, a core each beside the loop's), the last runs inline,
    and while a hand-off is in flight every primitive gets a team of one thread."""
    g = af.Graph()
    with g.as_default():
        x = _x()
        outs = [ops["ChainTestBranch"](x=x, name=f"b{i}") for i in range(branches)]
    pooled = min(executor_state.BRANCH_JOBS, branches - 1)
    _expect_branches(branches - pooled, pooled)
    async with af.Session(graph=g) as sess:
        values = await sess.run(outs, {x: FEED})
    for value in values:
        np.testing.assert_array_equal(value, FEED + 1)
    loop = threading.get_ident()
    on_pool = sorted(name for name, tid, _ in _ran if tid != loop)
    assert on_pool == [f"b{i}" for i in range(pooled)]  # the first ready ones (FIFO)
    assert len(_ran) == branches
    if pooled:
        assert {team for _, _, team in _ran} == {1}
    assert sharing_jobs() == 0


async def test_a_lone_call_worth_a_thread_beside_cheap_work_stays_inline(ops):
    """A single ready branch worth a thread (its sibling is cheap) runs inline with a
    whole team: a round trip through the pool would cost more than it gains."""
    g = af.Graph()
    with g.as_default():
        x = _x()
        one = ops["ChainTestBranch"](x=x, name="b0")
        cheap = af.negative(x, name="cheap")
    _expect_branches(1, 0)
    async with af.Session(graph=g) as sess:
        v1, v2 = await sess.run([one, cheap], {x: FEED})
    np.testing.assert_array_equal(v1, FEED + 1)
    np.testing.assert_array_equal(v2, -FEED)
    assert _ran == [("b0", threading.get_ident(), backend.team_size(1 << 30))]
    assert not backend.cores_shared()


def _threads_of(ran) -> dict:
    return {name: tid for name, tid, _ in ran}


@pytest.mark.skipif(executor_state.BRANCH_JOBS < 1, reason="one core: no branch jobs")
async def test_the_pool_thread_takes_the_ready_branch_with_the_longest_chain(ops):
    """Of a run's ready branches worth a thread, the head of the longest chain goes to
    the pool (its chain with it), not the first ready one: the loop runs the short
    branches meanwhile (an Inception block's 1x1 convolution, its pooling branch) while
    the pool thread runs the five convolutions of its longest one."""
    g = af.Graph()
    with g.as_default():
        x = _x()
        short = ops["ChainTestWorthAThread"](x=x, name="s0")  # first ready
        y = x
        for i in range(3):
            y = ops["ChainTestWorthAThread"](x=y, name=f"l{i}")
    async with af.Session(graph=g) as sess:
        vs, vl = await sess.run([short, y], {x: FEED})
    np.testing.assert_array_equal(vs, FEED + 1)
    np.testing.assert_array_equal(vl, FEED + 3)
    threads = _threads_of(_ran)
    loop = threading.get_ident()
    assert threads["s0"] == loop
    assert threads["l0"] != loop
    assert threads["l0"] == threads["l1"] == threads["l2"]  # one job: the chain
    assert sharing_jobs() == 0


async def test_a_lone_concat_runs_inline_and_beside_a_ready_branch_on_the_pool(ops):
    """A ConcatV2 of more than BIG elements runs inline when it is the run's only ready
    work (a pool round trip cost an Inception block's Concat more than its copy), goes to
    a pool thread beside another ready branch worth a thread, and above CONCAT_INLINE
    always (it would hold the loop too long)."""
    from aioflow.kernels.array.array_kernels import BIG, CONCAT_INLINE

    g = af.Graph()
    with g.as_default():
        mid = af.placeholder(af.float32, [None], name="mid")
        big = af.placeholder(af.float32, [None], name="big")
        lone = af.concat([mid, mid], 0, name="lone")
        beside = af.concat([mid, mid], 0, name="beside")  # (created first: ready first)
        ops["ChainTestWorthAThread"](x=mid, name="branch")
        huge = af.concat([big, big], 0, name="huge")
    mid_value = np.ones(BIG // 2 + 1, np.float32)
    big_value = np.ones(CONCAT_INLINE // 2 + 1, np.float32)

    async def thread_of(fetch, name):
        md = af.RunMetadata()
        await sess.run(fetch, {mid: mid_value, big: big_value},
                       options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE),
                       run_metadata=md)
        return [ns.thread_id for dev in md.step_stats.dev_stats for ns in dev.node_stats
                if ns.node_name == name][0]

    loop = threading.get_native_id() & 0xFFFFFFFF
    async with af.Session(graph=g) as sess:
        assert await thread_of(lone, "lone") == loop
        assert await thread_of([beside, g.get_operation_by_name("branch")], "beside") != loop
        assert await thread_of(huge, "huge") != loop
        np.testing.assert_array_equal(await sess.run(lone, {mid: mid_value}),
                                      np.ones(2 * mid_value.size, np.float32))
    assert sharing_jobs() == 0


@pytest.mark.skipif(executor_state.BRANCH_JOBS < 1, reason="one core: no branch jobs")
async def test_an_idle_loop_lends_its_core_to_the_pool_threads_chain(ops, monkeypatch):
    """The loop runs its short branch and goes idle while the pool thread's chain is in
    flight: the chain's next primitives get the whole team (the loop's core is lent),
    not one thread; the loop takes its core back when the job's outputs come back."""
    lend = loop_runner.lend_core

    def lend_and_tell():
        lent = lend()
        if lent:
            _Lender.lent.set()
        return lent

    monkeypatch.setattr(loop_runner, "lend_core", lend_and_tell)
    _Lender.lent.clear()
    g = af.Graph()
    with g.as_default():
        x = _x()
        short = ops["ChainTestWorthAThread"](x=x, name="s0")
        c0 = ops["ChainTestLender"](x=x, name="c0")
        c1 = ops["ChainTestLender"](x=c0, name="c1")
    async with af.Session(graph=g) as sess:
        vs, v1 = await sess.run([short, c1], {x: FEED})
    np.testing.assert_array_equal(vs, FEED + 1)
    np.testing.assert_array_equal(v1, FEED + 2)
    loop = threading.get_ident()
    teams = {name: (tid, team) for name, tid, team in _ran if name in ("c0", "c1")}
    assert teams["c0"][0] == teams["c1"][0] != loop
    assert teams["c1"][1] == intra_op_threads() > 1  # the loop's core was lent
    assert sharing_jobs() == 0 and not cores_shared()


def test_a_lent_core_counts_only_while_the_branch_jobs_it_was_lent_to_run():
    """cores_shared: a shared job in flight needs a core unless an idle loop lent its
    own, which it does only while every such job runs a run's own branch (a job for runs
    waiting for the loop: the loop has work again at once, and the job's team would
    oversubscribe: 32 MobileNetV2 runs in flight lost 3% with it); lending without a job
    lends nothing; the last job's end takes back every lent core (a loop that lends and
    never comes back leaves nothing behind)."""
    mod = intra_op_threads_mod
    assert not cores_shared()
    assert not mod.lend_core()
    mod.begin_sharing(branch=True)
    try:
        assert cores_shared()
        assert mod.lend_core()
        assert not cores_shared()
        mod.reclaim_core()
        assert cores_shared()
        assert mod.lend_core()
        mod.begin_sharing()  # a job for runs waiting for the loop, meanwhile
        try:
            assert cores_shared()
            assert not mod.lend_core()
        finally:
            mod.end_sharing()
    finally:
        mod.end_sharing(branch=True)
    mod.reclaim_core()  # (after the job: nothing left to give back)
    mod.begin_sharing(branch=True)
    try:
        assert cores_shared()  # the core lent to the ended job is not lent to this one
    finally:
        mod.end_sharing(branch=True)
    assert not cores_shared() and sharing_jobs() == 0
