"""Whether the oneDNN backend is on, how its kernels register, and the threads they run on.

The kernels register at a priority above the NumPy kernels' (op_kernel.register_kernel),
only when oneDNN loaded (dnnl_api.load: the `aioflow[onednn]` extra installed and
AIOFLOW_ONEDNN not 0), so that without it the registry holds exactly the NumPy kernels.
Each primitive runs on an OpenMP team taken from a process-wide budget (`team`): the
intra-op threads when that many cores are free of other primitives' threads, else one
(docs/onednn.md, Threads).

Where a kernel runs (`LoopOrThread`): the forward kernels are the executor's task-free
async kernels (`start_async`), so that each call decides for itself (`runs_inline`):

* with intra-op threads covering the cores (the default): at most INLINE_WORK of work
  at once on the calling thread, the event loop, on a team of every core (no hand-off:
  the lowest latency; many runs in flight take turns on the whole machine), more on one
  of the backend's threads (`off_loop`), its outputs handed back to the loop when done;
* with fewer intra-op threads than cores (intra_op_parallelism_threads=1: throughput):
  a call of at least TEAM_WORK goes to the backend's threads while fewer than
  cores - 1 such calls are in flight there, else it runs inline: the event loop is the
  last core's worker, so that with many runs in flight cores / intra-op primitives run
  side by side (each on its own team from the budget) with as few hand-offs as that
  takes; smaller calls inline (a hand-off costs more than they do)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

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
#: Multiply-adds (or output elements times window taps) up to which a oneDNN forward kernel
#: runs at once on the event loop (about 1-1.5 ms on two AVX-512 cores: the loop is held no
#: longer, well inside the 5 ms heartbeat the runtime keeps); larger calls run on the
#: backend's threads. A hand-off to a thread and back costs the loop ~70 µs of CPU and,
#: on a busy machine, a wake-up. ABAB in one process, load 6-8: MobileNetV2 batch 1 took
#: 10.9 ms of CPU a run inline against 13.7 with its convolutions on the executor's pool;
#: ResNet50 batch 1 44.8 against 49.2 ms (wall median 44.7 against 52.5) and InceptionV3
#: batch 1 77.5 against 85.6 ms (86 against 129) at 2**28 against 2**25.
INLINE_WORK = 1 << 27
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


class _Threads:
    """The threads that run the oneDNN kernels too large for the event loop, one per core
    (each primitive's OpenMP team comes from the budget above), made on first use."""

    pool: ThreadPoolExecutor | None = None
    lock = threading.Lock()
    #: Calls handed to these threads by start_async and not yet back (counted on the
    #: event loop: incremented there, decremented by the callback that hands back).
    in_flight = 0


def _threads() -> ThreadPoolExecutor:
    if _Threads.pool is None:
        with _Threads.lock:
            if _Threads.pool is None:
                _Threads.pool = ThreadPoolExecutor(max_workers=_CORES,
                                                   thread_name_prefix="aioflow-onednn")
    return _Threads.pool


def _call(compute, ctx, inputs):
    with np.errstate(all="ignore"):  # as the executor's pool runs kernels
        return compute(ctx, inputs)


def _job(loop, compute, ctx, inputs, done) -> None:
    try:
        outs, exc = _call(compute, ctx, inputs), None
    except BaseException as e:  # noqa: BLE001 - handed to the loop as the node's error
        outs, exc = None, e
    try:
        loop.call_soon_threadsafe(_back, done, outs, exc)
    except RuntimeError:  # the loop closed while the kernel ran: nobody waits for it
        pass


def _back(done, outs, exc) -> None:
    _Threads.in_flight -= 1
    done(outs, exc)


def off_loop(compute, ctx, inputs, done) -> None:
    """Run compute(ctx, inputs) on the backend's threads; done(outputs, error) on the
    calling event loop when it finishes."""
    loop = asyncio.get_running_loop()
    _Threads.in_flight += 1
    try:
        _threads().submit(_job, loop, compute, ctx, inputs, done)
    except BaseException:
        _Threads.in_flight -= 1
        raise


def off_loop_calls() -> int:
    """Calls on the backend's threads (start_async's) not yet handed back."""
    return _Threads.in_flight


class LoopOrThread:
    """Mixed into a forward kernel (before the NumPy kernel's class): the executor's
    task-free async kernel protocol (`start_async`; `compute_async` for traced runs),
    each call inline or on the backend's threads by its work and the intra-op threads
    (the module's docstring). With the backend inactive, the NumPy kernel's own
    `is_expensive` decides.
    `compute` stays the synchronous kernel (constant folding and direct callers use it)."""

    is_async = True

    def work(self, inputs: list) -> int:
        """Multiply-adds (or output elements x taps) of this call."""
        raise NotImplementedError

    def runs_inline(self, inputs: list) -> bool:
        if not ACTIVE:
            return not super().is_expensive(inputs)
        work = self.work(inputs)
        if work < TEAM_WORK:
            return True
        if intra_op_threads() >= _CORES:
            return work <= INLINE_WORK
        return _Threads.in_flight >= _CORES - 1

    def start_async(self, ctx, inputs, done):
        if self.runs_inline(inputs):
            return self.compute(ctx, inputs)
        off_loop(self.compute, ctx, inputs, done)
        return None

    async def compute_async(self, ctx, inputs):
        if self.runs_inline(inputs):
            return self.compute(ctx, inputs)
        return await asyncio.get_running_loop().run_in_executor(
            _threads(), _call, self.compute, ctx, inputs)
