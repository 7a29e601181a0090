"""NodeItem: what the executor needs of one node, and how its kernel runs (its mode)."""

from __future__ import annotations

# How a node's kernel runs (NodeItem.mode).
INLINE = 0      # on the event loop, in the running drain
POOL = 1        # on the device's thread pool
MAYBE = 2       # the kernel decides from its inputs (is_expensive) between INLINE and POOL
ASYNC = 3       # a coroutine (or a task-free start_async), awaited on the loop
FORWARD = 4     # the kernel forwards its one input: the executor skips the call
BY_SIZE = 5     # POOL when the first or last input has more than `pool_above` elements
SEGMENT = 6     # a compiled straight-line segment of INLINE/FORWARD/BY_SIZE/MAYBE nodes
FRAMED = 7      # a transfer inside a while loop: its key names the frame and iteration


class NodeItem:
    """What the executor needs of one node, flat and precomputed (TF's NodeItem)."""

    __slots__ = (
        "id",                 # dense index in ExecutorImpl.items
        "name",               # the node's name (errors, traces)
        "op",                 # the node's op type
        "node_def",           # the NodeDef (errors carry it)
        "kernel",             # the OpKernel, created once per executor (None: a segment)
        "compute",            # kernel.compute / compute_async, or the segment's runner
        "is_expensive",       # kernel.is_expensive (asked per call in mode MAYBE)
        "mode",               # INLINE, POOL, MAYBE, ASYNC, FORWARD, BY_SIZE, SEGMENT, FRAMED
        "pool_above",         # mode BY_SIZE: an input larger than this goes to the pool
        "uses_blas",          # the pool job passes through the device's BLAS gate
        "input_start",        # first input slot in the frame's slot list
        "input_end",          # one past the last input slot
        "num_inputs",         # data inputs
        "cleared",            # (None,) * num_inputs: its input slots after an inline call
                              #   (TF's ClearInputs: a value no later node reads is freed)
        "num_outputs",        # outputs
        "pending_id",         # index of its pending / dead counts in the frame's lists
        "out_data",           # simple propagator: ((dst_id, src_slot, dst_slot_index), ...)
        "out_control",        # simple propagator: (dst_id, ...)
        "out_data_cf",        # control-flow propagator: data edges to non-Merge nodes,
                              #   ((dst_item, src_slot, dst_slot_index, dst_pending_id), ...)
        "out_merge_cf",       # data edges to Merge nodes, same form
        "out_control_cf",     # control edges to non-Merge nodes, ((dst_item, pending_id), ...)
        "out_control_merge_cf",  # control edges to Merge nodes, same form
        "out_segment_cf",     # edges into a segment's member: ((segment_item, src_slot or
                              #   -1 for control, dst_slot_index, segment_pending_id,
                              #   member_pending_id), ...): deadness counts on the member
        "out_recv_cf",        # control edges to a Recv inside a loop (mode FRAMED), same form
        "has_rare_edges_cf",  # any of the five lists above is non-empty
        "frame_name",         # the while-loop frame it runs in ("" for the root)
        "enter_frame_name",   # Enter: the child frame it opens
        "parallel_iterations",  # Enter: the child frame's parallel_iterations
        "is_merge", "is_enter", "is_exit", "is_next_iteration", "is_control_trigger",
        "is_constant_enter",  # an Enter with is_constant (a loop invariant)
        "is_enter_exit_or_next_iter",  # one test for the frame-changing ops
        "is_send",            # a synchronous transfer: runs even when dead (sends deadness)
        "cost_rate",          # BY_SIZE/MAYBE: learned CPU seconds per input element (None:
                              #   not timed yet, the static rule decides; kernel_stats.py)
        "cost_size",          # the input size at its last sample
        "cost_samples",       # samples taken so far (the first WARMUP are back to back)
        "cost_countdown",     # calls until the next sample (None: never timed, static rule)
        "cost_verify",        # the next sample is timed in CPU time (a clock sample said
                              #   expensive and may have been a preemption)
        "worth_a_thread",     # MAYBE: the kernel's worth_a_thread(inputs) (a call it would
                              #   run inline goes to a free pool thread when the loop has
                              #   other work), or None: the kernel never asks for one
        "segment",            # mode SEGMENT: its segments.Segment; else None
        "member_of",          # the SEGMENT item this node is a member of, or None
    )

    def __repr__(self) -> str:
        return f"<NodeItem {self.id} {self.name} ({self.op})>"
