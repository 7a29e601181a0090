"""Which while-loop frame each node runs in (TF's BuildControlFlowInfo).

A breadth-first walk from the source: an Enter's successors are in the frame its
`frame_name` names; an Exit's successors are in the parent of the Exit's frame.
An Enter itself belongs to the frame of its input; an Exit to the loop's frame.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from aioflow.framework import errors
from aioflow.graph.graph import Graph

ROOT_FRAME = ""


@dataclass
class ControlFlowInfo:
    """Per node id: its frame name and the Enter node that opened that frame (or None)."""

    frame_names: list[str]
    parent_enter: list[int | None]
    # frame name -> name of its parent frame
    frame_parents: dict[str, str]


def enter_frame_name(node_def) -> str:
    """An Enter's `frame_name` as text; bytes that are not UTF-8 are kept (TF compares
    frame names as byte strings), so two different names never become one frame."""
    return node_def.attr["frame_name"].s.decode("utf-8", "surrogateescape")


def build_control_flow_info(graph: Graph) -> ControlFlowInfo:
    n = graph.num_node_ids
    frame_names: list[str | None] = [None] * n
    parents: list[int | None] = [None] * n
    frame_parents: dict[str, str] = {}
    source = graph.source_node
    frame_names[source.id] = ROOT_FRAME
    queue = deque([source])
    visited = [False] * n
    visited[source.id] = True
    while queue:
        node = queue.popleft()
        frame = frame_names[node.id]
        parent = parents[node.id]
        if node.is_enter:
            child = enter_frame_name(node.def_)
            if not child:
                raise errors.InvalidArgumentError(
                    node.def_, None, f"Enter node {node.name} has an empty frame_name")
            known = frame_parents.get(child)
            if known is not None and known != frame:
                raise errors.InvalidArgumentError(
                    node.def_, None, f"Frame '{child}' is entered from two different frames "
                                     f"('{known}' and '{frame}'), at node {node.name}")
            frame_parents[child] = frame
            out_frame, out_parent = child, node.id
        elif node.is_exit:
            if parent is None:
                raise errors.InvalidArgumentError(
                    node.def_, None, f"Exit node {node.name} is not inside a while loop frame")
            out_frame = frame_names[parent]
            out_parent = parents[parent]
        else:
            out_frame, out_parent = frame, parent
        for e in node.out_edges:
            dst = e.dst
            if not visited[dst.id]:
                visited[dst.id] = True
                frame_names[dst.id] = out_frame
                parents[dst.id] = out_parent
                queue.append(dst)
            elif frame_names[dst.id] != out_frame and not dst.is_sink:
                raise errors.InvalidArgumentError(
                    dst.def_, None,
                    f"The node '{dst.name}' has inputs from different frames. The input "
                    f"'{node.name}' is in frame '{out_frame}'. The input "
                    f"'{_first_other(graph, dst, out_frame, frame_names)}' is in frame "
                    f"'{frame_names[dst.id]}'.")
    return ControlFlowInfo([f if f is not None else ROOT_FRAME for f in frame_names],
                           parents, frame_parents)


def _first_other(graph: Graph, node, frame: str, frame_names) -> str:
    for e in node.in_edges:
        if frame_names[e.src.id] is not None and e.src.name != node.name:
            return e.src.name
    return "?"
