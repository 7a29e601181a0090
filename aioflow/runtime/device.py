"""Devices and the DeviceMgr: a CPU device owns the thread pool its expensive kernels use."""

from __future__ import annotations

import os
import random
from concurrent.futures import Future, ThreadPoolExecutor

from aioflow.framework import device_spec, errors
from aioflow.framework.resource_mgr import ResourceMgr
from aioflow.runtime.blas_gate import BlasGate, BlasThreads
from aioflow.runtime.kernel_library import load_builtin_kernels
from aioflow.runtime.ref_inputs import OpSegment

LOCAL_PREFIX = "/job:localhost/replica:0/task:0"


class Device:
    """One device: its full name, type, its resources (variables, ... outliving runs),
    and a thread pool for expensive synchronous kernels.

    The CPU devices of one session share the first one's pool and BLAS gate, as TF's
    partitions share the session's inter-op pool and its CPU devices one intra-op pool:
    N devices must not run N times as many threads as there are cores."""

    def __init__(self, device_type: str, index: int, pool_size: int, intra_op_threads: int = 0,
                 shares_pool_of: Device | None = None):
        self.device_type = device_type
        self.index = index
        self.name = f"{LOCAL_PREFIX}/device:{device_type}:{index}"
        self.pool_size = pool_size
        self.intra_op_threads = intra_op_threads
        # Tells this device apart from an earlier one of the same name (TF: a random
        # uint64 per device); part of every rendezvous key sent from it.
        self.incarnation = random.getrandbits(63) | 1
        self._pool: ThreadPoolExecutor | None = None
        self._blas_gate: BlasGate | None = None
        self._pool_owner = shares_pool_of
        self.resource_mgr = ResourceMgr()
        self.op_segment = OpSegment()  # the session's stateful kernels, shared by executors

    @property
    def pool(self) -> ThreadPoolExecutor:
        """The device's thread pool, created on first use (most graphs never need it)."""
        if self._pool_owner is not None:
            return self._pool_owner.pool
        if self._pool is None:
            initializer = _limit_blas_threads if self.intra_op_threads > 0 else None
            self._pool = ThreadPoolExecutor(
                max_workers=self.pool_size, thread_name_prefix=f"aioflow-{self.device_type}-pool",
                initializer=initializer,
                initargs=(self.intra_op_threads,) if initializer else ())
        return self._pool

    def submit(self, fn, *args, uses_blas: bool = False) -> Future:
        """Run `fn(*args)` on the pool; BLAS kernels pass through the device's BLAS gate."""
        if uses_blas:
            return self.blas_gate.submit(self.pool, fn, *args)
        return self.pool.submit(fn, *args)

    @property
    def blas_gate(self) -> BlasGate:
        if self._pool_owner is not None:
            return self._pool_owner.blas_gate
        if self._blas_gate is None:
            self._blas_gate = BlasGate.for_device(self.pool_size, self.intra_op_threads)
        return self._blas_gate

    def shutdown(self, wait: bool = True) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=wait, cancel_futures=True)
            self._pool = None
            self._blas_gate = None

    def __repr__(self) -> str:
        return f"<Device {self.name}>"


def _limit_blas_threads(n: int) -> None:
    """Bound the BLAS threads a kernel uses (intra-op parallelism), process-wide for BLAS."""
    blas = BlasThreads.find()
    if blas is not None:
        blas.set(n)
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

    @classmethod
    def from_config(cls, config) -> DeviceMgr:
        from aioflow.runtime.allocator import retain_freed_memory

        load_builtin_kernels()
        retain_freed_memory()
        cores = os.cpu_count() or 1
        inter = config.inter_op_parallelism_threads if config is not None else 0
        intra = config.intra_op_parallelism_threads if config is not None else 0
        if inter < 0:
            inter = 1
        n_cpu = 1
        if config is not None and "CPU" in config.device_count:
            n_cpu = max(1, config.device_count["CPU"])
        first = Device("CPU", 0, inter or cores, intra)
        return cls([first] + [Device("CPU", i, inter or cores, intra, shares_pool_of=first)
                              for i in range(1, n_cpu)])

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
