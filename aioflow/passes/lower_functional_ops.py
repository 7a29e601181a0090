"""LowerFunctionalOpsPass (TF's lower_functional_ops.cc), PRE_PLACEMENT phase 10: If,
Case and While become v1 control flow (Switch/Merge, _SwitchN/Merge, Enter/Merge/
LoopCond/Switch/Exit/NextIteration) whose branches and bodies are inlined calls; function
calls (PartitionedCall, StatefulPartitionedCall) are inlined (ExpandInlineFunctions).

What is rewritten, as TF decides:
- If/StatelessIf, Case/StatelessCase, While/StatelessWhile whose
  `_lower_using_switch_merge` attr is true (control flow v2 sets it), unless the session
  asks for functional control flow: `experimental.executor_type ==
  "SINGLE_THREADED_EXECUTOR"` or `experimental.use_tfrt` (TF's conditions; TF also
  reads `disable_functional_ops_lowering`, a field aioflow's ConfigProto lacks). An If
  whose predicate is not a bool, or a While whose cond does not return a bool, stays.
- PartitionedCall/StatefulPartitionedCall when the session inlines functions:
  `optimizer_options.do_function_inlining` (TF's pass) or `rewrite_options.
  function_optimization` not OFF (TF's grappler function optimizer, on by default, does
  it there). Branch and body calls made by this pass are always inlined.
- Never a call of a function whose FunctionDef attr `_noinline` is true: it stays a call.

Nodes added by a rewrite are visited too (a call inside an inlined body, an If inside a
While body), as TF's pass walks the node ids it adds. Measured (docs/performance.md,
benchmarks/functions.py): lowered and inlined graphs run faster than called ones (a
lowered While iteration costs what the same v1 loop's does, 0.47 µs; called, 0.51; an
inlined one-node call adds 0.5 µs to a run, called 5.7), so lowering is on by default,
as TF's.

The rewritten nodes keep their names: an If, Case or While becomes an IdentityN of its
results named as it was, so fetches and consumers are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from aioflow.framework import errors, op_def_registry
from aioflow.graph.algorithm import fixup_source_and_sink_edges
from aioflow.graph.graph import Graph, Node
from aioflow.passes.inline_function import add_node, inline_call, replace_node, unique_name
from aioflow.passes.registry import Grouping, PassOptions, register_optimization
from aioflow.proto import node_def_pb2, rewriter_config_pb2, types_pb2

LOWER_ATTR = "_lower_using_switch_merge"
NOINLINE_ATTR = "_noinline"
#: Marks a call this pass made for a branch or a body: always inlined.
LOWERED_CALL_ATTR = "_lower_as_multi_device_function"
CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")
IF_OPS = ("If", "StatelessIf")
CASE_OPS = ("Case", "StatelessCase")
WHILE_OPS = ("While", "StatelessWhile")
FUNCTIONAL_OPS = frozenset(CALL_OPS + IF_OPS + CASE_OPS + WHILE_OPS)


def lowering_enabled(config) -> bool:
    """Whether If/Case/While marked for lowering are lowered (TF's test)."""
    if config is None:
        return True
    experimental = config.experimental
    return not (experimental.executor_type == "SINGLE_THREADED_EXECUTOR"
                or experimental.use_tfrt)


def inlining_enabled(config) -> bool:
    """Whether function calls are inlined (TF's pass, or its grappler optimizer)."""
    if config is None:
        return True
    graph_options = config.graph_options
    return (graph_options.optimizer_options.do_function_inlining
            or graph_options.rewrite_options.function_optimization
            != rewriter_config_pb2.RewriterConfig.OFF)


def has_functional_ops(node_defs: Sequence) -> bool:
    """Whether any of `node_defs` is a functional op or may be a direct call of a library
    function (an op type that is not registered): nothing else is rewritten."""
    op_types = {nd.op for nd in node_defs}  # (each type once: extends are large)
    return any(op in FUNCTIONAL_OPS or op_def_registry.get_registration(op) is None
               for op in op_types)


@register_optimization(Grouping.PRE_PLACEMENT, 10, "LowerFunctionalOpsPass",
                       applies=has_functional_ops)
def lower_functional_ops_pass(options: PassOptions) -> None:
    """Lower and inline the graph's functional ops (see the module docstring)."""
    graph = options.graph
    if graph is None or not graph.library:
        return
    lower = lowering_enabled(options.config)
    inline = inlining_enabled(options.config)
    if not (lower or inline):
        return
    _Lowering(graph, graph.library, lower, inline).run()


class _Lowering:
    def __init__(self, graph: Graph, library, lower: bool, inline: bool):
        self.graph = graph
        self.library = library
        self.lower = lower
        self.inline = inline
        self.names = {n.name for n in graph.op_nodes()}

    def run(self) -> None:
        changed = False
        i = 2
        while i < len(self.graph.nodes):  # the list grows with what a rewrite adds
            node = self.graph.nodes[i]
            i += 1
            if node is not None and node.type_string in FUNCTIONAL_OPS:
                try:
                    changed = self.rewrite(node) or changed
                except errors.OpError as e:
                    if node.name in e.message:
                        raise
                    raise type(e)(node.def_, None,
                                  f"{e.message}\n\t(lowering node {node.name} "
                                  f"({node.type_string}))") from e
        if changed:
            fixup_source_and_sink_edges(self.graph)

    def rewrite(self, node: Node) -> bool:
        op = node.type_string
        if op in CALL_OPS:
            func = node.def_.attr["f"].func
            if not (self.inline or _flag(node, LOWERED_CALL_ATTR)) or self._noinline(func):
                return False
            inline_call(self.graph, node, self.library, func.name, dict(func.attr),
                        self.names, keep_caller=not _flag(node, LOWERED_CALL_ATTR))
            return True
        if not (self.lower and _flag(node, LOWER_ATTR)):
            return False
        if op in IF_OPS:
            return self.lower_if(node)
        if op in CASE_OPS:
            return self.lower_case(node)
        return self.lower_while(node)

    def _noinline(self, func) -> bool:
        fdef = self.library.find(func.name)
        return fdef is not None and NOINLINE_ATTR in fdef.attr and fdef.attr[NOINLINE_ATTR].b

    # -- building blocks -------------------------------------------------------------------
    def new(self, like: Node, name: str, op: str, inputs: list, attrs: dict | None = None,
            controls: Sequence[Node] = ()) -> Node:
        """A node `{like}/{name}` of `op`, data inputs (node, slot) wired in order."""
        node_def = node_def_pb2.NodeDef(name=unique_name(self.names, f"{like.name}/{name}"),
                                        op=op)
        for key, value in (attrs or {}).items():
            if callable(value):
                value(node_def.attr[key])
            else:
                node_def.attr[key].CopyFrom(value)
        node = add_node(self.graph, node_def, like)
        for i, (src, slot) in enumerate(inputs):
            self.graph.add_edge(src, slot, node, i)
        for src in controls:
            self.graph.add_control_edge(src, node)
        return node

    def call(self, like: Node, name: str, func, inputs: list, tin, tout,
             controls: Sequence[Node] = ()) -> Node:
        """A call of `func` made for a branch or a body (inlined when visited)."""
        def set_func(a):
            a.func.CopyFrom(func)

        return self.new(like, name, "PartitionedCall", inputs, {
            "f": set_func, "Tin": lambda a: a.list.type.extend(tin),
            "Tout": lambda a: a.list.type.extend(tout),
            LOWERED_CALL_ATTR: lambda a: setattr(a, "b", True)}, controls)

    def finish(self, node: Node, outputs: list, types: list, executed: Node | None) -> None:
        """Replace `node` by an IdentityN of `outputs` named as it (after `executed`)."""
        controls = [executed] if executed is not None else []
        name = node.name
        self.names.discard(name)
        if outputs:
            node_def = node_def_pb2.NodeDef(name=name, op="IdentityN")
            node_def.attr["T"].list.type.extend(types)
        else:
            node_def = node_def_pb2.NodeDef(name=name, op="NoOp")
        self.names.add(name)
        result = add_node(self.graph, node_def, node)
        for i, (src, slot) in enumerate(outputs):
            self.graph.add_edge(src, slot, result, i)
        for src in controls:
            self.graph.add_control_edge(src, result)
        replace_node(self.graph, node, result)

    # -- If ------------------------------------------------------------------------------
    def lower_if(self, node: Node) -> bool:
        """TF's LowerIfOpHelper: a pivot Switch of the predicate gates both branches."""
        attrs = node.def_.attr
        if attrs["Tcond"].type != types_pb2.DT_BOOL:
            return False
        ins = node.data_inputs()
        controls = [e.src for e in node.in_edges if e.is_control_edge and e.src.is_op]
        pred = (ins[0].src, ins[0].src_output)
        bool_t = _type(types_pb2.DT_BOOL)
        switch = self.new(node, "switch_pred", "Switch", [pred, pred], {"T": bool_t},
                          controls)
        pivot_f = self.new(node, "pivot_f", "Identity", [(switch, 0)], {"T": bool_t})
        pivot_t = self.new(node, "pivot_t", "Identity", [(switch, 1)], {"T": bool_t})
        tin, tout = list(attrs["Tin"].list.type), list(attrs["Tout"].list.type)
        switches = [self.new(node, f"input_{k}", "Switch", [(e.src, e.src_output), pred],
                             {"T": _type(t)}, controls)
                    for k, (e, t) in enumerate(zip(ins[1:], tin, strict=True))]
        then_call = self.call(node, "then", attrs["then_branch"].func,
                              [(s, 1) for s in switches], tin, tout, [pivot_t])
        else_call = self.call(node, "else", attrs["else_branch"].func,
                              [(s, 0) for s in switches], tin, tout, [pivot_f])
        merges = [self.new(node, f"output_{k}", "Merge", [(else_call, k), (then_call, k)],
                           {"T": _type(t), "N": _int(2)}) for k, t in enumerate(tout)]
        executed = self._branch_executed(node, [(pivot_f, else_call), (pivot_t, then_call)])
        self.finish(node, [(m, 0) for m in merges], tout, executed)
        return True

    def _branch_executed(self, node: Node, branches: list) -> Node:
        """A Merge that is live once the taken branch has run (the If's control output)."""
        bool_t = _type(types_pb2.DT_BOOL)
        done = [self.new(node, f"branch_done_{k}", "Identity", [(pivot, 0)], {"T": bool_t},
                         [call]) for k, (pivot, call) in enumerate(branches)]
        return self.new(node, "branch_executed", "Merge", [(d, 0) for d in done],
                        {"T": bool_t, "N": _int(len(done))})

    # -- Case ----------------------------------------------------------------------------
    def lower_case(self, node: Node) -> bool:
        """TF's LowerCaseOpHelper: a _SwitchN of the branch index gates each branch."""
        attrs = node.def_.attr
        ins = node.data_inputs()
        controls = [e.src for e in node.in_edges if e.is_control_edge and e.src.is_op]
        funcs = list(attrs["branches"].list.func)
        n = len(funcs)
        index = (ins[0].src, ins[0].src_output)
        int_t = _type(types_pb2.DT_INT32)
        switch = self.new(node, "branch_index", "_SwitchN", [index, index],
                          {"T": int_t, "num_outs": _int(n)}, controls)
        pivots = [self.new(node, f"pivot_{k}", "Identity", [(switch, k)], {"T": int_t})
                  for k in range(n)]
        tin, tout = list(attrs["Tin"].list.type), list(attrs["Tout"].list.type)
        switches = [self.new(node, f"input_{k}", "_SwitchN", [(e.src, e.src_output), index],
                             {"T": _type(t), "num_outs": _int(n)}, controls)
                    for k, (e, t) in enumerate(zip(ins[1:], tin, strict=True))]
        calls = [self.call(node, f"branch{b}", func, [(s, b) for s in switches], tin, tout,
                           [pivots[b]]) for b, func in enumerate(funcs)]
        merges = [self.new(node, f"output_{k}", "Merge", [(c, k) for c in calls],
                           {"T": _type(t), "N": _int(n)}) for k, t in enumerate(tout)]
        executed = self._branch_executed(node, list(zip(pivots, calls, strict=True)))
        self.finish(node, [(m, 0) for m in merges], tout, executed)
        return True

    # -- While ---------------------------------------------------------------------------
    def lower_while(self, node: Node) -> bool:
        """TF's LowerWhileHelper: Enter, Merge, cond, LoopCond, Switch, Exit and
        NextIteration per loop variable, the cond and the body called in the frame.

        As TF's, a DT_RESOURCE loop variable gets a constant Enter and nothing else (a
        handle passes through the body unchanged: TF never reads the body's result for
        it), and the While's output for it is its input. Since a resource argument no
        longer comes through a Switch, the body waits for the predicate by a control
        edge (TF's `loop_body_control`), and each NextIteration waits for the body's
        control outputs, as TF's: a side effect (a variable update) comes before the
        next iteration exists, hence before it reads. (TF's cond also waits for the
        first Merge; here it needs not: a constant Enter's value reaches an iteration
        only once a NextIteration has made it.) A loop of resources only has no Merge to
        hang the loop on: its variables are lowered as any other."""
        attrs = node.def_.attr
        types = list(attrs["T"].list.type)
        cond_fdef = self.library.find(attrs["cond"].func.name)
        if not types or cond_fdef is None or len(cond_fdef.signature.output_arg) != 1 or \
                cond_fdef.signature.output_arg[0].type != types_pb2.DT_BOOL:
            return False
        invariant = [t == types_pb2.DT_RESOURCE for t in types]
        if all(invariant):
            invariant = [False] * len(types)
        ins = node.data_inputs()
        controls = [e.src for e in node.in_edges if e.is_control_edge and e.src.is_op]
        frame = unique_name(self.names, f"{node.name}/while_context")
        pi = attrs["parallel_iterations"].i
        enters = [self.new(node, f"enter_{k}", "Enter", [(e.src, e.src_output)], {
            "T": _type(t), "frame_name": lambda a, f=frame: setattr(a, "s", f.encode()),
            "is_constant": lambda a, c=c: setattr(a, "b", c),
            "parallel_iterations": _int(pi)}, controls)
            for k, (e, t, c) in enumerate(zip(ins, types, invariant, strict=True))]
        loop = [k for k, c in enumerate(invariant) if not c]  # the carried variables
        merges = {k: self.new(node, f"merge_{k}", "Merge", [(enters[k], 0), (enters[k], 0)],
                              {"T": _type(types[k]), "N": _int(2)}) for k in loop}
        cond = self.call(node, "cond", attrs["cond"].func,
                         [(merges[k], 0) if k in merges else (enters[k], 0)
                          for k in range(len(types))], types, [types_pb2.DT_BOOL])
        loop_cond = self.new(node, "loop_cond", "LoopCond", [(cond, 0)])
        switches = {k: self.new(node, f"switch_{k}", "Switch",
                                [(merges[k], 0), (loop_cond, 0)], {"T": _type(types[k])})
                    for k in loop}
        exits = {k: self.new(node, f"exit_{k}", "Exit", [(switches[k], 0)],
                             {"T": _type(types[k])}) for k in loop}
        body_ins = {k: self.new(node, f"body_input_{k}", "Identity", [(switches[k], 1)],
                                {"T": _type(types[k])}) for k in loop}
        body = self.call(node, "body", attrs["body"].func,
                         [(body_ins[k], 0) if k in body_ins else (enters[k], 0)
                          for k in range(len(types))], types, types,
                         [body_ins[loop[0]]] if len(loop) < len(types) else [])
        body_fdef = self.library.find(attrs["body"].func.name)
        effects = [body] if body_fdef is not None and body_fdef.control_ret else []
        for k in loop:
            nxt = self.new(node, f"next_iteration_{k}", "NextIteration", [(body, k)],
                           {"T": _type(types[k])}, effects)
            back = next(e for e in merges[k].in_edges if e.dst_input == 1)
            self.graph.remove_edge(back)
            self.graph.add_edge(nxt, 0, merges[k], 1)
        outputs = [(exits[k], 0) if k in exits else (ins[k].src, ins[k].src_output)
                   for k in range(len(types))]
        self.finish(node, outputs, types, None)
        return True


def _flag(node: Node, name: str) -> bool:
    value = node.attr(name)
    return value is not None and value.b


def _type(dtype: int):
    return lambda a: setattr(a, "type", dtype)


def _int(value: int):
    return lambda a: setattr(a, "i", value)
