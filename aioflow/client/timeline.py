"""Timeline: RunMetadata.step_stats as a Chrome trace (chrome://tracing, Perfetto), as
TF's tensorflow.python.client.timeline does:

    md = af.RunMetadata()
    await sess.run(y, options=af.RunOptions(trace_level=af.RunOptions.FULL_TRACE),
                   run_metadata=md)
    open("trace.json", "w").write(af.Timeline(md.step_stats).generate_chrome_trace_format())

One process per device ("<device> Compute"), one track per thread that ran kernels (the
event loop, the pool threads), an event per node named by its op, and arrows from each
node to the nodes that read its outputs.
"""

from __future__ import annotations

import json
import re

_LABEL = re.compile(r"^(.*?) = (.*?)\((.*)\)$")


def _parse_label(label: str, node_name: str) -> tuple[str, list[str]]:
    """(op, inputs) from a timeline label "name = Op(in, in)"."""
    m = _LABEL.match(label)
    if m is None:
        return node_name, []
    inputs = [i.strip() for i in m.group(3).split(",") if i.strip()]
    return m.group(2), inputs


class Timeline:
    """Converts StepStats into the Chrome trace event format."""

    def __init__(self, step_stats, graph=None):
        self._step_stats = step_stats
        self._graph = graph  # accepted for TF's signature; labels carry what is needed

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False) -> str:
        """The trace as a JSON string. `show_memory`: also an "Allocators" process with
        one counter per allocator, the bytes of the tensors alive over time (as TF's: a
        tensor lives from its producer's end to the end of its last reader)."""
        events: list[dict] = []
        starts = [ns.all_start_micros for dev in self._step_stats.dev_stats
                  for ns in dev.node_stats]
        t0 = min(starts) if starts else 0
        ends: dict[str, tuple[int, int, int]] = {}  # node -> (pid, tid, end ts)
        reads: list[tuple[str, int, int, int]] = []  # (producer, pid, tid, ts)
        uses: dict[str, int] = {}  # producer -> end of its last reader
        for pid, dev in enumerate(self._step_stats.dev_stats):
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": f"{dev.device} Compute"}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                           "args": {"sort_index": pid}})
            for tid, name in sorted(dev.thread_names.items()):
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": name}})
            for ns in dev.node_stats:
                op, inputs = _parse_label(ns.timeline_label, ns.node_name)
                ts = ns.all_start_micros - t0
                dur = max(ns.all_end_rel_micros, 0)
                args = {"name": ns.node_name, "op": op}
                args.update({f"input{i}": name for i, name in enumerate(inputs)})
                events.append({"name": op, "cat": "Op", "ph": "X", "pid": pid,
                               "tid": ns.thread_id, "ts": ts, "dur": dur, "args": args})
                ends[ns.node_name] = (pid, ns.thread_id, ts + dur)
                for name in inputs:
                    if not name.startswith("^"):
                        producer = name.split(":")[0]
                        reads.append((producer, pid, ns.thread_id, ts))
                        uses[producer] = max(uses.get(producer, 0), ts + dur)
        if show_dataflow:
            events.extend(_flows(ends, reads))
        if show_memory:
            events.extend(_memory_counters(self._step_stats, ends, uses,
                                           len(self._step_stats.dev_stats)))
        return json.dumps({"traceEvents": events})


def _flows(ends: dict, reads: list) -> list[dict]:
    """An arrow (a flow start and end) from each producer to each node reading it."""
    events = []
    for flow_id, (producer, pid, tid, ts) in enumerate(reads):
        start = ends.get(producer)
        if start is None:
            continue
        src_pid, src_tid, src_ts = start
        events.append({"name": producer, "cat": "DataFlow", "ph": "s", "id": flow_id,
                       "pid": src_pid, "tid": src_tid, "ts": src_ts})
        events.append({"name": producer, "cat": "DataFlow", "ph": "t", "id": flow_id,
                       "pid": pid, "tid": tid, "ts": max(ts, src_ts), "bp": "e"})
    return events


def _memory_counters(step_stats, ends: dict, uses: dict, pid: int) -> list[dict]:
    """Counter events of the bytes alive per allocator. An allocation (an allocation id)
    lives from the end of the node that made it to the end of the last reader of any
    output sharing it (a view, an Identity)."""
    made: dict[int, tuple[str, int, int]] = {}  # id -> (allocator, bytes, created)
    freed: dict[int, int] = {}
    for dev in step_stats.dev_stats:
        for ns in dev.node_stats:
            end = ends[ns.node_name][2]
            for out in ns.output:
                alloc = out.tensor_description.allocation_description
                if not alloc.allocated_bytes:
                    continue
                key = alloc.allocation_id
                if key not in made:
                    made[key] = (alloc.allocator_name, alloc.requested_bytes, end)
                freed[key] = max(freed.get(key, end), uses.get(ns.node_name, end))
    changes: dict[str, list[tuple[int, int]]] = {}
    for key, (allocator, nbytes, created) in made.items():
        changes.setdefault(allocator, []).extend(((created, nbytes), (freed[key], -nbytes)))
    events = [{"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "Allocators"}}]
    for allocator, deltas in sorted(changes.items()):
        total = 0
        for ts, delta in sorted(deltas):
            total += delta
            events.append({"name": allocator, "cat": "Memory", "ph": "C", "pid": pid,
                           "tid": 0, "ts": ts, "args": {allocator: total}})
    return events
