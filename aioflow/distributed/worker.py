"""Worker: one task's WorkerService (TF's Worker), in this process.

It owns the task's devices (named "/job:J/replica:R/task:T/device:CPU:N"), whose
resources (variables, queues with a shared_name) outlive every client session, the
graphs masters registered (GraphMgr) and the rendezvous of the steps in flight
(RendezvousMgr). A RunGraph runs all executors of one registered graph as one step under
the master's step id, on the running event loop; a peer's RecvTensor waits in the
step's rendezvous. A master or a peer in this process calls these coroutines directly
(TF's local shortcut); other transports call them from their server side.
"""

from __future__ import annotations

import asyncio

from aioflow.distributed.graph_mgr import GraphMgr
from aioflow.distributed.remote_rendezvous import RendezvousMgr, parse_key
from aioflow.distributed.worker_interface import WorkerInterface
from aioflow.framework import errors
from aioflow.proto import config_pb2, device_attributes_pb2
from aioflow.runtime.build_pool import run_in_build_thread
from aioflow.runtime.device import DeviceMgr
from aioflow.runtime.executor import run_states
from aioflow.runtime.loop_runner import get_runner
from aioflow.runtime.step_context import StepContext


class Worker(WorkerInterface):
    """The WorkerService of task `task` ("/job:J/replica:R/task:T"); `peer_of(task)` is
    the WorkerInterface of another task of the cluster (for RecvTensor)."""

    def __init__(self, task: str, config: config_pb2.ConfigProto | None, peer_of):
        self.task = task
        self.config = config if config is not None else config_pb2.ConfigProto()
        self.device_mgr = DeviceMgr.from_config(self.config, prefix=task)
        self.graph_mgr = GraphMgr(self.device_mgr, self.config)
        self.rendezvous_mgr = RendezvousMgr(task, peer_of)
        self._active: dict[int, StepContext] = {}  # steps running here, by step id

    async def get_status(self) -> list:
        return [device_attributes(d) for d in self.device_mgr.devices]

    async def register_graph(self, graph, config=None) -> str:
        """Build the graph's executors on a build thread (the loop goes on serving)."""
        return await run_in_build_thread(self.graph_mgr.register, graph, config)

    async def deregister_graph(self, handle: str) -> None:
        self.graph_mgr.deregister(handle)

    async def run_graph(self, handle: str, step_id: int, sends: dict, recv_keys: list,
                        timeout_s: float | None = None) -> dict:
        item = self.graph_mgr.get(handle)
        rendezvous = self.rendezvous_mgr.find(step_id)
        for key, value in sends.items():
            rendezvous.send(key, value, False)  # (raises the step's abort, if any)
        ctx = StepContext([], 0, rendezvous=rendezvous,
                          resource_mgr=self.device_mgr.default_device.resource_mgr)
        ctx.step_id = ctx.kernel_ctx.step_id = step_id  # the master's, on every task
        runner = get_runner(asyncio.get_running_loop())
        states = [ex.new_state(ctx, runner) for ex in item.executors]
        self._active[step_id] = ctx
        try:
            await run_states(states, ctx)
            got = {key: await rendezvous.recv(parse_key(key)) for key in recv_keys}
        except asyncio.CancelledError:  # the master gave up on the step
            rendezvous.abort(errors.CancelledError(None, None, "RunGraph cancelled"))
            raise
        finally:
            self._active.pop(step_id, None)
        self.rendezvous_mgr.forget_if_done(step_id)  # (else the last RecvTensor does)
        return got

    async def recv_tensor(self, step_id: int, key: str) -> tuple:
        got = await self.rendezvous_mgr.find(step_id).recv(parse_key(key))
        if step_id not in self._active:  # the step is over here: its last value went
            self.rendezvous_mgr.forget_if_done(step_id)
        return got

    async def abort_step(self, step_id: int, error) -> None:
        ctx = self._active.get(step_id)
        if ctx is not None:
            ctx.on_error(error)
        else:  # not started yet (or done): its rendezvous fails what comes
            self.rendezvous_mgr.find(step_id).abort(error)

    async def cleanup_graph(self, step_id: int) -> None:
        self.rendezvous_mgr.cleanup(step_id)

    async def cleanup_all(self, containers: list[str]) -> None:
        for device in self.device_mgr.devices:
            mgr = device.resource_mgr
            for container in containers or [mgr.default_container]:
                mgr.cleanup(container)

    def shutdown(self) -> None:
        """Fail the steps in flight and release the devices (the server stops)."""
        err = errors.UnavailableError(None, None, f"Task {self.task} is shutting down")
        for ctx in list(self._active.values()):
            ctx.on_error(err)
        self.rendezvous_mgr.abort_all(err)
        self.device_mgr.shutdown()


def device_attributes(device) -> device_attributes_pb2.DeviceAttributes:
    """A device's attributes as TF's GetStatus reports them."""
    attrs = device.attributes()
    return device_attributes_pb2.DeviceAttributes(
        name=attrs.name, device_type=attrs.device_type,
        memory_limit=attrs.memory_limit_bytes, incarnation=attrs.incarnation)
