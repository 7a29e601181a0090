"""Per-run executor state (TF's ExecutorState), touched only on the event loop thread.

ExecutorStateBase holds what every run needs: the ready queue, the completion queue,
the one dispatch decision, the first error, abort and completion. Its `process`, the one
process loop (process_loop.py), is generated per propagator. SimpleExecutorState is the
propagator for graphs without v1 control flow: one flat list of pending counts and one
of input slots, copied from the templates per run (frame_state.py has the other).

One place propagates (asyncio's `_run_once` rule): kernels that finish outside
`process` (on the pool, in a task, through a callback, or at once from a task-free
start) append `(token, outputs)` to `completed` and ask the runner for a slice; only
`process` moves outputs to successors and activates them.

A state is done when it has no ready node, no completion to propagate and nothing in
flight; `done` then holds None or the first error.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections import deque
from functools import partial
from time import time_ns

import numpy as np

from aioflow.framework import errors
from aioflow.framework.intra_op_threads import begin_sharing, end_sharing, sharing_jobs
from aioflow.runtime.kernel_stats import (
    POOL_COST_S,
    input_size,
    next_countdown,
    timed_call,
    timed_inline,
)
from aioflow.runtime.node_item import ASYNC, BY_SIZE, MAYBE, POOL
from aioflow.runtime.process_loop import Propagator, generate

_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
    os.cpu_count() or 1)
#: Jobs that may be in flight on pool threads beside the event loop's own work
#: (`worth_a_thread`): the loop keeps one core busy, cores - 1 run on the others, and as
#: many again plus one wait behind them in the BLAS gate's queue, so that a pool thread
#: goes from one chain to the next without waiting for the loop to hand it one (32
#: MobileNetV2 runs in flight on 2 cores, 1 / 2 / 3 jobs: 137-139 / 151-186 / 180-192
#: images/s; docs/performance.md). None on one core.
SHARED_JOBS = 2 * _CORES - 1 if _CORES > 1 else 0
#: Jobs that may be in flight beside the loop for one run's own parallel branches (no
#: other run waits): one per core besides the loop's, each running its branch's chain
#: while the loop runs the others', every primitive on its calling thread alone.
BRANCH_JOBS = _CORES - 1
#: Ready nodes `branch_to_share` looks at (an Inception block has four branches; a wide
#: graph's long ready queue is not scanned on every node).
BRANCH_SCAN = 8


#: `dispatch(shared=...)`: a job beside the loop for runs waiting for it, or for a run's
#: own parallel branch (framework.intra_op_threads.begin_sharing).
RUNS, BRANCH = 1, 2


def _end_sharing_if_cancelled(shared: int, fut) -> None:
    """Done callback of a shared pool job: one cancelled before it ran never ends its
    sharing itself (a job that ran ends it before reporting)."""
    if fut.cancelled():
        end_sharing(branch=shared == BRANCH)


def broadcast_size(a, b) -> int:
    """The element count of `a` and `b` broadcast together (0 when they do not broadcast:
    the kernel then raises its error inline, cheaply)."""
    try:
        return math.prod(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        return 0


def wrap_error(exc: BaseException, item, where: str = "") -> errors.OpError:
    """The error a failed node reports: TF's class, naming the node and its op."""
    if isinstance(exc, errors.OpError):
        cls, message = type(exc), exc.message
    elif isinstance(exc, (ValueError, TypeError, IndexError, ZeroDivisionError, KeyError)):
        cls, message = errors.InvalidArgumentError, f"{type(exc).__name__}: {exc}"
    elif isinstance(exc, MemoryError):
        cls, message = errors.ResourceExhaustedError, f"OOM when running {item.name}: {exc}"
    else:
        cls, message = errors.UnknownError, f"{type(exc).__name__}: {exc}"
    text = f"{message}\n\t [[{{{{node {item.name}}}}} = {item.op}[...]{where}]]"
    # Not cls(...): a user's OpError subclass may take other arguments, and an OpError
    # made with an explicit error_code keeps it.
    err = cls.__new__(cls)
    errors.OpError.__init__(err, item.node_def, None, text,
                            exc.error_code if isinstance(exc, errors.OpError) else None)
    err.__cause__ = exc
    return err


class ExecutorStateBase:
    """Shared machinery of one run of one partition."""

    def __init__(self, impl, ctx, runner):
        self.impl = impl
        self.items = impl.items
        self.ctx = ctx
        # What kernels see (framework's OpKernelContext); step control stays in ctx.
        self.kctx = ctx.kernel_ctx if ctx is not None else None
        self.runner = runner
        self.loop = runner.loop
        self.budget = ctx.time_budget_s if ctx is not None else None
        self.warn_overrun = ctx is not None and ctx.warn_overrun  # (debug mode)
        self.done: asyncio.Future = self.loop.create_future()
        self.ready: deque = deque()
        self.completed: deque = deque()  # (token, outputs) of kernels that ran elsewhere
        self.suspended: deque = deque()  # (token, generator) of compiled loops to resume
        self.queued = False
        self.begun = False  # the per-run lists are made (`begin`, in the first slice)
        self.in_flight = 0
        self.error: errors.OpError | None = None
        self.jobs: dict = {}        # id(token) -> concurrent future of its pool job
        self.tasks: set = set()     # asyncio tasks of async kernels
        self._in_flight_waiter: asyncio.Future | None = None
        # Step stats of a traced run (None: not traced, one flag test per node).
        step_stats = ctx.step_stats if ctx is not None else None
        self.stats = None if step_stats is None else step_stats.for_executor(impl)
        self.pool = ctx.inter_op_pool if ctx is not None else None  # None: the device's

    # -- driving --------------------------------------------------------------------
    def start(self) -> None:
        raise NotImplementedError

    def begin(self) -> None:
        """Make the per-run lists (called by the first `process`)."""
        raise NotImplementedError

    def process(self, deadline: float) -> None:
        """Run ready nodes and propagate every output until nothing is left or
        perf_counter() passes `deadline`: the one process loop, generated per
        propagator from its fragments (process_loop.py)."""
        raise NotImplementedError

    def expand(self, token) -> None:
        """Run the segment of `token` node by node this time (its entry members become
        ready)."""
        raise NotImplementedError

    def has_ready(self) -> bool:
        return bool(self.ready or self.completed or self.suspended) and self.error is None

    def maybe_finish(self) -> None:
        """Resolve `done` once nothing is ready, completed or in flight."""
        if self.in_flight or self.done.done():
            return
        if self.error is None and (self.ready or self.completed or self.suspended):
            return
        if self.error is not None:
            self.done.set_exception(self.error)
        else:
            self.done.set_result(None)

    def fail(self, err: errors.OpError) -> None:
        """Record the first error; stop scheduling and abort what is in flight."""
        if self.error is None:
            self.error = err
            self.ready.clear()
            self.completed.clear()
            for _, gen in self.suspended:
                gen.close()
            self.suspended.clear()
            self._cancel_in_flight()
            if self.ctx is not None:
                self.ctx.on_error(err)
        self.maybe_finish()

    def abort(self, err: errors.OpError | None) -> None:
        """Stop the run from outside (cancellation, deadline, a sibling partition failing)."""
        self.fail(err or errors.CancelledError(None, None, "Step was cancelled"))

    def _cancel_in_flight(self) -> None:
        for key, fut in list(self.jobs.items()):
            if fut.cancel():
                del self.jobs[key]
                self.in_flight -= 1
        for task in list(self.tasks):
            task.cancel()

    async def wait_in_flight(self) -> None:
        """Wait until no kernel of this run is still running (after an abort)."""
        while self.in_flight:
            waiter = self.loop.create_future()
            self._in_flight_waiter = waiter
            try:
                await asyncio.shield(waiter)
            except asyncio.CancelledError:
                continue

    def _job_finished(self) -> None:
        self.in_flight -= 1
        waiter = self._in_flight_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the dispatch decision (both propagators) -------------------------------------------
    def offload(self, item, token, args, slots: list) -> bool:
        """Start `item` elsewhere when its mode says so (the pool, or awaited) and return
        True; False when it runs inline. Asked for every node whose mode is not INLINE,
        FORWARD, SEGMENT or FRAMED (a transfer in a loop: frame_state.py). An
        input-dependent kernel (BY_SIZE, MAYBE) goes by its learned cost once it has been
        timed (kernel_stats.py), by the static rule before; a call that is sampled is run
        (and timed) here, its outputs queued."""
        mode = item.mode
        if mode == BY_SIZE or mode == MAYBE:
            rate = item.cost_rate
            if mode == MAYBE:
                # The kernel reads its inputs' values (a Fill's dims): when it says
                # pool, it knows of work no input size shows, and is trusted.
                if item.is_expensive(args):
                    self.dispatch(item, token, args, slots)
                    return True
                pool = rate is not None and rate * input_size(args) > POOL_COST_S
            else:
                a, b = args[0], args[-1]
                na, nb = a.size, b.size
                if rate is not None:  # learned: cost per element of the larger input
                    n = na if na > nb else nb
                    if na != nb and na > 1 and nb > 1:  # broadcasting: up to na * nb
                        n = na * nb
                    pool = rate * n > POOL_COST_S
                else:
                    limit = item.pool_above
                    pool = not (na <= limit and nb <= limit and (
                        na * nb <= limit or a.shape == b.shape
                        or broadcast_size(a, b) <= limit))  # (n, 1) + (1, n) is n * n
            countdown = item.cost_countdown
            if countdown:
                item.cost_countdown = countdown - 1
            elif countdown is not None:  # 0: this call is a sample
                self.sampled(item, token, args, slots, pool)
                return True
            if not pool:
                # Inline, unless a pool thread is free for a call the kernel says is
                # worth one and the loop has other such work: other runs wait for it,
                # or another ready node of this run is worth a thread too (an Inception
                # block's parallel branches). Then both go on, on two cores; the last
                # of a run's ready branches runs inline (a lone node never pays the
                # 50-300 µs round trip through a pool thread).
                share = item.worth_a_thread
                if share is None:
                    return False
                jobs = sharing_jobs()
                if jobs < SHARED_JOBS and self.runner.queue:
                    if not share(args):
                        return False
                elif not (jobs < BRANCH_JOBS and self.ready) or not share(args):
                    return False
                else:
                    # A branch of this run: the ready one whose chain is the longest
                    # goes to the pool (this one when it ties), the others stay on the
                    # loop (InceptionV3: the pool thread took the 1x1 convolution or
                    # the pooling branch, the first ready, and the loop ran the 5-node
                    # branch: 30 ms a run's blocks against 26).
                    other = self.branch_to_share(item)
                    if other is None:
                        return False
                    if other is not item:
                        self.ready.remove(other)
                        self.dispatch(other, other, slots[other.input_start:other.input_end],
                                      slots, shared=BRANCH)
                        return False
                    self.dispatch(item, token, args, slots, shared=BRANCH)
                    return True
                self.dispatch(item, token, args, slots, shared=RUNS)
                return True
        self.dispatch(item, token, args, slots)
        return True

    def branch_to_share(self, item):
        """Of `item` (worth a thread, just taken from the ready queue) and the other
        ready nodes worth a thread of their own, the one to send to a pool thread: the
        head of the longest chain (`item` when it ties), or None when no other ready
        node is worth a thread. None here (the control-flow propagator's ready entries
        are left alone); SimpleExecutorState's looks."""
        return None

    def sampled(self, item, token, args, slots: list, pool: bool) -> None:
        """Run an input-dependent kernel timed, on the pool or inline (its outputs then
        queued in `completed`), to learn its cost."""
        n = input_size(args)
        item.cost_countdown = next_countdown(item)
        if pool:
            self.dispatch(item, token, args, slots, sample_size=n)
            return
        compute = item.compute if self.stats is None else partial(self.stats.call, item)
        self.completed.append((token, timed_inline(item, compute, n, self.kctx, args)))

    def dispatch(self, item, token, args, slots: list, sample_size: int = 0,
                 shared: int = 0) -> None:
        """Start a kernel that does not run inline; its outputs come back through
        `completed`. Its input slots are cleared: a kernel worth the pool usually has
        large inputs, and they should be freed as soon as it is done with them, not at
        the end of the step. A pool job also runs the chain of successors this node
        alone still holds back (`chain`), as TF's executor runs a ready expensive
        successor on the thread that finished its input: no round trip through the loop
        between them. `shared`: the job runs beside the loop's own work
        (framework.intra_op_threads.begin_sharing)."""
        slots[item.input_start:item.input_end] = [None] * item.num_inputs
        self.in_flight += 1
        try:
            if item.mode != ASYNC:
                compute = item.compute if self.stats is None else partial(
                    self.stats.call, item, scheduled_ns=time_ns())
                links = None
                if sample_size:  # timed on the pool thread (kernel_stats.py)
                    compute = partial(timed_call, item, compute, sample_size)
                elif self.stats is None:  # (traced: every node shows in the stats)
                    links = self.chain(item)
                if shared:
                    begin_sharing(shared == BRANCH)
                try:
                    if links:
                        fut = self.impl.device.submit(self._chain_job, compute, token,
                                                      args, links, shared,
                                                      uses_blas=item.uses_blas,
                                                      pool=self.pool)
                        token = links[-1][0]  # (the node its completion reports)
                    else:
                        fut = self.impl.device.submit(self._pool_job, compute, token, args,
                                                      shared, uses_blas=item.uses_blas,
                                                      pool=self.pool)
                except BaseException:
                    if shared:
                        end_sharing(branch=shared == BRANCH)
                    raise
                if shared:  # a job cancelled before it ran ends its sharing here
                    fut.add_done_callback(partial(_end_sharing_if_cancelled, shared))
                self.jobs[id(token)] = fut
                return
            if item.kernel.start_async is None or self.stats is not None:
                task = self.loop.create_task(self._async_job(
                    item, token, args, None if self.stats is None else time_ns()))
                self.tasks.add(task)
                task.add_done_callback(self._task_done)
                return
            outs = item.kernel.start_async(self.kctx, args,
                                           partial(self._callback_done, token))
        except BaseException:
            self.in_flight -= 1  # it never started: nothing will report back (the caller
            raise                # fails the step; a count left behind would hang it)
        if outs is not None:  # ready at once: propagated by the running process loop
            self._job_finished()
            self.completed.append((token, outs))

    def _callback_done(self, token, outs, exc) -> None:
        """A task-free async kernel finished (called on the loop, e.g. from a _Send)."""
        self._job_finished()
        self._after_job(token, outs, exc)

    def _pool_job(self, compute, token, args, shared: int = 0):
        try:
            with np.errstate(all="ignore"):
                result = compute(self.kctx, args)
            exc = None
        except BaseException as e:  # noqa: BLE001 - handed to the loop thread
            result, exc = None, e
        # The pool's work item holds `args` until its thread takes the next job, which
        # may be after a consumer already ran: let go of the inputs before reporting.
        args.clear()
        if shared:
            end_sharing(branch=shared == BRANCH)
        self.runner.post_completion(self, token, result, exc)

    def chain(self, item) -> list:
        """The successors a pool job starting `item` runs after it, each with its
        argument list and where the previous node's outputs go in it:
        [(next item, args, ((output slot, arg index), ...)), ...]. None here (the
        control-flow propagator chains nothing); SimpleExecutorState's finds them."""
        return None

    def _chain_job(self, compute, token, args, links, shared: int):
        """A pool job: the first node (`compute`, `token`), then each successor of its
        chain with the previous one's outputs, on this thread; only the last one's
        outputs come back (the others' went to their one consumer, the next). An error
        reports the node that raised it; an aborted step stops the chain before its next
        node (the completion then reports the last node, with no outputs)."""
        ctx = self.kctx
        try:
            with np.errstate(all="ignore"):
                outs = compute(ctx, args)
                args.clear()
                for nxt, nargs, edges in links:
                    if self.error is not None:  # aborted: the rest does not run
                        token, outs = links[-1][0], None
                        break
                    for slot, i in edges:
                        nargs[i] = outs[slot]
                    token, outs = nxt, None
                    outs = nxt.compute(ctx, nargs)
                    nargs.clear()
            exc = None
        except BaseException as e:  # noqa: BLE001 - handed to the loop thread
            outs, exc = None, e
            args.clear()
            for _, nargs, _ in links:
                nargs.clear()
        if shared:
            end_sharing(branch=shared == BRANCH)
        self.runner.post_completion(self, token, outs, exc)

    def on_pool_done(self, token, result, exc) -> None:
        self.jobs.pop(id(token), None)
        self._job_finished()
        self._after_job(token, result, exc)

    async def _async_job(self, item, token, args, scheduled_ns: int | None = None) -> None:
        try:
            if self.stats is None:
                result = await item.compute(self.kctx, args)
            else:
                result = await self.stats.call_async(item, self.kctx, args, scheduled_ns)
            exc = None
        except asyncio.CancelledError:
            result, exc = None, None
            if self.error is None:
                exc = errors.CancelledError(None, None, "Async kernel was cancelled")
        except BaseException as e:  # noqa: BLE001 - reported as the node's error
            result, exc = None, e
        finally:
            self.tasks.discard(asyncio.current_task())
            self._job_finished()
        self._after_job(token, result, exc)

    def _task_done(self, task) -> None:
        """A task cancelled before its first step never ran `_async_job` (not even its
        `finally`): count it finished here, or the run would wait for it forever."""
        if task in self.tasks:
            self.tasks.discard(task)
            self._job_finished()
            if self.error is None:  # cancelled from outside the run (loop shutdown)
                self.fail(errors.CancelledError(None, None, "Async kernel was cancelled"))
            else:
                self.maybe_finish()

    def _after_job(self, token, result, exc) -> None:
        """A kernel that ran outside `process` finished: queue its outputs (or fail)."""
        if self.error is not None:
            self.maybe_finish()
            return
        if exc is not None:
            self.fail(self.wrap(token, exc))
            return
        self.completed.append((token, result))
        self.runner.submit(self)

    def wrap(self, token, exc) -> errors.OpError:
        raise NotImplementedError


class SimpleExecutorState(ExecutorStateBase):
    """The propagator for graphs without control flow: no frames, no deadness.

    A token is the node's item itself. A segment that does not run compiled puts its
    entry members on the ready queue: their pending counts count only the edges between
    members, so they run node by node from there."""

    def start(self) -> None:
        # The per-run lists are made in the first slice (`begin`), not here: a burst of
        # runs started together would otherwise copy them all in one turn of the loop.
        # Untraced, the constants' outputs are delivered already (constant_fill.py).
        impl = self.impl
        self.ready.extend(impl.roots if self.stats is not None else impl.constant_fill.roots)
        self.runner.run_now(self)

    def begin(self) -> None:
        self.begun = True
        impl = self.impl
        if self.stats is not None:  # traced: every node runs, the Consts too
            self.pending = impl.root_info.pending_template[:]
            self.inputs = [None] * impl.root_info.total_inputs
        else:
            fill = impl.constant_fill
            self.pending = fill.pending[:]
            self.inputs = fill.inputs[:]

    # The per-node hot path: the propagation is written out flat on purpose (see
    # DESIGN.md, "The executor"): an output goes to its slot, a count reaching zero
    # readies its node.
    process = generate(Propagator(
        name="SimpleExecutorState",
        token="item",
        unpack="",
        inputs="inputs",
        is_dead="False",
        is_transfer="False",
        transfer="pass",
        setup="""
            inputs = self.inputs
            pending = self.pending
            items = self.items
            append = ready.append
        """,
        propagate="""
            for dst, slot, idx in item.out_data:
                inputs[idx] = outs[slot]
                c = pending[dst] - 1
                pending[dst] = c
                if not c:
                    append(items[dst])
            for dst in item.out_control:
                c = pending[dst] - 1
                pending[dst] = c
                if not c:
                    append(items[dst])
        """,
        clear="inputs[item.input_start:item.input_end] = item.cleared"))

    def chain(self, item) -> list:
        """Successors that `item` alone holds back (`_chain_next`), each run next on the
        same pool thread. Its argument list is taken from the slots (cleared: the job
        owns them now); its pending count is left as it is, never reaching zero here."""
        links = []
        inputs = self.inputs
        blas = item.uses_blas
        node = item
        while (nxt := self._chain_next(node, blas)) is not None:
            start = nxt.input_start
            end = nxt.input_end
            nargs = inputs[start:end]
            inputs[start:end] = [None] * nxt.num_inputs
            links.append((nxt, nargs, tuple((slot, idx - start) for _, slot, idx in node.out_data)))
            node = nxt
        return links

    def chain_length(self, item) -> int:
        """The nodes a pool job starting `item` would run (`chain`'s rule, nothing
        taken)."""
        n = 1
        blas = item.uses_blas
        node = item
        while (node := self._chain_next(node, blas)) is not None:
            n += 1
        return n

    def _chain_next(self, node, blas: bool):
        """The node that runs after `node` on the same pool thread, or None: while every
        output of `node` goes to one node that is heavy (always on the pool, or worth a
        thread of its own: work that lets go of the GIL, such as oneDNN's primitives; a
        chain of cheap Python kernels on a pool thread would only hold the GIL against
        the loop), has all its other inputs already, and passes the BLAS gate only if the
        chain's first node did (the job holds the first node's slot)."""
        out = node.out_data
        if not out or node.out_control:
            return None
        dst = out[0][0]
        nxt = self.items[dst]
        if not (nxt.mode == POOL or nxt.worth_a_thread is not None) or \
                nxt.member_of is not None or \
                self.pending[dst] != len(out) or (nxt.uses_blas and not blas) or \
                any(edge[0] != dst for edge in out):
            return None
        return nxt

    def branch_to_share(self, item):
        inputs = self.inputs
        send = None
        longest = self.chain_length(item)
        for i, nxt in enumerate(self.ready):
            if i == BRANCH_SCAN:
                break
            share = nxt.worth_a_thread
            if share is not None and share(inputs[nxt.input_start:nxt.input_end]):
                n = self.chain_length(nxt)
                if n > longest:
                    send, longest = nxt, n
                elif send is None:
                    send = item
        return send

    def expand(self, item) -> None:
        segment = item.segment
        segment.fill_constant_slots(self.inputs)
        self.ready.extend(segment.entries)

    def wrap(self, token, exc) -> errors.OpError:
        return wrap_error(exc, token)
