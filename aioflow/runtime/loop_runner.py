"""The per-event-loop runner that drains executor states fairly, in time-budgeted slices.

All runs on one loop share one runner: a run with ready work joins its queue; a
drain takes states round-robin and runs their inline nodes until the slice budget
(default 2 ms) is spent, then reschedules itself with `call_soon`, so timers and
other coroutines of the loop run between slices however many runs are in flight.
Between two slices the loop turns three times, so a timer that fell due during a slice
fires, and its task runs, before the next slice. When the runner is idle a new run drains at
once in the caller's stack (no loop hop).
Kernel completions coming back from threads are batched into one loop wake-up.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from time import perf_counter

from aioflow.framework import errors
from aioflow.framework.intra_op_threads import lend_core, reclaim_core, sharing_jobs
from aioflow.runtime.quiet_fp import quiet, restore

DEFAULT_TIME_BUDGET_S = 0.002

_runners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class LoopRunner:
    """Fair, budgeted draining of the executor states of one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        # A proxy: the runners map holds its loops weakly, and a runner that held its
        # loop would keep every finished loop (and its runner) alive.
        self.loop = weakref.proxy(loop)
        self.queue: deque = deque()
        self.draining = False
        self.scheduled = False
        self.budget = DEFAULT_TIME_BUDGET_S  # for runs that do not set their own
        self._completions: list = []
        self._lock = threading.Lock()
        self._wake_pending = False
        # Time spent draining in the callers' stacks since the loop last turned: a burst
        # of runs started in one turn drains at once only until it reaches the budget.
        self._turn_spent = 0.0
        self._turn_reset_pending = False
        self._lent = False  # this loop's core is lent to shared jobs (lend_core)

    # -- states with ready work --------------------------------------------------------
    def submit(self, state) -> None:
        """Queue a state that has ready nodes; a drain will get to it."""
        if not state.queued:
            state.queued = True
            self.queue.append(state)
        if not self.draining and not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self._scheduled_drain)

    def run_now(self, state) -> None:
        """Start a new state: drain right here when the runner is idle (no loop round
        trip for a small run), else queue it. Runs started in the same turn of the loop
        drain here only until they have spent the budget together; later ones queue."""
        if self.draining or self.queue or self._turn_spent >= self.budget:
            self.submit(state)
            return
        state.queued = True
        self.queue.append(state)
        self._drain_in_caller()

    def drain_now(self) -> None:
        """Drain the queued states here, in the caller's stack, when the runner is idle
        and this turn's budget allows (else the scheduled drain gets to them): a
        partial run's feeds are propagated before its fetch is awaited, with no turn of
        the loop in between."""
        if self.queue and not self.draining and self._turn_spent < self.budget:
            self._drain_in_caller()

    def may_run_inline(self) -> bool:
        """Whether a new run would drain at once in the caller's stack (`run_now`): a
        run that is one compiled call may then make it here, and report `ran_inline`."""
        return not (self.draining or self.queue or self._turn_spent >= self.budget)

    def ran_inline(self, seconds: float) -> None:
        """A run (or a drain) took `seconds` in the caller's stack this turn."""
        self._turn_spent += seconds
        if not self._turn_reset_pending:
            self._turn_reset_pending = True
            self.loop.call_soon(self._new_turn)

    def _drain_in_caller(self) -> None:
        start = perf_counter()
        self._drain()
        self.ran_inline(perf_counter() - start)

    def _new_turn(self) -> None:
        self._turn_spent = 0.0
        self._turn_reset_pending = False

    def _scheduled_drain(self) -> None:
        self.scheduled = False
        if not self.draining:
            self._drain()

    def _drain(self) -> None:
        if self._lent:
            self._lent = False
            reclaim_core()
        self.draining = True
        # Kernels follow TF: overflow and NaN are values, not warnings (set per slice).
        mode = quiet()
        try:
            self._slice()
        finally:
            restore(mode)
            self.draining = False
        if not self.queue:
            if sharing_jobs() and not self.scheduled:
                # Idle until a job comes back: its chain may use this core meanwhile.
                self._lent = lend_core()
        elif not self.scheduled:
            # Let the loop go round before the next slice until what fell due during
            # this slice has run: a timer (or I/O event) fires on the first turn and
            # queues its task's wake-up behind our hop; the task runs on the second
            # turn; the slice comes on the third.
            self.scheduled = True
            self.loop.call_soon(self._hop, 1)

    def _slice(self) -> None:
        """Run queued states round-robin until none has ready work or time is up. The
        slice lasts the first state's budget (its session's, or the runner's default);
        each state also stops at its own budget."""
        queue = self.queue
        popleft = queue.popleft
        default = self.budget
        start = ended = perf_counter()
        deadline = None
        while queue:
            state = popleft()
            state.queued = False
            budget = state.budget or default
            if deadline is None:
                deadline = start + budget
            began = ended  # the previous state's end: one clock read per state
            own = began + budget
            try:
                state.process(own if own < deadline else deadline)
            except Exception as e:  # noqa: BLE001 - an executor bug fails its run only
                # (kernel errors are caught in process; this is propagation going wrong,
                # e.g. a kernel returning fewer outputs than its node has)
                err = errors.InternalError(None, None, f"{type(e).__name__}: {e}")
                err.__cause__ = e
                state.fail(err)
            ended = perf_counter()
            if state.warn_overrun:
                _check_overrun(ended - began, budget)
            if (state.ready or state.completed or state.suspended) and state.error is None:
                if not state.queued:  # (state.has_ready(), written out: once per state;
                    state.queued = True  # queued already when its own kernel's
                    queue.append(state)  # callback submitted it during its process)
            elif not state.in_flight:
                state.maybe_finish()
            if ended >= deadline:
                break

    def _hop(self, hops_left: int) -> None:
        """One turn of the loop between two slices; the last hop queues the slice."""
        if hops_left:
            self.loop.call_soon(self._hop, hops_left - 1)
        else:
            self.loop.call_soon(self._scheduled_drain)

    # -- completions from kernel threads ------------------------------------------------
    def post_completion(self, state, token, result, exc) -> None:
        """Called from a pool thread: hand a kernel's result back to the loop (batched)."""
        with self._lock:
            self._completions.append((state, token, result, exc))
            wake = not self._wake_pending
            self._wake_pending = True
        if wake:
            try:
                self.loop.call_soon_threadsafe(self._on_completions)
            except (RuntimeError, ReferenceError):  # the loop is closed or gone
                pass

    def _on_completions(self) -> None:
        with self._lock:
            batch = self._completions
            self._completions = []
            self._wake_pending = False
        for state, token, result, exc in batch:
            state.on_pool_done(token, result, exc)
        if self.queue and not self.draining:
            self._drain()


def _check_overrun(spent: float, budget: float) -> None:
    """The debug mode's warning: an inline stretch held the loop past twice its budget."""
    if spent > 2 * budget:
        import warnings

        warnings.warn(f"aioflow: an inline stretch ran {spent * 1e3:.2f} ms, over its "
                      f"{budget * 1e3:.2f} ms budget", RuntimeWarning, stacklevel=3)


def get_runner(loop: asyncio.AbstractEventLoop | None = None) -> LoopRunner:
    """The runner of `loop` (the running loop by default), created on first use."""
    if loop is None:
        loop = asyncio.get_running_loop()
    runner = _runners.get(loop)
    if runner is None:
        runner = _runners[loop] = LoopRunner(loop)
    return runner
