"""Master: the MasterService of one task (TF's Master): client sessions by handle,
each a MasterSession over the cluster the task belongs to (or the cluster a session's
ConfigProto.cluster_def names), and Reset / ListDevices."""

from __future__ import annotations

import itertools

from aioflow.distributed.cluster_spec import ClusterSpec, task_prefix
from aioflow.distributed.master_session import MasterSession
from aioflow.framework import errors
from aioflow.framework.device_spec import DeviceSpec
from aioflow.proto import config_pb2


class Master:
    """The sessions a client opened on `server`'s target."""

    def __init__(self, server):
        self.server = server
        self._sessions: dict[str, MasterSession] = {}
        self._handles = itertools.count(1)

    def _cluster_of(self, config) -> tuple[ClusterSpec, str]:
        """The session's cluster and the master's task in it."""
        server_def = self.server.server_def
        if config is not None and config.cluster_def.job:
            return ClusterSpec(config.cluster_def), task_prefix(
                server_def.job_name, server_def.task_index)
        return self.server.cluster_spec, self.server.task

    async def create_session(self, graph_def, config: config_pb2.ConfigProto | None) -> str:
        """A new session (its graph may be empty); its handle."""
        merged = config_pb2.ConfigProto()
        merged.CopyFrom(self.server.server_def.default_session_config)
        if config is not None:
            merged.MergeFrom(config)
        cluster, me = self._cluster_of(config)
        tasks = [task_prefix(job, i) for job, i, _ in cluster.tasks()]
        if me not in tasks:
            tasks.insert(0, me)
        tasks = matching_tasks(tasks, merged.device_filters)
        handle = f"{self.server.task}/session/{next(self._handles):x}"
        session = MasterSession(handle, me, tasks, self.server.worker_cache(cluster), merged)
        await session.start()
        if graph_def is not None and (graph_def.node or graph_def.HasField("library")):
            session.extend(graph_def)
        self._sessions[handle] = session
        return handle

    def session(self, handle: str) -> MasterSession:
        session = self._sessions.get(handle)
        if session is None:
            raise errors.AbortedError(None, None, f"Session {handle} is not found. Possibly, "
                                                  f"this master has restarted.")
        return session

    async def extend_session(self, handle: str, graph_def) -> None:
        self.session(handle).extend(graph_def)

    async def run_step(self, handle: str, feeds: dict, fetches: tuple, targets: tuple,
                       options=None, run_metadata=None) -> list:
        session = self.session(handle)
        key = (tuple(sorted(feeds)), tuple(fetches), tuple(sorted(targets)))
        plan = await session.plan(*key)
        try:
            return await session.run(plan, feeds, options, run_metadata)
        except errors.AbortedError as e:
            if "Graph handle is not found" not in e.message:
                raise
        # A task restarted since the plan was registered: register again, run once more.
        return await session.run(await session.plan(*key), feeds, options, run_metadata)

    async def close_session(self, handle: str) -> None:
        session = self._sessions.pop(handle, None)
        if session is not None:
            await session.close()

    async def list_devices(self, handle: str = "") -> list:
        """The cluster's devices (a session's, when named), as DeviceAttributes."""
        if handle:
            return self.session(handle).list_devices()
        session = MasterSession("", self.server.task,
                                [task_prefix(j, i) for j, i, _ in self.server.cluster_spec.tasks()],
                                self.server.worker_cache(self.server.cluster_spec))
        await session.start()
        return session.list_devices()

    async def reset(self, containers: list[str] | None) -> None:
        """TF's Reset: clear the containers on every task, close every session."""
        cache = self.server.worker_cache(self.server.cluster_spec)
        for job, i, _ in self.server.cluster_spec.tasks():
            await cache(task_prefix(job, i)).cleanup_all(list(containers or []))
        for handle in list(self._sessions):
            await self.close_session(handle)


def matching_tasks(tasks: list[str], device_filters) -> list[str]:
    """The tasks a session uses: with ConfigProto.device_filters, only those a filter
    matches ("/job:ps", "/job:worker/task:1", ...: TF's DeviceFinder contacts no other
    task, so a between-graph worker need not wait for its peers); else every task."""
    if not device_filters:
        return tasks
    filters = [DeviceSpec.from_string(f) for f in device_filters]
    return [t for t in tasks
            if any(f.is_compatible_with(DeviceSpec.from_string(t)) for f in filters)]
