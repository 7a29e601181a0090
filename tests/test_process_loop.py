"""The executor's one process loop (runtime/process_loop.py), generated per propagator,
and the runner that calls it (runtime/loop_runner.py).

Cross-device loops handing values to each other through the runner, not nested in
each other's `process`, are tested in tests/test_loop_partition.py.
"""

from __future__ import annotations

import asyncio
import dis
import traceback
from collections import deque

import pytest

import aioflow as af
from aioflow.framework import errors
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
