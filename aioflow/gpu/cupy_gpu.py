"""The CuPy GPU device (the `aioflow[gpu]` extra: cupy-cuda12x or cupy-cuda13x).

Per device: a compute stream and host-to-device, device-to-host and device-to-device
copy streams (non-blocking `cupy.cuda.Stream`s). A kernel's work is launched from the
loop thread inside `with device, stream:` (CuPy enqueues and returns at once) and the
launch resolves when the stream reaches a host callback (`Stream.launch_host_func`)
or a polled `cupy.cuda.Event` (event_manager.py). Device memory comes from a
`cupy.cuda.MemoryPool` bounded by `gpu_options.per_process_gpu_memory_fraction`;
host-to-device and device-to-host copies stage through pinned host memory
(`cupyx.empty_pinned`, from a `cupy.cuda.PinnedMemoryPool`), so they are truly
asynchronous on their streams, as TF's gpu_host_allocator makes them.

Importing this module never fails: `available()` says whether CuPy and a GPU are here.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from aioflow.gpu.backend import GpuBackend

try:  # the optional extra
    import cupy
    import cupyx
except Exception:  # noqa: BLE001 - not installed, or no CUDA driver: no CuPy GPU
    cupy = cupyx = None


def available() -> bool:
    return cupy is not None and device_count() > 0


def device_count() -> int:
    """The GPUs CUDA sees (0 without CuPy or a driver)."""
    if cupy is None:
        return 0
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - CUDA errors when there is no driver or GPU
        return 0


class CupyGpu(GpuBackend):
    """One physical GPU driven through CuPy (see the module docstring)."""

    def __init__(self, physical_id: int, events, memory_fraction: float = 0.0,
                 allow_growth: bool = True):
        self._device = cupy.cuda.Device(physical_id)
        self.xp = cupy
        with self._device:
            self.memory_pool = cupy.cuda.MemoryPool()
            if memory_fraction > 0:
                self.memory_pool.set_limit(fraction=memory_fraction)
            cupy.cuda.set_allocator(self.memory_pool.malloc)
            self.pinned_pool = cupy.cuda.PinnedMemoryPool()
            cupy.cuda.set_pinned_memory_allocator(self.pinned_pool.malloc)
            if not allow_growth and memory_fraction > 0:
                # TF reserves its share up front without allow_growth; the pool keeps it.
                total = cupy.cuda.runtime.memGetInfo()[1]
                self.memory_pool.malloc(int(total * memory_fraction * 0.95)).mem.free()
        self._staging: deque = deque()  # (event, pinned buffer) of copies in flight
        super().__init__(physical_id, events)

    def _new_stream(self, kind: str):
        with self._device:
            return cupy.cuda.Stream(non_blocking=True)

    def _enqueue(self, stream, work, fn, raw) -> None:
        with self._device, stream:
            work.run(fn, raw)

    def is_device_value(self, value) -> bool:
        return isinstance(value, cupy.ndarray) and value.device.id == self.physical_id

    def wrap(self, raw):
        return raw if isinstance(raw, cupy.ndarray) else cupy.asarray(raw)

    def unwrap(self, value):
        return value

    def _h2d(self, xp, host):
        host = np.asarray(host)
        staged = self.staging_buffer(host.shape, host.dtype)
        staged[...] = host
        out = cupy.empty(host.shape, host.dtype)
        stream = self.streams["host_to_device"]
        out.set(staged, stream=stream)
        # The pinned buffer lives until the stream has read it (an event says when).
        staging = self._staging
        while staging and staging[0][0].done:
            staging.popleft()
        staging.append((stream.record(), staged))
        return (out,)

    def _d2h(self, xp, raw):
        staged = self.staging_buffer(raw.shape, raw.dtype)
        raw.get(stream=self.streams["device_to_host"], out=staged)
        return (staged,)

    def _allocate_host(self, shape, dtype, pinned: bool):
        if pinned:  # page-locked, from the pinned memory pool: asynchronous DMA
            return cupyx.empty_pinned(shape, dtype)
        return np.empty(shape, dtype)

    def upload(self, host_value):
        with self._device:
            return cupy.asarray(host_value)

    def download(self, device_value):
        with self._device:
            return cupy.asnumpy(device_value)

    def memory_limit(self) -> int:
        with self._device:
            total = cupy.cuda.runtime.memGetInfo()[1]
        limit = self.memory_pool.get_limit()
        return limit or total
