"""Checks of one NodeDef against its OpDef: defaults, attrs, and input/output types.

Shared by import_graph_def and by the runtime graph construction; errors are
InvalidArgumentError naming the node, as TensorFlow's node_def_util reports them.
"""

from __future__ import annotations

from aioflow.framework import dtypes, errors
from aioflow.framework.attr_value import attr_value_kind
from aioflow.proto import attr_value_pb2

# Enum values of reference types are the value types plus 100.
_REF_OFFSET = 100


def _error(node_def, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(node_def, None, message)


def summarize(node_def) -> str:
    return f"{{{{node {node_def.name}}}}} = {node_def.op}[...]"


def add_default_attrs(node_def, op_def) -> None:
    """Fill in attrs the node leaves out that have defaults in the OpDef."""
    for attr in op_def.attr:
        if attr.name not in node_def.attr and attr.HasField("default_value"):
            node_def.attr[attr.name].CopyFrom(attr.default_value)


def validate_node_def(node_def, op_def) -> None:
    """Every OpDef attr present and of the right type and allowed value; no unknown attrs."""
    known = {a.name: a for a in op_def.attr}
    for name, value in node_def.attr.items():
        if name.startswith("_"):
            continue
        if name not in known:
            raise _error(node_def, f"NodeDef mentions attr '{name}' not in Op<name={op_def.name}>;"
                                   f" NodeDef: {summarize(node_def)}")
        _check_attr_value(node_def, known[name], value)
    for attr in op_def.attr:
        if attr.name not in node_def.attr:
            raise _error(node_def, f"NodeDef missing attr '{attr.name}' from Op<name="
                                   f"{op_def.name}>; NodeDef: {summarize(node_def)}")


def _check_attr_value(node_def, attr_def, value: attr_value_pb2.AttrValue) -> None:
    kind = attr_value_kind(value)
    wanted = attr_def.type
    fits = kind == wanted or (kind == "list" and wanted.startswith("list("))
    if not fits:
        raise _error(node_def, f"AttrValue had value with type '{kind}' when '{wanted}' expected"
                               f"\n\t for attr '{attr_def.name}'\n\t; NodeDef: "
                               f"{summarize(node_def)}")
    if attr_def.HasField("allowed_values"):
        allowed = attr_def.allowed_values.list
        if wanted in ("type", "list(type)"):
            values = [value.type] if wanted == "type" else list(value.list.type)
            for v in values:
                if v not in allowed.type:
                    names = ", ".join(_type_name(t) for t in allowed.type)
                    raise _error(node_def, f"Value for attr '{attr_def.name}' of "
                                           f"{_type_name(v)} is not in the list of allowed "
                                           f"values: {names}\n\t; NodeDef: {summarize(node_def)}")
        elif wanted in ("string", "list(string)"):
            values = [value.s] if wanted == "string" else list(value.list.s)
            for v in values:
                if v not in allowed.s:
                    raise _error(node_def, f"Value for attr '{attr_def.name}' of "
                                           f"\"{v.decode(errors='replace')}\" is not in the list "
                                           f"of allowed values\n\t; NodeDef: {summarize(node_def)}")
    if attr_def.has_minimum:
        n = value.i if wanted == "int" else _list_len(value)
        if n < attr_def.minimum:
            what = "Value" if wanted == "int" else "Length"
            raise _error(node_def, f"{what} for attr '{attr_def.name}' of {n} must be at least "
                                   f"minimum {attr_def.minimum}\n\t; NodeDef: "
                                   f"{summarize(node_def)}")


def _list_len(value) -> int:
    fields = value.list.ListFields()
    return len(fields[0][1]) if fields else 0


def _type_name(enum: int) -> str:
    try:
        return dtypes.as_dtype(enum).name
    except TypeError:
        return f"<unknown type {enum}>"


def _arg_types(node_def, op_def, args) -> list[int]:
    out: list[int] = []
    for arg in args:
        try:
            if arg.type_list_attr:
                out.extend(node_def.attr[arg.type_list_attr].list.type)
                continue
            t = arg.type if arg.type else node_def.attr[arg.type_attr].type
            n = node_def.attr[arg.number_attr].i if arg.number_attr else 1
        except KeyError as e:
            raise _error(node_def, f"NodeDef missing attr {e} from Op<name={op_def.name}>; "
                                   f"NodeDef: {summarize(node_def)}") from None
        if arg.is_ref:
            t += _REF_OFFSET
        out.extend([t] * n)
    return out


def input_types(node_def, op_def) -> list[int]:
    """The DataType enums of the node's data inputs, in order."""
    return _arg_types(node_def, op_def, op_def.input_arg)


def output_types(node_def, op_def) -> list[int]:
    """The DataType enums of the node's outputs, in order."""
    return _arg_types(node_def, op_def, op_def.output_arg)


def parse_input(name: str) -> tuple[str, int]:
    """Split a NodeDef input: "x" -> ("x", 0), "x:2" -> ("x", 2), "^x" -> ("x", -1)."""
    if name.startswith("^"):
        return name[1:], -1
    node, sep, index = name.rpartition(":")
    if sep and index.isdigit():
        return node, int(index)
    return name, 0


def types_compatible(expected: int, actual: int) -> bool:
    """An output of a ref type may feed an input of its value type, as in TF."""
    return expected == actual or (actual - _REF_OFFSET == expected)
