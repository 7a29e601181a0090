"""Transfers on a GPU: _Send/_Recv (and their _Host forms) move host memory through the
step's rendezvous, so the partitioner puts a copy between device memory and a
transfer (graph/memory_type_copies.py); the copies are TF's _CopyFromGpuToHost (on the
device-to-host stream, into pinned host memory on a GPU) and _CopyFromHostToGpu (on the
host-to-device stream)."""

from __future__ import annotations

from aioflow.framework.op_kernel import AsyncOpKernel

from ..transfer.sendrecv_kernels import RecvOp, SendOp
from .base import device_context_of, register_gpu

for _op in ("_Send", "_HostSend"):
    register_gpu(_op, host_memory=("tensor",))(SendOp)
for _op in ("_Recv", "_HostRecv"):
    register_gpu(_op, host_memory=("tensor",))(RecvOp)


class _CopyKernel(AsyncOpKernel):
    """A copy between the GPU's memory and the host, resolved when its stream is done."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.device = device_context_of(ctx)

    def _copy(self, ctx, value, done):
        raise NotImplementedError

    def start_async(self, ctx, inputs, done):
        self._copy(ctx, self.name, inputs[0], done)
        return None

    async def compute_async(self, ctx, inputs):
        import asyncio

        future = asyncio.get_running_loop().create_future()

        def done(outs, error):
            if not future.done():
                future.set_exception(error) if error is not None else future.set_result(outs)

        self.start_async(ctx, inputs, done)
        return await future


@register_gpu("_CopyFromGpuToHost", host_memory=("output",))
class CopyFromGpuToHostOp(_CopyKernel):
    def _copy(self, ctx, name, value, done):
        self.device.copy_to_host(ctx, name, value, done)


@register_gpu("_CopyFromHostToGpu", host_memory=("input",))
class CopyFromHostToGpuOp(_CopyKernel):
    def _copy(self, ctx, name, value, done):
        self.device.copy_to_device(ctx, name, value, done)
