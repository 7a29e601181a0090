"""Whether the oneDNN backend is on, how its kernels register, and the threads they run on.

The kernels register at a priority above the NumPy kernels' (op_kernel.register_kernel),
only when oneDNN loaded (dnnl_api.load: the `aioflow[onednn]` extra installed and
AIOFLOW_ONEDNN not 0), so that without it the registry holds exactly the NumPy kernels.
Each primitive runs on an OpenMP team taken from a process-wide budget (`team`): the
intra-op threads when that many cores are free of other primitives' threads, else one
(docs/onednn.md, Threads).

Where a kernel runs (`LoopOrThread`): the forward kernels let the executor choose per
call (expensive None), by their work (multiply-adds, or output elements x window taps):

* above INLINE_WORK: on the executor's pool (through the device's BLAS gate), with a
  team from the budget: the loop is never held longer than ~1.5 ms by one call; a
  training call (a convolution gradient, a forward convolution of a geometry a gradient
  ran for: `note_trained`) up to TRAINING_INLINE_WORK stays inline;
* from TEAM_WORK up to INLINE_WORK: inline on the event loop, on a team of the intra-op
  threads (no hand-off: the lowest latency for one run) -- unless other runs wait for
  the loop (many runs in flight) and fewer than 2 x cores - 1 such jobs are in flight,
  or another ready node of the same run is worth a thread too (an Inception block's
  parallel branches; at most cores - 1 such jobs, the longest chain's head goes, the
  others stay inline): then on a pool thread (`worth_a_thread`), which also runs the
  node's chain of ready successors (executor_state.py), while the loop goes on with its
  other work; while such a job is in flight every primitive runs on its calling thread
  alone (framework.intra_op_threads.cores_shared; not once the loop, idle, lent the job
  its core), so the loop and the pool thread each keep
  one core busy with single-threaded primitives instead of teams fighting for them;
* below TEAM_WORK: inline, on the calling thread alone (a hand-off costs more)."""

from __future__ import annotations

import threading

from aioflow.framework.intra_op_threads import cores_shared
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
#: executor's pool. A hand-off to a thread and back costs the loop ~70 µs of CPU and,
#: on a busy machine, a wake-up. ABAB in one process, load 6-8: MobileNetV2 batch 1 took
#: 10.9 ms of CPU a run inline against 13.7 with its convolutions on the executor's pool;
#: ResNet50 batch 1 44.8 against 49.2 ms (wall median 44.7 against 52.5) and InceptionV3
#: batch 1 77.5 against 85.6 ms (86 against 129) at 2**28 against 2**25.
INLINE_WORK = 1 << 27
#: Multiply-adds up to which a training convolution runs on the event loop: a convolution
#: gradient, or a forward convolution of a geometry a gradient has run for (`trained`).
#: A training step holds nothing else on the loop that a 1.5-3 ms primitive would delay,
#: and each hand-off to a pool thread and back costs a wake-up each way (50-300 µs on an
#: idle vCPU): on benchmarks/gradients_peer.py's conv step (302 M multiply-add forward
#: convolution and gradients) the voluntary context switches fell from 26-34 to 9-15 a
#: step, the step 0-4% faster real-time, and against TF 1.55x -> 1.20x (medians of five
#: runs, load 1.5-3.3; docs/performance.md, helper convstep). Inference keeps
#: INLINE_WORK (a serving loop's heartbeat, many runs in flight).
TRAINING_INLINE_WORK = 1 << 29
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
    (intra_op_parallelism_threads, else the cores) when the work is worth a team and no
    job runs on a pool thread beside the event loop's own work (then every core has a
    thread of ours already: framework.intra_op_threads.cores_shared)."""
    return intra_op_threads() if work >= TEAM_WORK and not cores_shared() else 1


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


_trained: set = set()


def note_trained(geometry: tuple) -> None:
    """A convolution gradient ran for `geometry` (input shape, filter shape, strides,
    dilations): forward convolutions of it are a training step's."""
    _trained.add(geometry)


def any_trained() -> bool:
    """Whether any convolution gradient has run in this process (an inference process:
    none, and its forward convolutions ask nothing more)."""
    return bool(_trained)


def trained(geometry: tuple) -> bool:
    """Whether a convolution gradient has run for `geometry` in this process."""
    return geometry in _trained


def busy_threads() -> int:
    """The threads of the oneDNN primitives running now."""
    return _Budget.busy


class LoopOrThread:
    """Mixed into a forward kernel (before the NumPy kernel's class): each call inline on
    the event loop or on the executor's pool by its work, the executor deciding with the
    kernel (expensive None: `is_expensive` per call, `worth_a_thread` when the loop has
    other work and a thread is free; the module's docstring). With the backend inactive,
    the NumPy kernel's own `is_expensive` decides."""

    expensive = None
    learns_cost = False  # `work` is the cost: the input's size is not
    # Never inside a compiled segment: a segment runs its members in one call on the
    # loop, which would hold it for many primitives and never hand one to a thread.
    compilable = False

    def work(self, inputs: list) -> int:
        """Multiply-adds (or output elements x taps) of this call."""
        raise NotImplementedError

    def is_expensive(self, inputs: list) -> bool:
        """Off the event loop above INLINE_WORK (it would hold the loop too long), or
        above TRAINING_INLINE_WORK for a training call (`training`)."""
        if not ACTIVE:
            return super().is_expensive(inputs)
        limit = TRAINING_INLINE_WORK if self.training(inputs) else INLINE_WORK
        return self.work(inputs) > limit

    def training(self, inputs: list) -> bool:
        """Whether this call is a training step's (TRAINING_INLINE_WORK applies)."""
        return False

    def worth_a_thread(self, inputs: list) -> bool:
        """A call worth a team is worth a thread when the loop has other such work (the
        executor decides: other runs waiting, or a ready branch of this run)."""
        return ACTIVE and self.work(inputs) >= TEAM_WORK
