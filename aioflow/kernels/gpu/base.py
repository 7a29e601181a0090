"""The base of GPU kernels: a kernel launches its work on the device's compute stream
and returns at once; the executor's task-free async path (`start_async`) gets the
outputs when the stream reaches the work (framework/device_context.py). GPU kernels
are cheap to start, so they run inline on the loop, as TF treats them.

A kernel's work is `work(xp, *raw_inputs) -> tuple of outputs`, written once against
the array module (CuPy on a GPU, NumPy on the simulated device). Which inputs and
outputs are in host memory comes from the registration's HostMemory args
(`register_gpu(..., host_memory=(...))`, TF's REGISTER_KERNEL_BUILDER(...).HostMemory)
and the types that always live on the host.
"""

from __future__ import annotations

import asyncio

from aioflow.framework import errors
from aioflow.framework.memory_types import host_memory
from aioflow.framework.op_kernel import AsyncOpKernel, register_kernel

GPU = "GPU"
# The float types TF registers most GPU kernels for (TF_CALL_GPU_NUMBER_TYPES).
FLOATS = ("float16", "float32", "float64")


def register_gpu(op_type: str, host_memory: tuple = (), **constraints):
    """register_kernel for the GPU device type."""
    return register_kernel(op_type, GPU, host_memory=host_memory, **constraints)


def device_context_of(ctx):
    """The kernel's DeviceContext; InternalError when built for a device without one."""
    device = ctx.device_context
    if device is None:
        raise errors.InternalError(
            None, None, f"The GPU kernel of node {ctx.name} ({ctx.op_type}) needs a GPU "
                        f"device context")
    return device


class GpuKernel(AsyncOpKernel):
    """A kernel whose work runs on the GPU's compute stream (see the module docstring)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.device = device_context_of(ctx)
        input_types = [getattr(t, "as_datatype_enum", t) for t in ctx.input_dtypes]
        output_types = [getattr(t, "as_datatype_enum", t) for t in ctx.output_dtypes]
        self.host_inputs, self.host_outputs = host_memory(
            ctx.node_def, ctx.op_def, GPU, input_types, output_types)

    def work(self, xp, *inputs) -> tuple:
        raise NotImplementedError

    def start_async(self, ctx, inputs, done):
        self.device.launch(ctx, self.name, self.work, inputs, self.host_inputs,
                           self.host_outputs, done)
        return None

    async def compute_async(self, ctx, inputs):
        """The traced path (a task per launch): awaits the same launch."""
        future = asyncio.get_running_loop().create_future()

        def done(outs, error):
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(outs)

        self.start_async(ctx, inputs, done)
        return await future
