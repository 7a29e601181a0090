"""Output shapes of a function call from its body, as TF's ShapeRefiner infers them for a
PartitionedCall / StatefulPartitionedCall (InferShapesForFunction): the called function is
instantiated, its body imported into a scratch graph whose arguments have the call's input
shapes, and its results' inferred shapes are the call's. A call marked
`_disable_call_shape_inference`, a function the graph's library lacks, or a body that does
not import gives unknown shapes (None), as before. Results are cached per library,
function, attrs and input shapes; recursion is cut at a small depth."""

from __future__ import annotations

import threading

from aioflow.framework import ops, tensor_shape
from aioflow.framework.function_instantiate import canonical_attrs, instantiate
from aioflow.framework.importer import import_graph_def
from aioflow.framework.op_def_library import apply_op
from aioflow.proto import graph_pb2

_MAX_DEPTH = 8
_state = threading.local()


def call_output_shapes(op) -> list | None:
    """The shapes of the call `op`'s outputs inferred from its function's body, or None."""
    library = op.graph._library
    func = op.get_attr("f")
    if not library or not library.contains(func.name):
        return None
    try:
        if op.get_attr("_disable_call_shape_inference"):
            return None
    except ValueError:
        pass
    shapes = tuple(t.shape for t in op.inputs)
    key = (func.name, canonical_attrs(dict(func.attr)),
           tuple(str(s) if s.rank is not None else None for s in shapes))
    cache = library.__dict__.setdefault("_call_shapes", {})
    if key in cache:
        return cache[key]
    depth = getattr(_state, "depth", 0)
    if depth >= _MAX_DEPTH:
        return None
    _state.depth = depth + 1
    try:
        result = _infer(library, func, op)
    except Exception:  # noqa: BLE001
        result = None  # a body that does not import: unknown shapes, as before
    finally:
        _state.depth = depth
    cache[key] = result
    return result


def _arg(outer, name):
    """The stand-in for an argument: a placeholder of the call input's dtype and shape; a
    variable handle a VarHandleOp of the same variable shape and dtype (its reads then
    have the variable's shape, as TF's handle data gives)."""
    if outer.op.type == "VarHandleOp":
        return apply_op("VarHandleOp", name=name, dtype=outer.op.get_attr("dtype"),
                        shape=outer.op.get_attr("shape"), shared_name=name)
    t = apply_op("Placeholder", name=name, dtype=outer.dtype, shape=outer.shape)
    t.set_shape(outer.shape)
    return t


def _infer(library, func, op) -> list:
    inst = instantiate(library, func.name, dict(func.attr))
    scratch = ops.Graph()
    scratch._library = library
    nodes = graph_pb2.GraphDef()
    args, retvals = {}, {}
    with scratch.as_default():
        for node in inst.graph_def.node:
            if node.op == "_Arg":
                i = node.attr["index"].i
                args[node.name] = _arg(op.inputs[i], node.name)
            elif node.op == "_Retval":
                retvals[node.attr["index"].i] = node.input[0]
            else:
                nodes.node.add().CopyFrom(node)
        sources = [retvals[i] if ":" in retvals[i] else f"{retvals[i]}:0"
                   for i in range(len(retvals))]
        wanted = [s for s in sources if s.split(":")[0] not in args]
        used = {text.lstrip("^").split(":")[0] for node in nodes.node for text in node.input}
        imported = dict(zip(wanted, import_graph_def(
            nodes, input_map={f"{n}:0": t for n, t in args.items() if n in used},
            return_elements=wanted, name="") or [], strict=True))
    return [args[s.split(":")[0]].shape if s.split(":")[0] in args
            else tensor_shape.as_shape(imported[s].shape) for s in sources]
