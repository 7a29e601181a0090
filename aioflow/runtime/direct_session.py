"""DirectSession: the in-process session runtime (TF's DirectSession).

It holds the full graph (extended incrementally), and per distinct (feeds, fetches,
targets) signature a cached set of executors: the graph is copied, rewritten for
execution (feeds -> _Arg, fetches -> _Retval), pruned, placed, partitioned by device,
passed through the optimization passes, and turned into one ExecutorImpl per partition.
A run is one coroutine per partition, gathered; results come back through the call frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aioflow.framework import errors
from aioflow.framework.gc_util import paused_gc
from aioflow.graph.algorithm import copy_graph
from aioflow.graph.construct import convert_graph_def_to_graph
from aioflow.graph.partition import partition_by_device
from aioflow.graph.subgraph import rewrite_graph_for_execution
from aioflow.passes.graph_optimizer import optimize_graph
from aioflow.passes.registry import Grouping, PassOptions, global_registry
from aioflow.proto import config_pb2, graph_pb2
from aioflow.runtime.device import DeviceMgr
from aioflow.runtime.executor import ExecutorImpl, run_states
from aioflow.runtime.loop_runner import get_runner
from aioflow.runtime.placer import place
from aioflow.runtime.rendezvous import Rendezvous
from aioflow.runtime.step_context import StepContext
from aioflow.runtime.step_stats import StepStatsCollector, wants_trace


@dataclass
class ExecutorsAndKeys:
    """The executors of one signature; arg i is feeds[i], retval i is fetches[i]."""

    feeds: tuple[str, ...]
    fetches: tuple[str, ...]
    targets: tuple[str, ...]
    executors: list[ExecutorImpl] = field(default_factory=list)
    partition_graph_defs: list[graph_pb2.GraphDef] = field(default_factory=list)


class DirectSession:
    """Graph state and executors cache of one Session."""

    def __init__(self, config: config_pb2.ConfigProto | None = None, inline_all: bool = False):
        self.config = config if config is not None else config_pb2.ConfigProto()
        self.device_mgr = DeviceMgr.from_config(self.config)
        self.inline_all = inline_all
        self._graph_def = graph_pb2.GraphDef()
        self._node_names: set[str] = set()
        self._full_graph = None
        self._executors: dict[tuple, ExecutorsAndKeys] = {}
        self._active_steps: set[StepContext] = set()
        self.closed = False

    # -- the graph ------------------------------------------------------------------------
    def extend(self, graph_def: graph_pb2.GraphDef) -> None:
        """Add the nodes of `graph_def`; a name already in the session is an error."""
        with paused_gc():
            self._extend(graph_def)

    def _extend(self, graph_def: graph_pb2.GraphDef) -> None:
        self._check_open()
        for node in graph_def.node:
            if node.name in self._node_names:
                raise errors.InvalidArgumentError(
                    node, None, f"GraphDef argument to Extend includes node '{node.name}', which "
                                f"was created by a previous call to Create or Extend in this "
                                f"session.")
        merged = graph_pb2.GraphDef()
        merged.CopyFrom(self._graph_def)
        merged.node.extend(graph_def.node)
        if graph_def.HasField("versions"):
            merged.versions.CopyFrom(graph_def.versions)
        graph = convert_graph_def_to_graph(merged)  # validates before anything changes
        options = PassOptions(graph=graph, config=self.config, device_mgr=self.device_mgr)
        global_registry().run_grouping(Grouping.PRE_PLACEMENT, options)
        place(options.graph, self.device_mgr, self.config.allow_soft_placement)
        global_registry().run_grouping(Grouping.POST_PLACEMENT, options)
        self._graph_def = merged
        self._node_names.update(n.name for n in graph_def.node)
        self._full_graph = options.graph

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("Attempted to use a closed Session.")

    # -- executors --------------------------------------------------------------------------
    def get_executors(self, feeds, fetches, targets) -> ExecutorsAndKeys:
        """The (cached) executors for a signature; names are sorted into the key."""
        key = (feeds, fetches, targets)
        eak = self._executors.get(key)
        if eak is None:
            with paused_gc():
                eak = self._executors[key] = self._create_executors(feeds, fetches, targets)
        return eak

    def _create_executors(self, feeds, fetches, targets) -> ExecutorsAndKeys:
        self._check_open()
        if self._full_graph is None:
            self.extend(graph_pb2.GraphDef())
        graph = copy_graph(self._full_graph)
        device = self.device_mgr.default_device
        rewrite_graph_for_execution(graph, list(feeds), list(fetches), list(targets), device.name)
        options = PassOptions(graph=graph, config=self.config, device_mgr=self.device_mgr)
        global_registry().run_grouping(Grouping.POST_REWRITE_FOR_EXEC, options)
        partitions = self._partition(options.graph)
        options.partition_graphs = partitions
        global_registry().run_grouping(Grouping.POST_PARTITIONING, options)
        eak = ExecutorsAndKeys(feeds, fetches, targets)
        optimizer_options = self.config.graph_options.optimizer_options
        parts = options.partition_graphs
        # A value that is dead on one device (an untaken cond branch) arrives dead on
        # the other: then every partition tracks deadness.
        deadness = len(parts) > 1 and any(
            n.is_control_flow for part in parts.values() for n in part.op_nodes())
        for device_name, part in parts.items():
            device = self.device_mgr.lookup(device_name)
            # The GraphOptimizer per partition: constant folding and CSE, as TF's
            # OptimizerOptions ask (on at the default L1, off at L0).
            optimize_graph(part, optimizer_options, device.device_type)
            eak.executors.append(ExecutorImpl(part, device, inline_all=self.inline_all,
                                              deadness=deadness))
            eak.partition_graph_defs.append(part.to_graph_def())
        return eak

    def _partition(self, graph) -> dict:
        """One graph per device; a graph on one device is used as it is."""
        devices = {n.assigned_device_name for n in graph.op_nodes()}
        if len(devices) <= 1:
            name = devices.pop() if devices else self.device_mgr.default_device.name
            return {name: graph}
        return partition_by_device(
            graph, lambda name: self.device_mgr.lookup(name).incarnation)

    # -- running ----------------------------------------------------------------------------
    async def run_executors(self, eak: ExecutorsAndKeys, args: list,
                            options: config_pb2.RunOptions | None = None,
                            run_metadata: config_pb2.RunMetadata | None = None, *,
                            time_budget_s: float | None = None,
                            warn_overrun: bool = False) -> list:
        """Run one step: every partition's executor, gathered; returns the retvals."""
        self._check_open()
        collector = None
        if run_metadata is not None and wants_trace(options):
            collector = StepStatsCollector()
        ctx = StepContext(args, len(eak.fetches),
                          rendezvous=Rendezvous() if len(eak.executors) > 1 else None,
                          step_stats=collector,
                          resource_mgr=self.device_mgr.default_device.resource_mgr,
                          time_budget_s=time_budget_s, warn_overrun=warn_overrun)
        runner = get_runner()
        timeout_ms = options.timeout_in_ms if options is not None else 0
        if timeout_ms <= 0:
            timeout_ms = self.config.operation_timeout_in_ms
        step = run_states([ex.new_state(ctx, runner) for ex in eak.executors], ctx)
        # A deadline aborts the step as an error would (kernels already in threads are
        # waited for); close() aborts the steps still active.
        timer = None
        if timeout_ms > 0:
            timer = runner.loop.call_later(
                timeout_ms / 1000.0, ctx.on_error,
                errors.DeadlineExceededError(None, None, f"Timed out after {timeout_ms} ms "
                                                         f"waiting for the step to finish"))
        self._active_steps.add(ctx)
        try:
            await step
        finally:
            self._active_steps.discard(ctx)
            if timer is not None:
                timer.cancel()
        if run_metadata is not None and options is not None and options.output_partition_graphs:
            run_metadata.partition_graphs.extend(eak.partition_graph_defs)
        if collector is not None:
            collector.finalize(run_metadata.step_stats)
        retvals = ctx.retvals
        for i, value in enumerate(retvals):
            if value is None:
                raise errors.InvalidArgumentError(
                    None, None, f"Retval[{i}] does not have value (fetch {eak.fetches[i]} was "
                                f"not computed: it is dead, in an untaken branch of a cond)")
        return retvals

    def close(self) -> None:
        """Cancel the steps still running (as TF's Close), then release the devices: a
        step left waiting on pool work the shut-down pool drops would never finish."""
        self.closed = True
        err = errors.CancelledError(None, None, "Session has been closed.")
        for ctx in list(self._active_steps):
            ctx.on_error(err)
        self._executors.clear()
        self.device_mgr.shutdown()
