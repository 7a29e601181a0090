"""Inlining a function call node into its graph (TF's InlineFunctionBody,
inline_function_utils.cc), as ExpandInlineFunctions and the functional-ops lowering do.

The callee is instantiated (framework/function_instantiate.py) and its nodes are added
under the call's name (`{call}/{node}`), on the call's device where they ask for none:

- each `_Arg` becomes an Identity (`{call}/{arg}`) of the call's matching input;
- the call's control inputs gate the body: a NoOp `{call}/input_control_node` depends
  on them, and every argument Identity and every body node without inputs depends on
  it; without control inputs, body nodes without inputs depend on the first argument
  Identity, so that they run in the caller's frame (a call inside a loop);
- the call node itself becomes an IdentityN of the `_Retval` inputs, named as the call
  was (a NoOp when there are no results), so that its consumers and fetches of
  `call:i` are unchanged; it also depends on the control outputs (`control_ret`), so a
  control edge from the call waits for the body's side effects.
"""

from __future__ import annotations

from aioflow.framework import node_def_util, op_def_registry
from aioflow.framework.function_instantiate import (
    check_call_types,
    function_not_found,
    instantiate,
)
from aioflow.graph.graph import Graph, Node
from aioflow.proto import node_def_pb2


def add_node(graph: Graph, node_def: node_def_pb2.NodeDef, device_of: Node) -> Node:
    """Add `node_def` (its defaults filled in, placed as `device_of`); no edges yet."""
    op_def = op_def_registry.get(node_def.op)
    node_def_util.add_default_attrs(node_def, op_def)
    if not node_def.device:
        node_def.device = device_of.def_.device
    node = graph.add_node(node_def, op_def, node_def_util.input_types(node_def, op_def),
                          node_def_util.output_types(node_def, op_def))
    node.assigned_device_name = device_of.assigned_device_name
    return node


def unique_name(names: set, base: str) -> str:
    """`base`, or `base_1`, `base_2`... when the graph has it already; recorded."""
    name, k = base, 0
    while name in names:
        k += 1
        name = f"{base}_{k}"
    names.add(name)
    return name


def replace_node(graph: Graph, old: Node, new: Node) -> None:
    """Move `old`'s out-edges to `new` (same output slots) and remove `old`."""
    for e in list(old.out_edges):
        if e.dst.is_sink:
            continue
        if e.is_control_edge:
            graph.add_control_edge(new, e.dst)
        else:
            graph.add_edge(new, e.src_output, e.dst, e.dst_input)
    graph.remove_node(old)


def inline_call(graph: Graph, call: Node, library, fname: str, attrs: dict,
                names: set, role: str = "function", keep_caller: bool = True) -> list[Node]:
    """Replace `call` (whose data inputs are the callee's arguments, in order) by the
    body of `fname`; returns the nodes added. The call's input and output types must be
    the function's (InvalidArgumentError naming both). `keep_caller`: the call's name
    stays, as the IdentityN of its results (False for the calls a lowering made: their
    consumers read the results where the body computes them, and a NoOp of the call's
    name, only when something depends on the call by a control edge, waits for them)."""
    if library.find(fname) is None:
        raise function_not_found(fname, call.def_)
    inst = instantiate(library, fname, attrs)
    check_call_types(call.def_, fname, "arguments", call.input_types, inst.arg_types, role)
    check_call_types(call.def_, fname, "results", call.output_types, inst.ret_types, role)
    prefix = call.name + "/"
    inputs = call.data_inputs()
    controls = [e.src for e in call.in_edges if e.is_control_edge and e.src.is_op]
    added: list[Node] = []
    by_name: dict[str, Node] = {}
    retvals: list = []
    gate = None
    if controls:
        gate = add_node(graph, node_def_pb2.NodeDef(
            name=unique_name(names, prefix + "input_control_node"), op="NoOp"), call)
        for src in controls:
            graph.add_control_edge(src, gate)
        added.append(gate)
    body = []
    arg_nodes: list[Node] = []
    body_names = {n.name for n in inst.graph_def.node}
    for node_def in inst.graph_def.node:
        if node_def.op == "_Retval":
            retvals.append(node_def)
            continue
        copy = node_def_pb2.NodeDef()
        copy.CopyFrom(node_def)
        del copy.input[:]
        copy.name = unique_name(names, prefix + node_def.name)
        if node_def.op == "_Arg":
            copy.op = "Identity"
            for key in [k for k in copy.attr if k != "T"]:
                del copy.attr[key]
        elif "_class" in copy.attr:
            values = [b"loc:@" + prefix.encode() + s[5:]
                      if s.startswith(b"loc:@") and s[5:].decode(errors="replace") in body_names
                      else s for s in copy.attr["_class"].list.s]
            del copy.attr["_class"].list.s[:]
            copy.attr["_class"].list.s.extend(values)
        node = add_node(graph, copy, call)
        by_name[node_def.name] = node
        added.append(node)
        if node_def.op == "_Arg":
            arg_nodes.append(node)
            edge = inputs[node_def.attr["index"].i]
            graph.add_edge(edge.src, edge.src_output, node, 0)
            node.def_.input.append(_tensor_name(edge.src, edge.src_output))
            if gate is not None:
                graph.add_control_edge(gate, node)
        else:
            body.append((node_def, node))
    first_arg = arg_nodes[0] if arg_nodes else None
    for node_def, node in body:
        for i, text in enumerate(t for t in node_def.input if not t.startswith("^")):
            src, slot = node_def_util.parse_input(text)
            graph.add_edge(by_name[src], slot, node, i)
            node.def_.input.append(_tensor_name(by_name[src], slot))  # (kernels read it)
        for text in node_def.input:
            if text.startswith("^"):
                graph.add_control_edge(by_name[text[1:]], node)
                node.def_.input.append("^" + by_name[text[1:]].name)
        if not node_def.input:
            root_gate = gate if gate is not None else first_arg
            if root_gate is not None:
                graph.add_control_edge(root_gate, node)
    if not keep_caller:
        _wire_results(graph, call, retvals, by_name, inst.control_ret, gate)
        return added
    result = _result_node(graph, call, retvals, by_name, names)
    for name in inst.control_ret:
        graph.add_control_edge(by_name[name], result)
    if not retvals and gate is not None:
        graph.add_control_edge(gate, result)
    replace_node(graph, call, result)
    added.append(result)
    return added


def _tensor_name(node: Node, slot: int) -> str:
    return node.name if slot == 0 else f"{node.name}:{slot}"


def _wire_results(graph: Graph, call: Node, retvals: list, by_name: dict, control_ret,
                  gate) -> None:
    """Consumers of `call:i` read the body's result i directly; control consumers wait
    for a NoOp (named as the call) after every result and control output."""
    sources = {}
    for r in retvals:
        src, slot = node_def_util.parse_input(r.input[0])
        sources[r.attr["index"].i] = (by_name[src], slot)
    waiter = None
    if any(e.is_control_edge and not e.dst.is_sink for e in call.out_edges):
        waiter = add_node(graph, node_def_pb2.NodeDef(name=call.name, op="NoOp"), call)
        for src, _ in sources.values():
            graph.add_control_edge(src, waiter)
        for name in control_ret:
            graph.add_control_edge(by_name[name], waiter)
        if not sources and gate is not None:
            graph.add_control_edge(gate, waiter)
    for e in list(call.out_edges):
        if e.dst.is_sink:
            continue
        if e.is_control_edge:
            graph.add_control_edge(waiter, e.dst)
        else:
            src, slot = sources[e.src_output]
            graph.add_edge(src, slot, e.dst, e.dst_input)
    graph.remove_node(call)


def _result_node(graph: Graph, call: Node, retvals: list, by_name: dict, names: set) -> Node:
    """The IdentityN (or NoOp) that takes the call's name and outputs."""
    name = call.name
    if not retvals:
        return add_node(graph, node_def_pb2.NodeDef(name=name, op="NoOp"), call)
    retvals.sort(key=lambda r: r.attr["index"].i)
    node_def = node_def_pb2.NodeDef(name=name, op="IdentityN")
    node_def.attr["T"].list.type.extend(r.attr["T"].type for r in retvals)
    for key in ("_class",):
        if key in call.def_.attr:
            node_def.attr[key].CopyFrom(call.def_.attr[key])
    node = add_node(graph, node_def, call)
    for i, r in enumerate(retvals):
        src, slot = node_def_util.parse_input(r.input[0])
        graph.add_edge(by_name[src], slot, node, i)
    return node
