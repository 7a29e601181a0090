"""OpKernelContext: everything a kernel may see of the step it runs in (TF's
OpKernelContext::Params, one per step here, shared by the step's kernels).

A kernel's inputs are `compute`'s argument and its outputs its return value; this
context carries the rest: the call frame (args and retvals of `_Arg`/`_Retval`), the
step's resources, the device's ResourceMgr, the Rendezvous between partitions, the
step's cancellation, ids, and the step's stats collector (a function call's sub-step
records into it). Step control (executor states, the first error, abort) belongs to the
runtime and is not reachable from here.
"""

from __future__ import annotations

from typing import Any, Protocol

from aioflow.framework.cancellation import CancellationManager
from aioflow.framework.resource_mgr import ResourceMgr


class Rendezvous(Protocol):
    """What Send/Recv kernels need of the step's rendezvous (runtime/rendezvous.py)."""

    def send(self, key: str, value: Any, is_dead: bool) -> None: ...

    async def recv(self, key: str) -> tuple[Any, bool]: ...

    def recv_callback(self, key: str, done) -> tuple[Any, bool] | None: ...


class OpKernelContext:
    """Per-step context handed to every kernel's `compute(ctx, inputs)`."""

    __slots__ = ("step_id", "args", "retvals", "step_resources", "resource_mgr",
                 "rendezvous", "cancellation", "session_handle", "stats_collector")

    def __init__(self, step_id: int, args: list, num_retvals: int, *,
                 resource_mgr: ResourceMgr | None = None, rendezvous: Rendezvous | None = None,
                 session_handle: str = "", stats_collector=None):
        self.step_id = step_id
        self.args = args                        # the call frame's arguments (_Arg i)
        self.retvals: list = [None] * num_retvals  # the call frame's results (_Retval i)
        self.step_resources: dict = {}          # per-step resources (TensorArrays)
        self.resource_mgr = resource_mgr        # the device's resources across steps
        self.rendezvous = rendezvous            # tensors between partitions (or None)
        self.cancellation = CancellationManager()
        self.session_handle = session_handle
        self.stats_collector = stats_collector  # the step's StepStatsCollector, or None

    def for_call(self, args: list, num_retvals: int) -> OpKernelContext:
        """The context of a function call made by a kernel of this step (TF's
        FunctionLibraryRuntime::Options from the caller's context): the same step id,
        resources, rendezvous and stats; its own call frame; a cancellation that the
        caller's cancels (the call's own failure cancels only the call)."""
        child = OpKernelContext.__new__(OpKernelContext)
        child.step_id = self.step_id
        child.args = args
        child.retvals = [None] * num_retvals
        child.step_resources = self.step_resources
        child.resource_mgr = self.resource_mgr
        child.rendezvous = self.rendezvous
        child.cancellation = CancellationManager()
        child.session_handle = self.session_handle
        child.stats_collector = self.stats_collector
        return child
