"""The propagator for graphs with v1 control flow: frames, iterations and deadness,
following TensorFlow's executor (PropagatorState) step for step.

A ready entry is a TaggedNode `(item, frame, iteration, is_dead)`. A frame instance is
(parent frame, parent iteration, frame_name); each IterationState holds flat lists of
pending counts, dead counts and input slots copied from its frame's templates.
Iterations and frames are freed as soon as they are done, so memory stays bounded
however many iterations a loop runs.

Its `process` is the one process loop (process_loop.py) with this propagator's
fragments: a ready entry is a tagged node, its inputs are its iteration's, and outputs
propagate through `activate` (and `propagate` for Enter, Exit and NextIteration).

Transfers inside a while loop (mode FRAMED: a loop split over devices) run in the
propagator itself (a Send written out in the process loop's `transfer` fragment, other
transfers in `transfer`), once per iteration, under the key
`(kernel.frame_prefix, frame_id, iter)` (TF's key is the prefix and "frame_id:iter"; a
tuple is cheaper to make and hash every iteration). A Recv runs as it becomes ready
(`_recv_now`, from `activate`): it takes a value sent already, or waits parked in the
rendezvous. A Send whose Recv waits hands the value to that partition's `_recv_done`,
which queues it on that partition's `completed` and asks the runner for a drain: the
runner processes the receiving partition in the same slice, after the sender's
`process` returns (no task, no pool, no turn of the event loop), and that partition's
own `process` propagates it. Dead values travel as dead, as TF sends them.
"""

from __future__ import annotations

from hashlib import blake2b
from time import perf_counter_ns, time_ns

from aioflow.framework import errors
from aioflow.runtime.executor_state import ExecutorStateBase, wrap_error
from aioflow.runtime.node_item import FRAMED
from aioflow.runtime.process_loop import Propagator, generate


class IterationState:
    """One iteration of one frame: pending counts, dead counts, input slots."""

    __slots__ = ("iter_num", "pending", "dead", "inputs", "outstanding_ops",
                 "outstanding_frame_count", "child_frames")

    def __init__(self, iter_num: int, info):
        self.iter_num = iter_num
        self.pending = info.pending_template[:]
        self.dead = info.zeros[:]
        self.inputs = [None] * info.total_inputs
        self.outstanding_ops = 0
        self.outstanding_frame_count = 0
        self.child_frames: dict | None = None


class FrameState:
    """One instance of a while-loop frame (or the root frame)."""

    __slots__ = ("name", "info", "parent_frame", "parent_iter", "max_parallel_iterations",
                 "num_pending_inputs", "iteration_count", "num_outstanding_iterations",
                 "iterations", "next_iter_roots", "inv_values", "dead_exits", "live_exits",
                 "frame_id")

    def __init__(self, name: str, info, parent_frame, parent_iter, max_parallel: int):
        self.name = name
        # Names this instance in rendezvous keys (TF's frame_id), made on first use by a
        # transfer (see _frame_id); 0 for the root frame.
        self.frame_id = 0 if parent_frame is None else None
        self.info = info
        self.parent_frame = parent_frame
        self.parent_iter = parent_iter
        self.max_parallel_iterations = max_parallel
        self.num_pending_inputs = info.input_count
        self.iteration_count = 0
        self.num_outstanding_iterations = 1
        self.iterations = {0: IterationState(0, info)}
        self.next_iter_roots: list = []
        self.inv_values: list = []
        self.dead_exits: list = []
        self.live_exits: set | None = None  # ids of the Exits that delivered a value


class ControlFlowExecutorState(ExecutorStateBase):
    """Runs a graph with Switch/Merge/Enter/Exit/NextIteration."""

    def start(self) -> None:
        # The root frame is made in the first slice (`begin`; see SimpleExecutorState).
        self.rendezvous = self.kctx.rendezvous if self.kctx is not None else None
        self.take_waiter, self.take_sent = ((None, None) if self.rendezvous is None
                                            else self.rendezvous.takers())
        self.recv_done = self._recv_done  # bound once: parked with every waiting Recv
        self.ready.extend(self.impl.roots)  # (items until `begin` tags them)
        self.runner.run_now(self)

    def begin(self) -> None:
        self.begun = True
        self.root = FrameState("", self.impl.root_info, None, None, 1)
        it0 = self.root.iterations[0]
        roots = self.impl.roots
        self.ready.clear()
        self.ready.extend((item, self.root, it0, False) for item in roots)
        it0.outstanding_ops = len(roots)

    process = generate(Propagator(
        name="ControlFlowExecutorState",
        token="tagged",
        unpack="item, frame, it, is_dead = tagged",
        inputs="it.inputs",
        is_dead="is_dead",
        is_transfer="mode == FRAMED",
        transfer="""
            if not item.is_send or stats is not None:
                self.transfer(item, tagged, args)  # a Recv run as a node, or traced
                continue
            # A Send in a loop, written out here: it runs every iteration.
            key = (item.kernel.frame_prefix, frame.frame_id or self.frame_id(frame),
                   it.iter_num)
            value = args[0]
            waiter = take_waiter(key, None)
            if waiter is None:
                rendezvous.put(key, value, value is None)
            else:  # its Recv waits: `_recv_done` queues the value on its partition
                waiter[0](waiter[1], value, value is None, None)
            if item.out_data_cf or item.has_rare_edges_cf:
                completed.append((tagged, ()))
            else:  # nothing to activate: it is done, only its iteration counts it
                it.outstanding_ops -= 1
                if not it.outstanding_ops and self.cleanup_iterations(frame, it):
                    self.frame_done(frame)
            continue
        """,
        setup="""
            rendezvous = self.rendezvous
            take_waiter = self.take_waiter
        """,
        propagate="""
            if item.is_enter_exit_or_next_iter:
                self.propagate(tagged, outs)
            else:  # propagate() without the frame cases (one call on the hot path)
                self.activate(item, is_dead, frame, it, outs)
                it.outstanding_ops -= 1
                if not it.outstanding_ops and self.cleanup_iterations(frame, it):
                    self.frame_done(frame)
        """))

    def expand(self, tagged) -> None:
        """Run a segment's members node by node this time: their pending counts count
        only edges between members, and their dead counts already hold the dead inputs
        that reached the segment from outside."""
        item, frame, it, _ = tagged
        segment = item.segment
        segment.fill_constant_slots(it.inputs)
        dead = it.dead
        append = self.ready.append
        for member in segment.entries:
            append((member, frame, it, dead[member.pending_id] > 0))
        it.outstanding_ops += len(segment.entries) - 1  # the segment itself is done

    # -- transfers inside a while loop (mode FRAMED) --------------------------------------
    def transfer(self, item, tagged, args) -> None:
        """A transfer inside a loop run as a node (the process loop runs an untraced
        Send itself): a Recv that went through the ready queue (`_recv_now` runs the
        others) takes its value or waits parked; a traced transfer is timed
        (`traced_transfer`). Outputs come back through `completed`."""
        if self.stats is not None:
            outs = self.traced_transfer(item, tagged, args)
            if outs is not None:
                self.completed.append((tagged, outs))
            return
        _, frame, it, _ = tagged
        key = (item.kernel.frame_prefix, frame.frame_id or _frame_id(frame), it.iter_num)
        got = self.take_sent(key, None)
        if got is None:
            got = self.rendezvous.recv_or_wait(key, self.recv_done, tagged)
            if got is None:
                self.in_flight += 1  # `_recv_done` will come
                return
        self.completed.append((tagged, (None if got[1] else got[0],)))

    def send_dead(self, tagged) -> None:
        """A dead Send sends deadness (TF runs transfers even when dead)."""
        item, frame, it, _ = tagged
        if item.mode == FRAMED:
            self.rendezvous.send((item.kernel.frame_prefix, frame.frame_id or _frame_id(frame),
                                  it.iter_num), None, True)
        else:
            item.compute(self.kctx, (None,))

    def _recv_now(self, item, frame: FrameState, it: IterationState) -> int:
        """Run a ready Recv inside a loop from `activate`: 0 when its value was there
        (propagated now), 1 when it waits parked or, when something is wrong (an abort,
        a duplicate), is queued to run as a node and raise its error there."""
        key = (item.kernel.frame_prefix, frame.frame_id or _frame_id(frame), it.iter_num)
        got = self.take_sent(key, None)
        if got is not None:
            self.activate(item, False, frame, it, (None if got[1] else got[0],))
            return 0
        tagged = (item, frame, it, False)
        if self.rendezvous.park(key, self.recv_done, tagged):
            self.in_flight += 1
        else:
            self.ready.append(tagged)
        return 1

    def _recv_done(self, tagged, value, is_dead: bool, error) -> None:
        """The value of a waiting Recv inside a loop arrived (called by the sender's
        `transfer`, or with `error` by the rendezvous's abort): queued on `completed`,
        and the runner asked for a drain (it is draining: the sender's `process` is on
        its stack; this partition's `process` runs after it, in the same slice)."""
        if error is not None or self.error is not None:
            self._callback_done(tagged, None, error)
            return
        self.in_flight -= 1
        self.completed.append((tagged, (None if is_dead else value,)))
        if not self.queued:
            runner = self.runner
            if runner.draining:  # (always: a Send runs in a `process`) runner.submit,
                self.queued = True  # written out: twice per iteration of a split loop
                runner.queue.append(self)
            else:
                runner.submit(self)

    def traced_transfer(self, item, tagged, args):
        """A transfer inside a while loop in a traced run: what `process` does for mode
        FRAMED, timed as the other kernels are. Returns the outputs, or None for a Recv
        whose value is not there yet (its `done` queues them)."""
        _, frame, it, _ = tagged
        key = (item.kernel.frame_prefix, frame.frame_id or _frame_id(frame), it.iter_num)
        stats = self.stats
        start, op_start = time_ns(), perf_counter_ns()
        if item.is_send:
            value = args[0]
            self.rendezvous.send(key, value, value is None)
            stats.record(item, start, op_start, perf_counter_ns(), (), args)
            return ()

        def done(value, is_dead, error):
            outs = None if error is not None else (None if is_dead else value,)
            if error is None:
                stats.record(item, start, op_start, perf_counter_ns(), outs)
            self._callback_done(tagged, outs, error)

        got = self.rendezvous.recv_callback(key, done)
        if got is None:
            self.in_flight += 1
            return None
        outs = (None if got[1] else got[0],)
        stats.record(item, start, op_start, perf_counter_ns(), outs)
        return outs

    @staticmethod
    def frame_id(frame) -> int:
        """A frame instance's id in rendezvous keys (`_frame_id`)."""
        return _frame_id(frame)

    def wrap(self, tagged, exc) -> errors.OpError:
        item, frame, it, _ = tagged
        where = ""
        if frame.name:
            where = f" (in while-loop frame '{frame.name}', iteration {it.iter_num})"
        return wrap_error(exc, item, where)

    # -- propagation (TF's PropagateOutputs / ActivateNodes) ------------------------------
    def activate(self, item, is_dead: bool, frame: FrameState, it: IterationState, outs) -> None:
        """Deliver `item`'s outputs (None: all dead) to its successors in (frame, it).

        TF's ActivateNodes: a non-Merge is ready when its pending count reaches zero and
        dead if any input was dead; a Merge's count keeps bit 0 set until its first live
        input (which it takes), and 2 per control edge; it is ready on its first live
        input with no control edge pending, or dead once every data input is dead.
        """
        pending = it.pending
        dead = it.dead
        inputs = it.inputs
        append = self.ready.append
        activated = 0
        for dst, slot, idx, pid in item.out_data_cf:
            value = None if outs is None else outs[slot]
            if value is None:
                dead[pid] += 1
            else:
                inputs[idx] = value
            c = pending[pid] - 1
            pending[pid] = c
            if not c:
                dst_dead = dead[pid] > 0
                if dst_dead and dst.is_control_trigger:
                    dst_dead = False
                append((dst, frame, it, dst_dead))
                activated += 1
        if item.has_rare_edges_cf:
            activated += self._activate_rare(item, is_dead, frame, it, outs)
        it.outstanding_ops += activated

    def _activate_rare(self, item, is_dead: bool, frame: FrameState, it: IterationState,
                       outs) -> int:
        """The Merge and control edges of `activate`; returns how many became ready."""
        pending = it.pending
        dead = it.dead
        inputs = it.inputs
        append = self.ready.append
        activated = 0
        for dst, slot, idx, pid in item.out_merge_cf:
            value = None if outs is None else outs[slot]
            count = pending[pid]
            if value is not None:
                pending[pid] = count & ~1
                if count & 1:
                    inputs[idx] = value
                if count == 1:
                    append((dst, frame, it, False))
                    activated += 1
            else:
                # A dead Enter makes the Merge dead at once (TF): the NextIteration that
                # would be its other input never runs in a loop on an untaken cond branch.
                dead[pid] += 1
                if count == 1 and (dead[pid] == dst.num_inputs or item.is_enter):
                    append((dst, frame, it, True))
                    activated += 1
        for dst, pid in item.out_control_cf:
            if is_dead:
                dead[pid] += 1
            c = pending[pid] - 1
            pending[pid] = c
            if not c:
                dst_dead = dead[pid] > 0
                if dst_dead and dst.is_control_trigger:
                    dst_dead = False
                append((dst, frame, it, dst_dead))
                activated += 1
        for dst, pid in item.out_recv_cf:
            # A Recv inside a loop, ready: it takes its value at once (propagated here) or
            # waits for it parked in the rendezvous (an outstanding op of its iteration
            # until `_recv_done` propagates it), with no pass through the ready queue.
            if is_dead:
                dead[pid] += 1
            c = pending[pid] - 1
            pending[pid] = c
            if not c:
                if dead[pid] or self.stats is not None:
                    append((dst, frame, it, dead[pid] > 0))
                    activated += 1
                else:
                    activated += self._recv_now(dst, frame, it)
        for dst, pid in item.out_control_merge_cf:
            count = pending[pid] - 2
            pending[pid] = count
            dst_dead = dead[pid] == dst.num_inputs
            if count == 0 or (count == 1 and dst_dead):
                append((dst, frame, it, dst_dead))
                activated += 1
        for seg, slot, idx, pid, member_pid in item.out_segment_cf:
            # Into a segment's member: the value goes to the member's slot, deadness is
            # counted on the member (for a fallback) and on the segment.
            if is_dead if slot < 0 else (outs is None or outs[slot] is None):
                dead[member_pid] += 1
                dead[pid] += 1
            elif slot >= 0:
                inputs[idx] = outs[slot]
            c = pending[pid] - 1
            pending[pid] = c
            if not c:
                append((seg, frame, it, dead[pid] > 0))
                activated += 1
        return activated

    def propagate(self, tagged, outs) -> None:
        """Move outputs into the right frame and iteration, then mark the node done."""
        item, frame, it, is_dead = tagged
        if not item.is_enter_exit_or_next_iter:
            self.activate(item, is_dead, frame, it, outs)
        elif item.is_enter:
            child = self.find_or_create_child_frame(frame, it, item)
            child.num_pending_inputs -= 1
            if item.is_constant_enter:
                self.add_loop_inv(child, item, None if outs is None else outs[0])
            else:
                self.activate(item, is_dead, child, child.iterations[0], outs)
        elif item.is_exit:
            if is_dead:
                if it.iter_num == frame.iteration_count:
                    frame.dead_exits.append(item)
            elif self.first_live_exit(item, frame, it):
                self.activate(item, False, frame.parent_frame, frame.parent_iter, outs)
        elif not is_dead:  # NextIteration
            if (it.iter_num == frame.iteration_count
                    and frame.num_outstanding_iterations == frame.max_parallel_iterations):
                frame.next_iter_roots.append((item, outs[0]))
            else:
                if it.iter_num == frame.iteration_count:
                    out_it = self.increment_iteration(frame)
                else:
                    out_it = frame.iterations[it.iter_num + 1]
                self.activate(item, False, frame, out_it, outs)
        # This node is done; its completion may finish its iteration and frame.
        it.outstanding_ops -= 1
        if not it.outstanding_ops and self.cleanup_iterations(frame, it):
            self.frame_done(frame)

    def first_live_exit(self, item, frame: FrameState, it: IterationState) -> bool:
        """True the first time Exit `item` delivers a value in this frame instance. An Exit
        fed by its loop's Switch does so once, when the loop ends; one fed from inside the
        body would deliver every iteration and make its consumers ready before their other
        inputs (TF's executor then runs them on empty inputs): the step fails instead."""
        fired = frame.live_exits
        if fired is None:
            fired = frame.live_exits = set()
        if item.id not in fired:
            fired.add(item.id)
            return True
        self.fail(self.wrap((item, frame, it, False), errors.InvalidArgumentError(
            None, None, f"Exit node '{item.name}' delivered a value in more than one iteration "
            f"of while-loop frame '{frame.name}': an Exit must be fed by its loop's Switch, "
            "so that it fires once, when the loop ends")))
        return False

    def find_or_create_child_frame(self, frame: FrameState, it: IterationState, item):
        children = it.child_frames
        if children is None:
            children = it.child_frames = {}
        child = children.get(item.enter_frame_name)
        if child is None:
            info = self.impl.frame_infos[item.enter_frame_name]
            child = FrameState(item.enter_frame_name, info, frame, it, item.parallel_iterations)
            children[item.enter_frame_name] = child
            it.outstanding_frame_count += 1
        return child

    def add_loop_inv(self, frame: FrameState, item, value) -> None:
        """A loop invariant: visible to every iteration, including ones started later."""
        frame.inv_values.append((item, value))
        outs = (value,)
        for it in list(frame.iterations.values()):
            self.activate(item, value is None, frame, it, outs)

    def increment_iteration(self, frame: FrameState) -> IterationState:
        frame.iteration_count += 1
        it = IterationState(frame.iteration_count, frame.info)
        frame.iterations[frame.iteration_count] = it
        frame.num_outstanding_iterations += 1
        frame.dead_exits.clear()
        roots, frame.next_iter_roots = frame.next_iter_roots, []
        for item, value in roots:
            self.activate(item, value is None, frame, it, (value,))
        for item, value in frame.inv_values:
            self.activate(item, value is None, frame, it, (value,))
        return it

    def cleanup_iterations(self, frame: FrameState, it: IterationState) -> bool:
        """Free the finished iterations from `it` on; start a deferred one; frame done?"""
        n = it.iter_num
        iterations = frame.iterations
        while n <= frame.iteration_count:
            cur = iterations.get(n)
            # Done: no op or child frame outstanding, and the frame has all its inputs
            # (iteration 0) or the previous iteration is gone (TF's IsIterationDone).
            if cur is None or cur.outstanding_ops or cur.outstanding_frame_count:
                break
            if (frame.num_pending_inputs if n == 0 else (n - 1) in iterations):
                break
            del iterations[n]
            frame.num_outstanding_iterations -= 1
            n += 1
            if frame.next_iter_roots:
                self.increment_iteration(frame)
        return not frame.num_pending_inputs and not frame.num_outstanding_iterations  # done

    def frame_done(self, frame: FrameState) -> None:
        """Delete a finished frame (its dead exits go to the parent as dead), recursively."""
        while frame is not None:
            parent, parent_it = frame.parent_frame, frame.parent_iter
            if parent is None:
                return
            for item in frame.dead_exits:
                self.activate(item, True, parent, parent_it, None)
            del parent_it.child_frames[frame.name]
            parent_it.outstanding_frame_count -= 1
            if parent_it.outstanding_ops or not self.cleanup_iterations(parent, parent_it):
                return
            frame = parent


def _frame_id(frame: FrameState) -> int:
    """A frame instance's id, the same in every partition of the step (and process):
    a 64-bit hash of its parent's id, the parent iteration and its name, as TF's."""
    if frame.frame_id is None:
        text = f"{_frame_id(frame.parent_frame)}:{frame.parent_iter.iter_num}:{frame.name}"
        digest = blake2b(text.encode("utf-8", "surrogateescape"), digest_size=8).digest()
        frame.frame_id = int.from_bytes(digest, "little") & (2**63 - 1)
    return frame.frame_id
