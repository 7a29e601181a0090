"""A FunctionDef from a ControlFlowFuncGraph, named as TF names it (TF's GraphToFunctionDef,
tensorflow/core/framework/graph_to_functiondef.cc, which cond_v2 / while_v2 reach
through create_new_tf_function and atomic_function.from_func_graph).

Names are TF's: each output arg is named after the op of its tensor, normalized
(lowercase; every character not a letter or digit becomes "_"; leading non-letters
dropped; "unknown" if none is left) and made unique with `_0`, `_1`...; then each input
arg likewise, from its placeholder's name; then each body node keeps its name unless an
arg already took it (then `name_0`...). A graph whose every output has a name
from its FunctionDef (function_def_to_graph's `output_names`) keeps those names. The
body is every op but the input placeholders, in creation order; a node's inputs are
written `node:out_arg:index` (an input arg by its name); control inputs sorted by their
source's name. An input arg
carries its placeholder's attrs whose names start with "_", and its shape as
`_output_shapes` (not for a resource). The function is stateful when a body op is. The
graph's control outputs become `control_ret` entries named as their ops, listed (sorted)
as the signature's control outputs."""

from __future__ import annotations

import re

from aioflow.data.control_flow_func_graph import ControlFlowFuncGraph
from aioflow.data.func_graph import output_arg_ranges
from aioflow.framework import dtypes
from aioflow.framework.op_def_registry import get as get_op_def
from aioflow.proto import attr_value_pb2, function_pb2

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_LEADING_NON_LETTERS = re.compile(r"^[^A-Za-z]*")


class _NameMapping:
    """TF's NodeNameMapping: names used by args and nodes, and each node's new name."""

    def __init__(self):
        self._used: dict[str, int] = {}
        self.mapping: dict[str, str] = {}

    @staticmethod
    def normalize(name: str) -> str:
        name = _LEADING_NON_LETTERS.sub("", _NOT_ALNUM.sub("_", name).lower())
        return name or "unknown"

    def _uniquify(self, name: str) -> str:
        if name not in self._used:
            self._used[name] = 0
            return name
        while True:
            candidate = f"{name}_{self._used[name]}"
            self._used[name] += 1
            if candidate not in self._used:
                self._used[candidate] = 0
                return candidate

    def output_name(self, name: str) -> str:
        return self._uniquify(self.normalize(name))

    def use_output_name(self, name: str) -> str:
        self._used[name] = 0
        return name

    def input_name(self, name: str) -> str:
        self.mapping[name] = self._uniquify(self.normalize(name))
        return self.mapping[name]

    def node_name(self, name: str) -> str:
        self.mapping[name] = self._uniquify(name)
        return self.mapping[name]


def _op_def(op):
    """The OpDef of `op`: a library function's signature for a call of one."""
    library = op.graph._library
    called = library.find(op.type) if library is not None else None
    return called.signature if called is not None else (op.op_def or get_op_def(op.type))


def graph_to_function_def(graph: ControlFlowFuncGraph, name: str | None = None,
                          attrs: dict | None = None) -> function_pb2.FunctionDef:
    """The FunctionDef of `graph` (args: graph.inputs, results: graph.outputs)."""
    fdef = function_pb2.FunctionDef()
    fdef.signature.name = name or graph.name
    names = _NameMapping()
    renamed: dict[tuple[str, int], str] = {}
    given = graph.output_names
    keep = given is not None and all((t.op.name, t.value_index) in given
                                     for t in graph.outputs)
    for t in graph.outputs:
        out_name = (names.use_output_name(given[(t.op.name, t.value_index)]) if keep
                    else names.output_name(t.op.name))
        fdef.signature.output_arg.add(name=out_name, type=t.dtype.as_datatype_enum)
    input_ops = {t.op for t in graph.inputs}
    for i, t in enumerate(graph.inputs):
        arg_name = names.input_name(t.op.name)
        fdef.signature.input_arg.add(name=arg_name, type=t.dtype.as_datatype_enum)
        arg_attrs = {key: value for key, value in t.op.node_def.attr.items()
                     if key.startswith("_")}
        if t.dtype != dtypes.resource and "shape" in t.op.node_def.attr:
            arg_attrs["_output_shapes"] = attr_value_pb2.AttrValue(
                list=attr_value_pb2.AttrValue.ListValue(
                    shape=[t.op.node_def.attr["shape"].shape]))
        for key, value in arg_attrs.items():
            fdef.arg_attr[i].attr[key].CopyFrom(value)
        renamed[(t.op.name, t.value_index)] = arg_name
    body = [op for op in graph.get_operations() if op not in input_ops]
    for op in body:
        node_name = names.node_name(op.name)
        for index, (arg, i) in enumerate(output_arg_ranges(op, _op_def(op))):
            renamed.setdefault((op.name, index), f"{node_name}:{arg}:{i}")
    fdef.signature.is_stateful = any(_op_def(op).is_stateful for op in body)
    for op in body:
        node = fdef.node_def.add()
        node.CopyFrom(op.node_def)
        node.name = names.mapping[op.name]
        del node.input[:]
        node.input.extend(renamed[(t.op.name, t.value_index)] for t in op.inputs)
        node.input.extend("^" + names.mapping[c.name]
                          for c in sorted(op.control_inputs, key=lambda c: c.name))
    for arg, t in zip(fdef.signature.output_arg, graph.outputs, strict=True):
        fdef.ret[arg.name] = renamed[(t.op.name, t.value_index)]
    for op in graph.control_outputs:
        fdef.control_ret[op.name] = names.mapping[op.name]
    fdef.signature.control_output.extend(sorted({op.name for op in graph.control_outputs}))
    for key, value in (attrs or {}).items():
        fdef.attr[key].CopyFrom(value)
    return fdef
