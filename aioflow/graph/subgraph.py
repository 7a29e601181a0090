"""Rewrite a graph for one (feeds, fetches, targets) signature, then prune it.

Each fed tensor becomes an `_Arg` node (its consumers read the argument instead, so the
producer may be pruned away); each fetched tensor gets a `_Retval` node; only what the
retvals and the target nodes need is kept (TF's subgraph::RewriteGraphForExecution with
the call-frame convention). The second mode (`use_function_convention=False`, for
partial runs) feeds through client-terminated `_Recv` nodes and fetches through
client-terminated `_Send` nodes instead: the values travel through the step's
rendezvous, keyed as `client_rendezvous_key` says, while the step stays alive.
"""

from __future__ import annotations

from aioflow.framework import errors, node_def_util
from aioflow.framework.rendezvous_key import create_key
from aioflow.graph.algorithm import prune_for_reverse_reachability
from aioflow.graph.graph import Graph, Node
from aioflow.proto import attr_value_pb2, node_def_pb2


def _find(graph_nodes: dict[str, Node], name: str, what: str) -> tuple[Node, int]:
    node_name, index = node_def_util.parse_input(name)
    node = graph_nodes.get(node_name)
    if node is None or index < 0:
        raise errors.NotFoundError(None, None, f"{what} node {name}: not found")
    if index >= node.num_outputs:
        raise errors.InvalidArgumentError(
            node.def_, None, f"{what} {name}: output index too large, must be < "
                             f"{node.num_outputs}")
    return node, index


def _canonical(name: str) -> str:
    """A tensor name with its output index spelled out ("x" -> "x:0")."""
    node_name, index = node_def_util.parse_input(name)
    return f"{node_name}:{index}"


_REF_OFFSET = 100  # a ref type's enum is its base type's plus this


def _special_node(graph: Graph, name: str, op: str, dtype: int, index: int,
                  input_types, output_types, device: str) -> Node:
    node_def = node_def_pb2.NodeDef(name=name, op=op, device=device)
    node_def.attr["T"].CopyFrom(attr_value_pb2.AttrValue(type=dtype))
    node_def.attr["index"].CopyFrom(attr_value_pb2.AttrValue(i=index))
    from aioflow.framework import op_def_registry

    node = graph.add_node(node_def, op_def_registry.get(op), input_types, output_types)
    node.assigned_device_name = device
    return node


def _transfer_node(graph: Graph, name: str, op: str, dtype: int, tensor_name: str,
                   device: str, incarnation: int) -> Node:
    """A client-terminated _Recv (a feed) or _Send (a fetch) on the client device."""
    node_def = node_def_pb2.NodeDef(name=name, op=op, device=device)
    attr = node_def.attr
    attr["tensor_type" if op == "_Recv" else "T"].type = dtype
    attr["tensor_name"].s = tensor_name.encode()
    attr["send_device"].s = device.encode()
    attr["recv_device"].s = device.encode()
    attr["send_device_incarnation"].i = incarnation
    attr["client_terminated"].b = True
    from aioflow.framework import op_def_registry

    if op == "_Recv":
        node = graph.add_node(node_def, op_def_registry.get(op), [], [dtype])
    else:
        node = graph.add_node(node_def, op_def_registry.get(op), [dtype], [])
    node.assigned_device_name = device
    return node


def client_rendezvous_key(tensor_name: str, device: str, incarnation: int) -> str:
    """The rendezvous key of a partial run's feed or fetch `tensor_name` (TF's
    GetRendezvousKey: from the client device to itself, frame and iteration 0)."""
    return create_key(device, incarnation, device, tensor_name)


def _unique(graph_nodes: dict[str, Node], base: str) -> str:
    name, i = base, 0
    while name in graph_nodes:
        i += 1
        name = f"{base}_{i}"
    return name


def rewrite_graph_for_execution(graph: Graph, feeds: list[str], fetches: list[str],
                                targets: list[str], device: str,
                                use_function_convention: bool = True,
                                incarnation: int = 0) -> None:
    """Feeds -> `_Arg` (index = position in `feeds`), fetches -> `_Retval` (index =
    position in `fetches`), both on the client `device` as in TF (a partition elsewhere
    gets or sends them through _Send/_Recv), then prune to what fetches and targets
    reach. In place. Without `use_function_convention`: feeds -> `_Recv` named
    `_recv_<node>_<output>`, fetches -> `_Send` named `_send_<node>_<output>`,
    client-terminated, from the client device (`incarnation`) to itself (TF)."""
    by_name = {n.name: n for n in graph.op_nodes()}
    fed = {_canonical(name) for name in feeds}
    if len(fed) != len(feeds):
        raise errors.InvalidArgumentError(None, None, "Duplicate feed names in " + str(feeds))
    for name in fetches:
        if _canonical(name) in fed:
            raise errors.InvalidArgumentError(None, None, f"{name} is both fed and fetched.")
    keep: list[Node] = []
    for index, name in enumerate(feeds):
        node, slot = _find(by_name, name, "Feed input")
        dtype = node.output_types[slot] % _REF_OFFSET  # TF's BaseType
        if use_function_convention:
            arg_name = f"_arg_{_canonical(name).replace(':', '_')}_{index}"
            arg = _special_node(graph, _unique(by_name, arg_name),
                                "_Arg", dtype, index, [], [dtype], device)
        else:
            arg = _transfer_node(graph, _unique(by_name, f"_recv_{node.name}_{slot}"),
                                 "_Recv", dtype, _canonical(name), device, incarnation)
        by_name[arg.name] = arg
        is_placeholder = node.type_string in ("Placeholder", "PlaceholderV2")
        for e in list(node.out_edges):
            if e.src_output == slot:
                dst, dst_input = e.dst, e.dst_input
                graph.remove_edge(e)
                graph.add_edge(arg, 0, dst, dst_input)
            elif e.is_control_edge and is_placeholder and not e.dst.is_sink:
                # A fed Placeholder's control dependents wait for its feed instead (as
                # TF): the Placeholder itself must not run, it has no value.
                dst = e.dst
                graph.remove_edge(e)
                graph.add_control_edge(arg, dst)
        graph.add_control_edge(graph.source_node, arg)
    for index, name in enumerate(fetches):
        node, slot = _find(by_name, name, "FetchOutputs")
        dtype = node.output_types[slot] % _REF_OFFSET  # TF's BaseType: a ref is read
        if use_function_convention:
            ret_name = f"_retval_{_canonical(name).replace(':', '_')}_{index}"
            ret = _special_node(graph, _unique(by_name, ret_name),
                                "_Retval", dtype, index, [dtype], [], device)
        else:
            ret = _transfer_node(graph, _unique(by_name, f"_send_{node.name}_{slot}"),
                                 "_Send", dtype, _canonical(name), device, incarnation)
        by_name[ret.name] = ret
        graph.add_edge(node, slot, ret, 0)
        keep.append(ret)
    for name in targets:
        node = by_name.get(name)
        if node is None:
            raise errors.NotFoundError(None, None, f"Target node {name}: not found")
        keep.append(node)
    prune_for_reverse_reachability(graph, keep)
