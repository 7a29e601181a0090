"""The executor's one process loop: written once here, generated per propagator.

One place propagates (asyncio's `_run_once` rule). Kernels that finish outside `process`
(on the pool, in a task, through a callback, or at once from a task-free start) and
tensors arriving from another partition (a transfer inside a while loop too) append
`(token, outputs)` to the receiving state's `completed` queue and ask the runner
(loop_runner.py) for a slice; only the state's `process`, called by the runner, moves
outputs to successors and activates them. No `process` ever runs nested in another.

`process` runs ready nodes (inline, forwarded, compiled segments with their node-by-node
fallback, or handed to `offload`), propagates their outputs and the queued completions,
resumes compiled loops that yielded, records the first error naming its node, and
returns when nothing is left or its deadline passed (the clock is read once per 32
nodes). It is the per-node hot path. The propagators supply only what differs between
them, as source fragments (`Propagator`):

- what a ready entry is: the simple propagator's is the node's item, the control-flow
  one's a tagged node `(item, frame, iteration, is_dead)`;
- where a node's input slots are (one flat list, or its iteration's);
- whether an entry can be dead (no deadness without control flow), and how a transfer
  inside a while loop runs (one per iteration; only frames have them);
- how outputs propagate (TF's PropagateOutputs / ActivateNodes): written out flat for
  the simple propagator, `activate` / `propagate` for frames and iterations.

The loop is generated once per propagator class from the fragments (as segments.py
generates a segment's code), so neither pays a call or a test per node for what only
the other needs; a fragment that does not apply (`is_dead` of the simple propagator,
the constant False) is compiled away. The generated source is registered with
`linecache`: tracebacks show its lines.
"""

from __future__ import annotations

import linecache
import textwrap
from dataclasses import dataclass
from time import perf_counter, time_ns

from aioflow.runtime.loop_segments import Suspended
from aioflow.runtime.node_item import FORWARD, FRAMED, INLINE, SEGMENT

CHECK_EVERY = 31  # test the clock once per 32 nodes


@dataclass(frozen=True)
class Propagator:
    """The source fragments a propagator gives the process loop."""

    name: str        # names the generated function in tracebacks
    token: str       # the name of a queue entry (a ready node, a completion's token)
    unpack: str      # statements: that entry -> `item` and what else it holds ("": the
                     # entry is the item)
    inputs: str      # expression: the input slot list of `item`'s node
    is_dead: str     # expression: the entry is dead ("False": never)
    is_transfer: str  # expression: `item` is a transfer inside a loop (FRAMED; "False")
    transfer: str    # statements: run that transfer; they end in `continue` (its outputs,
                     # if any, come back through `completed`)
    setup: str       # statements: locals the fragments read, bound once per call
    propagate: str   # statements: deliver `outs` of `item` (None: all dead) and mark it done
    clear: str = "pass"  # statements after an inline call: its input slots let go of their
                         # values (TF's ClearInputs), so that a tensor no later node reads
                         # is freed now, not when the step ends


_LOOP = '''\
def process(self, deadline):
    """Run ready nodes and propagate every output: the only code that does."""
    if not self.begun:
        self.begin()
    ready = self.ready
    completed = self.completed
    ctx = self.kctx
    popleft = ready.popleft
    stats = self.stats
    {setup}
    if stats is not None:
        stats.scheduled_ns = time_ns()  # inline nodes: scheduled when the drain began
    count = 0
    while True:
        if ready:
            {token} = popleft()
            {unpack}
            mode = item.mode
            try:
                if {is_dead}:
                    if mode == SEGMENT:
                        self.expand({token})
                        continue
                    outs = None
                    if item.is_send:  # a dead value is sent as dead (TF runs transfers)
                        self.send_dead({token})
                elif mode == SEGMENT:
                    # Traced, every node shows in the stats: run them one by one.
                    outs = None if stats is not None else item.compute(ctx, {inputs})
                    count |= CHECK_EVERY  # a segment is many nodes: test the clock
                    if outs is None:
                        self.expand({token})
                        continue
                elif mode == FORWARD:
                    outs = {inputs}[item.input_start:item.input_end]
                    if stats is not None:
                        stats.forwarded(item, outs)
                else:
                    args = {inputs}[item.input_start:item.input_end]
                    if mode != INLINE:
                        if {is_transfer}:
                            {transfer}
                        if self.offload(item, {token}, args, {inputs}):
                            continue  # running elsewhere: its outputs come back in `completed`
                    outs = (item.compute(ctx, args) if stats is None
                            else stats.call(item, ctx, args))
                    {clear}
            except Suspended as s:
                self.suspended.append(({token}, s.gen))
                return  # a compiled loop used its slice: let the event loop turn
            except BaseException as e:  # noqa: BLE001 - becomes the step's error
                if mode == SEGMENT and isinstance(e, Exception):
                    item.segment.fell_back()  # node by node: the error names its node
                    self.expand({token})
                    continue
                self.fail(self.wrap({token}, e))
                return
        elif completed:
            {token}, outs = completed.popleft()
            {unpack}
        elif self.suspended:  # a compiled loop that yielded: continue it
            {token}, gen = self.suspended.popleft()
            {unpack}
            try:
                outs = item.segment.resume(gen)
            except Suspended as s:
                self.suspended.append(({token}, s.gen))
                return  # it used its slice: let the event loop turn
            except Exception:  # noqa: BLE001 - run the loop node by node instead
                item.segment.fell_back()
                outs = None
            if outs is None:
                self.expand({token})
                continue
        else:
            break
        {propagate}
        count += 1
        if not count & CHECK_EVERY and perf_counter() > deadline:
            return
'''


def source(p: Propagator) -> str:
    """The process loop's source for propagator `p`."""
    def block(text: str, indent: int) -> str:
        lines = textwrap.dedent(text).strip().splitlines()
        return ("\n" + " " * indent).join(lines)

    return _LOOP.format(token=p.token, setup=block(p.setup, 4), unpack=block(p.unpack, 12),
                        inputs=p.inputs, is_dead=p.is_dead, is_transfer=p.is_transfer,
                        transfer=block(p.transfer, 28), propagate=block(p.propagate, 8),
                        clear=block(p.clear, 20))


def generate(p: Propagator):
    """The process loop of propagator `p`, compiled (a method of its state class)."""
    text = source(p)
    filename = f"<aioflow process loop: {p.name}>"
    namespace = {"SEGMENT": SEGMENT, "FORWARD": FORWARD, "INLINE": INLINE, "FRAMED": FRAMED,
                 "CHECK_EVERY": CHECK_EVERY, "Suspended": Suspended,
                 "perf_counter": perf_counter, "time_ns": time_ns}
    exec(compile(text, filename, "exec"), namespace)  # noqa: S102 - our own source
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    process = namespace["process"]
    process.__qualname__ = f"{p.name}.process"
    process.source = text
    return process
