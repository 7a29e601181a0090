"""A FuncGraph from a FunctionDef of the graph's library (TF's
tensorflow/python/framework/function_def_to_graph.py), as cond_v2 / while_v2 rebuild the
branch and body graphs of an If or While they did not build themselves (an imported
one) before taking its gradient.

Each input arg becomes a Placeholder named as the arg, of its type, with the given input
shape (else the `_output_shapes` of its arg_attr) and the arg_attr entries whose names
start with "_"; the body's nodes follow unchanged but for their inputs, rewritten from
the FunctionDef's `node:out_arg:index` form to the graph's `node:flat_index`. The nodes
are imported into a ControlFlowFuncGraph named as the function, whose `inputs` are the
placeholders (in signature order), `outputs` the tensors `ret` names and
`control_outputs` the nodes of `control_ret`."""

from __future__ import annotations

from aioflow.data.control_flow_func_graph import ControlFlowFuncGraph
from aioflow.framework import op_def_registry, ops, tensor_shape
from aioflow.framework.importer import import_graph_def
from aioflow.proto import function_pb2, graph_pb2


def function_def_to_graph(fdef: function_pb2.FunctionDef, outer: ops.Graph,
                          input_shapes: list | None = None,
                          graph_class=ControlFlowFuncGraph) -> ControlFlowFuncGraph:
    """The FuncGraph of `fdef` (a function of `outer`'s library)."""
    graph = graph_class(fdef.signature.name, outer)
    graph_def, nested_to_flat = function_def_to_graph_def(outer, fdef, input_shapes)
    with graph.as_default():
        import_graph_def(graph_def, name="")
    graph.inputs = [graph.get_tensor_by_name(nested_to_flat[arg.name])
                    for arg in fdef.signature.input_arg]
    graph.outputs = [graph.get_tensor_by_name(nested_to_flat[fdef.ret[arg.name]])
                     for arg in fdef.signature.output_arg]
    graph.output_names = {(t.op.name, t.value_index): arg.name for t, arg in
                          zip(graph.outputs, fdef.signature.output_arg, strict=True)}
    graph.control_outputs = [graph.get_operation_by_name(fdef.control_ret[name])
                             for name in fdef.signature.control_output]
    for node in graph_def.node:
        if "_output_shapes" in node.attr:
            op = graph.get_operation_by_name(node.name)
            shapes = node.attr["_output_shapes"].list.shape
            for t, shape in zip(op.outputs, shapes[:len(op.outputs)], strict=True):
                t.set_shape(tensor_shape.TensorShape(shape))
    return graph


def function_def_to_graph_def(outer: ops.Graph, fdef: function_pb2.FunctionDef,
                              input_shapes: list | None = None):
    """(the GraphDef of `fdef`'s body with placeholders for its args, the map from the
    FunctionDef's tensor names to the GraphDef's)."""
    if input_shapes is not None and len(input_shapes) != len(fdef.signature.input_arg):
        raise ValueError("Length of `input_shapes` must match the number of `input_arg`s in "
                         f"`fdef`. Got {len(input_shapes)} `input_shapes` and "
                         f"{len(fdef.signature.input_arg)} `input_arg`s.")
    graph_def = graph_pb2.GraphDef()
    graph_def.versions.CopyFrom(outer.graph_def_versions)
    nested_to_flat: dict[str, str] = {}
    for i, arg in enumerate(fdef.signature.input_arg):
        node = graph_def.node.add(name=arg.name, op="Placeholder")
        node.attr["dtype"].type = arg.type
        if input_shapes is not None and input_shapes[i] is not None:
            node.attr["shape"].shape.CopyFrom(tensor_shape.TensorShape(input_shapes[i])
                                              .as_proto())
        arg_attrs = fdef.arg_attr[i].attr if i in fdef.arg_attr else {}
        for key, value in arg_attrs.items():
            if key == "_output_shapes":
                if value.WhichOneof("value") == "list":
                    node.attr["shape"].shape.CopyFrom(value.list.shape[0])
                elif value.WhichOneof("value") == "shape":
                    node.attr["shape"].shape.CopyFrom(value.shape)
            elif key.startswith("_"):
                node.attr[key].CopyFrom(value)
        nested_to_flat[arg.name] = f"{arg.name}:0"
        nested_to_flat["^" + arg.name] = "^" + arg.name
    graph_def.node.extend(fdef.node_def)
    for node in fdef.node_def:
        called = outer._library.find(node.op)
        op_def = called.signature if called is not None else op_def_registry.get(node.op)
        flat = 0
        for arg in op_def.output_arg:
            for i in range(_num_args(arg, node)):
                nested_to_flat[f"{node.name}:{arg.name}:{i}"] = f"{node.name}:{flat}"
                flat += 1
        nested_to_flat["^" + node.name] = "^" + node.name
    for node in graph_def.node:
        for i, text in enumerate(node.input):
            node.input[i] = nested_to_flat[text]
    return graph_def, nested_to_flat


def _num_args(arg, node) -> int:
    if arg.number_attr:
        return node.attr[arg.number_attr].i
    if arg.type_list_attr:
        return len(node.attr[arg.type_list_attr].list.type)
    return 1
