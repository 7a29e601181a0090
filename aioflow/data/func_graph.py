"""Tracing a Python function into a FunctionDef of the graph's library, as tf.data's
StructuredFunctionWrapper does (tensorflow/python/data/ops/structured_function.py over
tf.function's FuncGraph): arguments are placeholders named args_0, args_1, ...; each
result goes through an Identity ("Identity", "Identity_1", ...) named identity,
identity_1, ... in the signature; tensors of the outer graph used inside become extra
arguments (captures), passed by the dataset op as `other_arguments`.

Names follow TF's: `__inference_Dataset_map_<fn>_<n>` with a process-wide counter (TF's
uid, so the numbers differ from TF's run to run). Node inputs are written in the
FunctionDef's form, `op:out_arg:index`."""

from __future__ import annotations

import itertools
import re

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_registry import get as get_op_def
from aioflow.ops import array_ops
from aioflow.proto import attr_value_pb2, function_pb2

_uid = itertools.count(1)


class FuncGraph(ops.Graph):
    """A graph traced from a Python function; tensors of `outer` become captures."""

    def __init__(self, name: str, outer: ops.Graph):
        super().__init__()
        self.name = name
        self.outer = outer
        self.seed = outer.seed
        self.args: list[ops.Tensor] = []
        self.captures: list[tuple[ops.Tensor, ops.Tensor]] = []  # (outer, inner)
        self._library = outer._library

    def captures_from(self, graph) -> bool:
        """Whether a tensor of `graph` used here is captured (an enclosing graph)."""
        g = self.outer
        while g is not None:
            if g is graph:
                return True
            g = getattr(g, "outer", None)
        return False

    def capture(self, tensor: ops.Tensor) -> ops.Tensor:
        for outer, inner in self.captures:
            if outer is tensor:
                return inner
        with self.as_default():
            inner = array_ops.placeholder(tensor.dtype, tensor.shape, name="Placeholder")
        self.captures.append((tensor, inner))
        return inner

    def create_op(self, op_type, inputs, dtypes_=None, input_types=None, name=None,
                  attrs=None, op_def=None, **kwargs):
        inputs = [t if t.graph is self else self.capture(t) for t in inputs]
        return super().create_op(op_type, inputs, dtypes_, input_types, name, attrs, op_def,
                                 **kwargs)


def function_name(what: str, fn) -> str:
    """TF's name for a dataset function: __inference_Dataset_map_<fn>_<uid>."""
    fn_name = getattr(fn, "__name__", type(fn).__name__)
    fn_name = re.sub(r"[^A-Za-z0-9_]", "", fn_name.replace("<lambda>", "lambda"))
    return f"__inference_{what}_{fn_name}_{next(_uid)}"


def output_arg_ranges(op: ops.Operation, op_def) -> list[tuple[str, int]]:
    """(output arg name, index within it) for each output of `op` under `op_def`: how a
    FunctionDef names the output (`arg:index`)."""
    out = []
    for arg in op_def.output_arg:
        if arg.number_attr:
            count = op.get_attr(arg.number_attr)
        elif arg.type_list_attr:
            count = len(op.get_attr(arg.type_list_attr))
        else:
            count = 1
        out.extend((arg.name, i) for i in range(count))
    return out


def _out_arg_names(op: ops.Operation) -> list[str]:
    """For each output of `op`, `arg_name:index` as a FunctionDef names it."""
    op_def = op.op_def if op.op_def is not None else get_op_def(op.type)
    return [f"{arg}:{i}" for arg, i in output_arg_ranges(op, op_def)]


def to_function_def(graph: FuncGraph, outputs: list[ops.Tensor],
                    extra_attrs: dict | None = None) -> function_pb2.FunctionDef:
    """The FunctionDef of `graph`: args (then captures), `outputs` through Identities."""
    fdef = function_pb2.FunctionDef()
    fdef.signature.name = graph.name
    arg_names: dict[ops.Operation, str] = {}
    all_args = graph.args + [inner for _, inner in graph.captures]
    for i, t in enumerate(all_args):
        name = t.op.name if i < len(graph.args) else f"{t.op.name}"
        arg = fdef.signature.input_arg.add(name=name, type=t.dtype.as_datatype_enum)
        arg_names[t.op] = arg.name
        attrs = fdef.arg_attr[i].attr
        attrs["_user_specified_name"].s = name.encode()
        attrs["_output_shapes"].list.shape.add().CopyFrom(t.shape.as_proto())
    identities = []
    with graph.as_default():
        for t in outputs:
            identities.append(array_ops.identity(t, name="Identity"))
    for op in graph.get_operations():
        if op in arg_names:
            continue
        node = fdef.node_def.add()
        node.CopyFrom(op.node_def)
        del node.input[:]
        for t in op.inputs:
            if t.op in arg_names:
                node.input.append(arg_names[t.op])
            else:
                node.input.append(f"{t.op.name}:{_out_arg_names(t.op)[t.value_index]}")
        node.input.extend(f"^{c.name}" for c in op.control_inputs)
    for i, t in enumerate(identities):
        out_name = "identity" if i == 0 else f"identity_{i}"
        fdef.signature.output_arg.add(name=out_name, type=t.dtype.as_datatype_enum)
        fdef.ret[out_name] = f"{t.op.name}:output:0"
    for key, value in (extra_attrs or {}).items():
        fdef.attr[key].CopyFrom(value)
    return fdef


def trace(what: str, fn, arg_specs: list, call, outer: ops.Graph,
          tf_data_function: bool = True):
    """Trace `call(fn, args)` (args: placeholders for `arg_specs`, TensorSpecs) into a
    function of `outer`'s library. Returns (the NameAttrList to put in the op's attr,
    the flat output tensors' specs list, the captured outer tensors, the structured
    output as `call` returned it)."""
    name = function_name(what, fn)
    graph = FuncGraph(name, outer)
    with graph.as_default():
        for i, spec in enumerate(arg_specs):
            graph.args.append(array_ops.placeholder(spec.dtype, spec.shape, name=f"args_{i}"))
        flat_outputs, structured = call(fn, list(graph.args))
    marker = attr_value_pb2.AttrValue(b=True)
    attrs = {"_tf_data_function": marker} if tf_data_function else {}
    fdef = to_function_def(graph, flat_outputs, attrs)
    outer._library.add_function_def(fdef)
    func = attr_value_pb2.NameAttrList(name=name)
    if tf_data_function:
        func.attr["_tf_data_function"].CopyFrom(marker)
    return func, flat_outputs, [outer_t for outer_t, _ in graph.captures], structured


def dtype_enum(t) -> int:
    return dtypes.as_dtype(t).as_datatype_enum
