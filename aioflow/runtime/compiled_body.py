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

Bodies qualify when they have no control flow, and every node is an `_Arg`, a `_Retval`
or a compilable kernel (OpKernel.compilable: pure, every output produced) that runs
inline, forwards, or decides by its input sizes.
"""

from __future__ import annotations

from aioflow.runtime.node_item import BY_SIZE, FORWARD, INLINE, MAYBE
from aioflow.runtime.segments import Segment, topological_order

_MODES = (INLINE, FORWARD, BY_SIZE, MAYBE)


def compile_body(impl, name: str):
    """The body of `impl` (the ExecutorImpl of function `name`) as `fn(ctx, args)`
    returning its results as a list (None: run it as a sub-step this time); None when
    the body does not qualify."""
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
    lines = ["def body(ctx, args):"]
    for i in topological_order(nodes, dense):
        item = items[i]
        args = [names[(dense[e.src.id], e.src_output)] for e in nodes[i].data_inputs()]
        if item.op == "_Arg":
            names[(i, 0)] = f"a{i}"
            lines.append(f"    a{i} = args[{item.kernel.index}]")
        elif item.op == "_Retval":
            rets[item.kernel.index] = args[0]
        else:
            lines.extend(Segment._member_lines(item, args, names, namespace, None))
    if sorted(rets) != list(range(len(rets))):
        return None
    lines.append(f"    return [{', '.join(rets[k] for k in range(len(rets)))}]")
    source = "\n".join(lines) + "\n"
    code = compile(source, f"<aioflow function body {name}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own generated source
    fn = namespace["body"]
    fn.source = source
    return fn
