"""Step stats: per-node timings of one traced run (TF's StepStatsCollector), returned in
RunMetadata.step_stats when RunOptions.trace_level asks for a trace.

A traced run times every kernel it executes: where it ran (the thread), when it started
and ended, and the dtype and shape of each output (at any trace level, as TF 2.21).
Runs that are not traced pay one flag test per node.
"""

from __future__ import annotations

import threading
import time

from aioflow.framework import dtypes
from aioflow.proto import config_pb2, step_stats_pb2, tensor_description_pb2, tensor_shape_pb2


def wants_trace(options) -> bool:
    """Whether RunOptions ask for step stats (any trace level above NO_TRACE)."""
    return options is not None and options.trace_level != config_pb2.RunOptions.NO_TRACE


class StepStatsCollector:
    """The NodeExecStats of one step, per device; filled from the loop and pool threads."""

    def __init__(self):
        self._devices: dict[str, DeviceStats] = {}
        self._by_executor: dict[int, DeviceStats] = {}

    def for_executor(self, impl) -> DeviceStats:
        """The records of one executor: a partition, or a function body a call ran as a
        sub-step of this step (its nodes join its device's records, with its labels)."""
        stats = self._by_executor.get(id(impl))
        if stats is None:
            device = impl.device.name
            stats = DeviceStats(device, impl.timeline_labels())
            first = self._devices.get(device)
            if first is None:
                self._devices[device] = stats
            else:
                stats.nodes, stats.threads = first.nodes, first.threads
            self._by_executor[id(impl)] = stats
        return stats

    def finalize(self, step_stats: step_stats_pb2.StepStats) -> None:
        """Append what was collected to `step_stats` (RunMetadata.step_stats)."""
        for device in sorted(self._devices):
            dev = step_stats.dev_stats.add(device=device)
            stats = self._devices[device]
            dev.node_stats.extend(stats.nodes)
            for tid, name in stats.threads.items():
                dev.thread_names[tid] = name


class DeviceStats:
    """One device's records. `list.append` and dict stores are atomic under the GIL, so
    pool threads record without a lock."""

    def __init__(self, device: str, labels: list[str]):
        self.device = device
        self.labels = labels  # per item id
        self.nodes: list[step_stats_pb2.NodeExecStats] = []
        self.threads: dict[int, str] = {}

    def call(self, item, ctx, args):
        """Run an inline kernel, timed."""
        start = time.time_ns()
        op_start = time.perf_counter_ns()
        outs = item.compute(ctx, args)
        self.record(item, start, op_start, time.perf_counter_ns(), outs)
        return outs

    async def call_async(self, item, ctx, args):
        """Await an async kernel, timed from its start to its result."""
        start = time.time_ns()
        op_start = time.perf_counter_ns()
        outs = await item.compute(ctx, args)
        self.record(item, start, op_start, time.perf_counter_ns(), outs)
        return outs

    def forwarded(self, item, outs) -> None:
        """A node the executor forwards without calling its kernel (Identity, Enter...)."""
        now = time.perf_counter_ns()
        self.record(item, time.time_ns(), now, now, outs)

    def record(self, item, start_ns: int, op_start_ns: int, op_end_ns: int, outs) -> None:
        """One NodeExecStats: `start_ns` wall-clock, the op bounds on perf_counter."""
        dur = max(0, op_end_ns - op_start_ns)
        thread = threading.current_thread()
        tid = threading.get_native_id() & 0xFFFFFFFF
        self.threads.setdefault(tid, thread.name)
        ns = step_stats_pb2.NodeExecStats(
            node_name=item.name, all_start_micros=start_ns // 1000, op_start_rel_micros=0,
            op_end_rel_micros=dur // 1000, all_end_rel_micros=dur // 1000,
            all_start_nanos=start_ns, op_start_rel_nanos=0, op_end_rel_nanos=dur,
            all_end_rel_nanos=dur, scheduled_micros=start_ns // 1000,
            scheduled_nanos=start_ns, thread_id=tid, timeline_label=self.labels[item.id])
        if outs is not None:
            for slot, value in enumerate(outs):
                description = _describe(value)
                if description is not None:
                    ns.output.add(slot=slot, tensor_description=description)
        self.nodes.append(ns)


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
    return tensor_description_pb2.TensorDescription(dtype=dtype, shape=shape)
