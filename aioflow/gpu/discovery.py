"""Which GPUs a session gets: the simulated GPUs AIOFLOW_SIMULATED_GPUS=N asks for, else
the GPUs CuPy sees; then ConfigProto's gpu_options.visible_device_list (virtual id →
physical id, as TF's) and device_count["GPU"] (at most that many).

A physical GPU's backend (its streams, memory pool, event manager) is made once per
process and shared by every session, as TF's GPUProcessState shares its allocators.
"""

from __future__ import annotations

import os
import threading

from aioflow.framework import errors
from aioflow.gpu import cupy_gpu
from aioflow.gpu.event_manager import event_manager
from aioflow.gpu.simulated import SimulatedGpu

ENV_SIMULATED = "AIOFLOW_SIMULATED_GPUS"

_lock = threading.Lock()
_backends: dict = {}  # (kind, physical id) -> backend


def simulated_gpu_count() -> int:
    """N from AIOFLOW_SIMULATED_GPUS (0 when unset)."""
    value = os.environ.get(ENV_SIMULATED, "").strip()
    if not value:
        return 0
    try:
        n = int(value)
    except ValueError:
        raise errors.InvalidArgumentError(
            None, None, f"{ENV_SIMULATED} must be a number of GPUs, not {value!r}") from None
    return max(0, n)


def physical_gpu_count() -> tuple[str, int]:
    """("simulated" or "cupy", how many GPUs of that kind this process has)."""
    n = simulated_gpu_count()
    if n:
        return "simulated", n
    return "cupy", cupy_gpu.device_count()


def visible_gpus(config) -> list:
    """The backends of the GPUs a session with `config` gets, in virtual-id order."""
    kind, count = physical_gpu_count()
    if not count:
        return []
    options = config.gpu_options if config is not None else None
    ids = _visible_ids(options.visible_device_list if options is not None else "", count)
    if config is not None and "GPU" in config.device_count:
        ids = ids[:max(0, config.device_count["GPU"])]
    return [_backend(kind, i, options) for i in ids]


def _visible_ids(visible: str, count: int) -> list[int]:
    """TF's ParseVisibleDeviceList: comma-separated physical ids, each in range, once."""
    if not visible.strip():
        return list(range(count))
    ids = []
    for part in visible.split(","):
        part = part.strip()
        try:
            value = int(part)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Could not parse entry in 'visible_device_list': '{part}'. "
                            f"visible_device_list = {visible}") from None
        if value < 0 or value >= count:
            raise errors.InvalidArgumentError(
                None, None, f"'visible_device_list' listed an invalid Device id '{value}' but "
                            f"visible device count is {count}")
        if value in ids:
            raise errors.InvalidArgumentError(
                None, None, f"visible_device_list contained a duplicate entry: {visible}")
        ids.append(value)
    return ids


def _backend(kind: str, physical_id: int, options):
    with _lock:
        backend = _backends.get((kind, physical_id))
        if backend is None:
            events = event_manager()
            if kind == "simulated":
                backend = SimulatedGpu(physical_id, events)
            else:
                backend = cupy_gpu.CupyGpu(
                    physical_id, events,
                    options.per_process_gpu_memory_fraction if options is not None else 0.0,
                    options.allow_growth if options is not None else True)
            _backends[(kind, physical_id)] = backend
        return backend


def backends() -> list:
    """Every GPU backend this process has made (tests look at their pending work)."""
    with _lock:
        return list(_backends.values())
