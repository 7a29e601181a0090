"""Compiled straight-line segments: runs of cheap nodes executed as one Python function.

At executor build, maximal convex regions of cheap, inline, single-frame nodes whose
kernels declare themselves `compilable` become segments. A segment is one item of the
executor: it is ready when every edge from outside into its members has delivered, and
its generated function reads the members' external inputs from their input slots, calls
the kernels (or the plain functions they expose) with locals instead of slots, and
returns the values the outside consumes. Anything the function cannot handle (an input
too large to stay on the loop, an error, a dead input, a traced run) makes the executor
run the members node by node instead, from their own slots and pending counts, so errors
name the original node and deadness follows TF's rules.

Regions: a node's "barrier depth" is the largest number of non-compilable nodes on a path
to it from a root, and its "late inputs" the non-compilable nodes it depends on through
compilable ones only. Two compilable nodes of one frame, depth and late inputs are never
separated by a non-compilable node, so such a group, cut into runs of topological order,
is convex: running it as one step can neither deadlock nor reorder a dependency. And
since every member waits for the same late inputs, a segment never holds back a value
that the outside could have had earlier (an async kernel fed by one member keeps its
parallelism, across loop iterations too). A segment's source is generated and compiled
after it has run a few times (a graph run once or twice pays no compile time).
"""

from __future__ import annotations

import os
from collections import defaultdict, deque

import numpy as np

from aioflow.graph.graph import SINK_ID
from aioflow.runtime.kernel_stats import learned_expensive
from aioflow.runtime.node_item import (
    ASYNC,
    BY_SIZE,
    FORWARD,
    INLINE,
    MAYBE,
    NodeItem,
)
from aioflow.runtime.ref_inputs import DerefKernel

#: Members per segment at most: bounds the compile time of one segment (~0.5-1 ms) and
#: the time one segment holds the loop.
MAX_MEMBERS = 64
#: Fewer members than this are not worth a segment.
MIN_MEMBERS = 2
#: Entries of a segment run node by node before it is compiled (compiling costs ~15 µs a
#: node, what a dozen interpreted runs save; a graph run once or twice never pays it).
COMPILE_AFTER = 2
#: Compiled attempts that fell back (e.g. large inputs) before a segment stops trying.
MAX_FALLBACKS = 4

_CANDIDATE_MODES = (INLINE, FORWARD, BY_SIZE, MAYBE)


def segments_default() -> bool:
    """Segments are on unless AIOFLOW_SEGMENTS=0 (a debugging switch; sessions also take
    `compile_segments=False`). AIOFLOW_SEGMENTS=eager compiles a segment the first time
    it runs (the tests use it to run every graph compiled)."""
    return os.environ.get("AIOFLOW_SEGMENTS", "1") not in ("0", "off")


def _compile_after() -> int:
    return 0 if os.environ.get("AIOFLOW_SEGMENTS") == "eager" else COMPILE_AFTER


def find_segments(nodes, items: list[NodeItem], dense: dict) -> tuple[list, dict]:
    """The segments of a partition as lists of member items in topological order, and
    per member item id its data inputs as (source item id, output slot) in input order."""
    succ: list = []
    order = topological_order(nodes, dense, succ)
    # Constants without inputs (Const) are ready when the step starts: they delay
    # nothing, so they count neither for depth nor as late inputs, and join no segment
    # (a segment reads their values as globals of its function).
    constant = [items[i].kernel.is_constant and not any(e.src.id > SINK_ID for e in node.in_edges)
                for i, node in enumerate(nodes)]
    candidate = [not constant[i] and is_candidate(items[i]) for i in range(len(nodes))]
    # A variable's ref read (a DerefKernel: `v/read`) joins the segment of the variable
    # lookups, but its consumers group as if it were not compilable (a barrier: it counts
    # for their depth and is one of their late inputs): a training step's 20 lookups and
    # 8 reads become one item, and the compute reading them is segmented as before.
    barrier = [candidate[i] and isinstance(items[i].kernel, DerefKernel)
               for i in range(len(nodes))]
    depth = [0] * len(items)
    late: list = [_NONE] * len(items)
    for i in order:
        inside = candidate[i] and not barrier[i]
        d = depth[i] + (0 if inside or constant[i] else 1)
        own = late[i] if inside else _NONE if constant[i] else frozenset((i,))
        for j in succ[i]:
            if d > depth[j]:
                depth[j] = d
            if candidate[j] and own:
                late[j] = _union(late[j], own, j)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i in order:
        if candidate[i]:
            groups[(items[i].frame_name, depth[i], late[i])].append(i)
    chunks = [(members[start:start + MAX_MEMBERS], key)
              for key, members in groups.items()
              for start in range(0, len(members), MAX_MEMBERS)]
    may_wait = frozenset(i for i, item in enumerate(items) if item.mode == ASYNC)
    chunks = _sink(chunks, order, succ, may_wait)
    found = [[items[i] for i in chunk] for chunk in chunks if len(chunk) >= MIN_MEMBERS]
    sources = {}
    for chunk in found:
        for item in chunk:
            node = nodes[item.id]
            inputs: list = [None] * len(node.input_types)  # (a node's data_inputs)
            for e in node.in_edges:
                if e.src_output >= 0:
                    src = dense[e.src.id]
                    inputs[e.dst_input] = (src, e.src_output)
                    if constant[src]:
                        sources.setdefault("constants", {})[src] = items[src].kernel
            sources[item.id] = inputs
    return found, sources


def _sink(chunks: list, order: list, succ: list, may_wait: frozenset) -> list:
    """Merge a run into the one run that consumes all its outputs when it waits for no
    late input that run does not (a Const gated by a control edge, a multiply feeding
    only an add, as a loop body split over devices has them): nothing outside waits for
    its outputs, so no value is held back. Visited in reverse topological order, chains
    of runs sink whole; a merge that would put a path from the run back into it through
    another node (a deadlock when run as one step) is refused, and so is one that would
    make the run wait for a late input that may never come (`may_wait`: async kernels
    such as a dequeue or a step's Recv): an error of the run must abort the step as soon
    as it happens, as TF's, not when (or never, if) that input arrives. A transfer inside
    a loop (mode FRAMED: the split loop's body waits for one every iteration) does not
    count: its sender runs every iteration of the same step, dead or alive, so it comes
    unless the sender itself waits on such a kernel."""
    position = {i: p for p, i in enumerate(order)}
    where = {}
    for k, (chunk, _) in enumerate(chunks):
        for i in chunk:
            where[i] = k
    merged = [list(chunk) for chunk, _ in chunks]
    keys = [key for _, key in chunks]
    for i in reversed(order):
        k = where.get(i)
        if k is None or merged[k][0] != i:  # a run is tried when its first node is met
            continue
        own = set(merged[k])
        targets = {where.get(j) for m in merged[k] for j in succ[m] if j not in own}
        if len(targets) != 1:
            continue
        t = targets.pop()
        if t is None or not _may_sink(keys[k], keys[t], len(own) + len(merged[t])):
            continue
        if any(i in may_wait or not isinstance(i, int) for i in keys[t][2] - keys[k][2]):
            continue
        union = own.union(merged[t])
        if _reenters(union, succ, position):
            continue
        merged[t] = sorted(union, key=position.__getitem__)
        for m in merged[k]:
            where[m] = t
        merged[k] = []
    return [chunk for chunk in merged if chunk]


def _may_sink(key: tuple, into: tuple, size: int) -> bool:
    """A run of key (frame, depth, late) may join a run of `into`: same frame, its late
    inputs among the other's, a different key (runs of one key are cut by size only),
    and the result within MAX_MEMBERS."""
    return (size <= MAX_MEMBERS and key[0] == into[0] and key != into
            and key[2] <= into[2])


def _reenters(members: set, succ: list, position: dict) -> bool:
    """Whether a path leaves `members` and comes back (only nodes before the last member
    in topological order can lie on one)."""
    last = max(position[m] for m in members)
    stack = [j for m in members for j in succ[m] if j not in members and position[j] < last]
    seen = set(stack)
    while stack:
        for j in succ[stack.pop()]:
            if j in members:
                return True
            if j not in seen and position[j] < last:
                seen.add(j)
                stack.append(j)
    return False


_NONE: frozenset = frozenset()
_MAX_LATE = 8


def _union(a: frozenset, b: frozenset, owner: int) -> frozenset:
    """The late inputs of a node: those of its candidate inputs and its other inputs; a
    node with too many gets a set of its own (it then joins no segment but its own)."""
    if b <= a:
        return a
    if not a:  # (a node's first late inputs: its input's own set, shared, not copied)
        return b
    out = a | b
    return out if len(out) <= _MAX_LATE else frozenset((("alone", owner),))


def is_candidate(item: NodeItem) -> bool:
    """Whether a node may run inside a compiled segment."""
    kernel = item.kernel
    return (item.member_of is None and item.mode in _CANDIDATE_MODES
            and getattr(kernel, "compilable", False)
            and not item.is_merge and not item.is_enter_exit_or_next_iter)


def topological_order(nodes, dense: dict, outs: list | None = None) -> list[int]:
    """Dense ids in a topological order of the graph without NextIteration's back edges;
    `outs`, when given, receives each node's successors (dense ids, no back edges)."""
    if outs is None:
        outs = []
    pending = [0] * len(nodes)
    position = dense.get
    for node in nodes:
        if node.is_next_iteration:
            outs.append(())
            continue
        targets = []
        for e in node.out_edges:
            j = position(e.dst.id)
            if j is not None:
                targets.append(j)
                pending[j] += 1
        outs.append(targets)
    ready = deque(i for i, c in enumerate(pending) if c == 0)
    order = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for j in outs[i]:
            pending[j] -= 1
            if not pending[j]:
                ready.append(j)
    return order


def _uniform_shapes(values: tuple, shape) -> bool:
    """Whether all of `values` that hold more than one element have one shape (that of
    the segment's constants, when one of them has more than one element). A ref (a
    VariableV2's Var, read by a member that derefs it) is no tensor and is skipped: the
    member reading it runs no size test on it."""
    for value in values:
        if getattr(value, "size", 1) != 1:
            if shape is None:
                shape = value.shape
            elif value.shape != shape:
                return False
    return True


class Segment:
    """One compiled segment: its members, the outputs the outside consumes, its code."""

    __slots__ = ("item", "members", "sources", "constants", "constant_slots", "outputs",
                 "_out_index", "entries", "entered", "compile_after", "fallbacks", "fn", "source")

    def __init__(self, item: NodeItem, members: list[NodeItem], sources: dict):
        self.item = item
        self.members = members
        self.sources = {m.id: sources[m.id] for m in members}
        # Kernels of constants feeding members, by item id (their values become globals).
        self.constants = {src: kernel for src, kernel in sources.get("constants", {}).items()
                          if any(src == s for m in members for s, _ in self.sources[m.id])}
        # (slot index, constant item id, output) of member inputs fed by those constants:
        # no edge delivers them; a fallback writes them before the members run.
        self.constant_slots: list[tuple[int, int, int]] = []
        self.outputs: list[tuple[NodeItem, int]] = []   # (member, its output slot)
        self._out_index: dict[tuple[int, int], int] = {}
        self.entries: tuple[NodeItem, ...] = ()  # members with no input from a member
        self.entered = 0
        self.compile_after = _compile_after()
        self.fallbacks = 0
        self.fn = None
        self.source: str | None = None

    def output_slot(self, member: NodeItem, slot: int) -> int:
        """The index in the segment's outputs of `member`'s output `slot`."""
        key = (member.id, slot)
        index = self._out_index.get(key)
        if index is None:
            index = self._out_index[key] = len(self.outputs)
            self.outputs.append((member, slot))
        return index

    def set_entries(self, entries: list[NodeItem]) -> None:
        self.entries = tuple(entries)
        values = {src: tuple(kernel.compute(None, [])) for src, kernel in self.constants.items()}
        self.constant_slots = [(idx, values[src][slot]) for idx, src, slot in self.constant_slots]

    def fill_constant_slots(self, inputs: list) -> None:
        """Before the members run node by node: their inputs that constants feed."""
        for idx, value in self.constant_slots:
            inputs[idx] = value

    def run(self, ctx, inputs: list) -> tuple | None:
        """The outside-consumed outputs, or None: run the members one by one this time
        (not compiled yet, or an input too large to stay on the loop). A sentinel, not
        an exception: a re-raised exception object would grow its traceback every time."""
        fn = self.fn or self.compiled()
        if fn is None:
            return None
        outs = fn(ctx, inputs)
        if outs is None:
            self.fell_back()
        return outs

    def compiled(self):
        """The compiled function, compiling it once it is worth it; None before."""
        fn = self.fn
        if fn is None:
            self.entered += 1
            if self.entered <= self.compile_after or self.fallbacks >= MAX_FALLBACKS:
                return None
            if any(learned_expensive(m) for m in self.members):
                # A member proved expensive while the segment ran node by node: it
                # belongs on the pool, so the segment keeps running node by node.
                self.fallbacks = MAX_FALLBACKS
                return None
            fn = self.fn = self._compile()
        return fn

    def fell_back(self) -> None:
        """A compiled attempt failed: after a few, stop trying (the inputs are large)."""
        self.fallbacks += 1
        if self.fallbacks >= MAX_FALLBACKS:
            self.fn = None

    # -- code generation --------------------------------------------------------------
    def _compile(self):
        source, namespace = self.generate()
        self.source = source
        code = compile(source, f"<aioflow segment {self.item.name}>", "exec")
        exec(code, namespace)  # noqa: S102 - our own generated source
        return namespace["segment"]

    def generate(self) -> tuple[str, dict]:
        """The segment's Python source and the globals it needs."""
        namespace = {}
        lines = ["def segment(ctx, inputs):"]
        names: dict[tuple[int, int], str] = {}
        checked: set = set()  # (value, threshold) tested already
        for src, kernel in self.constants.items():
            for slot, value in enumerate(kernel.compute(None, [])):
                namespace[f"k{src}_{slot}"] = value
                namespace[f"k{src}_{slot}_size"] = getattr(value, "size", 1)  # no test
                names[(src, slot)] = f"k{src}_{slot}"
        # Values from outside the segment, once per producer output: every member input
        # slot it feeds holds the same value (read the first one).
        inside = {(m.id, slot) for m in self.members for slot in range(m.num_outputs)}
        outside: list[str] = []
        for member in self.members:
            for k, source in enumerate(self.sources[member.id]):
                if source not in names and source not in inside:
                    name = names[source] = f"x{source[0]}_{source[1]}"
                    outside.append(name)
                    lines.append(f"    {name} = inputs[{member.input_start + k}]")
        # _Arg members bring in fed values too (read here from the run's arguments)
        fed = [f"ctx.args[{m.kernel.index}]" for m in self.members if m.op == "_Arg"]
        self._uniform_test(lines, namespace, outside + fed)
        for member in self.members:
            args = [names[source] for source in self.sources[member.id]]
            lines.extend(self._member_lines(member, args, names, namespace, checked))
        outs = [names[(m.id, slot)] for m, slot in self.outputs]
        lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        return "\n".join(lines) + "\n", namespace

    def _uniform_test(self, lines: list[str], namespace: dict, outside: list[str]) -> None:
        """Whether every value entering the segment (inputs, fed arguments, constants) has
        one shape or one element: then no member's broadcast can exceed its inputs' size, and the
        members skip that test (`uniform`, computed once per entry)."""
        values = [v for kernel in self.constants.values() for v in kernel.compute(None, [])]
        values += [v for m in self.members if m.kernel.is_constant
                   for v in m.kernel.compute(None, [])]
        shapes = {np.shape(v) for v in values if np.size(v) != 1}
        if len(shapes) > 1:
            return  # no `uniform`: every member tests its broadcast
        namespace["uniform_shapes"] = _uniform_shapes
        namespace["const_shape"] = shapes.pop() if shapes else None
        if outside:
            lines.append(f"    uniform = uniform_shapes(({', '.join(outside)},), const_shape)")
        else:
            lines.append("    uniform = True")

    @staticmethod
    def _member_lines(member: NodeItem, args: list[str], names: dict, namespace: dict,
                      checked: set | None = None) -> list[str]:
        """The lines computing one member; `checked`: the (value, threshold) pairs
        already size-tested in this function (None: test every time, as in a loop)."""
        i = member.id
        lines = []
        if member.mode == FORWARD:
            names[(i, 0)] = args[0]
            return lines
        if member.op in ("NoOp", "ControlTrigger"):  # a control anchor: nothing to run
            return lines
        if member.kernel.is_constant:  # computed once, now: a global of the function
            for slot, value in enumerate(member.kernel.compute(None, [])):
                namespace[f"k{i}_{slot}"] = value
                namespace[f"k{i}_{slot}_size"] = getattr(value, "size", 1)  # (no test)
                names[(i, slot)] = f"k{i}_{slot}"
            return lines
        if member.mode == BY_SIZE and args:
            limit = member.pool_above
            test = [a for a in dict.fromkeys((args[0], args[-1]))
                    if namespace.get(f"{a}_size", limit + 1) > limit  # (not a constant's)
                    and (checked is None or (a, limit) not in checked)]
            if checked is not None:
                checked.update((a, limit) for a in test)
            if test:
                lines.append("    if " + " or ".join(f"{a}.size > {limit}" for a in test)
                             + ": return None")
            a, b = args[0], args[-1]
            if a != b and 1 not in (namespace.get(f"{a}_size"), namespace.get(f"{b}_size")):
                # two small inputs of other shapes may broadcast to a large output:
                # node by node, where the executor decides by that output's size
                guard = "not uniform and " if "uniform_shapes" in namespace else ""
                lines.append(f"    if {guard}{a}.size * {b}.size > {limit} "
                             f"and {a}.shape != {b}.shape: return None")
        elif member.mode == MAYBE:
            namespace[f"e{i}"] = member.is_expensive
            lines.append(f"    if e{i}([{', '.join(args)}]): return None")
        fn = member.kernel.compiled_fn() if member.num_outputs == 1 else None
        if fn is not None:
            namespace[f"f{i}"] = fn
            names[(i, 0)] = f"v{i}"
            lines.append(f"    v{i} = f{i}({', '.join(args)})")
            return lines
        namespace[f"c{i}"] = member.kernel.compute
        call = f"c{i}(ctx, [{', '.join(args)}])"
        if member.num_outputs == 0:
            lines.append(f"    {call}")
            return lines
        lines.append(f"    o{i} = {call}")
        for slot in range(member.num_outputs):
            names[(i, slot)] = f"v{i}_{slot}"
            lines.append(f"    v{i}_{slot} = o{i}[{slot}]")
        return lines
