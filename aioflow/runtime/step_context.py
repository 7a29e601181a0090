"""StepContext: the runtime's control of one step (its executor states, the first
error, abort, tracing, its time budget) around the kernel-facing OpKernelContext.

Kernels see only `kernel_ctx` (framework/kernel_context.py); nothing here is reachable
from a kernel.
"""

from __future__ import annotations

import itertools

from aioflow.framework.kernel_context import OpKernelContext

_step_ids = itertools.count(1)


def step_kernel_context(args: list, num_retvals: int, resource_mgr) -> OpKernelContext:
    """The kernel context of a step of its own that needs no StepContext (a step that
    is one compiled call: DirectSession._run_whole)."""
    return OpKernelContext(next(_step_ids), args, num_retvals, resource_mgr=resource_mgr)


class StepContext:
    """One run: its kernel context, its partitions' states, its first error."""

    __slots__ = ("step_id", "kernel_ctx", "rendezvous", "states", "step_stats", "first_error",
                 "time_budget_s", "warn_overrun", "inter_op_pool")

    def __init__(self, args: list, num_retvals: int, session_handle: str = "",
                 rendezvous=None, step_stats=None, resource_mgr=None,
                 time_budget_s: float | None = None, warn_overrun: bool = False):
        self.step_id = next(_step_ids)
        self.kernel_ctx = OpKernelContext(self.step_id, args, num_retvals,
                                          resource_mgr=resource_mgr, rendezvous=rendezvous,
                                          session_handle=session_handle,
                                          stats_collector=step_stats)
        self.rendezvous = rendezvous  # carries tensors between partitions (several only)
        self.states: list = []
        self.step_stats = step_stats  # a StepStatsCollector when the run is traced
        self.first_error = None  # the error that stopped the step (several partitions)
        # This run's slice budget on the loop (None: the runner's default) and whether
        # to warn when an inline stretch of it overruns the budget.
        self.time_budget_s = time_budget_s
        self.warn_overrun = warn_overrun
        # The inter-op pool RunOptions.inter_op_thread_pool chose (None: the device's).
        self.inter_op_pool = None

    @classmethod
    def for_call(cls, kernel_ctx: OpKernelContext) -> StepContext:
        """The sub-step of a function call: `kernel_ctx` (made by the caller's context's
        `for_call`) with the caller's rendezvous and stats; its own states and first
        error (a failing body aborts the body's executor, and the call reports it)."""
        step = cls.__new__(cls)
        step.step_id = kernel_ctx.step_id
        step.kernel_ctx = kernel_ctx
        step.rendezvous = kernel_ctx.rendezvous
        step.states = []
        step.step_stats = kernel_ctx.stats_collector
        step.first_error = None
        step.time_budget_s = None
        step.warn_overrun = False
        step.inter_op_pool = None  # a body's pool kernels run on its device's pool
        return step

    @property
    def args(self) -> list:
        return self.kernel_ctx.args

    @property
    def retvals(self) -> list:
        return self.kernel_ctx.retvals

    def on_error(self, err) -> None:
        """A partition failed: abort the step's other partitions (first error wins)."""
        if self.first_error is None:
            self.first_error = err
            self.kernel_ctx.cancellation.start_cancel()
        if self.rendezvous is not None:
            self.rendezvous.abort(err)
        for state in self.states:
            if state.error is None:
                state.abort(err)
