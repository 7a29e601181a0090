"""GpuBackend: the part of a GPU device common to CuPy and the simulated device (TF's
GPUDevice with its GPUDeviceContext): one compute stream and host-to-device,
device-to-host and device-to-device copy streams; kernel launches and copies enqueued
on them and resolved through the event manager; memory checks at every launch.

A subclass says what device memory is (`is_device_value`, `wrap`, `unwrap`), how work
is enqueued on a stream (`_enqueue`: CuPy launches from the loop thread inside
`with stream:`, the simulated device hands the work to the stream's thread) and how
copies are made. The count of launches in flight (`in_flight`) is what tests and
shutdown look at: after a cancelled run it is back to zero.
"""

from __future__ import annotations

import asyncio
import threading

from aioflow.framework import errors
from aioflow.framework.device_context import COPY_STAGING, DeviceContext

STREAM_KINDS = ("compute", "host_to_device", "device_to_host", "device_to_device")


class Work:
    """One launch: its stream work, the loop to resolve it on, and its result."""

    __slots__ = ("backend", "loop", "done", "host_outputs", "node_name", "results", "error",
                 "cancelled", "cancellation", "token")

    def __init__(self, backend, loop, done, host_outputs, node_name, cancellation):
        self.backend = backend
        self.loop = loop
        self.done = done
        self.host_outputs = host_outputs
        self.node_name = node_name
        self.results = None
        self.error = None
        self.cancelled = False
        self.cancellation = cancellation
        self.token = None

    def run(self, fn, raw) -> None:
        """The work itself, on its stream (dropped when its step was cancelled first)."""
        if self.cancelled:
            self.error = errors.CancelledError(None, None, "Step was cancelled")
            return
        try:
            self.results = fn(self.backend.xp, *raw)
        except BaseException as e:  # noqa: BLE001 - reported as the node's error
            self.error = e

    def cancel(self) -> None:
        self.cancelled = True

    def finish(self) -> None:
        """On the loop, once the stream has reached the work."""
        self.backend._finished(self)


class GpuBackend(DeviceContext):
    """A GPU's streams, event manager and memory checks (see the module docstring)."""

    device_type = "GPU"

    def __init__(self, physical_id: int, events):
        self.physical_id = physical_id
        self.device_name = f"/device:GPU:{physical_id}"
        self.events = events
        self._lock = threading.Lock()
        self.in_flight = 0
        # Host memory handed out by `host_buffer`, by kind (what tests and benchmarks read).
        self.host_bytes = {"gpu_compatible": 0, "pageable": 0}
        self.streams = {kind: self._new_stream(kind) for kind in STREAM_KINDS}

    # -- what a subclass provides -------------------------------------------------------
    def _new_stream(self, kind: str):
        raise NotImplementedError

    def _enqueue(self, stream, work: Work, fn, raw) -> None:
        raise NotImplementedError

    def _h2d(self, xp, host):
        """The work of a host-to-device copy (on the host-to-device stream), staged
        through gpu-compatible host memory."""
        raise NotImplementedError

    def _d2h(self, xp, raw):
        """The work of a device-to-host copy (on the device-to-host stream), into a
        gpu-compatible host buffer (the copy's output: on_host, gpu_compatible)."""
        raise NotImplementedError

    def _allocate_host(self, shape, dtype, pinned: bool):
        raise NotImplementedError

    def host_buffer(self, shape, dtype, attrs):
        pinned = attrs.gpu_compatible
        buffer = self._allocate_host(shape, dtype, pinned)
        kind = "gpu_compatible" if pinned else "pageable"
        with self._lock:
            self.host_bytes[kind] += buffer.nbytes
        return buffer

    def staging_buffer(self, shape, dtype):
        """A buffer for a copy between this device and the host (COPY_STAGING)."""
        return self.host_buffer(shape, dtype, COPY_STAGING)

    def memory_limit(self) -> int:
        raise NotImplementedError

    # -- the DeviceContext interface ------------------------------------------------------
    @property
    def compute_stream(self):
        return self.streams["compute"]

    def launch(self, ctx, node_name, fn, args, host_inputs, host_outputs, done) -> None:
        raw = [self._input(node_name, i, value, i in host_inputs)
               for i, value in enumerate(args)]
        self._start(self.streams["compute"], ctx, node_name, fn, raw, host_outputs, done)

    def copy_to_device(self, ctx, node_name, value, done) -> None:
        if self.is_device_value(value):
            raise errors.InternalError(
                None, None, f"The input tensor to the _CopyFromHostToGpu kernel must reside "
                            f"on the host, but node {node_name}'s is on {self.device_name}.")
        self._start(self.streams["host_to_device"], ctx, node_name, self._h2d, [value],
                    frozenset(), done)

    def copy_to_host(self, ctx, node_name, value, done) -> None:
        if not self.is_device_value(value):
            raise errors.InternalError(
                None, None, "The input tensor to the _CopyFromGpuToHost kernel must reside "
                            "on the device.")
        self._start(self.streams["device_to_host"], ctx, node_name, self._d2h,
                    [self.unwrap(value)], frozenset((0,)), done)

    def copy_on_device(self, ctx, node_name, value, done) -> None:
        raw = self._input(node_name, 0, value, False)
        self._start(self.streams["device_to_device"], ctx, node_name,
                    lambda xp, a: (xp.array(a, copy=True),), [raw], frozenset(), done)

    # -- launching ------------------------------------------------------------------------
    def _input(self, node_name: str, index: int, value, host: bool):
        """The raw array a kernel's input `index` is read as; InternalError when its
        memory is not the memory the kernel reads it from (a copy is missing)."""
        on_device = self.is_device_value(value)
        if host:
            if on_device:
                raise errors.InternalError(
                    None, None, f"Input {index} of node {node_name} is in the memory of "
                                f"{self.device_name}, but its kernel reads it from host "
                                f"memory (HostMemory): a device-to-host copy is missing")
            return value
        if not on_device:
            raise errors.InternalError(
                None, None, f"Input {index} of node {node_name} is in host memory, but its "
                            f"kernel on {self.device_name} reads it from device memory: a "
                            f"host-to-device copy is missing")
        return self.unwrap(value)

    def _start(self, stream, ctx, node_name, fn, raw, host_outputs, done) -> None:
        cancellation = getattr(ctx, "cancellation", None)
        if cancellation is not None and cancellation.is_cancelled:
            raise errors.CancelledError(None, None, "Step was cancelled")
        work = Work(self, asyncio.get_running_loop(), done, host_outputs, node_name,
                    cancellation)
        if cancellation is not None:
            work.token = cancellation.register_callback(work.cancel)
        with self._lock:
            self.in_flight += 1
        self._enqueue(stream, work, fn, raw)
        self.events.watch(stream, work)

    def _finished(self, work: Work) -> None:
        with self._lock:
            self.in_flight -= 1
        if work.cancellation is not None:
            work.cancellation.deregister_callback(work.token)
        if work.error is not None:
            work.done(None, work.error)
            return
        try:
            outs = self._outputs(work)
        except BaseException as e:  # noqa: BLE001 - a kernel's wrong result: its error
            work.done(None, e)
            return
        work.done(outs, None)

    def _outputs(self, work: Work) -> tuple:
        results = work.results
        if not isinstance(results, tuple):
            results = tuple(results)
        host = work.host_outputs
        if not host:
            return tuple(self.wrap(r) for r in results)
        return tuple(r if i in host else self.wrap(r) for i, r in enumerate(results))

    def pending_work(self) -> int:
        """Launches not yet resolved on the loop (0: no stream work left behind)."""
        return self.in_flight

    def synchronize(self) -> None:
        """Wait until every stream of the device is idle (tests, shutdown)."""
        for stream in self.streams.values():
            stream.synchronize()
