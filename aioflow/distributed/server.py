"""Server: one task of a cluster (TF 1.x's tf.train.Server): its worker (devices,
registered graphs, steps), its master (client sessions) and, with protocol "grpc",
TF's MasterService and WorkerService on its port.

Every server runs on a home loop of its own (home_loop.py). Servers of one process
find each other by address and call each other's workers directly on their home loops
(TF's LocalMaster and local worker shortcut: no socket between them, whatever the
protocol); a task at an address no server of this process holds is reached by gRPC.
Protocol "in_process" (aioflow's) binds no port at all.
"""

from __future__ import annotations

import itertools
import threading
import weakref

from aioflow.distributed.cluster_spec import ClusterSpec, task_prefix
from aioflow.distributed.home_loop import HomeLoop, shared_home_loop
from aioflow.distributed.local_worker import LocalWorker
from aioflow.distributed.master import Master
from aioflow.distributed.worker import Worker
from aioflow.framework import errors
from aioflow.proto import cluster_pb2, tensorflow_server_pb2

PROTOCOLS = ("grpc", "in_process")

# The started servers of this process, by address ("host:port").
_LOCAL_SERVERS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
_FAKE_PORTS = itertools.count(1)  # port 0 of an in_process server: a name, never bound


def local_server(address: str) -> Server | None:
    """The started server of this process at `address`, if any."""
    return _LOCAL_SERVERS.get(address)


def make_server_def(server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                    config=None) -> tensorflow_server_pb2.ServerDef:
    """TF's _make_server_def: a ServerDef from a ServerDef, ClusterDef, ClusterSpec or
    dict, the job and task inferred where the cluster leaves one choice."""
    server_def = tensorflow_server_pb2.ServerDef()
    if isinstance(server_or_cluster_def, tensorflow_server_pb2.ServerDef):
        server_def.MergeFrom(server_or_cluster_def)
        if job_name is not None:
            server_def.job_name = job_name
        if task_index is not None:
            server_def.task_index = task_index
        if protocol is not None:
            server_def.protocol = protocol
        if config is not None:
            server_def.default_session_config.MergeFrom(config)
        return server_def
    try:
        cluster_spec = ClusterSpec(server_or_cluster_def)
    except TypeError:
        raise TypeError("Could not convert `server_or_cluster_def` to a `tf.train.ServerDef` "
                        "or `tf.train.ClusterSpec`.") from None
    if job_name is None:
        if len(cluster_spec.jobs) != 1:
            raise ValueError("Must specify an explicit `job_name`.")
        job_name = cluster_spec.jobs[0]
    if task_index is None:
        indices = cluster_spec.task_indices(job_name)
        if len(indices) != 1:
            raise ValueError("Must specify an explicit `task_index`.")
        task_index = indices[0]
    server_def = tensorflow_server_pb2.ServerDef(
        cluster=cluster_spec.as_cluster_def(), job_name=job_name, task_index=task_index,
        protocol=protocol if protocol is not None else "grpc")
    if config is not None:
        server_def.default_session_config.MergeFrom(config)
    return server_def


class Server:
    """An in-process server of one task: `Server(cluster, job_name, task_index,
    protocol="grpc", config=None, start=True)`, as TF's."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None, protocol=None,
                 config=None, start: bool = True):
        self._server_def = make_server_def(server_or_cluster_def, job_name, task_index,
                                           protocol, config)
        sd = self._server_def
        if sd.protocol not in PROTOCOLS:
            raise errors.NotFoundError(None, None, f"No server factory registered for the "
                                                   f"given ServerDef: protocol {sd.protocol}")
        self.cluster_spec = ClusterSpec(sd.cluster)
        try:
            self._address = self.cluster_spec.task_address(sd.job_name, sd.task_index)
        except ValueError as e:
            raise errors.InvalidArgumentError(None, None, str(e)) from None
        self.task = task_prefix(sd.job_name, sd.task_index)
        self._home: HomeLoop | None = None
        self.worker: Worker | None = None
        self.master: Master | None = None
        self._grpc = None  # the gRPC service, once started (protocol "grpc")
        self._remote: dict[str, object] = {}  # address -> WorkerInterface of another process
        self._stopped = threading.Event()
        if start:
            self.start()

    # -- TF's API -------------------------------------------------------------------------
    @property
    def server_def(self) -> tensorflow_server_pb2.ServerDef:
        return self._server_def

    @property
    def target(self) -> str:
        """The session target that reaches this server: "grpc://host:port"."""
        return f"grpc://{self._address}"

    def start(self) -> None:
        """Start the worker and master (and the gRPC service); a second call does
        nothing."""
        if self._home is not None:
            return
        sd = self._server_def
        host, _, port = self._address.rpartition(":")
        home = (shared_home_loop() if sd.protocol == "in_process"
                else HomeLoop(f"aioflow-server{self.task}"))
        try:
            self.worker = Worker(self.task, sd.default_session_config, self.peer_of)
            self.master = Master(self)
            if sd.protocol == "grpc":
                from aioflow.distributed import grpc_transport  # grpcio: an optional extra

                bind = f"{host or 'localhost'}:{port}" if port != "0" else f"{host}:0"
                self._grpc, bound = home.call_blocking(grpc_transport.serve(self, bind))
                port = str(bound)
            elif port == "0":
                port = str(next(_FAKE_PORTS))
        except BaseException:
            home.stop()
            raise
        self._address = f"{host}:{port}"
        self._home = home
        with _LOCK:
            if self._address in _LOCAL_SERVERS:
                home.stop()
                self._home = None
                raise errors.AlreadyExistsError(
                    None, None, f"A server of this process is at {self._address} already")
            _LOCAL_SERVERS[self._address] = self

    def join(self) -> None:
        """Block until the server stops (TF's: forever)."""
        while not self._stopped.wait(0.5):
            pass

    @staticmethod
    def create_local_server(config=None, start: bool = True) -> Server:
        """A single-task server, job "localhost", on a free port (TF's)."""
        return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config,
                      start=start)

    # -- aioflow's ------------------------------------------------------------------------
    @property
    def address(self) -> str:
        """The task's "host:port" (the bound port when the cluster said 0)."""
        return self._address

    @property
    def home(self) -> HomeLoop:
        if self._home is None:
            raise errors.FailedPreconditionError(None, None, "The server is not started")
        return self._home

    def stop(self) -> None:
        """Stop serving: steps in flight fail with UnavailableError, the port closes."""
        if self._home is None or self._stopped.is_set():
            return
        home = self._home
        with _LOCK:
            if _LOCAL_SERVERS.get(self._address) is self:
                del _LOCAL_SERVERS[self._address]
        try:
            if threading.current_thread() is home.thread:  # (a __del__ on its own loop)
                home.loop.create_task(self._shutdown())
            else:
                home.call_blocking(self._shutdown(), timeout=5)
        finally:
            home.stop()
            self._stopped.set()

    async def _shutdown(self) -> None:
        if self._grpc is not None:
            await self._grpc.stop(grace=None)
        self.worker.shutdown()
        for remote in self._remote.values():
            await remote.close()

    def __del__(self):
        try:
            self.stop()
        except Exception:  # noqa: BLE001 - at interpreter exit anything may be gone
            pass

    # -- reaching the other tasks -----------------------------------------------------------
    def peer_of(self, task: str):
        """The WorkerInterface of `task` in this server's cluster."""
        return self.worker_cache(self.cluster_spec)(task)

    def worker_cache(self, cluster: ClusterSpec):
        """task prefix -> WorkerInterface, for tasks of `cluster` (TF's WorkerCache)."""
        def worker_of(task: str):
            if task == self.task:
                return LocalWorker(self.worker, self.home)
            job, index = _parse_task(task)
            try:
                address = cluster.task_address(job, index)
            except ValueError:
                raise errors.InvalidArgumentError(
                    None, None, f"Invalid task: {task} is not in the cluster") from None
            peer = local_server(address)
            if peer is not None and peer.worker is not None:
                return LocalWorker(peer.worker, peer.home)
            return self._remote_worker(address, task)
        return worker_of

    def _remote_worker(self, address: str, task: str):
        remote = self._remote.get(address)
        if remote is None:
            from aioflow.distributed import grpc_transport  # grpcio: an optional extra

            remote = self._remote[address] = grpc_transport.GrpcRemoteWorker(address, task)
        return remote

    def __repr__(self) -> str:
        return f"<Server {self.task} at {self._address} ({self._server_def.protocol})>"


def _parse_task(task: str) -> tuple[str, int]:
    """("J", T) of "/job:J/replica:R/task:T"."""
    fields = dict(part.split(":", 1) for part in task.strip("/").split("/"))
    return fields["job"], int(fields["task"])


def cluster_def_of(spec) -> cluster_pb2.ClusterDef:
    return ClusterSpec(spec).as_cluster_def()
