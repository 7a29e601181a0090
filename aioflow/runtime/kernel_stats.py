"""Learned inline-or-pool decisions (TF's KernelStats, executor.cc): a kernel whose cost
depends on its inputs (mode BY_SIZE or MAYBE) is timed now and then, and the executor
sends it to the pool when its learned cost at the current input size exceeds what a
pool hand-off is worth.

The static rule (an input's element count, or the kernel's own `is_expensive`) is only
a guess: a cheap op on a large input pays a thread hand-off (~40 µs) for nothing, and an
op that is expensive per element (a sort, an einsum, a string op) on a small input
stalls the event loop. Per node the executor keeps an exponential moving average of
the kernel's CPU time per input element (`NodeItem.cost_rate`; see `input_size`), fed
by samples: the first WARMUP calls,
then one call in SAMPLE_EVERY (untimed calls pay a countdown). The first calls of a
kernel often pay once-only costs (fresh memory page-faulted in, a pool thread's first
arena), so the average falls faster than it rises (DECAY_DOWN > DECAY_UP): a kernel
proves cheap within a few calls, and one slow call does not send it away. Until a node
has been timed
the static rule decides, which is pessimistic (the pool) where the kernel says its
inputs are large, as TF starts every expensive-marked kernel expensive. A MAYBE kernel
(its own `is_expensive`, which may read input values: a Fill's dims, a Range's limit)
is trusted when it says pool, as no input size shows that work; its cheap-looking
calls are timed, and go to the pool when they prove expensive. A call on the
pool is timed in CPU time of its thread (`time.thread_time`: waiting for the GIL is not
the kernel's cost, and ~1.5 µs of timing is nothing beside a pool job); an inline call
by the clock (`perf_counter`, ~0.1 µs: how long it held the loop), so that sampling
stays within noise on the per-node hot path. A clock sample can be inflated by the
process being descheduled: one that would call a cheap node expensive is not learned,
the node's next call is timed in CPU time instead (`cost_verify`), and only that
sample decides.

Estimates live on the executor's NodeItems and are shared by all of its runs; updates
race benignly (a float written whole under the GIL, last writer wins), as TF's relaxed
atomics do. Set AIOFLOW_ADAPTIVE=0 to keep the static rule (benchmarks compare both).
"""

from __future__ import annotations

import os
from time import perf_counter, thread_time

#: A kernel learned to cost more than this (seconds of CPU per call) goes to the pool:
#: a pool round trip costs ~40 µs on the loop, so only kernels worth well more go.
POOL_COST_S = 100e-6
#: Calls timed one after the other when a node starts (its estimate settles).
WARMUP = 8
#: Calls between two samples after the warm-up.
SAMPLE_EVERY = 32
#: Weight of a new sample in the moving average, above and below it.
DECAY_UP = 0.25
DECAY_DOWN = 0.5


def adaptive_default() -> bool:
    """Whether executors learn their kernels' costs (AIOFLOW_ADAPTIVE=0 turns it off)."""
    return os.environ.get("AIOFLOW_ADAPTIVE", "1") != "0"


def input_size(args) -> int:
    """The element count the cost is scaled by: the larger of the first and last
    inputs' (their product when they broadcast against each other; at least 1)."""
    if not args:
        return 1
    a = getattr(args[0], "size", 1)
    b = getattr(args[-1], "size", 1)
    if a != b and a > 1 and b > 1:
        return a * b
    n = a if a > b else b
    return n if n > 1 else 1


def learn(item, seconds: float, n: int) -> None:
    """Fold one timed call (`seconds` of CPU at input size `n`) into the node's rate."""
    sample = seconds / n
    rate = item.cost_rate
    if rate is None:
        item.cost_rate = sample
    else:
        item.cost_rate = rate + (sample - rate) * (DECAY_UP if sample > rate else DECAY_DOWN)
    item.cost_size = n
    item.cost_samples += 1


def next_countdown(item) -> int:
    """Calls to skip before the next sample: none during the warm-up."""
    return 0 if item.cost_samples < WARMUP else SAMPLE_EVERY


def timed_call(item, compute, n: int, ctx, args):
    """Run `compute` on a pool thread and learn from its CPU time."""
    start = thread_time()
    outs = compute(ctx, args)
    learn(item, thread_time() - start, n)
    return outs


def timed_inline(item, compute, n: int, ctx, args):
    """Run `compute` on the loop and learn from how long it held it (see above: a
    sample that would make a cheap node expensive is checked in CPU time first)."""
    if item.cost_verify:
        item.cost_verify = False
        return timed_call(item, compute, n, ctx, args)
    start = perf_counter()
    outs = compute(ctx, args)
    seconds = perf_counter() - start
    if seconds > POOL_COST_S and not learned_expensive(item):
        item.cost_verify = True
        item.cost_countdown = 0
    else:
        learn(item, seconds, n)
    return outs


def learned_expensive(item) -> bool:
    """Whether the node, at the input size it was last timed at, belongs on the pool
    (compiled segments leave such a node to run on its own)."""
    rate = item.cost_rate
    return rate is not None and rate * item.cost_size > POOL_COST_S
