"""A compiled while loop's accumulations on a second thread: the nodes that only feed a
loop variable nothing else in the loop reads (an LSTM gradient's weight and bias
gradients: dW += X^T @ dgates, db += sum(dgates)) run beside the loop's own work, one
iteration after another in order, as TF's executor runs an iteration's independent
kernels side by side on its threads.

`find_side(...)` picks those nodes; the loop's generated code then
computes the side's inputs in the iteration, hands them to a `SideChain` (`put`: ~1 µs
on the loop's thread) and takes the accumulators when the loop ends (`join`). The side's
function is the nodes' own generated lines, in their order, so the values are the same
bit for bit; its products release the GIL (oneDNN's GEMM through ctypes, NumPy's large
element-wise loops), so both threads compute at once. A side that fails (a kernel
error, an input too large to stay inline) makes `join` answer None: the loop then runs
node by node from its checkpoint, where the executor names the failing node.

Off unless AIOFLOW_LOOP_SIDE=1 (and never on one core): measured on the LSTM step
(benchmarks/training.py lstm, 2 cores at load 3-7) it gave no overlap: the loop's thread
holds the GIL for its Python between the GEMMs, the side thread gets it only at the
loop's GIL-free calls and then waits again for it after its own GEMM, so the step's wall
time stayed at its CPU time (7.62 against 7.52 ms) and the hand-offs cost 0.3-0.4 ms
(7.24 ms with the side off in the same minutes). It is kept, tested, for a loop whose
side work is long GIL-free calls.
"""

from __future__ import annotations

import os
import threading
from queue import SimpleQueue

from aioflow.runtime.quiet_fp import quiet

#: The loop's side work goes to another thread when asked, where there is another core.
ENABLED = os.environ.get("AIOFLOW_LOOP_SIDE", "0") == "1" and (os.cpu_count() or 1) > 1

_jobs: SimpleQueue = SimpleQueue()
_start_lock = threading.Lock()
_worker: threading.Thread | None = None


def _serve() -> None:
    quiet()  # kernels' floating-point errors are values (this thread's NumPy mode)
    while True:
        side, args = _jobs.get()
        side.run(args)


def _ensure_worker() -> None:
    global _worker
    if _worker is None:
        with _start_lock:
            if _worker is None:
                _worker = threading.Thread(target=_serve, name="aioflow-loop-side",
                                           daemon=True)
                _worker.start()


class SideChain:
    """One loop run's side: `fn(ctx, acc, args) -> acc` (None: failed) applied to each
    iteration's `args` in turn on the side thread, from the accumulators' initial
    values."""

    __slots__ = ("fn", "ctx", "acc", "sent", "ran", "joining", "lock", "done")

    def __init__(self, fn, ctx, acc: tuple):
        _ensure_worker()
        self.fn = fn
        self.ctx = ctx
        self.acc = acc
        self.sent = 0
        self.ran = 0
        self.joining = False
        self.lock = threading.Lock()
        self.done = threading.Event()

    def put(self, args: tuple) -> None:
        """An iteration's inputs of the side (on the loop's thread)."""
        self.sent += 1
        _jobs.put((self, args))

    def run(self, args: tuple) -> None:
        """One iteration of the side (on the side thread)."""
        acc = self.acc
        if acc is not None:
            try:
                acc = self.fn(self.ctx, acc, args)
            except Exception:  # noqa: BLE001 - the loop runs node by node: TF's error there
                acc = None
            self.acc = acc
        with self.lock:
            self.ran += 1
            if self.joining and self.ran == self.sent:
                self.done.set()

    def join(self) -> tuple | None:
        """The accumulators after every iteration put (None: the side failed)."""
        with self.lock:
            self.joining = True
            if self.ran == self.sent:
                return self.acc
        self.done.wait()
        return self.acc


def find_side(shape: dict, body: list, sources: dict, controls: dict):
    """The side of a loop: (the member ids it runs, in body order; the loop variables
    (Merge ids) it accumulates), or None. A loop variable qualifies when every reader of
    it and every node its next value needs (back to what the iteration computes
    anyway) feeds only that next value: nothing else in the iteration waits for them.
    The side must hold a product (what is worth a thread hand-off), the iteration
    another one to compute meanwhile (else the loop would only wait for its side), and
    the side no node that changes or reads state (stacks, variables), nor be waited for
    by one."""
    body_ids = {m.id for m in body}
    consumers: dict[int, set] = {}  # by data edges (control edges below)
    for i, srcs in sources.items():
        for src, _ in srcs:
            consumers.setdefault(src, set()).add(i)
    state = {i for i, _ in shape["undo"]} | set(shape["reads_state"])
    side: set = set()
    merges = []
    for merge, nxt in shape["merge_next"].items():
        switches = {s for s, m in shape["switch_merge"].items() if m == merge}
        readers = {i for i in body_ids if any(src in switches and slot == 1
                                              for src, slot in sources[i])}
        (src, _), = sources[nxt]
        if src not in body_ids or not readers or any(
                s == merge for i, srcs in sources.items() if i not in switches
                for s, _ in srcs):
            continue  # (the condition reads it, or nothing accumulates in the body)
        grown = {src}
        changed = True
        while changed:
            changed = False
            for i in list(grown):
                for j, _ in sources[i]:
                    if j in body_ids and j not in grown and j not in state and \
                            consumers.get(j, set()) <= grown:
                        grown.add(j)
                        changed = True
        if consumers.get(src, set()) == {nxt} and readers <= grown and not grown & state \
                and all(consumers.get(i, set()) <= grown | {nxt} for i in grown):
            side |= grown
            merges.append(merge)
    products = {m.id for m in body if m.op in ("MatMul", "_FusedMatMul")}
    if not products & side or not products - side or \
            _orders_state(side, sources, controls, state, set(shape["merge_next"].values())):
        return None
    return [m.id for m in body if m.id in side], merges


def _orders_state(side: set, sources: dict, controls: dict, state: set, nexts: set) -> bool:
    """Whether a node that changes or reads state waits for the side in an iteration
    through control edges (directly, or through the nodes they order: a gradient's tuple
    NoOps; not through the NextIterations, which feed the next iteration): then the
    side must run in its place. Pure nodes it orders compute the same either way."""
    after = {i: set() for i in sources}
    for i, srcs in controls.items():
        for src in srcs:
            after.setdefault(src, set()).add(i)
    for i, srcs in sources.items():
        for src, _ in srcs:
            after.setdefault(src, set()).add(i)
    seen = set()
    todo = [j for i in side for j in after.get(i, ()) if j not in side]
    while todo:
        i = todo.pop()
        if i in state:
            return True
        if i not in seen and i not in nexts:
            seen.add(i)
            todo.extend(after.get(i, ()))
    return False
