"""The runtime graph IR: Nodes and Edges, with TensorFlow's source (id 0) and sink (id 1).

Built from a GraphDef (see construct.py), then rewritten, pruned and partitioned
before an Executor is made from it. Control edges use slot -1 at both ends.
"""

from __future__ import annotations

from collections.abc import Iterator

from aioflow.proto import graph_pb2, node_def_pb2, versions_pb2

CONTROL_SLOT = -1
SOURCE_ID = 0
SINK_ID = 1

_CONTROL_FLOW_OPS = {
    "Switch": "is_switch", "RefSwitch": "is_switch", "_SwitchN": "is_switch",
    "Merge": "is_merge", "RefMerge": "is_merge",
    "Enter": "is_enter", "RefEnter": "is_enter", "Exit": "is_exit", "RefExit": "is_exit",
    "NextIteration": "is_next_iteration", "RefNextIteration": "is_next_iteration",
    "LoopCond": "is_loop_cond", "ControlTrigger": "is_control_trigger",
}


class Edge:
    """A data edge (src:src_output -> dst:dst_input) or a control edge (both slots -1)."""

    __slots__ = ("id", "src", "src_output", "dst", "dst_input")

    def __init__(self, edge_id: int, src: Node, src_output: int, dst: Node, dst_input: int):
        self.id = edge_id
        self.src = src
        self.src_output = src_output
        self.dst = dst
        self.dst_input = dst_input

    @property
    def is_control_edge(self) -> bool:
        return self.src_output == CONTROL_SLOT

    def __repr__(self) -> str:
        if self.is_control_edge:
            return f"<Edge ^{self.src.name} -> {self.dst.name}>"
        return f"<Edge {self.src.name}:{self.src_output} -> {self.dst.name}:{self.dst_input}>"


class Node:
    """One node: its NodeDef, OpDef, types, device, and in/out edges."""

    # Control-flow flags: False unless the op type sets one (see _CONTROL_FLOW_OPS), and
    # is_control_flow with it.
    is_switch = is_merge = is_enter = is_exit = False
    is_next_iteration = is_loop_cond = is_control_trigger = False
    is_control_flow = False

    def __init__(self, node_id: int, node_def: node_def_pb2.NodeDef, op_def,
                 input_types: list[int], output_types: list[int]):
        self.id = node_id
        self.def_ = node_def
        self.op_def = op_def
        self.input_types = input_types
        self.output_types = output_types
        self.in_edges: list[Edge] = []
        self.out_edges: list[Edge] = []
        self.assigned_device_name = ""
        flag = _CONTROL_FLOW_OPS.get(node_def.op)
        if flag:
            setattr(self, flag, True)
            self.is_control_flow = True

    @property
    def name(self) -> str:
        return self.def_.name

    @property
    def type_string(self) -> str:
        return self.def_.op

    @property
    def requested_device(self) -> str:
        return self.def_.device

    @property
    def num_inputs(self) -> int:
        return len(self.input_types)

    @property
    def num_outputs(self) -> int:
        return len(self.output_types)

    @property
    def is_source(self) -> bool:
        return self.id == SOURCE_ID

    @property
    def is_sink(self) -> bool:
        return self.id == SINK_ID

    @property
    def is_op(self) -> bool:
        return self.id > SINK_ID

    def data_inputs(self) -> list[Edge | None]:
        """The data in-edges ordered by dst_input (None where an input is missing)."""
        out: list[Edge | None] = [None] * self.num_inputs
        for e in self.in_edges:
            if not e.is_control_edge:
                out[e.dst_input] = e
        return out

    def attr(self, name: str):
        return self.def_.attr[name] if name in self.def_.attr else None

    def __repr__(self) -> str:
        return f"<Node {self.id} {self.name} ({self.type_string})>"


class Graph:
    """A mutable runtime graph; node ids are dense and never reused within one Graph."""

    def __init__(self, versions: versions_pb2.VersionDef | None = None):
        self.nodes: list[Node | None] = []
        self.versions = versions_pb2.VersionDef()
        if versions is not None:
            self.versions.CopyFrom(versions)
        self._edge_count = 0
        self._num_edges = 0
        # The functions the graph's nodes may call (a FunctionLibraryDefinition), or None.
        self.library = None
        source = node_def_pb2.NodeDef(name="_SOURCE", op="NoOp")
        sink = node_def_pb2.NodeDef(name="_SINK", op="NoOp")
        self.nodes.append(Node(SOURCE_ID, source, None, [], []))
        self.nodes.append(Node(SINK_ID, sink, None, [], []))
        self.add_control_edge(self.source_node, self.sink_node)

    @property
    def source_node(self) -> Node:
        return self.nodes[SOURCE_ID]

    @property
    def sink_node(self) -> Node:
        return self.nodes[SINK_ID]

    @property
    def num_node_ids(self) -> int:
        return len(self.nodes)

    @property
    def num_op_nodes(self) -> int:
        return sum(1 for n in self.nodes[2:] if n is not None)

    @property
    def num_edges(self) -> int:
        return self._num_edges

    def find_node_id(self, node_id: int) -> Node | None:
        return self.nodes[node_id] if 0 <= node_id < len(self.nodes) else None

    def all_nodes(self) -> Iterator[Node]:
        return (n for n in self.nodes if n is not None)

    def op_nodes(self) -> Iterator[Node]:
        return (n for n in self.nodes[2:] if n is not None)

    def add_node(self, node_def: node_def_pb2.NodeDef, op_def, input_types, output_types) -> Node:
        """A new node; it keeps copies of the type lists (the caller's stay its own)."""
        nodes = self.nodes
        node = Node(len(nodes), node_def, op_def, list(input_types), list(output_types))
        nodes.append(node)
        return node

    def remove_node(self, node: Node) -> None:
        for e in list(node.in_edges):
            self.remove_edge(e)
        for e in list(node.out_edges):
            self.remove_edge(e)
        self.nodes[node.id] = None

    def add_edge(self, src: Node, src_output: int, dst: Node, dst_input: int) -> Edge:
        edge = Edge(self._edge_count, src, src_output, dst, dst_input)
        self._edge_count += 1
        self._num_edges += 1
        src.out_edges.append(edge)
        dst.in_edges.append(edge)
        return edge

    def add_control_edge(self, src: Node, dst: Node, allow_duplicates: bool = False) -> Edge | None:
        if not allow_duplicates:
            for e in dst.in_edges:
                if e.is_control_edge and e.src is src:
                    return None
        return self.add_edge(src, CONTROL_SLOT, dst, CONTROL_SLOT)

    def remove_edge(self, edge: Edge) -> None:
        edge.src.out_edges.remove(edge)
        edge.dst.in_edges.remove(edge)
        self._num_edges -= 1

    def to_graph_def(self) -> graph_pb2.GraphDef:
        """The GraphDef of the op nodes, inputs rebuilt from the edges (data then control),
        with the graph's function library."""
        graph_def = graph_pb2.GraphDef()
        graph_def.versions.CopyFrom(self.versions)
        if self.library:
            graph_def.library.CopyFrom(self.library.to_proto())
        for node in self.op_nodes():
            out = graph_def.node.add()
            out.CopyFrom(node.def_)
            del out.input[:]
            if node.assigned_device_name:
                out.device = node.assigned_device_name
            for e in node.data_inputs():
                if e is None:
                    continue
                out.input.append(e.src.name if e.src_output == 0
                                 else f"{e.src.name}:{e.src_output}")
            controls = sorted(e.src.name for e in node.in_edges
                              if e.is_control_edge and e.src.is_op)
            out.input.extend("^" + name for name in controls)
        return graph_def
