"""The base of GPU kernels: a kernel launches its work on the device's compute stream
and returns at once; the executor's task-free async path (`start_async`) gets the
outputs when the stream reaches the work (framework/device_context.py). GPU kernels
are cheap to start, so they run inline on the loop, as TF treats them.

A kernel's work is `work(xp, *raw_inputs) -> tuple of outputs`, written once against
the array module (CuPy on a GPU, NumPy on the simulated device). Which inputs and
outputs are in host memory comes from the registration's HostMemory args
(`register_gpu(..., host_memory=(...))`, TF's REGISTER_KERNEL_BUILDER(...).HostMemory)
and the types that always live on the host.

Bad input is refused as TF refuses it: a kernel checks what the array module would
accept silently, and when the array module raises (shapes that do not fit, an axis out
of range), the node's CPU kernel is run on the same inputs, copied to the host, for
TF's error class and message; only that failure path pays for it.
"""

from __future__ import annotations

import asyncio

from aioflow.framework import errors
from aioflow.framework.memory_types import host_memory
from aioflow.framework.op_kernel import AsyncOpKernel, create_kernel, register_kernel

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


def cpu_kernel_error(construction, inputs) -> errors.OpError | None:
    """The OpError the node's CPU kernel gives for these inputs, copied to the host (None:
    it accepts them, or has no kernel for them)."""
    c = construction
    host = [v.get() if hasattr(v, "get") and hasattr(v, "device") else v for v in inputs]
    try:
        cpu = create_kernel(c.node_def, c.op_def, "CPU", c.input_dtypes, c.output_dtypes)
        cpu.compute(None, host)
    except errors.OpError as e:
        return e
    except Exception:  # noqa: BLE001 - not a verdict on the input: keep the first error
        return None
    return None


def refusal(construction, inputs) -> errors.OpError:
    """TF's error for inputs a GPU kernel refuses: the CPU kernel's (InternalError if that
    kernel accepts them)."""
    return cpu_kernel_error(construction, inputs) or errors.InternalError(
        None, None, f"The GPU kernel of {construction.name} ({construction.op_type}) refused "
                    f"input its CPU kernel accepts")


class GpuKernel(AsyncOpKernel):
    """A kernel whose work runs on the GPU's compute stream (see the module docstring)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.device = device_context_of(ctx)
        input_types = [getattr(t, "as_datatype_enum", t) for t in ctx.input_dtypes]
        output_types = [getattr(t, "as_datatype_enum", t) for t in ctx.output_dtypes]
        self.host_inputs, self.host_outputs = host_memory(
            ctx.node_def, ctx.op_def, GPU, input_types, output_types)
        self._construction = ctx  # to build the CPU kernel that names a bad input's error

    def work(self, xp, *inputs) -> tuple:
        raise NotImplementedError

    def _checked_work(self, xp, *inputs) -> tuple:
        """`work`; an error of the array module becomes the CPU kernel's TF error for the
        same inputs, when the CPU kernel refuses them (else it stays as raised)."""
        try:
            return self.work(xp, *inputs)
        except (errors.OpError, MemoryError):
            raise
        except Exception:  # noqa: BLE001 - replaced by TF's error when there is one
            tf_error = self.cpu_error(inputs)
            if tf_error is None:
                raise
            raise tf_error from None

    def refuse(self, inputs) -> errors.OpError:
        """TF's error for inputs a kernel found bad where the array module would not have
        raised (see `refusal`)."""
        return refusal(self._construction, inputs)

    def cpu_error(self, inputs) -> errors.OpError | None:
        return cpu_kernel_error(self._construction, inputs)

    def start_async(self, ctx, inputs, done):
        self.device.launch(ctx, self.name, self._checked_work, inputs, self.host_inputs,
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
