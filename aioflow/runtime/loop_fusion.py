"""Element-wise chains in a compiled while loop's body, fused: connected Mul / AddV2 /
Sub / SigmoidGrad / TanhGrad / AddN / Sigmoid / Tanh ... nodes (kernels/math/
fused_cwise.py's OPS) run as a few numba loops and NumPy ufuncs an iteration instead of
one NumPy call a node. The graph is untouched
(the nodes, their names and TF's gradient graph stay as they are): only the loop's
generated code changes, and its values do not (the fused forms are the kernels'
formulas, bit for bit).

A chain is a connected set of such nodes whose outside consumers all come after it
(convex: no path leaves the set and comes back), emitted where its last node was, the
nodes after its first one that depend on it moved behind it. The generated code calls
the chain and falls back to the nodes' own lines, in the same iteration, when the chain
answers None (not compiled yet, inputs of other shapes or types):

    z = fz(inputs...)
    if z is None:
        <the nodes' own lines>
    else:
        outputs... = z
"""

from __future__ import annotations

from aioflow.kernels.math.fused_cwise import OPS, FusedChain
from aioflow.runtime.node_item import BY_SIZE, FORWARD, INLINE

#: Fewest nodes worth a chain (a call of the chain costs about two NumPy calls).
MIN_NODES = 3


def fusible(member) -> bool:
    """Whether a member can join a chain: an op of fused_cwise.OPS with one output, run
    inline or by size on the loop (never a pool candidate decided by its kernel)."""
    return member.op in OPS and member.num_outputs == 1 and member.mode in (INLINE, BY_SIZE)


def plan(body: list, sources: dict, controls: dict) -> list:
    """`body` (members in emission order) as a list of members and chains (lists of
    members, in order): each chain where its last member was, the members between its
    first and last that depend on it moved after it."""
    out = list(body)
    for chain in _chains(body, sources):
        ids = {m.id for m in chain}
        start, end = out.index(chain[0]), out.index(chain[-1]) + 1
        span = out[start:end]
        if any(isinstance(m, list) for m in span):
            continue  # (another chain in between: keep these nodes as they are)
        downstream: set = set()
        for m in span:
            feeds = {src for src, _ in sources[m.id]}.union(controls.get(m.id, ()))
            if m.id not in ids and feeds & (ids | downstream):
                downstream.add(m.id)
        if any(({src for src, _ in sources[m.id]}.union(controls.get(m.id, ())))
               & downstream for m in chain):
            continue  # not convex: a path leaves the chain and comes back
        kept = [m for m in span if m.id not in ids and m.id not in downstream]
        moved = [m for m in span if m.id in downstream]
        out[start:end] = [*kept, chain, *moved]
    return out


def _chains(body: list, sources: dict) -> list[list]:
    """The connected sets of fusible members (MIN_NODES or more) with the forwarding
    members (Identity) between them, each in body order."""
    joins = {m.id: m for m in body if fusible(m) or m.mode == FORWARD}
    parent = {i: i for i in joins}

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in joins:
        for src, _ in sources[i]:
            if src in joins:
                parent[root(src)] = root(i)
    groups: dict[int, list] = {}
    for m in body:
        if m.id in joins:
            groups.setdefault(root(m.id), []).append(m)
    return [g for g in groups.values() if sum(m.mode != FORWARD for m in g) >= MIN_NODES]


def chain_lines(chain: list, sources: dict, names: dict, namespace: dict,
                node_lines, read_outside: set) -> list[str]:
    """The lines running `chain` fused, with its nodes' own lines (`node_lines(member)`,
    which names their outputs in `names`) as the fallback; `read_outside`: the chain's
    members whose value a member outside it reads."""
    by_id = {m.id: m for m in chain}

    def resolve(src):  # through the chain's forwarding members
        while src[0] in by_id and by_id[src[0]].mode == FORWARD:
            src = sources[src[0]][0]
        return src

    computed = [m for m in chain if m.mode != FORWARD]
    step_of = {m.id: k for k, m in enumerate(computed)}
    inputs: list = []
    steps = []
    for m in computed:
        operands = []
        for src in map(resolve, sources[m.id]):
            if src[0] in step_of:
                operands.append(("step", step_of[src[0]]))
            else:
                if src not in inputs:
                    inputs.append(src)
                operands.append(("in", inputs.index(src)))
        steps.append((m.op, operands))
    wanted = {resolve((i, 0))[0] for i in read_outside}
    outputs = [k for k, m in enumerate(computed) if m.id in wanted]
    head = computed[0].id
    fallback = [line for m in chain for line in node_lines(m)]
    namespace[f"fz{head}"] = FusedChain(steps, outputs, len(inputs), computed[0].name)
    args = [names[src] for src in inputs]
    results = [names[(computed[k].id, 0)] for k in outputs]
    lines = []
    limits = [m.pool_above for m in computed if m.mode == BY_SIZE]
    if limits:  # (a chain's values all have its inputs' size)
        lines.append(f"    if {args[0]}.size > {min(limits)}: return None")
    lines.append(f"    z{head} = fz{head}({', '.join(args)})")
    lines.append(f"    if z{head} is None:")
    lines += ["    " + line for line in fallback]
    lines.append("    else:")
    lines.append(f"        {''.join(r + ', ' for r in results)}= z{head}")
    return lines
