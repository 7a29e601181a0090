"""DirectSession: the in-process session runtime (TF's DirectSession).

It holds the full graph (a GraphState, extended incrementally), and per distinct
(feeds, fetches, targets) signature a cached set of executors: the graph is copied,
rewritten for execution (feeds -> _Arg, fetches -> _Retval), pruned, placed (here with
place_pruned_graph, else when the graph was extended), partitioned by device, passed
through the optimization passes, and turned into one executor per partition by the
factory of ConfigProto.experimental.executor_type (executor_factory.py). A run is one
executor state per partition; results come back through the call frame. A partial run
(partial_run.py) is the same with feeds -> client-terminated _Recv and fetches ->
_Send, its step kept alive across calls. Expensive kernels run on the session's inter-op
pools (thread_pools.py).

Thread-safe, as TF's: threads (each with its own loop) may extend, build and run at
once. A lock guards the graph state (extend, and the copy a build starts from); the
executors cache is filled once per signature (a thread or run asking while another
builds it waits for that build), and a build that fails leaves nothing behind. Builds
are plain functions: `get_executors` builds on the calling thread, the awaitable
`get_executors_async` on a build thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field
from time import perf_counter

from aioflow.framework import errors
from aioflow.framework.gc_util import paused_gc
from aioflow.graph.partition import partition_by_device, reachable_library
from aioflow.graph.subgraph import rewrite_graph_for_execution
from aioflow.passes.graph_optimizer import optimize_graph
from aioflow.passes.registry import Grouping, PassOptions, global_registry
from aioflow.proto import config_pb2, graph_pb2
from aioflow.runtime import executor_factory
from aioflow.runtime.build_pool import run_in_build_thread
from aioflow.runtime.cost_model import update_cost_models
from aioflow.runtime.device import DeviceMgr
from aioflow.runtime.executor import ExecutorImpl, run_states
from aioflow.runtime.function_runtime import FunctionLibraryRuntime
from aioflow.runtime.graph_state import GraphState
from aioflow.runtime.loop_runner import get_runner
from aioflow.runtime.partial_run import PartialRun, PartialRunHandle, client_keys
from aioflow.runtime.quiet_fp import quiet, restore
from aioflow.runtime.rendezvous import Rendezvous
from aioflow.runtime.segments import segments_default
from aioflow.runtime.step_context import StepContext, step_kernel_context
from aioflow.runtime.step_stats import StepStatsCollector, wants_trace
from aioflow.runtime.thread_pools import check_pool_index, session_pools

# The open DirectSessions (weakly): Session.reset clears containers in all of them and
# closes them.
_LIVE_SESSIONS: weakref.WeakSet = weakref.WeakSet()
# After a deadline has aborted a step, how long the run waits for its kernels to stop
# before it raises anyway (at most a tenth of the timeout).
DEADLINE_GRACE_S = 0.01
# A GraphDef given to `extend` is copied this many nodes at a time: one CopyFrom of a big
# one holds the GIL for milliseconds (every thread, the event loop too, waits).
_COPY_CHUNK = 1000


@dataclass
class ExecutorsAndKeys:
    """The executors of one signature; arg i is feeds[i], retval i is fetches[i]."""

    feeds: tuple[str, ...]
    fetches: tuple[str, ...]
    targets: tuple[str, ...]
    executors: list[ExecutorImpl] = field(default_factory=list)
    partition_graphs: list = field(default_factory=list)
    _partition_graph_defs: list | None = None
    factory: object = None  # the ExecutorFactory that built `executors`
    executor_options: list = field(default_factory=list)  # per partition, its options
    # Executors of the same partitions by another executor type (schedule_override).
    by_type: dict = field(default_factory=dict)
    # A partial run's signature: feed / fetch name -> the rendezvous key of its
    # client-terminated _Recv / _Send.
    feed_keys: dict = field(default_factory=dict)
    fetch_keys: dict = field(default_factory=dict)
    step_count: int = 0  # steps run (GraphOptions.build_cost_model counts them)
    cost_models: dict = field(default_factory=dict)  # partition index -> its CostModel
    needs_rendezvous: bool = False  # several partitions, or a user graph's _Send/_Recv
    # The one compiled segment that is the whole step (one partition of nothing else:
    # ExecutorImpl.whole_segment), or None; run_executors calls it directly.
    whole: object = None

    @property
    def partition_graph_defs(self) -> list[graph_pb2.GraphDef]:
        """The partitions as GraphDefs (RunOptions.output_partition_graphs), made on
        first request: a run that does not ask never pays for them."""
        if self._partition_graph_defs is None:
            self._partition_graph_defs = [g.to_graph_def() for g in self.partition_graphs]
        return self._partition_graph_defs


class DirectSession:
    """Graph state and executors cache of one Session."""

    def __init__(self, config: config_pb2.ConfigProto | None = None, inline_all: bool = False,
                 compile_segments: bool = True):
        self.config = config if config is not None else config_pb2.ConfigProto()
        # The session's inter-op pools (thread_pools.py); the devices run on the first.
        self.thread_pools = session_pools(self.config)
        # A negative inter_op_parallelism_threads: every run in the caller's thread (TF).
        self._run_in_caller_thread = self.config.inter_op_parallelism_threads < 0
        self.device_mgr = DeviceMgr.from_config(self.config, self.thread_pools[0])
        self.inline_all = inline_all
        self.compile_segments = compile_segments
        self._state = GraphState(self.device_mgr, self.config)
        self._lock = threading.Lock()  # the graph state: extend, and a build's copy
        self._cache_lock = threading.Lock()  # _executors and _building
        self._executors: dict[tuple, ExecutorsAndKeys] = {}
        self._building: dict[tuple, Future] = {}
        self._active_steps: set[StepContext] = set()
        self._op_timeout_ms = self.config.operation_timeout_in_ms
        graph_options = self.config.graph_options
        self._cost_model_every = graph_options.build_cost_model
        self._cost_model_after = graph_options.build_cost_model_after
        self._function_runtimes: dict[str, FunctionLibraryRuntime] = {}  # by device
        self._runner_loop = None  # the loop of the last run, and its runner
        self._partial_runs: dict[str, PartialRun] = {}  # by handle
        # place_pruned_graph: where stateful nodes were placed, by name (_lock).
        self._stateful_placements: dict[str, str] = {}
        self._partial_handles = itertools.count()  # TF's handle_name_counter_
        self._edge_names = itertools.count()  # TF's edge_name_counter_
        self._runner = None
        self.closed = False
        self._closed_by_reset = False
        _LIVE_SESSIONS.add(self)  # Session.reset reaches every open session

    # -- the graph ------------------------------------------------------------------------
    def extend(self, graph_def: graph_pb2.GraphDef) -> None:
        """Add the nodes of `graph_def`; a name already in the session is an error, as is
        anything construct.py rejects (the session is then unchanged)."""
        copy = graph_pb2.GraphDef()  # the caller may reuse its message
        nodes = graph_def.node
        for start in range(0, len(nodes), _COPY_CHUNK):  # no long C call holding the GIL
            copy.node.extend(nodes[start:start + _COPY_CHUNK])
        versions = graph_def.versions if graph_def.HasField("versions") else None
        library = graph_def.library if graph_def.HasField("library") else None
        self.extend_nodes(copy.node, versions, library=library)

    def extend_nodes(self, node_defs, versions=None, blocking: bool = True,
                     validated: bool = False, library=None, arg_types=None) -> bool:
        """`extend` from NodeDefs the session may keep (no copy). With `blocking=False`
        it returns False at once, having done nothing, when another thread holds the
        graph (the caller is a loop that must not wait). `validated`: the NodeDefs come
        from a Python Graph, which validated each op when it was created or imported.
        `library`: functions the nodes may call (a FunctionDefLibrary or a
        FunctionLibraryDefinition), added first. `arg_types`: per NodeDef its (input,
        output) types when the caller knows them (validated NodeDefs), else None."""
        if not self._lock.acquire(blocking):
            return False
        try:
            self._check_open()
            self._check_new_names(node_defs)
            if library is not None:
                self._state.add_library(library)
            if node_defs:
                with paused_gc():
                    self._state.extend(node_defs, versions, validated, arg_types)
            elif versions is not None:
                self._state.set_versions(versions)
        finally:
            self._lock.release()
        return True

    def _check_new_names(self, node_defs) -> None:
        by_name = self._state.by_name
        for node in node_defs:
            if node.name in by_name:
                raise errors.InvalidArgumentError(
                    node, None, f"GraphDef argument to Extend includes node '{node.name}', which "
                                f"was created by a previous call to Create or Extend in this "
                                f"session.")

    @property
    def graph_def(self) -> graph_pb2.GraphDef:
        """The session's graph as it was given (TF's original_graph_def), a copy."""
        with self._lock:
            graph_def = graph_pb2.GraphDef()
            graph_def.versions.CopyFrom(self._state.graph.versions)
            if self._state.library:
                graph_def.library.CopyFrom(self._state.library.to_proto())
            graph_def.node.extend(self._state.node_defs)
        return graph_def

    _graph_def = graph_def  # the name tests of the merged GraphDef read

    @property
    def num_nodes(self) -> int:
        """How many nodes the session's graph has (a build's cost grows with it)."""
        return len(self._state.by_name)

    def _check_open(self) -> None:
        if self.closed:
            if self._closed_by_reset:  # the client does not know: TF's runtime error
                raise errors.CancelledError(None, None, "Session has been closed.")
            raise RuntimeError("Attempted to use a closed Session.")

    # -- executors --------------------------------------------------------------------------
    def cached_executors(self, key: tuple) -> ExecutorsAndKeys | None:
        """The executors of `key` = (feeds, fetches, targets) if built (no lock: a read)."""
        return self._executors.get(key)

    def get_executors(self, feeds, fetches, targets) -> ExecutorsAndKeys:
        """The (cached) executors for a signature, built here if needed (or the build
        another thread has started, waited for); names are sorted into the key."""
        key = (feeds, fetches, targets)
        eak = self._executors.get(key)
        if eak is not None:
            return eak
        eak, fut, owner = self.claim_build(key)
        if eak is not None:
            return eak
        if not owner:
            return fut.result()
        return self.build(key, fut)

    async def get_executors_async(self, feeds, fetches, targets) -> ExecutorsAndKeys:
        """`get_executors` awaited: a build runs on a build thread, off the loop (the
        build is claimed there: a run cancelled before its job starts claims nothing)."""
        key = (feeds, fetches, targets)
        eak = self._executors.get(key)
        if eak is not None:
            return eak
        return await self.wait_for(await run_in_build_thread(self.build_or_join, key))

    def build_or_join(self, key) -> ExecutorsAndKeys | Future:
        """On a build thread: the executors of `key`, built here unless another thread is
        building them (then the future of that build)."""
        eak, fut, owner = self.claim_build(key)
        if eak is not None:
            return eak
        return self.build(key, fut) if owner else fut

    @staticmethod
    async def wait_for(result: ExecutorsAndKeys | Future) -> ExecutorsAndKeys:
        """`result`, or what the build it is the future of gives (shared: a waiter that
        is cancelled does not cancel it for the others)."""
        if isinstance(result, Future):
            return await asyncio.shield(asyncio.wrap_future(result))
        return result

    def claim_build(self, key) -> tuple[ExecutorsAndKeys | None, Future, bool]:
        """(cached executors, or the future of the build of `key` and whether the caller
        owns it, i.e. must build it)."""
        with self._cache_lock:
            eak = self._executors.get(key)
            if eak is not None:
                return eak, None, False
            fut = self._building.get(key)
            if fut is not None:
                return None, fut, False
            fut = self._building[key] = Future()
            fut.set_running_or_notify_cancel()  # nobody can cancel a shared build
            return None, fut, True

    def build(self, key, fut: Future) -> ExecutorsAndKeys:
        """Build the executors of `key`, publish them (or the error) to those waiting."""
        try:
            with paused_gc():
                eak = self._create_executors(*key)
            self._check_open()
        except BaseException as e:
            with self._cache_lock:
                del self._building[key]
            fut.set_exception(e)
            raise
        with self._cache_lock:
            self._executors[key] = eak
            del self._building[key]
        fut.set_result(eak)
        return eak

    def _place_pruned(self, options: PassOptions) -> None:
        """Place a step's pruned graph; stateful nodes stay where an earlier step placed
        them (TF's GraphExecutionState Save/RestoreStatefulNodes): a variable must not
        move to another device's resources between steps."""
        saved = self._stateful_placements
        with self._lock:
            for node in options.graph.op_nodes():
                device = saved.get(node.name) if node.op_def.is_stateful else None
                if device is not None:
                    node.assigned_device_name = device
        self._state.place_step_graph(options)
        with self._lock:
            for node in options.graph.op_nodes():
                if node.op_def.is_stateful:
                    saved.setdefault(node.name, node.assigned_device_name)

    def _create_executors(self, feeds, fetches, targets, partial: bool = False
                          ) -> ExecutorsAndKeys:
        """`partial`: for a partial run (feeds and fetches through the rendezvous)."""
        self._check_open()
        with self._lock:
            graph = self._state.snapshot(feeds + fetches + targets)
            graph_nodes = len(self._state.by_name)  # (what grappler's size test counts)
        device = self.device_mgr.default_device
        rewrite_graph_for_execution(graph, list(feeds), list(fetches), list(targets), device.name,
                                    use_function_convention=not partial,
                                    incarnation=device.incarnation)
        options = PassOptions(graph=graph, config=self.config, device_mgr=self.device_mgr)
        if self._state.place_pruned_graph:  # placed per step, the pruned graph only (TF)
            self._place_pruned(options)
        global_registry().run_grouping(Grouping.POST_REWRITE_FOR_EXEC, options)
        partitions = self._partition(options.graph)
        options.partition_graphs = partitions
        global_registry().run_grouping(Grouping.POST_PARTITIONING, options)
        factory = executor_factory.get_factory(self.config.experimental.executor_type)
        eak = ExecutorsAndKeys(feeds, fetches, targets, factory=factory)
        if partial:
            eak.feed_keys, eak.fetch_keys = client_keys(feeds, fetches, device)
        optimizer_options = self.config.graph_options.optimizer_options
        parts = options.partition_graphs
        # A value that is dead on one device (an untaken cond branch) arrives dead on
        # the other: then every partition tracks deadness.
        deadness = len(parts) > 1 and any(
            n.is_control_flow for part in parts.values() for n in part.op_nodes())
        # True means the default: on unless AIOFLOW_SEGMENTS=0 (a debugging switch).
        segments = self.compile_segments and segments_default()
        for device_name, part in parts.items():
            device = self.device_mgr.lookup(device_name)
            # The GraphOptimizer per partition: constant folding and CSE, as TF's
            # OptimizerOptions ask (on at the default L1, off at L0).
            optimize_graph(part, optimizer_options, device.device_type,
                           self.config.graph_options.rewrite_options, graph_nodes,
                           fetches_known=True)
            kwargs = dict(inline_all=self.inline_all, deadness=deadness, segments=segments,
                          function_library=self.function_runtime(device, segments))
            eak.executors.append(factory.new_executor(part, device, **kwargs))
            eak.executor_options.append(kwargs)
            eak.partition_graphs.append(part)
        eak.needs_rendezvous = (len(eak.executors) > 1
                                or any(ex.has_transfers for ex in eak.executors))
        if len(eak.executors) == 1 and not partial:
            eak.whole = eak.executors[0].whole_segment
        return eak

    def function_runtime(self, device, segments: bool | None = None) -> FunctionLibraryRuntime:
        """The FunctionLibraryRuntime of `device` over the session's library (one per
        device, made on first use; its instantiations are cached for the session)."""
        flr = self._function_runtimes.get(device.name)
        if flr is None:
            with self._cache_lock:
                flr = self._function_runtimes.get(device.name)
                if flr is None:
                    flr = self._function_runtimes[device.name] = FunctionLibraryRuntime(
                        self._state.library, device, self.device_mgr, self.config,
                        inline_all=self.inline_all, segments=segments)
        return flr

    def _partition(self, graph) -> dict:
        """One graph per device (each with the functions it calls); a graph on one device
        is used as it is."""
        devices = {n.assigned_device_name for n in graph.op_nodes()}
        if len(devices) <= 1:
            name = devices.pop() if devices else self.device_mgr.default_device.name
            if self.device_mgr.lookup(name).device_type == "CPU":  # (a GPU: its copies)
                graph.library = reachable_library(graph.library, graph)
                return {name: graph}
        return partition_by_device(
            graph, lambda name: self.device_mgr.lookup(name).incarnation, self._edge_names)

    # -- running ----------------------------------------------------------------------------
    def _run_states(self, eak: ExecutorsAndKeys, options, ctx, runner) -> list:
        """The states of a run, on the inter-op pool its RunOptions pick (checked as
        TF checks the index; -1, or a negative inter_op_parallelism_threads: the
        caller's thread)."""
        index = options.inter_op_thread_pool if options is not None else 0
        if not index and self._run_in_caller_thread:
            index = -1
        if not index:
            return self._step_states(eak, ctx, runner)
        check_pool_index(index, len(self.thread_pools))
        return self._states_on_pool(eak, ctx, runner, index)

    def _step_states(self, eak: ExecutorsAndKeys, ctx, runner) -> list:
        """One executor state per partition for a step starting now."""
        override = executor_factory.current_override()
        if override is None:
            return [ex.new_state(ctx, runner) for ex in eak.executors]
        return self._states_of_override(eak, override, ctx, runner)

    def _states_on_pool(self, eak: ExecutorsAndKeys, ctx, runner, index: int) -> list:
        """The states of a run on inter-op pool `index` (-1: the caller's thread: every
        kernel inline on the loop, as the single-threaded executor runs them)."""
        if index == -1:
            single = executor_factory.get_factory("SINGLE_THREADED_EXECUTOR")
            return self._states_by(eak, single, ctx, runner, None)
        ctx.inter_op_pool = self.thread_pools[index]
        return self._step_states(eak, ctx, runner)

    def _states_of_override(self, eak: ExecutorsAndKeys, override, ctx, runner) -> list:
        """The step's states by the executor type of a schedule_override."""
        factory = executor_factory.get_factory(override.executor_type)
        return self._states_by(eak, factory, ctx, runner, override.seed)

    def _states_by(self, eak: ExecutorsAndKeys, factory, ctx, runner, seed) -> list:
        """The step's states with executors of `factory`: the same partitions, executors
        built on first use (here, on the loop: an override and a run in the caller's
        thread are debugging tools)."""
        if factory is eak.factory:
            executors = eak.executors
        else:
            executors = eak.by_type.get(factory)
            if executors is None:
                executors = eak.by_type[factory] = [
                    factory.new_executor(part, ex.device, **options) for part, ex, options in
                    zip(eak.partition_graphs, eak.executors, eak.executor_options, strict=True)]
        return factory.new_states(executors, ctx, runner, seed)

    async def run_executors(self, eak: ExecutorsAndKeys, args: list,
                            options: config_pb2.RunOptions | None = None,
                            run_metadata: config_pb2.RunMetadata | None = None, *,
                            time_budget_s: float | None = None,
                            warn_overrun: bool = False, gate=None,
                            started: float = 0.0) -> list:
        """Run one step: every partition's executor, gathered; returns the retvals.
        `gate`: the loop's RunGate, told what starting this run cost since `started`."""
        self._check_open()
        update_cost_model = self._counts_for_cost_model(eak)
        if (eak.whole is not None and options is None and run_metadata is None
                and not (update_cost_model or warn_overrun or self._run_in_caller_thread)
                and self._op_timeout_ms <= 0):
            retvals = self._run_whole(eak, args, gate, started)
            if retvals is not None:
                return retvals
        collector = None
        if (run_metadata is not None and wants_trace(options)) or update_cost_model:
            collector = StepStatsCollector()
        ctx = StepContext(args, len(eak.fetches),
                          rendezvous=Rendezvous() if eak.needs_rendezvous else None,
                          step_stats=collector,
                          resource_mgr=self.device_mgr.default_device.resource_mgr,
                          time_budget_s=time_budget_s, warn_overrun=warn_overrun)
        loop = asyncio.get_running_loop()
        runner = self._runner if loop is self._runner_loop else self._runner_of(loop)
        timeout_ms = options.timeout_in_ms if options is not None else 0
        if timeout_ms <= 0:
            timeout_ms = self._op_timeout_ms
        step = run_states(self._run_states(eak, options, ctx, runner), ctx)
        self._active_steps.add(ctx)
        if gate is not None:
            gate.spend(perf_counter() - started)
        try:
            if timeout_ms > 0:
                await _with_deadline(step, ctx, timeout_ms, loop)
            else:
                await step
        finally:
            self._active_steps.discard(ctx)
        if run_metadata is not None and options is not None and options.output_partition_graphs:
            run_metadata.partition_graphs.extend(eak.partition_graph_defs)
        if update_cost_model:
            update_cost_models(eak.cost_models, eak.executors, eak.partition_graphs, collector)
            if run_metadata is not None:
                for i in range(len(eak.partition_graphs)):
                    eak.cost_models[i].add_to_cost_graph_def(run_metadata.cost_graph)
        if collector is not None and run_metadata is not None:
            collector.finalize(run_metadata.step_stats)
        retvals = ctx.retvals
        for i, value in enumerate(retvals):
            if value is None:
                raise errors.InvalidArgumentError(
                    None, None, f"Retval[{i}] does not have value (fetch {eak.fetches[i]} was "
                                f"not computed: it is dead, in an untaken branch of a cond)")
        return retvals

    def _run_whole(self, eak: ExecutorsAndKeys, args: list, gate, started: float):
        """A step that is one compiled segment, run here as one call (no step state, no
        executor state: nothing can be in flight) when the segment is compiled and the
        loop's runner would drain a new run in the caller's stack anyway. The retvals,
        or None: run it as usual (not compiled yet, an input too large to stay on the
        loop, an error: the executor then names the node; the kernels are pure, so
        running them again is safe)."""
        fn = eak.whole.fn
        if fn is None or executor_factory.current_override() is not None:
            return None
        loop = asyncio.get_running_loop()
        runner = self._runner if loop is self._runner_loop else self._runner_of(loop)
        if not runner.may_run_inline():
            return None
        start = perf_counter()
        retvals = self._call_whole(fn, eak, args)
        ended = perf_counter()
        runner.ran_inline(ended - start)
        if retvals is not None and gate is not None:
            gate.spend(ended - started)
        return retvals

    def run_whole_here(self, eak: ExecutorsAndKeys, args: list):
        """For a blocking caller outside the loop (SyncSession): a step that is one
        compiled segment run on the caller's thread, as `_run_whole` runs it on the loop
        (its kernels are pure and thread-safe: pool threads run them too). The retvals,
        or None: run it on the loop (also for a traced or timed run, which the caller
        does not ask here)."""
        self._check_open()
        fn = eak.whole.fn if eak.whole is not None else None
        if (fn is None or self._op_timeout_ms > 0 or self._run_in_caller_thread
                or self._cost_model_every > 0):  # (a step the cost model may time)
            return None
        self._counts_for_cost_model(eak)
        return self._call_whole(fn, eak, args)

    def _call_whole(self, fn, eak: ExecutorsAndKeys, args: list):
        kctx = step_kernel_context(args, len(eak.fetches),
                                   self.device_mgr.default_device.resource_mgr)
        mode = quiet()
        try:
            done = fn(kctx, ()) is not None
        except Exception:  # noqa: BLE001 - run as usual: the executor names the node
            done = False
        finally:
            restore(mode)
        return kctx.retvals if done else None

    def _counts_for_cost_model(self, eak: ExecutorsAndKeys) -> bool:
        """Count a step of `eak`; whether it updates the cost model (TF: every
        `build_cost_model` steps once `build_cost_model_after` steps have run)."""
        step = eak.step_count
        eak.step_count = step + 1
        every = self._cost_model_every
        if every <= 0:
            return False
        measured = step - self._cost_model_after
        return measured >= 0 and (measured + 1) % every == 0

    def _runner_of(self, loop):
        self._runner_loop = loop
        self._runner = runner = get_runner(loop)
        return runner

    def reset(self, containers=None) -> None:
        """Drop the named resource containers (none given: the default one) on every
        device: their variables are gone (TF's DirectSession::Reset)."""
        for device in self.device_mgr.devices:
            mgr = device.resource_mgr
            for container in containers or [mgr.default_container]:
                mgr.cleanup(container)

    @staticmethod
    def reset_all(containers=None) -> None:
        """TF's Session.reset on the local target (DirectSessionFactory::Reset): the
        containers of every open session of this process are reset, then every one of
        those sessions is closed (a later run raises TF's CancelledError)."""
        sessions = [s for s in list(_LIVE_SESSIONS) if not s.closed]
        for session in sessions:
            session.reset(containers)
        for session in sessions:
            session._closed_by_reset = True
            session.close()

    def list_devices(self) -> list:
        """The session's devices' attributes (TF's Session.list_devices)."""
        return [device.attributes() for device in self.device_mgr.devices]

    def close(self) -> None:
        """Cancel the steps still running (as TF's Close), then release the devices: a
        step left waiting on pool work the shut-down pool drops would never finish."""
        self.closed = True
        err = errors.CancelledError(None, None, "Session has been closed.")
        for ctx in list(self._active_steps):
            ctx.on_error(err)
        self._partial_runs.clear()
        self._executors.clear()
        self.device_mgr.shutdown()
        for pool in self.thread_pools[1:]:  # (the first is the devices')
            if pool.owned:
                pool.shutdown(wait=False)


    # -- partial runs (see partial_run.py) -------------------------------------------------
    async def partial_run_setup(self, feeds: tuple, fetches: tuple, targets: tuple,
                                time_budget_s: float | None = None) -> PartialRunHandle:
        """Build the signature's partial-run executors and start its step on the running
        loop; the handle names it for `partial_run` (TF's PRunSetup)."""
        self._check_open()
        if not self._state.by_name:
            raise errors.InvalidArgumentError(
                None, None, "Session was not created with a graph before PRunSetup()!")
        key = (feeds, fetches, targets, True)
        eak = self._executors.get(key)
        if eak is None:
            eak = await self.wait_for(await run_in_build_thread(self.build_or_join, key))
        self._check_open()
        handle = PartialRunHandle(f"{','.join(feeds)}->{','.join(fetches)}/{','.join(targets)}"
                                  f"/1/;{next(self._partial_handles)}")
        loop = asyncio.get_running_loop()
        runner = self._runner if loop is self._runner_loop else self._runner_of(loop)
        ctx = StepContext([], 0, rendezvous=Rendezvous(),
                          resource_mgr=self.device_mgr.default_device.resource_mgr,
                          time_budget_s=time_budget_s)
        run = PartialRun(str(handle), eak, ctx, loop)
        run.states = states = self._step_states(eak, ctx, runner)
        self._partial_runs[run.handle] = run
        self._active_steps.add(ctx)
        run.task = loop.create_task(self._partial_step(run, states))
        run.task.add_done_callback(_retrieve)
        weakref.finalize(handle, _handle_dropped, weakref.ref(self), run.handle, loop)
        return handle

    async def _partial_step(self, run: PartialRun, states: list) -> None:
        try:
            await run_states(states, run.ctx)
        finally:
            self._active_steps.discard(run.ctx)

    async def partial_run(self, handle: str, feeds: dict, fetches: tuple) -> list:
        """Feed `feeds` (name -> value) into the partial run's step and return the values
        of `fetches` (TF's PRun: its checks, errors and order)."""
        self._check_open()
        run = self._partial_runs.get(str(handle))
        if run is None:
            raise errors.InvalidArgumentError(
                None, None, "Must run 'setup' before performing partial runs!")
        if run.loop is not asyncio.get_running_loop():
            raise errors.FailedPreconditionError(
                None, None, "A partial run continues on the event loop of its setup.")
        run.check_names(feeds, fetches)
        # No lock: an extension only adds nodes (edges into new nodes), and a rebuild
        # of the whole graph replaces the dict this reads.
        run.check_fetch(self._state.by_name, feeds, fetches)
        try:
            run.send_inputs(feeds)
            if feeds:  # propagate them now: a cheap fetch is then ready, no loop turn
                runner = (self._runner if run.loop is self._runner_loop
                          else self._runner_of(run.loop))
                runner.drain_now()
            values = await run.recv_outputs(fetches, self._op_timeout_ms)
        except asyncio.CancelledError:
            self._partial_runs.pop(run.handle, None)
            raise
        except BaseException as e:
            self._partial_runs.pop(run.handle, None)
            run.abort(e if isinstance(e, errors.OpError) else errors.CancelledError(
                None, None, "Partial run failed"))
            await run.wait_done()
            raise
        if run.mark(feeds, fetches):
            self._partial_runs.pop(run.handle, None)
            await run.wait_done()
        return values

    def _forget_partial_run(self, handle: str) -> None:
        """The handle was dropped: cancel the step, release its state."""
        run = self._partial_runs.pop(handle, None)
        if run is not None:
            run.abort(errors.CancelledError(None, None, "The partial run's handle was dropped"))

    @property
    def num_partial_runs(self) -> int:
        """Partial runs set up and neither finished nor dropped."""
        return len(self._partial_runs)


#: TF's DirectSession message for a run past RunOptions.timeout_in_ms (WaitForNotification).
TIMED_OUT = "Timed out waiting for notification"


async def _with_deadline(step, ctx: StepContext, timeout_ms: int, loop) -> None:
    """Await `step`, but raise DeadlineExceededError once `timeout_ms` has passed.

    At the deadline the step is aborted as an error would abort it (async kernels are
    cancelled, pool work not yet started is dropped, nothing new is scheduled). Kernels
    normally stop at once; the run waits for them a little (DEADLINE_GRACE_S, at most a
    tenth of the timeout) so that the step ends whole. A kernel that ignores the abort
    (an async kernel swallowing its cancellation, a pool kernel still computing) is left
    to finish on its own: its result is dropped, and the step, already failed, releases
    its state when it returns; the run has raised on time.
    """
    err = errors.DeadlineExceededError(None, None, TIMED_OUT)
    task = loop.create_task(step)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout_ms / 1000.0)
        if not done:
            ctx.on_error(err)
            grace = min(DEADLINE_GRACE_S, timeout_ms / 10000.0)
            done, _ = await asyncio.wait((task,), timeout=grace)
    except asyncio.CancelledError:
        task.cancel()  # as an untimed run: the step is aborted and its kernels waited for
        await asyncio.wait((task,))
        _retrieve(task)
        raise
    if not done:
        task.add_done_callback(_retrieve)
        raise ctx.first_error or err
    task.result()


def _handle_dropped(session_ref, handle: str, loop) -> None:
    """A partial run's handle was collected (any thread): forget the run on its loop."""
    session = session_ref()
    if session is None or session.closed:
        return
    try:
        loop.call_soon_threadsafe(session._forget_partial_run, handle)
    except RuntimeError:  # the loop is closed: its step cannot run any more
        session._partial_runs.pop(handle, None)


def _retrieve(task: asyncio.Task) -> None:
    """Consume the outcome of a step nobody awaits any more (no 'never retrieved' log)."""
    if not task.cancelled():
        task.exception()
