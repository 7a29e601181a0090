"""Whether the oneDNN backend is on, how its kernels register, and the threads they run on.

The kernels register at a priority above the NumPy kernels' (op_kernel.register_kernel),
only when oneDNN 3.2 loaded (dnnl_api.load: the `aioflow[onednn]` extra installed and
AIOFLOW_ONEDNN not 0), so that without it the registry holds exactly the NumPy kernels.
Each primitive runs on an OpenMP team taken from a process-wide budget (`team`): the
intra-op threads when that many cores are free of other primitives' threads, else one
(docs/onednn.md, Threads)."""

from __future__ import annotations

import threading

from aioflow.framework.op_kernel import register_kernel
from aioflow.kernels.nn.conv_kernels import _CORES, intra_op_threads
from aioflow.kernels.onednn import dnnl_api

#: Registry priority of the oneDNN kernels (the NumPy kernels': 0).
PRIORITY = 1
#: Whether oneDNN loaded (its kernels are registered).
AVAILABLE = dnnl_api.load() is not None
#: Whether the registered oneDNN kernels run on oneDNN (read on every call; False: they
#: run the NumPy code they fall back to, as tests comparing the two in one process do).
ACTIVE = AVAILABLE
#: Multiply-adds (or output elements times window taps) above which a oneDNN kernel goes to
#: the inter-op pool; below, it runs inline (about 0.2 ms of convolution: a hand-off to the
#: pool and back costs more than a smaller primitive). MobileNetV2 batch 1, 8 runs in
#: flight, intra_op 1, 2 busy cores: 18.1 ms of CPU an image at 2**21 (the NumPy kernels'
#: threshold), 14.3 at 2**24, 12.0 with every convolution inline.
POOL_WORK = 1 << 24
#: Multiply-adds (or output elements times window taps) from which a primitive runs on
#: an OpenMP team of intra_op threads; smaller ones run on the calling thread alone.
TEAM_WORK = 1 << 20


def onednn_kernel(op_type: str, host_memory=(), **type_constraints):
    """register_kernel(op_type, "CPU", priority=PRIORITY, ...) when oneDNN loaded, else a
    decorator that registers nothing."""
    if not AVAILABLE:
        return lambda cls: cls
    return register_kernel(op_type, "CPU", host_memory, priority=PRIORITY, **type_constraints)


def team_size(work: int) -> int:
    """OpenMP threads for a primitive of `work` multiply-adds: the intra-op threads
    (intra_op_parallelism_threads, else the cores) when the work is worth a team."""
    return intra_op_threads() if work >= TEAM_WORK else 1


class _Budget:
    """The threads of the oneDNN primitives running now, process-wide."""

    lock = threading.Lock()
    busy = 0


class team:  # noqa: N801 - used as a context manager, like a function
    """`with team(work) as threads`: the OpenMP team of a primitive of `work` multiply-adds,
    held while it runs. team_size(work) threads when that many cores are free of other
    primitives' threads (those running inline on the event loop too, which the device's
    BLAS gate does not see), else one: with many runs in flight the primitives run side
    by side on a thread each instead of oversubscribing the cores with teams."""

    __slots__ = ("threads",)

    def __init__(self, work: int):
        self.threads = team_size(work)

    def __enter__(self) -> int:
        with _Budget.lock:
            if self.threads > 1 and _Budget.busy + self.threads > _CORES:
                self.threads = 1
            _Budget.busy += self.threads
        return self.threads

    def __exit__(self, *exc) -> None:
        with _Budget.lock:
            _Budget.busy -= self.threads


def busy_threads() -> int:
    """The threads of the oneDNN primitives running now."""
    return _Budget.busy
