"""WorkerInterface: what a master and a peer's rendezvous ask of one task (TF's
WorkerInterface, the WorkerService's methods), whatever carries the call: the task's
Worker object in this process (LocalWorker), gRPC (grpc_transport.py) or a Ray actor
(ray_cluster.py).

Values are the runtime's own (NumPy arrays, resource handles); a transport that leaves
the process turns them into TensorProtos and back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class WorkerInterface(ABC):
    """One task's WorkerService, awaited."""

    #: The task this reaches, "/job:J/replica:R/task:T".
    task: str = ""

    @abstractmethod
    async def get_status(self) -> list:
        """The task's devices (DeviceAttributes messages)."""

    @abstractmethod
    async def register_graph(self, graph, config) -> str:
        """Register the task's partition (a GraphDef, nodes assigned to its devices, or
        in-process the per-device Graphs); returns its graph handle."""

    @abstractmethod
    async def deregister_graph(self, handle: str) -> None:
        """Forget a registered graph."""

    @abstractmethod
    async def run_graph(self, handle: str, step_id: int, sends: dict, recv_keys: list,
                        timeout_s: float | None = None) -> dict:
        """Run one step of a registered graph: the values in `sends` (rendezvous key ->
        value) are put into the step's rendezvous first, and the values of `recv_keys`
        are returned once the step is done (key -> (value, is_dead))."""

    @abstractmethod
    async def recv_tensor(self, step_id: int, key: str) -> tuple:
        """(value, is_dead) sent under the rendezvous `key` in step `step_id` on this
        task, awaited until its _Send has run."""

    @abstractmethod
    async def abort_step(self, step_id: int, error) -> None:
        """Abort a step running here (another task failed first)."""

    @abstractmethod
    async def cleanup_graph(self, step_id: int) -> None:
        """Drop what the step left on this task (its rendezvous)."""

    @abstractmethod
    async def cleanup_all(self, containers: list[str]) -> None:
        """Clear the named resource containers (none: the default one) on every device
        of the task (TF's CleanupAll; Session.reset)."""
