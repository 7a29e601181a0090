"""Compiled function bodies: a function body whose nodes are all cheap, pure kernels runs
as one generated Python function, `fn(ctx, args) -> results`, instead of a sub-step.

A call (PartitionedCall, If, Case) or a While iteration is then a plain function call:
no executor state, no call frame, no task. The function is generated from the body's
executor (the same kernels, after the same passes) with segments.py's per-node code:
locals instead of input slots, constants as globals, and the size tests that send a
large input to the thread pool. Anything the function cannot handle returns None
(an input too large to stay on the loop) or raises (a kernel error): the caller then
runs the body as a sub-step, whose executor names the failing node (the kernels are
pure, so running them again is safe). Traced runs always take the sub-step, so the
body's nodes appear in the step stats.

A While whose cond and body both qualify is generated as one loop (`compile_while`):
the loop variables are locals, the cond's and the body's nodes run inline in a Python
`while`, and a slice returns to the kernel every 64 iterations past its deadline (the
kernel lets the event loop run, then continues) or where an iteration must run as
sub-steps.

Bodies qualify when they have no control flow, and every node is an `_Arg`, a `_Retval`
or a compilable kernel (OpKernel.compilable: pure or a variable read, every output
produced) that runs inline, forwards, or decides by its input sizes.
"""

from __future__ import annotations

from time import perf_counter

from aioflow.runtime.node_item import BY_SIZE, FORWARD, INLINE, MAYBE
from aioflow.runtime.segments import Segment, topological_order

_MODES = (INLINE, FORWARD, BY_SIZE, MAYBE)


def compile_body(impl, name: str):
    """The body of `impl` (the ExecutorImpl of function `name`) as `fn(ctx, args)`
    returning its results as a list (None: run it as a sub-step this time); None when
    the body does not qualify."""
    code = _body_code(impl, 0, lambda index: f"args[{index}]")
    if code is None:
        return None
    lines, rets, namespace = code
    source = "\n".join(["def body(ctx, args):", *lines,
                        f"    return [{', '.join(rets)}]"]) + "\n"
    return _compiled(source, namespace, "body", f"<aioflow function body {name}>")


def compile_while(cond_impl, body_impl, num_vars: int, name: str, to_bool):
    """A While whose cond and body both qualify as one generated loop, `fn(ctx, values,
    deadline) -> (state, values)`: "done" with the results, "more" with the loop
    variables so far once perf_counter() passes `deadline` (tested every 64
    iterations), or "fallback" with the loop variables the next iteration starts from
    (an input too large, a kernel error: that iteration runs as sub-steps). The cond's
    and the body's nodes read the loop variables as locals; nothing is allocated per
    iteration but what the kernels make. `to_bool` is the kernel's truth of the cond's
    result. None when either does not qualify."""
    loop_vars = [f"l{k}" for k in range(num_vars)]
    cond = _body_code(cond_impl, 0, lambda index: loop_vars[index])
    body = _body_code(body_impl, _OFFSET, lambda index: loop_vars[index])
    if cond is None or body is None or len(cond[1]) != 1 or len(body[1]) != num_vars:
        return None
    state = f"[{', '.join(loop_vars)}]"
    fallback = f": return _FALLBACK, {state}"
    lines = ["def loop(ctx, values, deadline):",
             f"    {', '.join(loop_vars)}{',' if num_vars == 1 else ''} = values",
             "    n = 0",
             "    try:",
             "        while True:"]
    lines += ["        " + line.replace(": return None", fallback) for line in cond[0]]
    lines.append(f"            if not _to_bool({cond[1][0]}): return _DONE, {state}")
    lines += ["        " + line.replace(": return None", fallback) for line in body[0]]
    lines.append(f"            {', '.join(loop_vars)}{',' if num_vars == 1 else ''} = "
                 f"{', '.join(body[1])}")
    lines.append("            n += 1")
    lines.append(f"            if not n & 63 and _clock() > deadline: return _MORE, {state}")
    lines.append("    except Exception:")
    lines.append(f"        return _FALLBACK, {state}")
    namespace = {**cond[2], **body[2], "_to_bool": to_bool, "_clock": perf_counter,
                 "_DONE": DONE, "_MORE": MORE, "_FALLBACK": FALLBACK}
    return _compiled("\n".join(lines) + "\n", namespace, "loop",
                     f"<aioflow while loop {name}>")


#: The states a compiled loop's slice ends in (strings: the While kernel shares them).
DONE, MORE, FALLBACK = "done", "more", "fallback"
#: Added to the body's item ids in a compiled loop: its names never meet the cond's.
_OFFSET = 1 << 20


class _Renamed:
    """A NodeItem under another id: the names segments.py generates for it are new."""

    __slots__ = ("_item", "id")

    def __init__(self, item, new_id: int):
        self._item = item
        self.id = new_id

    def __getattr__(self, name):
        return getattr(self._item, name)


def _body_code(impl, offset: int, arg_name):
    """(lines computing the body, its result expressions in order, the globals they
    need); `arg_name(index)` is the expression of argument `index`. None when the body
    does not qualify."""
    if impl.has_control_flow or impl.has_transfers:
        return None
    nodes = list(impl.graph.op_nodes())
    items = impl.items[:impl.num_node_items]
    if len(nodes) != len(items):
        return None
    for item in items:
        if item.op not in ("_Arg", "_Retval") and not (
                item.mode in _MODES and getattr(item.kernel, "compilable", False)):
            return None
    dense = {n.id: i for i, n in enumerate(nodes)}
    namespace: dict = {}
    names: dict[tuple[int, int], str] = {}
    rets: dict[int, str] = {}
    lines: list[str] = []
    for i in topological_order(nodes, dense):
        item = items[i]
        args = [names[(dense[e.src.id], e.src_output)] for e in nodes[i].data_inputs()]
        if item.op == "_Arg":
            names[(i, 0)] = arg_name(item.kernel.index)
        elif item.op == "_Retval":
            rets[item.kernel.index] = args[0]
        else:
            member = _Renamed(item, i + offset) if offset else item
            lines.extend(Segment._member_lines(member, args, names, namespace, None))
            for slot in range(item.num_outputs):  # the renamed member's names, by index
                if (i + offset, slot) in names:
                    names[(i, slot)] = names.pop((i + offset, slot))
    if sorted(rets) != list(range(len(rets))):
        return None
    return lines, [rets[k] for k in range(len(rets))], namespace


def _compiled(source: str, namespace: dict, fn_name: str, filename: str):
    code = compile(source, filename, "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source
    fn = namespace[fn_name]
    fn.source = source
    return fn
