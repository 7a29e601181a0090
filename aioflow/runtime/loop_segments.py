"""Compiled while loops: a v1 loop frame whose body and condition are all cheap,
compilable nodes runs as one Python `while` (a compiled segment spanning the frame).

The frame must have TF's while_loop shape: per loop variable Enter -> Merge <-
NextIteration, Merge -> Switch(pred = LoopCond), Switch:0 -> Exit, Switch:1 -> body;
constant Enters carry the invariants; no nested frame; nothing leaves the frame but
through an Exit. The loop item's members are the Enters (in the parent frame) and every
node of the frame, so when it falls back (a dead input, an error, an input too large,
a traced run) the Enters run node by node and the frame runs as TF's executor runs it.

The generated function is a generator: it yields after about a millisecond of work so
that a long loop leaves the event loop to others between slices, as interpreted
iterations do. parallel_iterations only bounds concurrency, so a sequential loop of pure
kernels computes the same values.
"""

from __future__ import annotations

from time import perf_counter

from aioflow.framework.dtypes import DT_RESOURCE
from aioflow.framework.intra_op_threads import own_threads
from aioflow.runtime.loop_fusion import chain_lines, plan
from aioflow.runtime.node_item import FORWARD, INLINE, MAYBE, NodeItem
from aioflow.runtime.segments import Segment, is_candidate, topological_order

#: How long a compiled loop runs before it yields to the event loop (seconds).
SLICE_S = 0.001
#: A ref type's DataType enum is its value type's + 100.
_REF = 100


class Suspended(Exception):  # noqa: N818 - a signal, not an error
    """A compiled loop yielded: the executor resumes `gen` in a later slice."""

    def __init__(self, gen):
        super().__init__()
        self.gen = gen


def find_loops(nodes, items: list[NodeItem], dense: dict) -> list[tuple[list, dict, dict]]:
    """Per compilable loop frame: (members, data sources by member id, its shape)."""
    by_frame: dict[str, list[int]] = {}
    enters: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        by_frame.setdefault(item.frame_name, []).append(i)
        if item.is_enter:
            enters.setdefault(item.enter_frame_name, []).append(i)
    found = []
    order = topological_order(nodes, dense)
    position = {i: p for p, i in enumerate(order)}
    for frame, members in by_frame.items():
        if not frame or frame not in enters:
            continue
        shape = _loop_shape(frame, members, enters[frame], nodes, items, dense)
        if shape is None:
            continue
        # (in topological order: a NextIteration may wait for a stack push)
        member_ids = enters[frame] + sorted(members, key=position.__getitem__)
        sources = {i: [(dense[e.src.id], e.src_output) for e in nodes[i].data_inputs()]
                   for i in member_ids}
        shape["controls"] = {i: [dense[e.src.id] for e in nodes[i].in_edges
                                 if e.is_control_edge and e.src.is_op] for i in shape["body"]}
        body = set(shape["body"])
        shape["order"] = [i for i in order if i in body]
        found.append(([items[i] for i in member_ids], sources, shape))
    return found


def _loop_shape(frame, members, enter_ids, nodes, items, dense) -> dict | None:
    """The roles of a frame's nodes when it has while_loop's shape, else None."""
    inside = set(members) | set(enter_ids)
    shape = {"merge_enter": {}, "merge_next": {}, "switch_merge": {}, "exit_merge": {},
             "loop_cond": None, "body": [], "undo": [], "reads_state": []}
    for i in members:
        node, item = nodes[i], items[i]
        for e in node.out_edges:  # nothing leaves the frame but through an Exit
            if not e.dst.is_sink and dense[e.dst.id] not in inside and not item.is_exit:
                return None
        for e in node.in_edges:
            if e.src.is_op and dense[e.src.id] not in inside:
                return None
        data = [dense[e.src.id] for e in node.data_inputs()]
        if item.is_enter:
            return None  # a nested loop
        if item.is_merge:
            kinds = {items[j].is_enter: j for j in data}
            if len(data) != 2 or set(kinds) != {True, False}:
                return None
            if not items[kinds[False]].is_next_iteration:
                return None
            if items[kinds[True]].is_constant_enter:
                return None
            shape["merge_enter"][i] = kinds[True]
            shape["merge_next"][i] = kinds[False]
        elif item.op == "Switch":
            if not items[data[0]].is_merge or items[data[1]].op != "LoopCond":
                return None
            shape["switch_merge"][i] = data[0]
        elif item.op == "LoopCond":
            if shape["loop_cond"] is not None:
                return None
            shape["loop_cond"] = i
        elif item.is_exit:
            e = node.data_inputs()[0]
            if items[data[0]].op != "Switch" or e.src_output != 0:
                return None
            shape["exit_merge"][i] = data[0]  # the Switch, resolved below
        elif item.is_next_iteration:
            continue
        elif is_candidate(item) or item.is_control_trigger:
            shape["body"].append(i)  # (nothing is dead in the loop: a trigger is a NoOp)
            if any(t == DT_RESOURCE or t > _REF for t in node.input_types):
                shape["reads_state"].append(i)  # (a variable's read: never hoisted)
        elif _undoable_on_invariant(item, node, items, dense, enter_ids):
            shape["body"].append(i)
            undo = node.data_inputs()[item.kernel.undoable_input]
            shape["undo"].append((i, dense[undo.src.id]))
        else:
            return None
    if shape["loop_cond"] is None or not shape["merge_enter"]:
        return None
    for i in shape["body"]:  # the body takes Switch:1 only (Switch:0 is the Exits')
        for e in nodes[i].data_inputs():
            src = items[dense[e.src.id]]
            if src.op == "Switch" and e.src_output != 1:
                return None
    for i, switch in shape["exit_merge"].items():
        shape["exit_merge"][i] = shape["switch_merge"][switch]
    return shape


def _undoable_on_invariant(item, node, items, dense, enter_ids) -> bool:
    """A node whose only effect is on the state behind one input (a TensorArray read or
    write, OpKernel.undoable_input) that comes from a loop invariant of this frame (a
    constant Enter): the loop checkpoints that state before it starts."""
    k = getattr(item.kernel, "undoable_input", None)
    if k is None or item.member_of is not None or item.mode not in (INLINE, FORWARD):
        return False
    src = dense[node.data_inputs()[k].src.id]
    return src in enter_ids and items[src].is_constant_enter


def _tuple(merges) -> str:
    """Loop variables' names as a tuple's items ("m3, m7,")."""
    return "".join(f"m{m}, " for m in merges)


def _checkpoint(states) -> list:
    """(state, token) for each distinct state (None: the kernel raises TF's error)."""
    seen = {}
    for state in states:
        if state is not None and id(state) not in seen:
            seen[id(state)] = (state, state.checkpoint())
    return list(seen.values())


def _restore(checkpoints: list) -> None:
    for state, token in checkpoints:
        state.restore(token)


def _release(checkpoints: list) -> None:
    for state, token in checkpoints:
        state.release(token)


class LoopSegment(Segment):
    """A compiled while loop (a segment whose function is a generator)."""

    __slots__ = ("shape", "blas_section")

    def __init__(self, item: NodeItem, members: list[NodeItem], sources: dict, shape: dict):
        super().__init__(item, members, sources)
        self.shape = shape  # the nodes' roles (find_loops)
        # A slice of a loop of products (an LSTM's) runs in one BLAS single-threaded
        # section (OpKernel.own_blas_threads): each product's own section is then a
        # count, not two calls into OpenBLAS to set its thread count (~4 µs a product).
        self.blas_section = any(getattr(m.kernel, "own_blas_threads", False) for m in members)

    def run(self, ctx, inputs: list) -> tuple | None:
        """The loop's outputs (None: run it node by node); raises Suspended to continue
        in a later slice."""
        fn = self.fn or self.compiled()
        if fn is None:
            return None
        return self.resume(fn(ctx, inputs))

    def resume(self, gen) -> tuple | None:
        try:
            if self.blas_section:
                with own_threads():
                    next(gen)
            else:
                next(gen)
        except StopIteration as stop:
            if stop.value is None:
                self.fell_back()
            return stop.value
        raise Suspended(gen)

    def generate(self) -> tuple[str, dict]:
        shape = self.shape
        by_id = {m.id: m for m in self.members}
        namespace = {"_clock": perf_counter, "_SLICE": SLICE_S}
        names: dict[tuple[int, int], str] = {}
        lines = ["def segment(ctx, inputs):"]
        for member in self.members:
            if member.is_enter:
                lines.append(f"    e{member.id} = inputs[{member.input_start}]")
                names[(member.id, 0)] = f"e{member.id}"
        for merge, enter in shape["merge_enter"].items():
            lines.append(f"    m{merge} = e{enter}")
            names[(merge, 0)] = f"m{merge}"
        for switch, merge in shape["switch_merge"].items():
            names[(switch, 1)] = f"m{merge}"
        invariant = self._invariant()
        # (value, threshold) size-tested already in an iteration's straight-line code (or
        # once before the loop, for an invariant): not tested again before its next use
        checked: set = set()
        for i in shape["order"]:  # computed once, before the loop (pure, same inputs)
            if i in invariant:
                lines.extend(self._lines(by_id[i], names, namespace, checked))
        prepared = self._prepared(invariant, names, namespace, lines)
        head = len(lines)
        lines.append("    start = _clock()")
        lines.append("    n = 0")
        lines.append("    while True:")
        body = []
        cond_src = self.sources[shape["loop_cond"]][0]
        switch_ids = set(shape["switch_merge"])
        depends: set[int] = set()
        for i in shape["order"]:  # the condition's nodes first, then the body's
            member = by_id[i]
            in_body = any(src in switch_ids or src in depends for src, _ in self.sources[i])
            in_body = in_body or self._control_from(i, switch_ids | depends)
            if in_body:
                depends.add(i)  # (an invariant too: the others keep their place)
                if i not in invariant:
                    body.append(member)
                continue
            if i not in invariant:
                lines.extend("    " + line for line in self._lines(
                    member, names, namespace, checked, prepared))
        lines.append(f"        if not {names[cond_src]}: break")
        for line in self._body_lines(body, names, namespace, checked, prepared):
            lines.append("    " + line)
        nexts = [(merge, self.sources[nxt][0]) for merge, nxt in shape["merge_next"].items()]
        if nexts:
            lines.append(f"        {_tuple(m for m, _ in nexts)} = "
                         f"{', '.join(names[src] for _, src in nexts)}")
        lines.append("        n += 1")
        lines.append("        if not n & 63 and _clock() - start > _SLICE:")
        lines.append("            yield")
        lines.append("            start = _clock()")
        outs = [f"m{shape['exit_merge'][member.id]}" for member, _ in self.outputs]
        lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        if shape["undo"]:
            lines[head:] = self._undo_lines(lines[head:], namespace)
        return "\n".join(lines) + "\n", namespace

    def _undo_lines(self, loop: list[str], namespace: dict) -> list[str]:
        """`loop` (the lines from the clock's start to the return) checkpointing the
        states its undoable members change, restored unless it returns its outputs (a
        fallback, an error, a generator closed unfinished), released when it does."""
        by_id = {m.id: m for m in self.members}
        states = []
        for i, enter in self.shape["undo"]:
            namespace[f"u{i}"] = by_id[i].kernel.undoable_state
            states.append(f"u{i}(e{enter})")
        namespace.update(_checkpoint=_checkpoint, _restore=_restore, _release=_release)
        *body, ret = loop
        return [f"    checkpoints = _checkpoint(({', '.join(states)},))",
                "    done = False",
                "    try:",
                *("    " + line for line in body),
                "        done = True",
                "    " + ret,
                "    finally:",
                "        if done:",
                "            _release(checkpoints)",
                "        else:",
                "            _restore(checkpoints)"]

    def _invariant(self) -> set[int]:
        """The loop's pure nodes whose inputs are the same every iteration: loop
        invariants (constant Enters), constants and other such nodes (control inputs
        only order a pure node; a read of a variable or of a TensorArray or stack is
        not one). They run once, before the loop: a loop of no iteration
        then runs them too, and one that raises sends the loop node by node, where the
        executor runs them only as TF does."""
        shape = self.shape
        undoable = {i for i, _ in shape["undo"]}.union(shape["reads_state"])
        by_id = {m.id: m for m in self.members}
        invariant: set[int] = set()
        for i in shape["order"]:
            member = by_id[i]
            if member.kernel.is_constant or i not in undoable and not member.is_control_trigger \
                    and all(by_id[src].is_enter or src in invariant
                            for src, _ in self.sources[i]):
                invariant.add(i)
        return invariant

    def _control_from(self, i: int, ids: set) -> bool:
        return any(src in ids for src in self.shape["controls"].get(i, ()))

    def _prepared(self, invariant: set, names: dict, namespace: dict, lines: list) -> dict:
        """Members whose kernel prepares its loop-invariant inputs once (`invariant_fn`,
        e.g. a product's transposed operand copied untransposed): the lines preparing
        them are added to `lines` (before the loop); by member id, the name of the
        function each iteration calls instead and its arguments."""
        prepared = {}
        shape = self.shape
        by_id = {m.id: m for m in self.members}
        for i in shape["order"]:
            member = by_id[i]
            hook = getattr(member.kernel, "invariant_fn", None)
            if i in invariant or hook is None or member.mode not in (INLINE, MAYBE):
                continue
            sources = self.sources[i]
            fixed = tuple(by_id[src].is_enter or src in invariant for src, _ in sources)
            made = hook(fixed)
            if made is None:
                continue
            prepare, fn = made
            namespace[f"q{i}"], namespace[f"g{i}"] = prepare, fn
            args = []
            for k, src in enumerate(sources):
                if fixed[k]:
                    lines.append(f"    p{i}_{k} = q{i}({names[src]})")
                    args.append(f"p{i}_{k}")
                else:
                    args.append(None)
            prepared[i] = args
        return prepared

    def _body_lines(self, body: list, names, namespace, checked: set, prepared) -> list[str]:
        """The lines of an iteration's body members, element-wise chains fused
        (loop_fusion.py)."""
        lines = []
        for item in plan(body, self.sources, self.shape["controls"]):
            if not isinstance(item, list):
                lines.extend(self._lines(item, names, namespace, checked, prepared))
                continue
            ids = {m.id for m in item}
            used = {src for i, srcs in self.sources.items() if i not in ids
                    for src, _ in srcs if src in ids}
            inner = set(checked)  # (the fallback's size tests are not the fused path's)
            lines.extend(chain_lines(
                item, self.sources, names, namespace,
                lambda m, inner=inner: self._lines(m, names, namespace, inner, prepared),
                used))
        return lines

    def _lines(self, member, names, namespace, checked: set, prepared=None) -> list[str]:
        args = [names[src] for src in self.sources[member.id]]
        lines = self._member_lines(member, args, names, namespace, checked)
        i = member.id
        if prepared and i in prepared and lines and lines[-1].startswith(f"    v{i} = f{i}("):
            # the same call on the prepared invariants (made before the loop)
            call = ", ".join(p or a for p, a in zip(prepared[i], args, strict=True))
            lines[-1] = f"    v{i} = g{i}({call})"
        return lines
