"""Ray as the cluster engine (`aioflow[ray]`): `ray_cluster(jobs={"ps": 1, "worker": 4})`
starts one aioflow Server per task, each in a Ray actor on the cluster `ray.init()`
connected to (a laptop or many nodes), and returns a RayCluster: its ClusterSpec (each
task at its node's address and a port the actor chose), a session target (the first
task's master), and a watcher that restarts a task whose actor died (Ray restarts the
actor; the watcher starts its server again at the same address, so the master's next
step registers its graphs there and goes on). Tasks talk to each other with TF's
messages, as any aioflow cluster (gRPC, a step's calls on their stream).
"""

from __future__ import annotations

import threading
import time

try:
    import ray
except ImportError:  # the optional extra
    ray = None

from aioflow.distributed.cluster_spec import ClusterSpec

#: How often the watcher looks at the actors.
WATCH_INTERVAL_S = 0.2


class _TaskHost:
    """The body of one task's actor: a Server, started once the cluster is known."""

    def __init__(self, job: str, index: int):
        self.job = job
        self.index = index
        self.server = None
        self.spec = None

    def reserve_address(self) -> str:
        """This node's address and a free port for the task."""
        import socket

        host = ray.util.get_node_ip_address()
        with socket.socket() as s:
            s.bind((host, 0))
            return f"{host}:{s.getsockname()[1]}"

    def start(self, spec: dict) -> str:
        """Serve the task of `spec` (again after a restart); its target."""
        from aioflow.distributed.server import Server

        if self.server is None:
            self.spec = spec
            self.server = Server(spec, self.job, self.index, protocol="grpc")
        return self.server.target

    def started(self) -> bool:
        return self.server is not None

    def pid(self) -> int:
        import os

        return os.getpid()


class RayCluster:
    """Tasks hosted by Ray actors; `target` opens sessions on the chief's master."""

    def __init__(self, jobs: dict[str, int], resources: dict | None = None,
                 max_restarts: int = -1, watch: bool = True):
        if ray is None:
            raise ImportError("ray_cluster needs Ray: pip install 'aioflow[ray]'")
        if not ray.is_initialized():
            ray.init()
        options = {"num_cpus": 0, "max_restarts": max_restarts}
        options.update(resources or {})
        actor = ray.remote(_TaskHost)
        self.tasks = [(job, i) for job in jobs for i in range(jobs[job])]
        self.actors = {t: actor.options(**options).remote(*t) for t in self.tasks}
        addresses = ray.get([self.actors[t].reserve_address.remote() for t in self.tasks])
        spec: dict[str, list] = {job: [None] * n for job, n in jobs.items()}
        for (job, i), address in zip(self.tasks, addresses, strict=True):
            spec[job][i] = address
        self.spec = spec
        self.cluster_spec = ClusterSpec(spec)
        targets = dict(zip(self.tasks, ray.get(
            [self.actors[t].start.remote(spec) for t in self.tasks]), strict=True))
        # The session target: the chief's master (TF's convention: job "chief", else
        # worker 0, else the first task).
        chief = next((t for t in (("chief", 0), ("worker", 0)) if t in targets),
                     self.tasks[0])
        self.target = targets[chief]
        self.restarts = {t: 0 for t in self.tasks}
        self._stop = threading.Event()
        self._watcher = None
        if watch:
            self._watcher = threading.Thread(target=self._watch, daemon=True,
                                             name="aioflow-ray-watcher")
            self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_INTERVAL_S):
            for task in self.tasks:
                if self._stop.is_set():
                    return
                self.ensure_started(task)

    def ensure_started(self, task, timeout: float = 60.0) -> bool:
        """Start the task's server again if its actor was restarted (True if it was)."""
        actor = self.actors[task]
        deadline = time.monotonic() + timeout
        while True:
            try:
                if ray.get(actor.started.remote(), timeout=timeout):
                    return False
                ray.get(actor.start.remote(self.spec), timeout=timeout)
                self.restarts[task] += 1
                return True
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                if time.monotonic() > deadline or self._stop.is_set():
                    raise
                time.sleep(WATCH_INTERVAL_S)  # Ray is restarting the actor

    def kill(self, job: str, index: int) -> None:
        """Kill a task's actor (Ray restarts it; the watcher serves the task again)."""
        ray.kill(self.actors[(job, index)], no_restart=False)

    def shutdown(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        for actor in self.actors.values():
            ray.kill(actor, no_restart=True)


def ray_cluster(jobs: dict[str, int], resources: dict | None = None,
                max_restarts: int = -1, watch: bool = True) -> RayCluster:
    """One aioflow server per task of `jobs` ({"ps": 1, "worker": 2}), each in a Ray
    actor (`resources`: the actors' Ray options, e.g. {"num_cpus": 1} or custom
    resources), watched and restarted; see RayCluster."""
    return RayCluster(jobs, resources, max_restarts, watch)
