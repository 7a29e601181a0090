"""The executor's one process loop (runtime/process_loop.py), generated per propagator,
and the runner that calls it (runtime/loop_runner.py).

Cross-device loops handing values to each other through the runner, not nested in
each other's `process`, are tested in tests/test_loop_partition.py.
"""

from __future__ import annotations

import asyncio
import dis
import traceback
import weakref
from collections import deque

import numpy as np
import pytest

import aioflow as af
from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel
from aioflow.runtime.executor import observe_steps
from aioflow.runtime.executor_state import SimpleExecutorState
from aioflow.runtime.frame_state import ControlFlowExecutorState
from aioflow.runtime.loop_runner import LoopRunner


def _names_used(fn) -> set:
    """The global and attribute names the function's bytecode actually loads."""
    return {i.argval for i in dis.get_instructions(fn)
            if i.opname in ("LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD")}


def test_each_propagator_pays_nothing_for_what_only_the_other_needs():
    """The simple propagator's loop has no deadness and no transfer branch (its
    fragments are the constant False, compiled away); the control-flow one has both."""
    simple = _names_used(SimpleExecutorState.process)
    frames = _names_used(ControlFlowExecutorState.process)
    only_frames = {"send_dead", "FRAMED", "transfer", "frame_prefix", "outstanding_ops"}
    assert not simple & only_frames
    assert only_frames <= frames
    assert {"out_data", "out_control"} <= simple - frames  # written out flat
    # Both run the same loop: segments, forwarding, offload, completions, compiled
    # loops that yielded, the clock once per 32 nodes, the error naming its node.
    shared = {"SEGMENT", "FORWARD", "INLINE", "offload", "expand", "fell_back", "resume",
              "forwarded", "CHECK_EVERY", "perf_counter", "wrap", "fail", "suspended"}
    assert shared <= simple and shared <= frames


async def test_an_executor_bug_fails_the_run_and_its_traceback_shows_the_loops_line():
    """A kernel returning fewer outputs than its node has breaks propagation (not the
    kernel's call): the run fails with an InternalError whose cause's traceback shows
    the generated loop's source line."""
    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [], name="x")
        y = af.add(x, 1.0, name="short") * 2.0

    def break_the_add(states):
        for state in states:
            for item in state.items:
                if item.name == "short":
                    item.compute = lambda ctx, args: ()

    async with af.Session(graph=g, compile_segments=False) as sess:
        with observe_steps(break_the_add):
            with pytest.raises(errors.InternalError, match="IndexError") as info:
                await sess.run(y, {x: 1.0})
    text = "".join(traceback.format_exception(info.value.__cause__))
    assert "<aioflow process loop: SimpleExecutorState>" in text
    assert "inputs[idx] = outs[slot]" in text


class _FakeState:
    """What the runner reads of a state; its first `process` gets it submitted again
    (a kernel's callback during the drain) and leaves work for the next slice."""

    def __init__(self, runner):
        self.runner = runner
        self.ready, self.completed, self.suspended = deque(), deque(), deque()
        self.budget = 1e-9  # its slice ends after one `process`
        self.warn_overrun = False
        self.ctx = None
        self.queued = False
        self.error = None
        self.in_flight = 0
        self.calls = 0
        self.finished = asyncio.get_running_loop().create_future()

    def process(self, deadline):
        self.calls += 1
        if self.calls == 1:
            self.ready.append("more")
            self.runner.submit(self)
        else:
            self.ready.clear()

    def maybe_finish(self):
        if not self.finished.done():
            self.finished.set_result(self.calls)


async def test_a_state_submitted_during_its_own_process_is_queued_once():
    runner = LoopRunner(asyncio.get_running_loop())
    state = _FakeState(runner)
    runner.run_now(state)
    assert list(runner.queue) == [state]
    assert await asyncio.wait_for(state.finished, 5) == 2
    assert not runner.queue


_made: list = []  # weak references to the arrays _Make returned
_freed: list = []  # what _Seen found: whether the last one was freed


class _Make(OpKernel):
    """A fresh array each run (weakly referenced in _made), inline."""

    expensive = False

    def compute(self, ctx, inputs):
        a = np.arange(1000, dtype=np.float32)
        _made.append(weakref.ref(a))
        return (a,)


class _Sum(OpKernel):
    """Its input's sum, inline."""

    expensive = False

    def compute(self, ctx, inputs):
        return (np.float32(inputs[0].sum()),)


class _Seen(OpKernel):
    """Records whether the last array _Make returned was freed by now."""

    expensive = False

    def compute(self, ctx, inputs):
        _freed.append(_made[-1]() is None)
        return (np.float32(0),)


async def test_a_value_is_freed_once_its_last_inline_consumer_ran(graph, user_op):
    """As TF's executor clears a node's inputs after its kernel (ClearInputs): a tensor no
    later node reads does not live until the step ends (every conv net's intermediates
    did: MobileNetV2's ~40 MB at batch 1 went cold in the caches, and 32 runs in flight
    held 32 times that). A value another node still reads stays (that node's slot)."""
    make = user_op("TestClearMake", _Make, inputs=(), outputs=("y: float",), attrs=())
    total = user_op("TestClearSum", _Sum, inputs=("x: float",), outputs=("y: float",),
                    attrs=())
    seen = user_op("TestClearSeen", _Seen, inputs=(), outputs=("y: float",), attrs=())
    a = make(name="a")
    s1 = total(x=a, name="s1")
    with af.control_dependencies([s1]):
        freed = seen(name="freed")
    with af.control_dependencies([freed]):
        s2 = total(x=a, name="s2")  # a second consumer, which waits for the check
    async with af.Session() as sess:
        _freed.clear()
        got = await sess.run([s1, freed])
        assert got[0] == np.arange(1000).sum() and _freed == [True]
        _freed.clear()
        got = await sess.run([s1, s2])  # `a` read again after the check
        assert got[0] == got[1] == np.arange(1000).sum() and _freed == [False]
