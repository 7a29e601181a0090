"""RunGate: admission of the runs started on one event loop, so that a burst of them
(10,000 `sess.run` gathered at once) does not start them all in one turn of the loop.

asyncio runs every callback that is ready in a turn before it looks at timers again, so
10,000 tasks that each start a run (feeds, step context, executor state: some 10 µs)
would hold the loop for 100 ms in their first step. A run first asks the gate: while
the runs started in this turn have spent less than the budget it goes on at once (the
common case: one test and two clock reads); after that it waits in line (a future,
about a microsecond) and the gate admits the line in later turns, a budget's worth of
runs at a time (by their measured starting cost), with timers and other coroutines
running in between.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

# How long the runs started in one turn may spend starting before later ones wait: the
# loop runner's default slice budget.
DEFAULT_TIME_BUDGET_S = 0.002

_gates: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class RunGate:
    """The line of runs waiting to start on one loop, and what this turn has spent.

    A run waits in line (`await gate.enqueue()`) when `spent >= budget or waiters`: the
    turn's budget is spent, or others already wait (first come, first served). Callers
    test that inline: it is on every run's path."""

    __slots__ = ("_loop", "budget", "spent", "waiters", "cost", "_reset_pending",
                 "_pumping", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, budget: float = DEFAULT_TIME_BUDGET_S):
        # A weak reference: the gates are values of a dict weakly keyed by their loops,
        # and a strong one would keep every loop that ever ran a session alive.
        self._loop = weakref.ref(loop)
        self.budget = budget
        self.spent = 0.0          # starting cost of the runs started in this turn
        self.waiters: deque = deque()
        self.cost = 20e-6         # a run's starting cost, a moving average
        self._reset_pending = False
        self._pumping = False

    def enqueue(self) -> asyncio.Future:
        """A place in line: the future the gate resolves when this run may start (in a
        later turn of the loop). Awaited by the caller: no coroutine of its own."""
        loop = self._loop()
        fut = loop.create_future()
        self.waiters.append(fut)
        if not self._pumping:
            self._pumping = True
            loop.call_soon(self._pump)
        return fut

    def spend(self, seconds: float) -> None:
        """A run started in this turn and it took `seconds` to start."""
        self.spent += seconds
        self.cost += (seconds - self.cost) * 0.125
        if not self._reset_pending:
            self._reset_pending = True
            self._loop().call_soon(self._new_turn)

    def _new_turn(self) -> None:
        self.spent = 0.0
        self._reset_pending = False

    def _pump(self) -> None:
        """Admit as many waiting runs as fit in one budget (at least one); come back in
        the next turn, after they have started, for the rest."""
        n = max(1, int(self.budget / max(self.cost, 1e-6)))
        waiters = self.waiters
        while waiters and n:
            fut = waiters.popleft()
            if not fut.done():  # a run cancelled while waiting is skipped
                fut.set_result(None)
                n -= 1
        if waiters:
            self._loop().call_soon(self._pump)
        else:
            self._pumping = False


def get_gate(loop: asyncio.AbstractEventLoop) -> RunGate:
    """The gate of `loop`, created on first use."""
    gate = _gates.get(loop)
    if gate is None:
        gate = _gates[loop] = RunGate(loop)
    return gate
