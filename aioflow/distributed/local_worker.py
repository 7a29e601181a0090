"""LocalWorker: a task of this process reached through its WorkerInterface without a
socket (TF's local worker shortcut): each call is awaited on the task's home loop."""

from __future__ import annotations

from aioflow.distributed.worker_interface import WorkerInterface


class LocalWorker(WorkerInterface):
    """`worker` (a Worker) called on `home` (its server's HomeLoop)."""

    def __init__(self, worker, home):
        self.worker = worker
        self.home = home
        self.task = worker.task

    async def get_status(self) -> list:
        return await self.home.call(self.worker.get_status())

    async def register_graph(self, graph, config) -> str:
        return await self.home.call(self.worker.register_graph(graph, config))

    async def deregister_graph(self, handle: str) -> None:
        await self.home.call(self.worker.deregister_graph(handle))

    async def run_graph(self, handle, step_id, sends, recv_keys, timeout_s=None) -> dict:
        return await self.home.call(self.worker.run_graph(handle, step_id, sends, recv_keys,
                                                          timeout_s))

    async def recv_tensor(self, step_id: int, key: str) -> tuple:
        return await self.home.call(self.worker.recv_tensor(step_id, key))

    async def abort_step(self, step_id: int, error) -> None:
        await self.home.call(self.worker.abort_step(step_id, error))

    async def cleanup_graph(self, step_id: int) -> None:
        await self.home.call(self.worker.cleanup_graph(step_id))

    async def cleanup_all(self, containers) -> None:
        await self.home.call(self.worker.cleanup_all(containers))
