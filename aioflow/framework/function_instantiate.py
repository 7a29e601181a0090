"""Instantiating a FunctionDef: its body as a GraphDef the runtime can build an executor
from (TF's InstantiateFunction, function.cc).

Given the FunctionDef and the instantiation attrs (a call's `f.attr`, a While's
`body.attr`...):

- every attr value of the body that is a placeholder (`$T`, AttrValue.placeholder) is
  replaced by the instantiation attr of that name, also inside func attrs; a missing
  one is an InvalidArgumentError;
- each input arg becomes `_Arg` nodes (one per tensor: a `number_attr` or
  `type_list_attr` arg stands for several, named `{arg}_{i}`), index in flat order,
  with the arg's `arg_attr` entries, `_resource_arg_unique_id`, and the shapes of
  `_input_shapes` (when the caller gave them) as `_output_shapes`;
- inputs in FunctionDef form are rewritten to graph edges: `arg` (all tensors of the
  arg), `node:out_arg:index` (the flat output `index` of the output arg `out_arg` of
  `node`, its position computed from the node's OpDef and attrs), `node:out_arg` (every
  tensor of that output arg), `^node`;
- each output arg becomes `_Retval` nodes (named `{out}_RetVal`, index in flat order)
  fed by `ret[out]`; `control_ret` names the nodes that must run although no output
  depends on them (the runtime keeps them, with the stateful nodes, as TF's
  PruneFunctionBody);
- a body node whose op is a function of the library calls it: it becomes a
  StatefulPartitionedCall of that function (its attrs are the call's).

Errors are TF's classes: a function that is not in the library is NotFoundError, a
malformed body InvalidArgumentError; both name the function.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aioflow.framework import errors, node_def_util, op_def_registry
from aioflow.proto import attr_value_pb2, graph_pb2, node_def_pb2

_NUM_TYPE = "number_attr"


@dataclass
class InstantiatedFunction:
    """A function body ready to build: the GraphDef (with `_Arg`/`_Retval` nodes), the
    flat argument and result types, and the nodes its control outputs name."""

    name: str
    graph_def: graph_pb2.GraphDef
    arg_types: list[int]
    ret_types: list[int]
    control_ret: list[str] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    stateful: bool = False


def canonical_attrs(attrs) -> tuple:
    """A hashable key of instantiation attrs (the cache key of an instantiation)."""
    return tuple(sorted((k, v.SerializeToString(deterministic=True)) for k, v in attrs.items()))


def function_not_found(name: str, node=None) -> errors.NotFoundError:
    """TF's error for a call of a function the library does not hold."""
    where = f" (called by node {node.name})" if node is not None else ""
    return errors.NotFoundError(node, None, f"Function {name} is not defined.{where}")


def instantiate(library, name: str, attrs=None) -> InstantiatedFunction:
    """The body of `name` instantiated with `attrs` (name -> AttrValue)."""
    fdef = library.find(name)
    if fdef is None:
        raise function_not_found(name)
    attrs = dict(attrs or {})
    sig = fdef.signature
    for attr in sig.attr:  # the signature's attr defaults
        if attr.name not in attrs and attr.HasField("default_value"):
            attrs[attr.name] = attr.default_value
    try:
        return _Instantiation(library, fdef, attrs).run()
    except errors.OpError as e:
        if name in e.message:
            raise
        raise type(e)(e.node_def, None, f"{e.message}\n\tIn function '{name}'") from e


def check_call_types(node_def, fname: str, what: str, given, expected, role: str) -> None:
    """InvalidArgumentError naming the call node and the function when the types a call
    passes or expects (`given`) are not the function's (`expected`); `what`: "arguments"
    or "results", `role`: how the node uses the function ("function", "then_branch")."""
    given, expected = list(given), list(expected)
    where = f"node {node_def.name} ({node_def.op}), {role} '{fname}'"
    if len(given) != len(expected):
        raise errors.InvalidArgumentError(
            node_def, None, f"Function '{fname}' expects {len(expected)} {what} but "
                            f"{len(given)} are given: {where}")
    for i, (g, e) in enumerate(zip(given, expected, strict=True)):
        if g != e:
            kind = "arg" if what == "arguments" else "result"
            raise errors.InvalidArgumentError(
                node_def, None, f"Expects {kind}[{i}] of function '{fname}' to be "
                                f"{node_def_util.tf_type_name(e)} but "
                                f"{node_def_util.tf_type_name(g)} is provided: {where} "
                                f"(given [{_type_names(given)}], expected "
                                f"[{_type_names(expected)}])")


def _type_names(types) -> str:
    return ", ".join(node_def_util.tf_type_name(t) for t in types)


def is_direct_call(node_def, library) -> bool:
    """Whether `node_def` calls a library function by naming it as its op (TF 1's
    Defun graphs, gradient functions): an op type that is not registered."""
    return (library is not None and node_def.op in library
            and op_def_registry.get_registration(node_def.op) is None)


def as_call(node, library) -> None:
    """Rewrite `node` (a NodeDef, in place), a direct call of library function
    `node.op`, as the StatefulPartitionedCall of that function the runtime runs: its
    attrs become the call's `f.attr`, Tin and Tout come from the signature."""
    callee = library.find(node.op)
    attrs = {k: v for k, v in node.attr.items()}
    for attr in callee.signature.attr:
        if attr.name not in attrs and attr.HasField("default_value"):
            attrs[attr.name] = attr.default_value
    tin = [t for _, ts in signature_types(callee.signature.input_arg, attrs, node.op)
           for t in ts]
    tout = [t for _, ts in signature_types(callee.signature.output_arg, attrs, node.op)
            for t in ts]
    fname = node.op
    node.op = "StatefulPartitionedCall"
    for key in [k for k in node.attr if not k.startswith("_")]:
        del node.attr[key]
    node.attr["f"].func.name = fname
    for key, value in attrs.items():
        if not key.startswith("_"):
            node.attr["f"].func.attr[key].CopyFrom(value)
    node.attr["Tin"].list.type.extend(tin)
    node.attr["Tout"].list.type.extend(tout)


def signature_types(args, attrs, fname: str) -> list[tuple[str, list[int]]]:
    """Per arg of a signature (input_arg or output_arg): its name and its flat types."""
    out = []
    for arg in args:
        try:
            if arg.type_list_attr:
                types = list(attrs[arg.type_list_attr].list.type)
            else:
                dtype = arg.type or attrs[arg.type_attr].type
                n = attrs[arg.number_attr].i if arg.number_attr else 1
                types = [dtype] * n
        except KeyError as e:
            raise errors.InvalidArgumentError(
                None, None, f"Attr {e.args[0]} is not found from the signature of function "
                            f"'{fname}' (instantiation attrs: {sorted(attrs)})") from None
        out.append((arg.name, types))
    return out


class _Instantiation:
    def __init__(self, library, fdef, attrs: dict):
        self.library = library
        self.fdef = fdef
        self.name = fdef.signature.name
        self.attrs = attrs
        self.graph_def = graph_pb2.GraphDef()
        # FunctionDef-form names -> graph tensor names: "arg" -> [...], "node:out" -> [...]
        self.outputs: dict[str, list[str]] = {}
        self.nodes: set[str] = set()

    def error(self, message: str, node=None) -> errors.InvalidArgumentError:
        return errors.InvalidArgumentError(node, None,
                                           f"{message} (in function '{self.name}')")

    def run(self) -> InstantiatedFunction:
        sig = self.fdef.signature
        arg_types = self._add_args(sig)
        body = [self._substituted(node) for node in self.fdef.node_def]
        for node in body:
            if node.name in self.nodes:
                raise self.error(f"Duplicated node name '{node.name}'", node)
            self.nodes.add(node.name)
            self._index_outputs(node)
        stateful = False
        for node in body:
            self._rewrite_inputs(node)
            reg = op_def_registry.get_registration(node.op)
            stateful = stateful or (reg is not None and reg.op_def.is_stateful)
            self.graph_def.node.append(node)
        ret_types = self._add_retvals(sig)
        control_ret = []
        for out in sig.control_output:
            target = self.fdef.control_ret.get(out)
            if target is None or target not in self.nodes:
                raise self.error(f"Control output '{out}' names no node of the body "
                                 f"({target!r})")
            control_ret.append(target)
        return InstantiatedFunction(self.name, self.graph_def, arg_types, ret_types,
                                    control_ret, self.attrs, stateful)

    # -- args and retvals ------------------------------------------------------------------
    def _add_args(self, sig) -> list[int]:
        flat: list[int] = []
        shapes = self.attrs.get("_input_shapes")
        shapes = list(shapes.list.shape) if shapes is not None else []
        for position, (arg_name, types) in enumerate(signature_types(sig.input_arg,
                                                                     self.attrs, self.name)):
            names = []
            for i, dtype in enumerate(types):
                node = self.graph_def.node.add(
                    name=arg_name if len(types) == 1 else f"{arg_name}_{i}", op="_Arg")
                node.attr["T"].type = dtype
                node.attr["index"].i = len(flat)
                arg_attrs = self.fdef.arg_attr.get(position)
                if arg_attrs is not None:
                    for key, value in arg_attrs.attr.items():
                        node.attr[key].CopyFrom(value)
                if position in self.fdef.resource_arg_unique_id:
                    node.attr["_resource_arg_unique_id"].i = \
                        self.fdef.resource_arg_unique_id[position]
                if len(flat) < len(shapes):
                    node.attr["_output_shapes"].list.shape.add().CopyFrom(shapes[len(flat)])
                self.nodes.add(node.name)
                names.append(node.name)
                flat.append(dtype)
            self.outputs[arg_name] = names
        return flat

    def _add_retvals(self, sig) -> list[int]:
        flat: list[int] = []
        for out_name, types in signature_types(sig.output_arg, self.attrs, self.name):
            source = self.fdef.ret.get(out_name)
            if source is None:
                raise self.error(f"Return value '{out_name}' is missing from the ret map")
            tensors = self._resolve(source, None)
            if len(tensors) != len(types):
                raise self.error(f"Return value '{out_name}' is {len(tensors)} tensors, the "
                                 f"signature declares {len(types)}")
            for i, (tensor, dtype) in enumerate(zip(tensors, types, strict=True)):
                node = self.graph_def.node.add(
                    name=f"{out_name}_RetVal" if len(types) == 1 else f"{out_name}_{i}_RetVal",
                    op="_Retval", input=[tensor])
                node.attr["T"].type = dtype
                node.attr["index"].i = len(flat)
                flat.append(dtype)
        return flat

    # -- body nodes --------------------------------------------------------------------------
    def _substituted(self, node_def) -> node_def_pb2.NodeDef:
        node = node_def_pb2.NodeDef()
        node.CopyFrom(node_def)
        for key in list(node.attr):
            self._substitute(node.attr[key], node)
        if op_def_registry.get_registration(node.op) is None and node.op in self.library:
            as_call(node, self.library)
        return node

    def _substitute(self, value: attr_value_pb2.AttrValue, node) -> None:
        kind = value.WhichOneof("value")
        if kind == "placeholder":
            found = self.attrs.get(value.placeholder)
            if found is None:
                raise self.error(f"Attr {value.placeholder} is not found (a placeholder of "
                                 f"node '{node.name}')", node)
            value.CopyFrom(found)
        elif kind == "func":
            for key in list(value.func.attr):
                self._substitute(value.func.attr[key], node)
        elif kind == "list":
            for func in value.list.func:
                for key in list(func.attr):
                    self._substitute(func.attr[key], node)

    def _index_outputs(self, node) -> None:
        """`node:out_arg` -> its graph tensors, from the node's OpDef and attrs."""
        reg = op_def_registry.get_registration(node.op)
        if reg is None:
            raise self.error(f"Op type not registered '{node.op}' in binary running "
                             f"aioflow. (node {node.name})", node)
        op_def = reg.op_def
        with_defaults = node_def_pb2.NodeDef()
        with_defaults.CopyFrom(node)
        node_def_util.add_default_attrs(with_defaults, op_def)
        start = 0
        for arg in op_def.output_arg:
            n = node_def_util.arg_count(with_defaults, op_def, arg)
            self.outputs[f"{node.name}:{arg.name}"] = [
                node.name if start + i == 0 else f"{node.name}:{start + i}" for i in range(n)]
            start += n

    def _rewrite_inputs(self, node) -> None:
        inputs = list(node.input)
        del node.input[:]
        controls = []
        for text in inputs:
            if text.startswith("^"):
                target = text[1:]
                if target in self.outputs:  # an arg: depend on its _Arg nodes
                    controls.extend("^" + t.split(":")[0] for t in self.outputs[target])
                elif target in self.nodes:
                    controls.append(text)
                else:
                    raise self.error(f"Node '{node.name}': Unknown input node '{text}'",
                                     node)
                continue
            node.input.extend(self._resolve(text, node))
        node.input.extend(dict.fromkeys(controls))

    def _resolve(self, text: str, node) -> list[str]:
        """The graph tensors a FunctionDef input (or ret entry) names."""
        parts = text.split(":")
        if len(parts) == 3:
            key = f"{parts[0]}:{parts[1]}"
            tensors = self.outputs.get(key)
            if tensors is not None:
                try:
                    index = int(parts[2])
                except ValueError:
                    index = -1
                if 0 <= index < len(tensors):
                    return [tensors[index]]
                raise self.error(f"Node '{getattr(node, 'name', '<ret>')}': input '{text}' "
                                 f"is out of range (output arg '{parts[1]}' of '{parts[0]}' "
                                 f"has {len(tensors)} tensors)", node)
        elif len(parts) in (1, 2):
            tensors = self.outputs.get(text)
            if tensors is not None:
                return list(tensors)
        where = f"Node '{node.name}'" if node is not None else "A return value"
        raise self.error(f"{where}: Unknown input '{text}' (not an argument nor an output "
                         f"'node:out_arg:index' of the body)", node)
