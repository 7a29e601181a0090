"""Devices and the DeviceMgr: a CPU device runs its expensive kernels on an inter-op pool;
a GPU device (/device:GPU:N) launches its kernels on the streams of a GPU backend,
reached only through the DeviceContext interface (aioflow/gpu/)."""

from __future__ import annotations

import random
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from aioflow.framework import device_spec, errors
from aioflow.framework.intra_op_threads import set_blas_threads
from aioflow.framework.resource_mgr import ResourceMgr
from aioflow.gpu.discovery import visible_gpus
from aioflow.runtime.blas_gate import BlasGate
from aioflow.runtime.kernel_library import load_builtin_kernels
from aioflow.runtime.ref_inputs import OpSegment
from aioflow.runtime.thread_pools import InterOpPool, num_inter_op_threads

LOCAL_PREFIX = "/job:localhost/replica:0/task:0"


class Device:
    """One device: its full name, type, its resources (variables, ... outliving runs),
    and the inter-op pool its expensive synchronous kernels run on.

    The CPU devices of one session share one inter-op pool (the session's first:
    thread_pools.py says which) and one BLAS gate, as TF's partitions share the
    session's inter-op pool and its CPU devices one intra-op pool: N devices must not
    run N times as many threads as there are cores."""

    def __init__(self, device_type: str, index: int, pool_size: int, intra_op_threads: int = 0,
                 shares_pool_of: Device | None = None, inter_op_pool: InterOpPool | None = None,
                 prefix: str = LOCAL_PREFIX):
        self.device_type = device_type
        self.index = index
        # `prefix`: the task's "/job:J/replica:R/task:T" (a cluster's server names its own)
        self.name = f"{prefix}/device:{device_type}:{index}"
        self.intra_op_threads = intra_op_threads
        # Tells this device apart from an earlier one of the same name (TF: a random
        # uint64 per device); part of every rendezvous key sent from it.
        self.incarnation = random.getrandbits(63) | 1
        if shares_pool_of is not None:
            inter_op_pool = shares_pool_of.inter_op_pool
        elif inter_op_pool is None:  # a device made alone owns its pool
            inter_op_pool = InterOpPool(f"{device_type}{index}", pool_size, owned=True)
        self.inter_op_pool = inter_op_pool
        self.pool_size = inter_op_pool.num_threads
        self._blas_gate: BlasGate | None = None
        self._blas_limited = intra_op_threads <= 0  # BLAS's count is set on first use
        self._pool_owner = shares_pool_of
        self.resource_mgr = ResourceMgr()
        self.op_segment = OpSegment()  # the session's stateful kernels, shared by executors
        self.device_context = None  # an accelerator's DeviceContext (GPUDevice)

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The threads of the device's inter-op pool, created on first use."""
        return self.inter_op_pool.executor

    def submit(self, fn, *args, uses_blas: bool = False,
               pool: InterOpPool | None = None) -> Future:
        """Run `fn(*args)` on the inter-op pool (`pool`: a run's pool other than the
        device's); BLAS kernels pass through the device's BLAS gate."""
        executor = (pool or self.inter_op_pool).executor
        if not self._blas_limited:
            self._limit_blas(executor)
        if uses_blas:
            return self.blas_gate.submit(executor, fn, *args)
        return executor.submit(fn, *args)

    def _limit_blas(self, executor: ThreadPoolExecutor) -> None:
        """intra_op_parallelism_threads bounds BLAS (process-wide), set by a pool job
        queued ahead of this device's first kernel (the pool may be shared, its threads
        made for another session: a thread initializer would not do)."""
        self._blas_limited = True
        executor.submit(_limit_blas_threads, self.intra_op_threads)

    @property
    def blas_gate(self) -> BlasGate:
        if self._pool_owner is not None:
            return self._pool_owner.blas_gate
        if self._blas_gate is None:
            self._blas_gate = BlasGate.for_device(self.pool_size, self.intra_op_threads)
        return self._blas_gate

    def shutdown(self, wait: bool = True) -> None:
        """Release the device's pool when it is its session's own (a shared pool lives
        on: the session's steps were aborted already)."""
        if self._pool_owner is None and self.inter_op_pool.owned:
            self.inter_op_pool.shutdown(wait=wait)
        self._blas_gate = None

    def attributes(self) -> DeviceAttributes:
        return DeviceAttributes(self.name, self.device_type, CPU_MEMORY_LIMIT_BYTES,
                                self.incarnation)

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


class GPUDevice(Device):
    """/device:GPU:N: its kernels launch on `device_context` (a GPU backend: streams,
    events, memory); its host-memory kernels (int32 arithmetic, shapes) run as the
    CPU's do, on the CPU devices' pool."""

    def __init__(self, index: int, backend, cpu: Device):
        super().__init__("GPU", index, cpu.pool_size, cpu.intra_op_threads, shares_pool_of=cpu,
                         prefix=cpu.name[:cpu.name.index("/device:")])
        self.device_context = backend

    def attributes(self) -> DeviceAttributes:
        return DeviceAttributes(self.name, self.device_type,
                                self.device_context.memory_limit(), self.incarnation)


# Placement priority of device types (TF's DeviceFactory priorities: a GPU kernel wins).
_TYPE_PRIORITY = {"GPU": 210, "CPU": 50}


# What TF reports as a CPU device's memory limit (its CPU allocator's nominal 256 MiB).
CPU_MEMORY_LIMIT_BYTES = 268435456


@dataclass(frozen=True)
class DeviceAttributes:
    """What `Session.list_devices` tells of a device (TF's _DeviceAttributes)."""

    name: str
    device_type: str
    memory_limit_bytes: int
    incarnation: int


def _limit_blas_threads(n: int) -> None:
    """Bound the BLAS threads a kernel uses (intra-op parallelism), process-wide for BLAS."""
    if set_blas_threads(n):
        return
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=n, user_api="blas")
    except Exception:  # noqa: BLE001 - without threadpoolctl BLAS keeps its default
        pass


class DeviceMgr:
    """The devices of one session, looked up by full or partial name."""

    def __init__(self, devices: list[Device]):
        self.devices = devices
        self._by_name = {d.name: d for d in devices}
        # The Placer's order: by type priority (GPU before CPU), then as listed.
        self.prioritized = sorted(devices, key=lambda d: -_TYPE_PRIORITY.get(d.device_type, 0))

    @classmethod
    def from_config(cls, config, inter_op_pool: InterOpPool | None = None,
                    prefix: str = LOCAL_PREFIX) -> DeviceMgr:
        """The CPU devices `config` asks for, on `inter_op_pool` (None: a pool of their
        own, sized by inter_op_parallelism_threads), named under the task `prefix`."""
        from aioflow.runtime.allocator import retain_freed_memory

        load_builtin_kernels()
        retain_freed_memory()
        intra = config.intra_op_parallelism_threads if config is not None else 0
        n_cpu = 1
        if config is not None and "CPU" in config.device_count:
            n_cpu = max(1, config.device_count["CPU"])
        threads = num_inter_op_threads(config)
        first = Device("CPU", 0, threads, intra, inter_op_pool=inter_op_pool, prefix=prefix)
        cpus = [first] + [Device("CPU", i, threads, intra, shares_pool_of=first, prefix=prefix)
                          for i in range(1, n_cpu)]
        gpus = [GPUDevice(i, backend, first) for i, backend in enumerate(visible_gpus(config))]
        return cls(cpus + gpus)

    def lookup(self, name: str) -> Device:
        """The device a (possibly partial) name denotes; InvalidArgumentError if none."""
        if name in self._by_name:
            return self._by_name[name]
        spec = device_spec.DeviceSpec.from_string(name)
        for d in self.devices:
            if device_spec.DeviceSpec.from_string(d.name).make_merged_spec(spec) == \
                    device_spec.DeviceSpec.from_string(d.name):
                return d
        raise errors.InvalidArgumentError(
            None, None, f"Unknown device: {name}; known devices: "
                        f"{', '.join(d.name for d in self.devices)}")

    @property
    def default_device(self) -> Device:
        return self.devices[0]

    def shutdown(self) -> None:
        for d in self.devices:
            d.shutdown(wait=False)
            d.resource_mgr.clear()
            d.op_segment.clear()
