"""The gradient function a SymbolicGradient node runs (TF's SymbolicGradientHelper,
tensorflow/core/common_runtime/gradients.cc, as FunctionLibraryRuntime instantiates it).

For function f(x_0..x_n-1) -> (y_0..y_m-1) the gradient function takes (x..., dy...) and
returns (dx...): f's body recomputed, then backpropagated from dy. A function the library
gives a gradient (FunctionDefLibrary.gradient) uses that one instead; that case is the
runtime's. The body is backpropagated with aioflow's own gradient functions (TF's C++
runtime uses its C++ op gradients: the values agree, the nodes inside the function are not
TF's, and nothing outside the function sees them). An input no output depends on gets
zeros, as TF's; IndexedSlices gradients are made dense (a function returns tensors).
"""

from __future__ import annotations

from aioflow.data.func_graph import FuncGraph, to_function_def
from aioflow.framework import dtypes, ops
from aioflow.framework.function_instantiate import instantiate
from aioflow.framework.importer import import_graph_def
from aioflow.gradients.gradients_util import UnconnectedGradients, gradients
from aioflow.ops import array_ops
from aioflow.proto import function_pb2, graph_pb2


def symbolic_gradient_function_def(library, name: str, attrs: dict,
                                   grad_name: str) -> function_pb2.FunctionDef:
    """The FunctionDef `grad_name` of the gradient of library function `name`
    instantiated with `attrs` (name -> AttrValue)."""
    inst = instantiate(library, name, attrs)
    outer = ops.Graph()
    outer._library = library
    graph = FuncGraph(grad_name, outer)
    with graph.as_default():
        xs = [array_ops.placeholder(dtypes.as_dtype(t), name=f"x_{i}")
              for i, t in enumerate(inst.arg_types)]
        ys = _import_body(inst.graph_def, xs)
        dys = [array_ops.placeholder(y.dtype, name=f"dy_{j}") for j, y in enumerate(ys)]
        grads = gradients(ys, xs, grad_ys=dys,
                          unconnected_gradients=UnconnectedGradients.ZERO)
        grads = [ops.convert_to_tensor(g) for g in grads]
    graph.args = xs + dys
    return to_function_def(graph, grads)


def _import_body(body: graph_pb2.GraphDef, xs: list) -> list:
    """The body's nodes imported with its _Arg nodes replaced by `xs`; the tensors its
    _Retval nodes return, in order."""
    nodes = graph_pb2.GraphDef()
    args, retvals = {}, {}
    for node in body.node:
        if node.op == "_Arg":
            args[node.name] = xs[node.attr["index"].i]
        elif node.op == "_Retval":
            retvals[node.attr["index"].i] = _tensor_name(node.input[0])
        else:
            nodes.node.add().CopyFrom(node)
    sources = [retvals[i] for i in range(len(retvals))]
    wanted = [s for s in sources if s.split(":")[0] not in args]
    used = {text.lstrip("^").split(":")[0] for node in nodes.node for text in node.input}
    input_map = {f"{name}:0": x for name, x in args.items() if name in used}
    imported = dict(zip(wanted, import_graph_def(nodes, input_map=input_map,
                                                 return_elements=wanted, name="") or [],
                        strict=True))
    return [args[s.split(":")[0]] if s.split(":")[0] in args else imported[s]
            for s in sources]


def _tensor_name(text: str) -> str:
    return text if ":" in text else f"{text}:0"
