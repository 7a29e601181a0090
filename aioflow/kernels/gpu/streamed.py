"""GPU kernels that run the op's CPU kernel as the device's work, for ops TF has a GPU
kernel for and that aioflow has not written in array-module form yet (a transposed
convolution, image resizing, padding). On the simulated device the CPU kernel runs on
the compute stream on the device's NumPy memory, so placement, memory types and
copies are TF's and the values the CPU's. On a CuPy GPU the work goes through the host
(asnumpy, the CPU kernel, asarray on the stream): correct, slower; docs/gpu.md lists
these ops."""

from __future__ import annotations

from functools import partial

import numpy as np

from aioflow.framework.op_kernel import OpKernelConstruction, registered_kernels

from .base import FLOATS, GpuKernel, register_gpu


class StreamedCpuKernel(GpuKernel):
    """The op's CPU kernel, run on the GPU's compute stream (see the module docstring)."""

    cpu_class = None

    def __init__(self, ctx):
        super().__init__(ctx)
        cpu_ctx = OpKernelConstruction(ctx.node_def, ctx.op_def, "CPU", ctx.input_dtypes,
                                       ctx.output_dtypes, ctx.function_library)
        self.cpu = self.cpu_class(cpu_ctx)

    def start_async(self, ctx, inputs, done):
        self.device.launch(ctx, self.name, partial(self._run, ctx), inputs, self.host_inputs,
                           self.host_outputs, done)
        return None

    def _run(self, ctx, xp, *raw):
        if xp is np:
            return tuple(self.cpu.compute(ctx, list(raw)))
        host = [xp.asnumpy(r) if isinstance(r, xp.ndarray) else r for r in raw]
        return tuple(xp.asarray(o) if isinstance(o, np.ndarray) else o
                     for o in self.cpu.compute(ctx, host))


# op -> HostMemory args of TF's GPU registration.
STREAMED_OPS = {
    "Conv2DBackpropInput": ("input_sizes",),
    "Conv2DBackpropFilter": ("filter_sizes",),
    "ResizeBilinear": ("size",),
    "ResizeNearestNeighbor": ("size",),
    "MirrorPad": ("paddings",),
    "StridedSlice": ("begin", "end", "strides"),
    "Cumsum": ("axis",),
    "TopKV2": ("k",),
}


def _register_all() -> None:
    kernels = registered_kernels()
    for op, host_args in STREAMED_OPS.items():
        cpu = kernels.get((op, "CPU"))
        if not cpu:
            continue
        cls = type(f"Streamed{op.strip('_')}Op", (StreamedCpuKernel,), {"cpu_class": cpu[0]})
        register_gpu(op, host_memory=host_args, T=list(FLOATS))(cls)


_register_all()
