"""MasterSession: one client session on a cluster's master (TF's MasterSession).

It holds the session's full graph, placed over the devices of every task of the
cluster (the master's own task first: an op that asks for no device runs there, as in
TF). Per distinct (feeds, fetches, targets) it builds once: prune, place (with soft
placement and colocation across tasks), partition by device, group the partitions by
task and register each task's share with that task's worker (TF's RegisterGraph, once
per signature). A step is one RunGraph per task under one step id: the feeds go into
the client task's rendezvous and the fetches come back from it (client-terminated
_Recv/_Send, keyed as TF's); tensors between tasks travel by RecvTensor, except a small
feed another task uses, which goes with that task's RunGraph (feed_push.py). The first
error of any task aborts the step on every other task and is what the client sees
(an error that only echoes it, a cancellation or abort, never hides it); every task
then drops the step's state (CleanupGraph). A step that succeeded everywhere needs no
CleanupGraph: each worker drops a step's rendezvous once it is empty.
"""

from __future__ import annotations

import asyncio
import random
import threading
from dataclasses import dataclass, field

from aioflow.distributed.cluster_spec import task_of_device
from aioflow.distributed.feed_push import push_feeds
from aioflow.distributed.local_worker import LocalWorker
from aioflow.framework import dtypes, errors, node_def_util
from aioflow.graph.partition import partition_by_device, reachable_library
from aioflow.graph.subgraph import rewrite_graph_for_execution
from aioflow.passes.registry import Grouping, PassOptions, global_registry
from aioflow.proto import config_pb2
from aioflow.runtime.build_pool import run_in_build_thread
from aioflow.runtime.device import DeviceAttributes, DeviceMgr
from aioflow.runtime.graph_state import GraphState
from aioflow.runtime.partial_run import client_keys

# After the first error, how long the master waits for the other tasks to stop before
# it reports the step's error anyway.
ABORT_GRACE_S = 1.0
# How long a new session waits for the cluster's tasks to come up (TF waits forever).
TASK_WAIT_S = 60.0
# How long a CleanupGraph may take (a task that vanished must not hold the client).
CLEANUP_TIMEOUT_S = 1.0
# A fed Placeholder of a static shape at most this large goes with the RunGraph of
# another task that uses it (larger ones are pulled: between processes of one machine
# through shared memory).
PUSH_MAX_BYTES = 64 << 10


class RemoteDevice:
    """A device of some task as its worker reported it (GetStatus)."""

    def __init__(self, attrs):
        self.name = attrs.name
        self.device_type = attrs.device_type
        self.memory_limit = attrs.memory_limit
        self.incarnation = attrs.incarnation

    def attributes(self) -> DeviceAttributes:
        return DeviceAttributes(self.name, self.device_type, self.memory_limit,
                                self.incarnation)

    def __repr__(self) -> str:
        return f"<RemoteDevice {self.name}>"


@dataclass
class StepPlan:
    """What one signature registered: per task its graph handle; the rendezvous keys
    of the feeds and fetches (on the client task)."""

    feeds: tuple
    fetches: tuple
    targets: tuple
    parts: dict = field(default_factory=dict)    # task -> {device: Graph}, until registered
    handles: dict = field(default_factory=dict)  # task -> graph handle
    feed_keys: dict = field(default_factory=dict)
    fetch_keys: dict = field(default_factory=dict)
    pushed: dict = field(default_factory=dict)  # task -> {feed name: its _Recv's key}
    partitions: list = field(default_factory=list)  # every task's Graphs
    _partition_graph_defs: list | None = None

    @property
    def partition_graph_defs(self) -> list:
        """The partitions as GraphDefs (RunOptions.output_partition_graphs), on demand."""
        if self._partition_graph_defs is None:
            self._partition_graph_defs = [p.to_graph_def() for p in self.partitions]
        return self._partition_graph_defs


class MasterSession:
    """A session's graph and plans on the master of task `client_task`; `worker_of(task)`
    gives a task's WorkerInterface, `tasks` lists the cluster's tasks."""

    def __init__(self, handle: str, client_task: str, tasks: list[str], worker_of,
                 config: config_pb2.ConfigProto | None = None):
        self.handle = handle
        self.client_task = client_task
        self.tasks = [client_task] + [t for t in tasks if t != client_task]
        self.worker_of = worker_of
        self.config = config if config is not None else config_pb2.ConfigProto()
        self.devices: DeviceMgr | None = None
        self._state: GraphState | None = None
        self._lock = threading.Lock()
        self._plans: dict[tuple, StepPlan] = {}
        self._building: dict[tuple, asyncio.Future] = {}
        self._edge_names = iter(range(1 << 62))  # TF's edge_name_counter_
        self._active: dict[int, list] = {}  # step id -> its RunGraph tasks
        self.closed = False

    async def start(self) -> None:
        """Find every task's devices (TF's DeviceFinder: GetStatus on each task), waiting
        for tasks not up yet, as TF's CreateSession does, up to the session's
        operation_timeout_in_ms (else TASK_WAIT_S): then UnavailableError."""
        loop = asyncio.get_running_loop()
        timeout_ms = self.config.operation_timeout_in_ms
        deadline = loop.time() + (timeout_ms / 1000.0 if timeout_ms > 0 else TASK_WAIT_S)
        found = []
        for task in self.tasks:
            found.extend(RemoteDevice(a) for a in await self._status_of(task, deadline))
        self.devices = DeviceMgr(found)
        self._state = GraphState(self.devices, self.config)

    async def _status_of(self, task: str, deadline: float) -> list:
        loop = asyncio.get_running_loop()
        pause = 0.02
        while True:
            try:
                return await asyncio.wait_for(self.worker_of(task).get_status(),
                                              max(0.001, deadline - loop.time()))
            except (errors.UnavailableError, TimeoutError) as e:
                if loop.time() + pause >= deadline:
                    raise errors.UnavailableError(
                        None, None, f"CreateSession: task {task} did not answer: "
                                    f"{e}") from None
            await asyncio.sleep(pause)
            pause = min(1.0, pause * 2)

    @property
    def client_device(self) -> RemoteDevice:
        return self.devices.devices[0]

    # -- the graph ------------------------------------------------------------------------
    def extend(self, graph_def) -> None:
        """Add nodes (TF's ExtendSession); a name the session has is InvalidArgumentError."""
        self._check_open()
        with self._lock:
            for node in graph_def.node:
                if node.name in self._state.by_name:
                    raise errors.InvalidArgumentError(
                        node, None, f"GraphDef argument to Extend includes node "
                                    f"'{node.name}', which was created by a previous call to "
                                    f"Create or Extend in this session.")
            if graph_def.HasField("library"):
                self._state.add_library(graph_def.library)
            versions = graph_def.versions if graph_def.HasField("versions") else None
            if graph_def.node:
                self._state.extend(list(graph_def.node), versions)
            elif versions is not None:
                self._state.set_versions(versions)

    def _check_open(self) -> None:
        if self.closed:
            raise errors.CancelledError(None, None, "Session has been closed.")

    # -- plans ----------------------------------------------------------------------------
    async def plan(self, feeds: tuple, fetches: tuple, targets: tuple) -> StepPlan:
        """The registered plan of a signature, built (off the loop) and registered on
        every task it uses on first request; concurrent requests share one build."""
        key = (feeds, fetches, targets)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        building = self._building.get(key)
        if building is not None:
            return await asyncio.shield(building)
        future = self._building[key] = asyncio.get_running_loop().create_future()
        try:
            plan = await run_in_build_thread(self._build, key)
            for task, parts in plan.parts.items():
                plan.handles[task] = await self.worker_of(task).register_graph(
                    parts, self.config)
            plan.parts = {}
            self._plans[key] = plan
            future.set_result(plan)
            return plan
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # (retrieved: waiters re-raise it)
            raise
        finally:
            del self._building[key]

    def _build(self, key: tuple) -> StepPlan:
        """Prune, place, partition by device, group by task (a build thread)."""
        feeds, fetches, targets = key
        with self._lock:
            graph = self._state.snapshot(feeds + fetches + targets)
        client = self.client_device
        small = _small_feeds(graph, feeds)
        rewrite_graph_for_execution(graph, list(feeds), list(fetches), list(targets),
                                    client.name, use_function_convention=False,
                                    incarnation=client.incarnation)
        options = PassOptions(graph=graph, config=self.config, device_mgr=self.devices)
        if self._state.place_pruned_graph:
            self._state.place_step_graph(options)
        global_registry().run_grouping(Grouping.POST_REWRITE_FOR_EXEC, options)
        graph = options.graph
        devices = {n.assigned_device_name for n in graph.op_nodes()}
        if len(devices) <= 1:
            name = devices.pop() if devices else client.name
            graph.library = reachable_library(graph.library, graph)
            partitions = {name: graph}
        else:
            partitions = partition_by_device(
                graph, lambda name: self.devices.lookup(name).incarnation, self._edge_names)
        options.partition_graphs = partitions
        global_registry().run_grouping(Grouping.POST_PARTITIONING, options)
        plan = StepPlan(feeds, fetches, targets)
        for device, part in options.partition_graphs.items():
            plan.parts.setdefault(task_of_device(device), {})[device] = part
            plan.partitions.append(part)
        plan.feed_keys, plan.fetch_keys = client_keys(feeds, fetches, client)
        pushed = push_feeds(plan.parts, task_of_device(client.name), task_of_device,
                            lambda name: self.devices.lookup(name).incarnation, small)
        plan.pushed = {task: {small[tensor]: key for tensor, key in keys.items()}
                       for task, keys in pushed.items()}
        return plan

    # -- steps ----------------------------------------------------------------------------
    async def run(self, plan: StepPlan, feed_values: dict, options=None,
                  run_metadata=None) -> list:
        """Run one step of `plan` with `feed_values` (feed name -> value); the fetches'
        values in plan order. RunOptions.output_partition_graphs: the partitions go to
        `run_metadata`."""
        self._check_open()
        timeout_ms = options.timeout_in_ms if options is not None else 0
        if timeout_ms <= 0:
            timeout_ms = self.config.operation_timeout_in_ms
        timeout = timeout_ms / 1000.0 if timeout_ms > 0 else None
        step_id = random.getrandbits(63) or 1
        client = self.client_task
        sends = {plan.feed_keys[name]: value for name, value in feed_values.items()}
        recv_keys = [plan.fetch_keys[name] for name in plan.fetches]
        loop = asyncio.get_running_loop()
        calls = {}
        for task, handle in plan.handles.items():
            mine = task == client
            task_sends = sends if mine else {
                key: feed_values[name] for name, key in plan.pushed.get(task, {}).items()}
            calls[task] = loop.create_task(self.worker_of(task).run_graph(
                handle, step_id, task_sends, recv_keys if mine else [], timeout))
        if client not in calls and (sends or recv_keys):
            raise errors.InternalError(None, None, "The client task has no partition")
        self._active[step_id] = list(calls.values())
        try:
            results = await self._gather(step_id, calls, timeout)
        except BaseException as e:
            if isinstance(e, errors.OpError):
                self._forget_plans_after(e, calls)
            # Every task drops what the failed step left (a step that succeeded on every
            # task left nothing: each worker dropped its rendezvous once empty).
            await self._cleanup(step_id, list(calls))
            raise
        finally:
            del self._active[step_id]
        if (run_metadata is not None and options is not None
                and options.output_partition_graphs):
            run_metadata.partition_graphs.extend(plan.partition_graph_defs)
        recvd = results.get(client, {})
        values = []
        for key in recv_keys:
            value, is_dead = recvd[key]
            if is_dead:
                raise errors.InvalidArgumentError(
                    None, None, f"The tensor returned for {plan.fetches[len(values)]} was not "
                                f"valid.")
            values.append(value)
        return values

    def _forget_plans_after(self, err: errors.OpError, calls: dict) -> None:
        """A task that vanished (UnavailableError) or forgot its graphs (restarted:
        AbortedError) gets every plan registered on it again at its next step."""
        lost = set()
        for task, call in calls.items():
            if call.done() and not call.cancelled() and isinstance(
                    call.exception(), (errors.UnavailableError, errors.AbortedError)):
                lost.add(task)
        if isinstance(err, errors.UnavailableError) and not lost:
            lost = set(calls)
        for key, plan in list(self._plans.items()):
            if lost.intersection(plan.handles):
                del self._plans[key]

    async def _gather(self, step_id: int, calls: dict, timeout: float | None) -> dict:
        """Every task's RunGraph result; on the first error (or the deadline) the other
        tasks' steps are aborted and the step's error raised."""
        pending = set(calls.values())
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        first = None
        try:
            while pending and first is None:
                remaining = None if deadline is None else max(0.0, deadline - loop.time())
                done, pending = await asyncio.wait(pending, timeout=remaining,
                                                   return_when=asyncio.FIRST_EXCEPTION)
                if not done:
                    first = errors.DeadlineExceededError(
                        None, None, "Timed out waiting for notification")
                for task in done:
                    if task.exception() is not None:
                        first = _worse(first, _as_op_error(task.exception()))
        except asyncio.CancelledError:
            await self._abort(step_id, calls, pending, errors.CancelledError(
                None, None, "The step was cancelled"))
            raise
        if first is None:
            return {task: call.result() for task, call in calls.items()}
        await self._abort(step_id, calls, pending, first)
        for call in calls.values():  # a root cause a task reported meanwhile wins
            if call.done() and not call.cancelled() and call.exception() is not None:
                first = _worse(first, _as_op_error(call.exception()))
        raise first

    async def _abort(self, step_id: int, calls: dict, pending: set, err) -> None:
        """Tell every task still running the step to abort it; wait a little for them."""
        if not pending:
            return
        aborts = [self.worker_of(task).abort_step(step_id, err)
                  for task, call in calls.items() if call in pending]
        await asyncio.wait([asyncio.ensure_future(a) for a in aborts], timeout=ABORT_GRACE_S)
        _, still = await asyncio.wait(pending, timeout=ABORT_GRACE_S)
        for call in still:
            call.cancel()
        for call in pending:
            call.add_done_callback(_retrieve)

    async def _cleanup(self, step_id: int, tasks: list) -> None:
        """CleanupGraph on every task of the step: awaited on this process's tasks, sent
        without waiting to the others (TF's master does not wait for them either)."""
        local = []
        for task in tasks:
            worker = self.worker_of(task)
            cleanup = asyncio.ensure_future(worker.cleanup_graph(step_id))
            cleanup.add_done_callback(_retrieve)
            if isinstance(worker, LocalWorker):
                local.append(cleanup)
        if local:
            await asyncio.wait(local, timeout=CLEANUP_TIMEOUT_S)

    def list_devices(self) -> list:
        return [d.attributes() for d in self.devices.devices]

    async def close(self) -> None:
        """Abort the steps in flight, deregister every plan's graphs (TF's Close)."""
        if self.closed:
            return
        self.closed = True
        for calls in list(self._active.values()):
            for call in calls:
                call.cancel()
        for plan in list(self._plans.values()):
            for task, handle in plan.handles.items():
                try:
                    await asyncio.wait_for(self.worker_of(task).deregister_graph(handle),
                                           CLEANUP_TIMEOUT_S)
                except Exception:  # noqa: BLE001 - a task gone has nothing to forget
                    pass
        self._plans.clear()


def _as_op_error(exc: BaseException) -> errors.OpError:
    if isinstance(exc, errors.OpError):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        return errors.CancelledError(None, None, "RunGraph was cancelled")
    err = errors.UnknownError(None, None, f"{type(exc).__name__}: {exc}")
    err.__cause__ = exc
    return err


def _derived(err: errors.OpError) -> bool:
    """An error that only echoes another task's (TF's IsDerivedStatus, by class)."""
    return isinstance(err, (errors.CancelledError, errors.AbortedError))


def _worse(first: errors.OpError | None, new: errors.OpError) -> errors.OpError:
    """The error to report: the first, unless it only echoes and `new` does not."""
    if first is None or (_derived(first) and not _derived(new)):
        return new
    return first


def _retrieve(task) -> None:
    if not task.cancelled():
        task.exception()


def _small_feeds(graph, feeds: tuple) -> dict:
    """{tensor name ("node:slot"): feed name} of the feeds that may be pushed: fed
    Placeholders of a static shape of at most PUSH_MAX_BYTES."""
    nodes = {n.name: n for n in graph.op_nodes()}
    small = {}
    for name in feeds:
        node_name, slot = node_def_util.parse_input(name)
        node = nodes.get(node_name)
        if node is None or node.type_string not in ("Placeholder", "PlaceholderV2"):
            continue
        attr = node.def_.attr
        shape = attr["shape"].shape
        if shape.unknown_rank or any(d.size < 0 for d in shape.dim):
            continue
        dtype = dtypes.as_dtype(attr["dtype"].type)
        if dtype == dtypes.string or dtype == dtypes.resource or dtype == dtypes.variant:
            continue
        count = 1
        for d in shape.dim:
            count *= d.size
        if count * dtype.size <= PUSH_MAX_BYTES:
            small[f"{node_name}:{slot}"] = name
    return small
