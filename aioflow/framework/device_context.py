"""DeviceContext: what a kernel on an accelerator sees of its device (TF's
DeviceContext and the GPU device's stream handles, as one interface).

A GPU kernel never blocks: it *launches* its work on the device's compute stream and
returns; `done(outputs, error)` is called on the event loop once the stream has
reached the work (an event), as TF's event manager calls a GPU kernel's callback.
The work is written once against an array module (`xp`: CuPy on a real GPU, NumPy on
the simulated one) and receives the device's raw arrays; the device wraps and unwraps
its own memory, and refuses a host value where the kernel reads device memory (and a
device value where it reads host memory), as a real GPU would.

The framework defines the interface only; the runtime builds devices that implement
it (aioflow/gpu/), and kernels (kernels/gpu/) reach a device only through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# done(outputs or None, error or None): called on the event loop thread.
Done = Callable[[Sequence[Any] | None, BaseException | None], None]


@dataclass(frozen=True)
class AllocatorAttributes:
    """Where a buffer goes (TF's AllocatorAttributes): `on_host` for a device's host-memory
    values, `gpu_compatible` for host memory a GPU's DMA engine reads and writes
    directly (pinned, page-locked memory: the staging buffers of host/device copies)."""

    on_host: bool = False
    gpu_compatible: bool = False


# What a copy between a GPU and the host stages through (TF's _CopyFromGpuToHost output).
COPY_STAGING = AllocatorAttributes(on_host=True, gpu_compatible=True)


class DeviceContext:
    """An accelerator as its kernels see it (see the module docstring)."""

    device_type: str = ""
    device_name: str = ""
    # The array module the kernels' work is written against (cupy or numpy).
    xp: Any = None

    def is_device_value(self, value) -> bool:
        """Whether `value` is memory of this device."""
        raise NotImplementedError

    def launch(self, ctx, node_name: str, fn: Callable, args: Sequence[Any],
               host_inputs: frozenset, host_outputs: frozenset, done: Done) -> None:
        """Run `fn(xp, *raw_args)` on the compute stream; its results (a tuple) become
        the kernel's outputs, device memory but for the `host_outputs` indices. Inputs
        at `host_inputs` are host values, the others this device's. Cancelled with
        `ctx.cancellation`: work not started by then is dropped (done gets the error)."""
        raise NotImplementedError

    def copy_to_device(self, ctx, node_name: str, value, done: Done) -> None:
        """Host → device on the host-to-device stream (from pinned memory on a GPU)."""
        raise NotImplementedError

    def copy_to_host(self, ctx, node_name: str, value, done: Done) -> None:
        """Device → host on the device-to-host stream."""
        raise NotImplementedError

    def copy_on_device(self, ctx, node_name: str, value, done: Done) -> None:
        """Device → device (a new buffer) on the device-to-device stream."""
        raise NotImplementedError

    def host_buffer(self, shape, dtype, attrs: AllocatorAttributes):
        """An uninitialized host array for this device's use; pinned memory when
        `attrs.gpu_compatible` (on a GPU), plain host memory otherwise."""
        raise NotImplementedError

    def upload(self, host_value):
        """A device copy of `host_value`, made now (a Const's value, at kernel build)."""
        raise NotImplementedError

    def download(self, device_value):
        """A host copy of `device_value`, made now (waits for the device)."""
        raise NotImplementedError

    def memory_limit(self) -> int:
        """The bytes of device memory the device may use (DeviceAttributes)."""
        raise NotImplementedError

    def wrap(self, raw):
        """Raw device memory (an array of `xp`) as a value of this device."""
        raise NotImplementedError

    def unwrap(self, value):
        """The raw array (of `xp`) of a value of this device."""
        raise NotImplementedError
