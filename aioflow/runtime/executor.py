"""ExecutorImpl: the immutable, per-partition part of the executor (TF's
ImmutableExecutorState), built once per graph and shared by all of its runs.

Nodes get dense ids; each while-loop frame gets its own layout of pending counts and
input slots (a node's `pending_id` and `input_start` index its frame's layout), so an
iteration copies only the templates of its own frame.

Layout invariants (what every propagator relies on):
- A node's input slots are `inputs[input_start:input_end]` of its frame's slot list,
  one per data input in input order. A slot is written once per iteration, by the one
  edge that feeds it; only `dispatch` clears a node's slots early (a pool or async
  kernel's large inputs are freed as soon as it is done with them).
- `pending_id` indexes the frame's pending (and dead) counts. In the root frame of a
  graph without control flow `pending_id == id`, which the simple propagator uses.
- A compiled segment is one more item (mode SEGMENT) in its members' frame. Edges from
  outside a segment into a member write the member's slot but count down the segment's
  pending count; the members' own pending counts (templates) count only their edges
  from other members, so that when a segment falls back to running node by node the
  members start from the right counts without a pass over them.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from aioflow.framework import errors, op_kernel
from aioflow.graph.control_flow_info import ROOT_FRAME, build_control_flow_info, enter_frame_name
from aioflow.graph.graph import CONTROL_SLOT, SINK_ID, Graph
from aioflow.runtime.constant_fill import fill_constants
from aioflow.runtime.executor_state import SimpleExecutorState, wrap_error
from aioflow.runtime.frame_state import ControlFlowExecutorState
from aioflow.runtime.kernel_stats import adaptive_default
from aioflow.runtime.loop_segments import LoopSegment, find_loops
from aioflow.runtime.node_item import (  # noqa: F401  (the modes are part of this API)
    ASYNC,
    BY_SIZE,
    FORWARD,
    FRAMED,
    INLINE,
    MAYBE,
    POOL,
    SEGMENT,
    NodeItem,
)
from aioflow.runtime.ref_inputs import kernel_for
from aioflow.runtime.segments import Segment, find_segments, segments_default


@dataclass
class FrameInfo:
    """The static layout of one frame name: its nodes' pending counts and input slots."""

    name: str
    num_nodes: int = 0
    total_inputs: int = 0
    input_count: int = 0          # Enter nodes into this frame
    pending_template: list[int] = field(default_factory=list)
    zeros: list[int] = field(default_factory=list)


def _check_fetches_outside_loops(nodes, frame_names) -> None:
    """A fetched tensor inside a while loop has one value per iteration: TF's client
    refuses to fetch it and TF's runtime fails once its _Retval is set twice; refuse it
    here, before the run, rather than return whichever iteration wrote last."""
    for node in nodes:
        frame = frame_names[node.id]
        if frame != ROOT_FRAME and node.type_string == "_Retval":
            src = next(e for e in node.in_edges if not e.is_control_edge)
            raise errors.InvalidArgumentError(
                node.def_, None, f"Cannot fetch {src.src.name}:{src.src_output}: it is "
                                 f"inside the while loop frame '{frame}' (one value per "
                                 f"iteration); fetch the loop's outputs instead.")


class ExecutorImpl:
    """One partition's executor: NodeItems, frame layouts, root nodes, kernels."""

    def __init__(self, graph: Graph, device, inline_all: bool = False, deadness: bool = False,
                 segments: bool | None = None, adaptive: bool | None = None,
                 function_library=None, share_kernels: bool = True):
        """`deadness`: run with the control-flow propagator even without control-flow
        ops (a partition whose _Recv may deliver a value that is dead elsewhere).
        `segments`: compile straight-line runs of cheap nodes (False for debugging:
        every node then runs on its own; None: the default, see segments.py).
        `adaptive`: learn the inline-or-pool decision of input-dependent kernels from
        their measured cost (kernel_stats.py; None: the default, on).
        `function_library`: the device's FunctionLibraryRuntime, given to the kernels
        (call kernels instantiate their functions with it). `share_kernels`: stateful
        kernels come from the session's OpSegment (False for a function body)."""
        self.graph = graph
        self.adaptive = adaptive_default() if adaptive is None else adaptive
        self.device = device
        self.function_library = function_library
        self.share_kernels = share_kernels
        self._labels: list[str] | None = None
        cf_info = build_control_flow_info(graph)
        nodes = list(graph.op_nodes())
        self.has_control_flow = deadness or any(n.is_control_flow for n in nodes)
        if self.has_control_flow:
            _check_fetches_outside_loops(nodes, cf_info.frame_names)
        dense = {n.id: i for i, n in enumerate(nodes)}
        # Whether some node may read a ref through a non-ref input (its kernel then reads
        # the variable first, ref_inputs.py); graphs without variables have no ref output.
        self._refs = any(t > _REF_TYPE for n in nodes for t in n.output_types)
        items = [self._make_item(i, node, cf_info.frame_names[node.id], inline_all)
                 for i, node in enumerate(nodes)]
        # _Send/_Recv (and their host-memory forms) need the step's rendezvous, also when
        # a user graph on one device holds them (the session makes one per step only where
        # some executor does).
        self.has_transfers = any(item.op in _TRANSFER_OPS for item in items)
        self.frame_infos: dict[str, FrameInfo] = {ROOT_FRAME: FrameInfo(ROOT_FRAME)}
        for item in items:
            self._lay_out(item)
        self.num_node_items = len(items)
        if segments is None:
            segments = segments_default()
        if segments and not inline_all:
            if self.has_control_flow:  # whole while loops first, then straight lines
                for members, sources, shape in find_loops(nodes, items, dense):
                    items.append(self._make_segment_item(len(items), members, sources, shape))
            found, sources = find_segments(nodes, items, dense)
            for members in found:
                items.append(self._make_segment_item(len(items), members, sources))
        self.items = items
        self.roots = tuple(self._wire_edges(nodes, items, dense))
        self.root_info = self.frame_infos[ROOT_FRAME]
        # The simple propagator's untraced runs start with the constants delivered.
        self.constant_fill = None if self.has_control_flow else fill_constants(
            items, self.roots, self.root_info.pending_template, self.root_info.total_inputs)
        self.segments = [item.segment for item in items[self.num_node_items:]]
        self.whole_segment = self._whole_step_segment()

    # -- building ---------------------------------------------------------------------
    def _make_item(self, i: int, node, frame_name: str, inline_all: bool) -> NodeItem:
        # (Attributes read once into locals: this runs once per node of every build.)
        node_def = node.def_
        num_inputs = len(node.input_types)
        item = NodeItem()
        item.id = i
        item.name = node_def.name
        item.op = node_def.op
        item.node_def = node_def
        try:
            kernel = kernel_for(node, self.device, self.function_library,
                                self.share_kernels, self._refs)  # shared when stateful; refs
        except errors.OpError as e:
            if e.node_def is not None:
                raise
            raise wrap_error(e, item) from None  # TF's AttachDef: the node named
        item.kernel = kernel
        is_async = kernel.is_async
        item.compute = kernel.compute_async if is_async else kernel.compute
        item.is_expensive = kernel.is_expensive
        item.pool_above = kernel.pool_above
        item.uses_blas = kernel.uses_blas
        mode = _mode_of(kernel, num_inputs, inline_all)
        is_transfer = getattr(kernel, "is_transfer", False)
        if is_transfer and frame_name != ROOT_FRAME:
            mode = FRAMED  # one transfer per iteration (cross-device while loops)
        item.mode = mode
        item.cost_rate = None
        item.cost_size = 0
        item.cost_countdown = (0 if self.adaptive and mode in (BY_SIZE, MAYBE)
                               and kernel.learns_cost else None)
        # Only a kernel class that overrides it (a DerefKernel wrapper has none).
        worth = getattr(type(kernel), "worth_a_thread", None)
        item.worth_a_thread = (kernel.worth_a_thread if mode == MAYBE and worth is not None
                               and worth is not op_kernel.OpKernel.worth_a_thread else None)
        item.cost_verify = False
        item.cost_samples = 0
        item.num_inputs = num_inputs
        item.cleared = (None,) * num_inputs
        item.num_outputs = len(node.output_types)
        item.frame_name = frame_name
        is_enter = node.is_enter
        item.is_merge = node.is_merge
        item.is_enter = is_enter
        item.is_exit = node.is_exit
        item.is_next_iteration = node.is_next_iteration
        item.is_control_trigger = node.is_control_trigger
        item.is_enter_exit_or_next_iter = is_enter or node.is_exit or node.is_next_iteration
        item.is_send = is_transfer and not is_async
        if is_enter:
            item.is_constant_enter = node_def.attr["is_constant"].b
            item.enter_frame_name = enter_frame_name(node_def)
            item.parallel_iterations = max(1, node_def.attr["parallel_iterations"].i)
        else:
            item.is_constant_enter = False
            item.enter_frame_name = None
            item.parallel_iterations = 1
        item.segment = None
        item.member_of = None
        return item

    def _lay_out(self, item: NodeItem) -> None:
        """Give `item` its pending id and input slots in its frame's layout."""
        info = self.frame_infos.get(item.frame_name)
        if info is None:
            info = self.frame_infos[item.frame_name] = FrameInfo(item.frame_name)
        item.pending_id = info.num_nodes
        info.num_nodes += 1
        info.pending_template.append(0)
        info.zeros.append(0)
        item.input_start = info.total_inputs
        info.total_inputs += item.num_inputs
        item.input_end = info.total_inputs
        if item.is_enter:
            child = self.frame_infos.get(item.enter_frame_name)
            if child is None:
                child = self.frame_infos[item.enter_frame_name] = FrameInfo(
                    item.enter_frame_name)
            child.input_count += 1

    def _make_segment_item(self, i: int, members: list[NodeItem], sources: dict,
                           loop_shape: dict | None = None) -> NodeItem:
        """One item running `members` (in topological order) as one compiled function;
        with `loop_shape`, a whole while loop (its Enters, then its frame's nodes)."""
        item = NodeItem()
        first = members[0]
        item.id = i
        item.name = f"{first.name}/_segment_{i}"
        item.op = "_Segment"
        item.node_def = first.node_def
        item.kernel = None
        item.is_expensive = None
        item.mode = SEGMENT
        item.pool_above = None
        item.uses_blas = False
        item.num_inputs = 0
        item.cleared = ()
        item.frame_name = first.frame_name
        for flag in ("is_merge", "is_enter", "is_exit", "is_next_iteration",
                     "is_control_trigger", "is_constant_enter", "is_enter_exit_or_next_iter",
                     "is_send"):
            setattr(item, flag, False)
        item.enter_frame_name = None
        item.parallel_iterations = 1
        item.member_of = None
        item.cost_rate = item.cost_countdown = item.worth_a_thread = None
        item.cost_size = 0
        item.cost_verify = False
        item.cost_samples = 0
        self._lay_out(item)
        for member in members:
            member.member_of = item
        item.segment = (Segment(item, members, sources) if loop_shape is None
                        else LoopSegment(item, members, sources, loop_shape))
        item.compute = item.segment.run
        item.num_outputs = len(item.segment.outputs)
        return item

    def _wire_edges(self, nodes, items: list[NodeItem], dense: dict) -> list[NodeItem]:
        """Fill every item's out-edge lists and its frame's pending template; the roots."""
        # Per item id (ids are dense): its out-edges by kind. Locals throughout: this
        # runs once per edge of every build.
        data = [[] for _ in items]
        control = [[] for _ in items]
        into_segment = [[] for _ in items]  # (dst, member, slot, idx)
        templates = {name: info.pending_template for name, info in self.frame_infos.items()}
        for node in nodes:
            src = items[dense[node.id]]
            src_seg = src.member_of
            for e in node.out_edges:
                dst_node = e.dst
                if dst_node.id == SINK_ID:
                    continue
                dst = items[dense[dst_node.id]]
                out = e.src_output
                is_control = out == CONTROL_SLOT
                idx = -1 if is_control else dst.input_start + e.dst_input
                seg = dst.member_of
                if seg is not None and not is_control and src.id in seg.segment.constants:
                    # A constant the segment reads as a global: no edge to wait for; the
                    # segment fills the slot itself if it falls back.
                    seg.segment.constant_slots.append((idx, src.id, out))
                    continue
                target = seg if seg is not None and seg is not src_seg else dst
                if target is not dst:
                    into_segment[src.id].append((target, dst, out, idx))
                elif is_control:
                    control[src.id].append(dst)
                else:
                    data[src.id].append((dst, out, idx))
                if src_seg is not None and seg is not src_seg:
                    # The segment delivers its member's output to the outside.
                    slot = -1 if is_control else src_seg.segment.output_slot(src, out)
                    if target is not dst:
                        into_segment[src_seg.id].append((target, dst, slot, idx))
                    elif is_control:
                        control[src_seg.id].append(dst)
                    else:
                        data[src_seg.id].append((dst, slot, idx))
                # One more in-edge of `target`; a Merge counts 1 until its first live
                # input and 2 per control edge (TF's Merge encoding).
                template = templates[target.frame_name]
                if target.is_merge:
                    template[target.pending_id] = max(template[target.pending_id], 1) + (
                        2 if is_control else 0)
                else:
                    template[target.pending_id] += 1
        roots = []
        for item in items:
            i = item.id
            self._set_edges(item, data[i], control[i], into_segment[i])
            if item.member_of is None and templates[item.frame_name][item.pending_id] == 0:
                roots.append(item)
        for item in items[self.num_node_items:]:
            item.segment.set_entries([m for m in item.segment.members if not self._pending(m)])
        return roots

    def _whole_step_segment(self) -> Segment | None:
        """The one segment that is this whole partition, if it is: no control flow or
        transfers; every node a member, or a constant the segment reads as a global;
        no member input read from a slot and no output delivered outside (its _Retvals
        write the call frame). A step of it is then one call of its function."""
        if self.has_control_flow or self.has_transfers or len(self.segments) != 1:
            return None
        (segment,) = self.segments
        if isinstance(segment, LoopSegment) or segment.outputs:
            return None
        members = {m.id for m in segment.members}
        if any(item.id not in members and item.id not in segment.constants
               for item in self.items[:self.num_node_items]):
            return None
        if any(src not in members and src not in segment.constants
               for sources in segment.sources.values() for src, _ in sources):
            return None
        return segment

    def _pending(self, item: NodeItem) -> int:
        return self.frame_infos[item.frame_name].pending_template[item.pending_id]

    def _set_edges(self, item: NodeItem, data, control, into_segment) -> None:
        """The out-edge lists of the propagator this graph uses (the other's stay empty)."""
        if not self.has_control_flow:
            # No deadness: an edge into a segment is a plain edge to the segment.
            item.out_data = tuple([(dst.id, slot, idx) for dst, slot, idx in data]
                                  + [(seg.id, slot, idx) for seg, _, slot, idx in into_segment
                                     if idx >= 0]) if into_segment else tuple(
                [(dst.id, slot, idx) for dst, slot, idx in data])
            item.out_control = tuple([dst.id for dst in control]
                                     + [seg.id for seg, _, _, idx in into_segment if idx < 0]
                                     ) if into_segment or control else ()
            item.out_data_cf = item.out_merge_cf = item.out_control_cf = ()
            item.out_control_merge_cf = item.out_segment_cf = item.out_recv_cf = ()
            item.has_rare_edges_cf = False
            return
        item.out_data = item.out_control = ()
        item.out_data_cf = tuple((d, s, i, d.pending_id) for d, s, i in data if not d.is_merge)
        item.out_merge_cf = tuple((d, s, i, d.pending_id) for d, s, i in data if d.is_merge)
        item.out_control_cf = tuple((d, d.pending_id) for d in control
                                    if not d.is_merge and not _is_framed_recv(d))
        # Control edges into a Recv inside a loop (the control loop's Merge gates it): the
        # propagator parks it in the rendezvous as it becomes ready (frame_state.py).
        item.out_recv_cf = tuple((d, d.pending_id) for d in control if _is_framed_recv(d))
        item.out_control_merge_cf = tuple((d, d.pending_id) for d in control if d.is_merge)
        item.out_segment_cf = tuple((seg, slot, idx, seg.pending_id, member.pending_id)
                                    for seg, member, slot, idx in into_segment)
        item.has_rare_edges_cf = bool(item.out_merge_cf or item.out_control_cf
                                      or item.out_control_merge_cf or item.out_segment_cf
                                      or item.out_recv_cf)

    # -- running ------------------------------------------------------------------------
    def timeline_labels(self) -> list[str]:
        """Per item, TF's step-stats label "name = Op(inputs)" ("(tensor_name @device)"
        for transfers), from the graph as it runs; built on the first traced run."""
        if self._labels is None:
            self._labels = [_label(n) for n in self.graph.to_graph_def().node]
        return self._labels

    def new_state(self, ctx, runner):
        """The per-run state of this partition, chosen once per graph."""
        return (ControlFlowExecutorState if self.has_control_flow
                else SimpleExecutorState)(self, ctx, runner)

    async def run(self, ctx, runner) -> None:
        """Run one step of this partition; raises the step's first error."""
        await run_states([self.new_state(ctx, runner)], ctx)


def _is_framed_recv(item: NodeItem) -> bool:
    return item.mode == FRAMED and not item.is_send


def _mode_of(kernel, num_inputs: int, inline_all: bool) -> int:
    """How the executor runs this kernel (NodeItem.mode)."""
    if kernel.is_async:
        return ASYNC
    if kernel.forwards_input and num_inputs == 1:
        return FORWARD
    if inline_all or kernel.expensive is False:
        return INLINE
    if kernel.expensive is None:
        uses_size = (kernel.pool_above is not None and num_inputs > 0
                     and type(kernel).is_expensive is op_kernel.OpKernel.is_expensive)
        return BY_SIZE if uses_size else MAYBE
    return POOL


_STEP_OBSERVERS: list = []


@contextlib.contextmanager
def observe_steps(observer):
    """For debugging and tests: `observer(states)` is called with the executor states of
    every step that starts (one per partition; their `in_flight`, `jobs` and `tasks` show
    what a step still has running) while the block runs."""
    _STEP_OBSERVERS.append(observer)
    try:
        yield
    finally:
        _STEP_OBSERVERS.remove(observer)


async def run_states(states: list, ctx) -> None:
    """Run the states of one step (one per partition) to the end, without a task per
    partition; raise the step's first error once every partition has stopped (as TF's
    DirectSession waits for all of its executors). A deadline, close() or a failing
    sibling aborts them through `ctx.states`."""
    ctx.states.extend(states)
    for observer in _STEP_OBSERVERS:
        observer(states)
    try:
        for state in states:
            if state.error is None:  # not aborted by a sibling that failed as it started
                state.start()
        if len(states) == 1:
            await states[0].done
        else:
            await asyncio.wait([state.done for state in states])
            for state in states:
                if state.done.exception() is not None:
                    raise ctx.first_error or state.done.exception()
    except asyncio.CancelledError:
        for state in states:
            state.abort(None)
        for state in states:
            await state.wait_in_flight()
        raise
    finally:
        for state in states:
            ctx.states.remove(state)  # no ctx <-> state cycle left to the cyclic GC
            if state.done.done() and not state.done.cancelled():
                state.done.exception()  # seen: asyncio would log it as never retrieved


_TRANSFER_OPS = frozenset({"_Send", "_Recv", "_HostSend", "_HostRecv"})
_REF_TYPE = 100  # a ref type's DataType enum is its value type's + 100


def _label(node_def) -> str:
    if node_def.op in _TRANSFER_OPS:
        peer = "recv_device" if node_def.op in ("_Send", "_HostSend") else "send_device"
        detail = (f"{node_def.attr['tensor_name'].s.decode(errors='backslashreplace')} "
                  f"@{node_def.attr[peer].s.decode(errors='backslashreplace')}")
    else:
        detail = ", ".join(node_def.input)
    return f"{node_def.name} = {node_def.op}({detail})"
