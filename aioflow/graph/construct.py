"""GraphDef -> runtime Graph, validating as TensorFlow's graph constructor does.

Every problem is an InvalidArgumentError naming the node: unknown op, an input naming
a missing node or output, a missing/mistyped/disallowed attr, an input dtype that
does not match the OpDef, a duplicate or invalid name, a cycle not through NextIteration,
GraphDef versions this runtime may not read. The per-node checks are node_def_util's
and the version check framework/graph_def_checks.py's, shared with import_graph_def;
the order and words here are also runtime/graph_state.py's (incremental extend).
"""

from __future__ import annotations

from aioflow.framework import dtypes, errors, graph_def_checks, node_def_util, op_def_registry
from aioflow.framework.function_instantiate import as_call, is_direct_call
from aioflow.framework.function_library import FunctionLibraryDefinition
from aioflow.graph.algorithm import find_cycle_node, fixup_source_and_sink_edges
from aioflow.graph.graph import CONTROL_SLOT, Graph
from aioflow.proto import graph_pb2, node_def_pb2


def _error(node_def, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(node_def, None, message)


def convert_graph_def_to_graph(graph_def: graph_pb2.GraphDef, library=None) -> Graph:
    """Build and validate a Graph from `graph_def` (nodes may come in any order);
    `library`: its functions (a FunctionLibraryDefinition), else GraphDef.library's."""
    graph_def_checks.check_versions(graph_def.versions)
    graph = Graph(graph_def.versions)
    if library is not None:
        graph.library = library
    elif graph_def.library.function or graph_def.library.gradient:
        graph.library = FunctionLibraryDefinition(graph_def.library)
    by_name = {}
    for node_def in graph_def.node:
        if not node_def.name:
            raise _error(node_def, f"Node with op {node_def.op} has an empty name")
        if node_def.name in by_name:
            raise _error(node_def, f"Node '{node_def.name}' is not unique")
        reg = op_def_registry.get_registration(node_def.op)
        if reg is None and is_direct_call(node_def, graph.library):
            node_def = _as_call(node_def, graph.library)
            reg = op_def_registry.get_registration(node_def.op)
        if reg is None:
            raise _error(node_def, f"Op type not registered '{node_def.op}' in binary running "
                                   f"aioflow. (node {node_def.name})")
        op_def = reg.op_def
        node_def = _with_defaults(node_def, op_def)
        node_def_util.validate_node_def(node_def, op_def)
        in_types = node_def_util.input_types(node_def, op_def)
        out_types = node_def_util.output_types(node_def, op_def)
        by_name[node_def.name] = graph.add_node(node_def, op_def, in_types, out_types)
    for node in list(graph.op_nodes()):
        _add_input_edges(graph, node, by_name)
    cycle = find_cycle_node(graph)
    if cycle is not None:
        raise _error(cycle.def_, f"Graph contains a cycle through node '{cycle.name}' that does "
                                 f"not pass through a NextIteration node ({cycle.type_string})")
    fixup_source_and_sink_edges(graph)
    return graph


def _as_call(node_def, library) -> node_def_pb2.NodeDef:
    """A direct call of a library function, as the StatefulPartitionedCall that runs it
    (a copy: the given NodeDef is the session's record of the graph)."""
    copy = node_def_pb2.NodeDef()
    copy.CopyFrom(node_def)
    as_call(copy, library)
    return copy


def _with_defaults(node_def, op_def) -> node_def_pb2.NodeDef:
    attrs = node_def.attr
    if all(name in attrs for name, _ in node_def_util.defaulted_attrs(op_def)):
        return node_def
    copy = node_def_pb2.NodeDef()
    copy.CopyFrom(node_def)
    node_def_util.add_default_attrs(copy, op_def)
    return copy


def _add_input_edges(graph: Graph, node, by_name) -> None:
    node_def = node.def_
    in_types = node.input_types
    num_inputs = len(in_types)
    add_edge = graph.add_edge
    data_index = 0
    seen_control = False
    for text in node_def.input:
        if ":" in text or text.startswith("^"):
            src_name, index = node_def_util.parse_input(text)
        else:  # (the common case, without a call: this runs once per edge of a graph)
            src_name, index = text, 0
        src = by_name.get(src_name)
        if src is None:
            raise _error(node_def, f"Node '{node.name}': Unknown input node '{text}'")
        if index == CONTROL_SLOT:
            seen_control = True
            graph.add_control_edge(src, node)
            continue
        if seen_control:
            raise _error(node_def, f"Node '{node.name}': Control dependencies must come after "
                                   f"regular dependencies")
        out_types = src.output_types
        if index >= len(out_types):
            raise _error(node_def, f"Node '{node.name}': Connecting to invalid output {index} of "
                                   f"source node {src_name} which has {src.num_outputs} outputs.")
        if data_index >= num_inputs:
            raise _error(node_def, f"Node '{node.name}': NodeDef expected inputs "
                                   f"'{node.num_inputs}' do not match {_num_data(node_def)} "
                                   f"inputs specified")
        expected = in_types[data_index]
        actual = out_types[index]
        if expected != actual and not node_def_util.types_compatible(expected, actual):
            raise _error(node_def, f"Input {data_index} of node {node.name} was passed "
                                   f"{_name(actual)} from {src_name}:{index} incompatible with "
                                   f"expected {_name(expected)}.")
        add_edge(src, index, node, data_index)
        data_index += 1
    if data_index != num_inputs:
        raise _error(node_def, f"Node '{node.name}': NodeDef expected inputs '{node.num_inputs}' "
                               f"do not match {data_index} inputs specified")


def _num_data(node_def) -> int:
    return sum(1 for i in node_def.input if not i.startswith("^"))


def _name(enum: int) -> str:
    try:
        return dtypes.as_dtype(enum).name
    except TypeError:
        return str(enum)
