"""Graph algorithms the runtime needs: orders, reachability, source/sink fix-up, copy."""

from __future__ import annotations

from collections.abc import Iterable

from aioflow.graph.graph import Graph, Node


def reverse_postorder(graph: Graph, ignore_back_edges: bool = True) -> list[Node]:
    """Nodes in reverse post-order of a DFS from the source: a topological order when
    the edges out of NextIteration (loop back edges) are ignored."""
    visited = [False] * graph.num_node_ids
    order: list[Node] = []
    stack: list[tuple[Node, int]] = [(graph.source_node, 0)]
    visited[graph.source_node.id] = True
    while stack:
        node, i = stack.pop()
        outs = node.out_edges if not (ignore_back_edges and node.is_next_iteration) else []
        if i < len(outs):
            stack.append((node, i + 1))
            dst = outs[i].dst
            if not visited[dst.id]:
                visited[dst.id] = True
                stack.append((dst, 0))
        else:
            order.append(node)
    order.reverse()
    return order


def reverse_reachable(nodes: Iterable[Node]) -> set[int]:
    """Ids of the nodes from which any of `nodes` can be reached (including them)."""
    seen: set[int] = set()
    stack = list(nodes)
    for n in stack:
        seen.add(n.id)
    add, push = seen.add, stack.append
    while stack:
        node = stack.pop()
        for e in node.in_edges:
            src = e.src
            if src.id not in seen:
                add(src.id)
                push(src)
    return seen


def prune_for_reverse_reachability(graph: Graph, targets: Iterable[Node]) -> bool:
    """Remove every op node from which no node of `targets` is reachable."""
    keep = reverse_reachable(targets)
    changed = False
    for node in list(graph.op_nodes()):
        if node.id not in keep:
            graph.remove_node(node)
            changed = True
    fixup_source_and_sink_edges(graph)
    return changed


def fixup_source_and_sink_edges(graph: Graph) -> None:
    """Give every node without in-edges a control edge from the source and every node
    without out-edges one to the sink, as TF's FixupSourceAndSinkEdges."""
    source, sink = graph.source_node, graph.sink_node
    for node in graph.op_nodes():
        if not node.in_edges:
            graph.add_control_edge(source, node, allow_duplicates=True)
        if not node.out_edges:
            graph.add_control_edge(node, sink, allow_duplicates=True)


def copy_graph(src: Graph) -> Graph:
    """A deep copy of the structure (NodeDefs shared: they are not mutated in place)."""
    dst = Graph(src.versions)
    dst.library = src.library
    dst.nodes = dst.nodes[:2]
    mapping: dict[int, Node] = {0: dst.source_node, 1: dst.sink_node}
    for e in list(dst.source_node.out_edges):
        dst.remove_edge(e)
    for node in src.op_nodes():
        copy = dst.add_node(node.def_, node.op_def, node.input_types, node.output_types)
        copy.assigned_device_name = node.assigned_device_name
        mapping[node.id] = copy
    for node in src.all_nodes():
        for e in node.out_edges:
            dst.add_edge(mapping[e.src.id], e.src_output, mapping[e.dst.id], e.dst_input)
    return dst


def find_cycle_node(graph: Graph) -> Node | None:
    """A node on a cycle that does not pass through NextIteration, or None (Kahn's
    algorithm with the NextIteration out-edges removed)."""
    pending = [0] * graph.num_node_ids
    for node in graph.all_nodes():
        for e in node.in_edges:
            if not e.src.is_next_iteration:
                pending[node.id] += 1
    ready = [n for n in graph.all_nodes() if pending[n.id] == 0]
    done = 0
    while ready:
        node = ready.pop()
        done += 1
        if node.is_next_iteration:
            continue
        for e in node.out_edges:
            pending[e.dst.id] -= 1
            if pending[e.dst.id] == 0:
                ready.append(e.dst)
    if done == sum(1 for _ in graph.all_nodes()):
        return None
    stuck = [n for n in graph.op_nodes() if pending[n.id] > 0]
    return min(stuck, key=lambda n: n.name) if stuck else None
