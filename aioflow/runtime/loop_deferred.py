"""A compiled while loop's late-read products started early: a product whose value only
a loop variable's next value reads (an LSTM gradient's dW = X^T @ dgates, read only by
its accumulator dW_acc + dW) is started as soon as its inputs are ready, on the warm
helper (the kernel's `deferred_fn`: aioflow/kernels/onednn/matmul_onednn.py
`deferred_gemm`), and collected at the end of the iteration, where its readers move. The
loop's thread meanwhile runs the rest of the iteration (the gradient's dx product, its
slices, the next gates): the GEMM runs without the GIL, on the other core, as TF's
executor runs an iteration's independent kernels side by side on its threads.

Same values: the product is the same single-threaded GEMM call wherever it runs, and
every node still computes from the same inputs (a product and its readers are pure; the
readers feed only NextIteration, so nothing in the iteration waits for them). The
generated loop settles an unfinished product whatever way it ends (an error, a
fallback, a generator closed early), so no job outlives the arrays it reads.

Where runtime/loop_side.py ran the accumulations on a Python thread (no overlap: both
threads needed the GIL), this hands the side a native call only.
"""

from __future__ import annotations

from aioflow.runtime.loop_side import _orders_state
from aioflow.runtime.node_item import FORWARD, INLINE, MAYBE


def find_deferred(shape: dict, plan: list, sources: dict, controls: dict,
                  prepared: dict) -> dict[int, tuple[list[int], tuple]]:
    """Per deferrable product (member id, in `plan`, the loop body's members and fused
    chains in emission order): the members reading its value (through forwarding
    members), which read nothing the iteration needs, and its kernel's (start, collect).
    A product qualifies when its kernel has them (`deferred_fn`), it runs inline, its
    inputs are not prepared before the loop, and it neither reads state nor is ordered
    before a node that does."""
    members = {m.id: m for m in plan if not isinstance(m, list)}
    in_chains = {m.id for item in plan if isinstance(item, list) for m in item}
    readers: dict[int, set] = {}
    for i, srcs in sources.items():
        for src, _ in srcs:
            readers.setdefault(src, set()).add(i)
    state = {i for i, _ in shape["undo"]} | set(shape["reads_state"])
    nexts = set(shape["merge_next"].values())
    found = {}
    for i, member in members.items():
        if getattr(member.kernel, "deferred_fn", None) is None or member.num_outputs != 1 \
                or member.mode not in (INLINE, MAYBE) or i in state or i in prepared:
            continue
        aliases, late = _readers(i, members, readers)
        if late is None or not late or late & in_chains:
            continue
        if any(not readers.get(r, set()) or not readers[r] <= nexts for r in late):
            continue  # a reader's value is needed in the iteration
        if _orders_state({i, *aliases, *late}, sources, controls, state, nexts):
            continue
        fns = member.kernel.deferred_fn()
        if fns is not None:
            found[i] = ([m.id for m in plan if not isinstance(m, list) and m.id in late], fns)
    return found


def _readers(i: int, members: dict, readers: dict):
    """(the forwarding members aliasing member i's value, the members reading it through
    them), or (.., None) when a reader is not a plain member of the body."""
    aliases, late, todo = set(), set(), [i]
    while todo:
        for r in readers.get(todo.pop(), ()):
            m = members.get(r)
            if m is None:
                return aliases, None
            if m.mode == FORWARD:
                aliases.add(r)
                todo.append(r)
            else:
                late.add(r)
    return aliases, late


def origin(src: tuple, forwarding: dict, sources: dict) -> tuple:
    """The value `src` (member id, slot) names through the forwarding members
    (`forwarding`: their ids) in front of it."""
    while src[0] in forwarding:
        src = sources[src[0]][0]
    return src


def reorder(plan: list, deferred: dict, sources: dict) -> list:
    """`plan` with each deferred product right after the last entry computing one of its
    inputs (looking through forwarding members) and its readers at the end (in their
    order)."""
    late = {r for rs, _ in deferred.values() for r in rs}
    forwarding = {m.id for item in plan for m in (item if isinstance(item, list) else [item])
                  if m.mode == FORWARD}
    out = [item for item in plan if isinstance(item, list) or (
        item.id not in deferred and item.id not in late)]
    for i in deferred:
        wanted = {origin(src, forwarding, sources)[0] for src in sources[i]}
        at = 0
        for k, item in enumerate(out):
            ids = {m.id for m in item} if isinstance(item, list) else {item.id}
            if ids & wanted:
                at = k + 1
        product = next(m for m in plan if not isinstance(m, list) and m.id == i)
        out.insert(at, product)
    out += [m for m in plan if not isinstance(m, list) and m.id in late]
    return out
