"""Step stats: per-node timings and memory of one traced run (TF's StepStatsCollector),
returned in RunMetadata.step_stats when RunOptions.trace_level asks for a trace (or when
the session's cost model is updated, as TF's `build_cost_model` does).

A traced run times every kernel it executes and records, as TF 2.21 does:
- per device a `_SOURCE` entry (TF's executor runs the source node as a NoOp);
- `scheduled` (when the node was handed to where it runs: the start of the executor's
  current drain for an inline node, as TF's Process; the hand-off for a pool kernel)
  and `all_start` (when it started: later when it waited in the pool's queue), with
  the op's start and end relative to it;
- per output its dtype, shape and allocation: `requested_bytes`, and for a buffer the
  node made or aliases `allocated_bytes` and an `allocation_id` (an output that is a
  view of an input, as a Reshape or an Identity, carries the input's id; a fed `_Arg`
  has no allocation, as TF's);
- per node the allocator memory it used (`memory`: the bytes of the new buffers it
  output) and `memory_stats` (a Const's output is persistent memory).
Temporary memory a kernel uses inside its compute is not visible to Python: it stays 0.
`thread_id` and `thread_names` name the event loop and pool threads that ran kernels;
TF 2.21's DirectSession leaves both empty.
Runs that are not traced pay one flag test per node.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref

from aioflow.framework import dtypes
from aioflow.proto import (
    allocation_description_pb2,
    config_pb2,
    step_stats_pb2,
    tensor_description_pb2,
    tensor_shape_pb2,
)

#: The allocator named in allocation descriptions (TF's CPU allocator is "cpu").
ALLOCATOR_NAME = "cpu"
_PERSISTENT_OPS = frozenset({"Const", "HostConst"})


def wants_trace(options) -> bool:
    """Whether RunOptions ask for step stats (any trace level above NO_TRACE)."""
    return options is not None and options.trace_level != config_pb2.RunOptions.NO_TRACE


class StepStatsCollector:
    """The NodeExecStats of one step, per device; filled from the loop and pool threads."""

    def __init__(self):
        self._devices: dict[str, DeviceStats] = {}
        self._by_executor: dict[int, DeviceStats] = {}
        self.allocations = _Allocations()

    def for_executor(self, impl) -> DeviceStats:
        """The records of one executor: a partition, or a function body a call ran as a
        sub-step of this step (its nodes join its device's records, with its labels)."""
        stats = self._by_executor.get(id(impl))
        if stats is None:
            device = impl.device.name
            stats = DeviceStats(device, impl.timeline_labels(), self.allocations)
            first = self._devices.get(device)
            if first is None:
                self._devices[device] = stats
            else:
                stats.nodes, stats.threads = first.nodes, first.threads
            self._by_executor[id(impl)] = stats
        stats.source()
        return stats

    def device_stats(self) -> dict[str, DeviceStats]:
        """{device name: its records} (the cost model reads them)."""
        return self._devices

    def finalize(self, step_stats: step_stats_pb2.StepStats) -> None:
        """Append what was collected to `step_stats` (RunMetadata.step_stats)."""
        for device in sorted(self._devices):
            dev = step_stats.dev_stats.add(device=device)
            stats = self._devices[device]
            dev.node_stats.extend(stats.nodes)
            for tid, name in stats.threads.items():
                dev.thread_names[tid] = name


class _Allocations:
    """Allocation ids of the buffers a step's outputs live in, by buffer (held weakly
    where the buffer allows it): an output that is a view of a known buffer gets its id."""

    def __init__(self):
        self._ids: dict[int, tuple[int, object]] = {}
        self._next = itertools.count(1)

    def id_of(self, buffer) -> int:
        """The buffer's id, a new one the first time it is seen."""
        entry = self._ids.get(id(buffer))
        if entry is not None and entry[1]() is buffer:
            return entry[0]
        alloc_id = next(self._next)
        try:
            ref = weakref.ref(buffer)
        except TypeError:  # a NumPy scalar, bytes: kept for the step (they are small)
            ref = _Strong(buffer)
        self._ids[id(buffer)] = (alloc_id, ref)
        return alloc_id


class _Strong:
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self):
        return self.value


def buffer_of(value):
    """The object owning the memory of an array (a view's base, followed to the end)."""
    base = getattr(value, "base", None)
    while base is not None:
        value, base = base, getattr(base, "base", None)
    return value


class DeviceStats:
    """One device's records. `list.append` and dict stores are atomic under the GIL, so
    pool threads record without a lock."""

    def __init__(self, device: str, labels: list[str], allocations: _Allocations):
        self.device = device
        self.labels = labels  # per item id
        self.nodes: list[step_stats_pb2.NodeExecStats] = []
        self.threads: dict[int, str] = {}
        self.allocations = allocations
        # When the executor's current drain began: the scheduled time of inline nodes
        # (the executor states set it once per drain).
        self.scheduled_ns = time.time_ns()

    def source(self) -> None:
        """The `_SOURCE` entry TF's executor records when a partition's run starts."""
        now = time.time_ns()
        self.nodes.append(step_stats_pb2.NodeExecStats(
            node_name="_SOURCE", all_start_micros=now // 1000, all_start_nanos=now,
            scheduled_micros=now // 1000, scheduled_nanos=now,
            timeline_label="_SOURCE = NoOp()", thread_id=self._thread()))

    def _thread(self) -> int:
        """The running thread's id, its name noted for `thread_names`."""
        tid = threading.get_native_id() & 0xFFFFFFFF
        if tid not in self.threads:
            self.threads[tid] = threading.current_thread().name
        return tid

    def call(self, item, ctx, args, scheduled_ns: int | None = None):
        """Run a kernel, timed (inline, or on a pool thread when `scheduled_ns` says
        when it was handed to the pool)."""
        start = time.time_ns()
        op_start = time.perf_counter_ns()
        outs = item.compute(ctx, args)
        self.record(item, start, op_start, time.perf_counter_ns(), outs, args, scheduled_ns)
        return outs

    async def call_async(self, item, ctx, args, scheduled_ns: int | None = None):
        """Await an async kernel, timed from its start to its result (scheduled when
        its task was made)."""
        start = time.time_ns()
        op_start = time.perf_counter_ns()
        outs = await item.compute(ctx, args)
        self.record(item, start, op_start, time.perf_counter_ns(), outs, args,
                    start if scheduled_ns is None else min(scheduled_ns, start))
        return outs

    def forwarded(self, item, outs) -> None:
        """A node the executor forwards without calling its kernel (Identity, Enter...)."""
        now = time.perf_counter_ns()
        self.record(item, time.time_ns(), now, now, outs, outs)

    def record(self, item, start_ns: int, op_start_ns: int, op_end_ns: int, outs,
               args=(), scheduled_ns: int | None = None) -> None:
        """One NodeExecStats: `start_ns` wall-clock, the op bounds on perf_counter."""
        dur = max(0, op_end_ns - op_start_ns)
        if scheduled_ns is None:
            scheduled_ns = min(self.scheduled_ns, start_ns)
        tid = self._thread()
        ns = step_stats_pb2.NodeExecStats(
            node_name=item.name, all_start_micros=start_ns // 1000, op_start_rel_micros=0,
            op_end_rel_micros=dur // 1000, all_end_rel_micros=dur // 1000,
            all_start_nanos=start_ns, op_start_rel_nanos=0, op_end_rel_nanos=dur,
            all_end_rel_nanos=dur, scheduled_micros=scheduled_ns // 1000,
            scheduled_nanos=scheduled_ns, thread_id=tid, timeline_label=self.labels[item.id])
        ns.memory_stats.SetInParent()
        if outs is not None:
            self._outputs(ns, item, outs, args, (start_ns + dur) // 1000)
        self.nodes.append(ns)

    def _outputs(self, ns, item, outs, args, end_micros: int) -> None:
        """Output descriptions and the node's memory: new buffers, views, persistent."""
        fed = item.op == "_Arg"
        persistent = item.op in _PERSISTENT_OPS
        inputs = {id(buffer_of(a)) for a in args if a is not None} if args else ()
        new_bytes = []
        for slot, value in enumerate(outs):
            description = _describe(value)
            if description is None:
                continue
            nbytes = int(getattr(value, "nbytes", 0))
            alloc = description.allocation_description
            alloc.requested_bytes = nbytes
            alloc.allocator_name = ALLOCATOR_NAME
            if not fed:
                buffer = buffer_of(value)
                alloc.allocated_bytes = nbytes
                alloc.allocation_id = self.allocations.id_of(buffer)
                if persistent:
                    ns.memory_stats.persistent_memory_size += nbytes
                elif id(buffer) not in inputs:
                    new_bytes.append(nbytes)
            ns.output.add(slot=slot, tensor_description=description)
        if new_bytes:
            total = sum(new_bytes)
            ns.memory.add(allocator_name=ALLOCATOR_NAME, total_bytes=total, peak_bytes=total,
                          live_bytes=total, allocation_records=[
                              step_stats_pb2.AllocationRecord(alloc_micros=end_micros,
                                                              alloc_bytes=b)
                              for b in new_bytes])


def _describe(value) -> tensor_description_pb2.TensorDescription | None:
    """dtype and shape of an output (None for a dead output or a non-tensor value)."""
    if value is None or not hasattr(value, "shape") or not hasattr(value, "dtype"):
        return None
    try:
        dtype = dtypes.as_dtype(value.dtype).as_datatype_enum
    except TypeError:
        return None
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in value.shape])
    return tensor_description_pb2.TensorDescription(
        dtype=dtype, shape=shape,
        allocation_description=allocation_description_pb2.AllocationDescription())
