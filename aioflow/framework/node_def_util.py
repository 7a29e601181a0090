"""Checks of one NodeDef against its OpDef: defaults, attrs, and input/output types.

Shared by import_graph_def and by the runtime graph construction; errors are
InvalidArgumentError naming the node, as TensorFlow's node_def_util reports them.
"""

from __future__ import annotations

import re
import warnings

from aioflow.framework import device_spec, dtypes, errors
from aioflow.framework.attr_value import attr_value_kind
from aioflow.proto import attr_value_pb2

# Enum values of reference types are the value types plus 100.
_REF_OFFSET = 100
_INT32_MAX = 2**31 - 1
# A deliberate limit TF does not have: a node may have at most this many outputs more
# than it has inputs. TF accepts any count that fits in an int32 and then spends minutes
# and tens of GiB building a node such as Unpack(num=2**28); outputs that inputs match
# (ShapeN, IdentityN) are as many as the GraphDef spells out.
MAX_UNMATCHED_OUTPUTS = 1 << 20
# DataTypes TF 2.21 knows that aioflow has no type for (TF's DataType_IsValid holds them).
_TF_ONLY_TYPES = {24: "float8_e5m2", 25: "float8_e4m3fn", 26: "float8_e4m3fnuz",
                  27: "float8_e4m3b11fnuz", 28: "float8_e5m2fnuz", 29: "int4", 30: "uint4",
                  31: "int2", 32: "uint2", 33: "float4_e2m1fn"}
# TF's error message lists every expected input type; past this many we abbreviate.
_MAX_LISTED_TYPES = 64

# TF's IsValidNodeName (graph_constructor.cc): a letter, digit or dot (or an underscore
# for internal ops), then letters, digits and "-./_"; ">" starts another such part.
_NAME_PART = r"[A-Za-z0-9_./-]*(?:>[A-Za-z0-9.][A-Za-z0-9_./-]*)*"
_VALID_NAME = re.compile(r"[A-Za-z0-9.]" + _NAME_PART)
_VALID_INTERNAL_NAME = re.compile(r"[A-Za-z0-9._]" + _NAME_PART)


def _error(node_def, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(node_def, None, message)


def summarize(node_def) -> str:
    return f"{{{{node {node_def.name}}}}} = {node_def.op}[...]"


def add_default_attrs(node_def, op_def) -> None:
    """Fill in attrs the node leaves out that have defaults in the OpDef."""
    attrs = node_def.attr
    for name, default in defaulted_attrs(op_def):
        if name not in attrs:
            attrs[name].CopyFrom(default)


_DEFAULTS: dict[int, tuple] = {}


def defaulted_attrs(op_def) -> tuple:
    """(name, default AttrValue) of the OpDef's attrs that have a default, read from the
    proto once per OpDef (on the path of every imported node)."""
    known = _DEFAULTS.get(id(op_def))
    if known is not None and known[0] is op_def:
        return known[1]
    found = tuple((a.name, a.default_value) for a in op_def.attr if a.HasField("default_value"))
    _DEFAULTS[id(op_def)] = (op_def, found)
    return found


def check_node_name(node_def, allow_internal_ops: bool = True) -> None:
    """TF's node-name rule; internal ops (a leading underscore) only where the runtime
    builds graphs (Session extend), never through import_graph_def, as in TF."""
    pattern = _VALID_INTERNAL_NAME if allow_internal_ops else _VALID_NAME
    if pattern.fullmatch(node_def.name) is None:
        raise _error(node_def, f"Node '{node_def.name}': Node name contains invalid characters")


def check_input_order(node_def) -> None:
    """Control inputs ("^x") come after every data input, as TF's graph constructor wants."""
    seen_control = False
    for text in node_def.input:
        if text.startswith("^"):
            seen_control = True
        elif seen_control:
            raise _error(node_def, f"Node '{node_def.name}': Control dependencies must come "
                                   f"after regular dependencies")


def validate_node_def(node_def, op_def, allow_internal_ops: bool = True,
                      names_checked: bool = False) -> None:
    """The node's name and input order; every OpDef attr present, of the right type and an
    allowed value, and no unknown attrs; its arity (number attrs against its inputs, before
    anything is built from them); its device string and the op's own attr rules.
    `names_checked`: the caller checked the name and input order already (import checks
    them for the whole GraphDef first, graph_def_checks.index_nodes)."""
    if not names_checked:
        check_node_name(node_def, allow_internal_ops)
        check_input_order(node_def)
    _validate_attrs(node_def, op_def)
    check_arity(node_def, op_def)
    _check_device(node_def)
    rule = _OP_ATTR_RULES.get(node_def.op)
    if rule is not None:
        rule(node_def)


class _AttrSpec:
    """What validation needs of one OpDef attr, read from the proto once per OpDef: the
    OpDef's repeated fields are slow to walk for every node of a 10k-node import."""

    __slots__ = ("attr_def", "wanted", "allowed_types", "allowed_strings", "has_minimum")

    def __init__(self, attr_def):
        self.attr_def = attr_def
        self.wanted = attr_def.type
        allowed = attr_def.allowed_values.list if attr_def.HasField("allowed_values") else None
        self.allowed_types = frozenset(allowed.type) if allowed is not None and \
            self.wanted in ("type", "list(type)") else None
        self.allowed_strings = frozenset(allowed.s) if allowed is not None and \
            self.wanted in ("string", "list(string)") else None
        self.has_minimum = attr_def.has_minimum


_ATTR_SPECS: dict[int, tuple] = {}


def _attr_specs(op_def) -> dict[str, _AttrSpec]:
    """The OpDef's attrs by name as _AttrSpecs (remembered per OpDef object)."""
    known = _ATTR_SPECS.get(id(op_def))
    if known is not None and known[0] is op_def:
        return known[1]
    specs = {a.name: _AttrSpec(a) for a in op_def.attr}
    _ATTR_SPECS[id(op_def)] = (op_def, specs)
    return specs


def _validate_attrs(node_def, op_def) -> None:
    specs = _attr_specs(op_def)
    attrs = node_def.attr
    for name in attrs:  # (keys, then values: the ItemsView is a Python generator)
        if name.startswith("_"):
            continue
        value = attrs[name]
        spec = specs.get(name)
        if spec is None:  # TF 2.21 (ValidateNodeDef): logged, ignored, kept in the graph
            warnings.warn(f"NodeDef mentions attribute {name} which is not in the op "
                          f"definition: Op<name={op_def.name}> This may be expected if your "
                          f"graph generating binary is newer than this binary. Unknown "
                          f"attributes will be ignored. NodeDef: {{{{node {node_def.name}}}}}",
                          UserWarning, stacklevel=2)
            continue
        _check_attr_value(node_def, spec, value)
    for name in specs:
        if name not in attrs:
            raise _error(node_def, f"NodeDef missing attr '{name}' from Op<name="
                                   f"{op_def.name}>; NodeDef: {summarize(node_def)}")


def _check_attr_value(node_def, spec: _AttrSpec, value: attr_value_pb2.AttrValue) -> None:
    attr_def = spec.attr_def
    wanted = spec.wanted
    if wanted == "type" and value.WhichOneof("value") == "type":  # the common case
        v = value.type
        if spec.allowed_types is not None and v in spec.allowed_types:
            return
        if spec.allowed_types is None and _data_type_problem(v) is None:
            return
    kind = attr_value_kind(value)
    fits = kind == wanted or (kind == "list" and wanted.startswith("list("))
    if not fits:
        raise _error(node_def, f"AttrValue had value with type '{kind}' when '{wanted}' expected"
                               f"\n\t for attr '{attr_def.name}'\n\t; NodeDef: "
                               f"{summarize(node_def)}")
    if wanted in ("type", "list(type)"):
        for v in [value.type] if wanted == "type" else value.list.type:
            problem = _data_type_problem(v)
            if problem:
                raise _error(node_def, f"{problem}\n\t for attr '{attr_def.name}'\n\t; "
                                       f"NodeDef: {summarize(node_def)}")
    if spec.allowed_types is not None or spec.allowed_strings is not None:
        allowed = attr_def.allowed_values.list
        if wanted in ("type", "list(type)"):
            values = [value.type] if wanted == "type" else list(value.list.type)
            for v in values:
                if v not in spec.allowed_types:
                    names = ", ".join(_type_name(t) for t in allowed.type)
                    raise _error(node_def, f"Value for attr '{attr_def.name}' of "
                                           f"{_type_name(v)} is not in the list of allowed "
                                           f"values: {names}\n\t; NodeDef: {summarize(node_def)}")
        elif wanted in ("string", "list(string)"):
            values = [value.s] if wanted == "string" else list(value.list.s)
            for v in values:
                if v not in spec.allowed_strings:
                    raise _error(node_def, f"Value for attr '{attr_def.name}' of "
                                           f"\"{v.decode(errors='replace')}\" is not in the list "
                                           f"of allowed values\n\t; NodeDef: {summarize(node_def)}")
    if spec.has_minimum:
        n = value.i if wanted == "int" else _list_len(value)
        if n < attr_def.minimum:
            what = "Value" if wanted == "int" else "Length"
            raise _error(node_def, f"{what} for attr '{attr_def.name}' of {n} must be at least "
                                   f"minimum {attr_def.minimum}\n\t; NodeDef: "
                                   f"{summarize(node_def)}")


def _data_type_problem(enum: int) -> str | None:
    """What TF's ValidateAttrValue says of a DataType an attr may not hold, or None. Types
    TF knows and aioflow does not (float8, int4, ...) are refused too, by choice: nothing
    here could run them."""
    if enum == 0:
        return "AttrValue has invalid DataType"
    if not dtypes._is_valid_enum(enum):
        tf_only = _TF_ONLY_TYPES.get(enum % _REF_OFFSET if enum > _REF_OFFSET else enum)
        if tf_only is not None:
            return f"AttrValue has DataType {tf_only} (enum {enum}), which aioflow does not support"
        return f"AttrValue has invalid DataType enum: {enum}"
    if enum > _REF_OFFSET:
        return (f"AttrValue must not have reference type value of "
                f"{tf_type_name(enum)}")
    return None


def tf_type_name(enum: int) -> str:
    """TF's DataTypeString: float, double, half, int32, float_ref, ..."""
    ref = enum > _REF_OFFSET
    try:
        name = dtypes.as_dtype(enum - _REF_OFFSET if ref else enum).name
    except TypeError:
        return f"unknown dtype enum ({enum})"
    name = {"float32": "float", "float64": "double", "float16": "half"}.get(name, name)
    return name + "_ref" if ref else name


def _list_len(value) -> int:
    fields = value.list.ListFields()
    return len(fields[0][1]) if fields else 0


def _type_name(enum: int) -> str:
    try:
        return dtypes.as_dtype(enum).name
    except TypeError:
        return f"<unknown type {enum}>"


def _attr(node_def, op_def, name: str):
    """The node's attr `name`, or the OpDef's default; KeyError when neither exists."""
    if name in node_def.attr:
        return node_def.attr[name]
    for attr in op_def.attr:
        if attr.name == name and attr.HasField("default_value"):
            return attr.default_value
    raise KeyError(name)


def _missing(node_def, op_def, e: KeyError) -> errors.InvalidArgumentError:
    return _error(node_def, f"NodeDef missing attr {e} from Op<name={op_def.name}>; "
                            f"NodeDef: {summarize(node_def)}")


def _repeats(node_def, op_def, arg) -> int:
    """How many tensors the arg stands for; TF's range checks on number attrs."""
    try:
        if arg.type_list_attr:
            return len(_attr(node_def, op_def, arg.type_list_attr).list.type)
        if not arg.number_attr:
            return 1
        n = _attr(node_def, op_def, arg.number_attr).i
    except KeyError as e:
        raise _missing(node_def, op_def, e) from None
    if n > _INT32_MAX:
        raise _error(node_def, f"Number of outputs is too big: {n}")
    if n < 0:
        raise _error(node_def, f"Value for number_attr() {n} < 0")
    return n


def arg_count(node_def, op_def, arg) -> int:
    """How many tensors the input or output `arg` of `op_def` stands for in `node_def`."""
    return _repeats(node_def, op_def, arg)


_SIMPLE_ARGS: dict[tuple, tuple] = {}


def _simple_args(op_def, outputs: bool):
    """For an OpDef without list args: per input (or output) arg its fixed type or 0,
    its type attr and its ref offset, read from the proto once per OpDef (this is on the
    per-node path of every import and extend)."""
    key = (id(op_def), outputs)
    known = _SIMPLE_ARGS.get(key)
    if known is not None and known[0] is op_def:
        return known[1]
    args = op_def.output_arg if outputs else op_def.input_arg
    spec = tuple((arg.type, arg.type_attr, _REF_OFFSET if arg.is_ref else 0) for arg in args)
    _SIMPLE_ARGS[key] = (op_def, spec)
    return spec


def _simple_arg_types(node_def, op_def, outputs: bool) -> list[int]:
    """_arg_types for an OpDef without list args, from its _simple_args."""
    attrs = node_def.attr
    out = []
    try:
        for fixed, type_attr, ref in _simple_args(op_def, outputs):
            if fixed:
                out.append(fixed + ref)
            elif type_attr in attrs:
                out.append(attrs[type_attr].type + ref)
            else:
                out.append(_attr(node_def, op_def, type_attr).type + ref)
    except KeyError as e:
        raise _missing(node_def, op_def, e) from None
    return out


def _arg_types(node_def, op_def, args) -> list[int]:
    out: list[int] = []
    for arg in args:
        n = _repeats(node_def, op_def, arg)
        try:
            if arg.type_list_attr:
                out.extend(_attr(node_def, op_def, arg.type_list_attr).list.type)
                continue
            t = arg.type if arg.type else _attr(node_def, op_def, arg.type_attr).type
        except KeyError as e:
            raise _missing(node_def, op_def, e) from None
        if arg.is_ref:
            t += _REF_OFFSET
        out.extend([t] * n)
    return out


def _type_names(node_def, op_def, args, limit: int):
    """TF's names of the arg types, in order, at most `limit` of them (nothing built per
    repeat beyond that)."""
    out: list[str] = []
    for arg in args:
        if arg.type_list_attr:
            types = list(_attr(node_def, op_def, arg.type_list_attr).list.type)[:limit]
        else:
            t = arg.type if arg.type else _attr(node_def, op_def, arg.type_attr).type
            t += _REF_OFFSET if arg.is_ref else 0
            types = [t] * min(_repeats(node_def, op_def, arg), limit)
        out.extend(tf_type_name(t) for t in types)
        if len(out) >= limit:
            return out[:limit]
    return out


def num_inputs(node_def, op_def) -> int:
    """How many data inputs the OpDef wants given the node's attrs (no list is built)."""
    return sum(_repeats(node_def, op_def, arg) for arg in op_def.input_arg)


def num_outputs(node_def, op_def) -> int:
    """How many outputs the node has given its attrs (no list is built)."""
    return sum(_repeats(node_def, op_def, arg) for arg in op_def.output_arg)


def num_data_inputs(node_def) -> int:
    """The NodeDef's inputs that are not control inputs, which come last (the caller
    has checked the order: check_input_order)."""
    inputs = node_def.input
    n = len(inputs)
    while n and inputs[n - 1].startswith("^"):
        n -= 1
    return n


def _has_lists(op_def) -> bool:
    """Whether any arg of the OpDef stands for a number or a list of tensors (remembered
    per OpDef object: this is on the path of every imported node)."""
    known = _HAS_LISTS.get(id(op_def))
    if known is not None and known[0] is op_def:
        return known[1]
    answer = any(arg.number_attr or arg.type_list_attr
                 for args in (op_def.input_arg, op_def.output_arg) for arg in args)
    _HAS_LISTS[id(op_def)] = (op_def, answer)
    return answer


_HAS_LISTS: dict[int, tuple] = {}


def check_arity(node_def, op_def) -> None:
    """Number attrs (N, num_split, ...) against the inputs the NodeDef lists, before any
    per-input or per-output list is built: TF's "NodeDef expected inputs ... do not
    match", and aioflow's limit on outputs no input accounts for."""
    given = num_data_inputs(node_def)
    if not _has_lists(op_def):
        expected, outputs = len(op_def.input_arg), len(op_def.output_arg)
    else:
        expected, outputs = num_inputs(node_def, op_def), num_outputs(node_def, op_def)
    if expected != given:
        names = _type_names(node_def, op_def, op_def.input_arg, _MAX_LISTED_TYPES)
        listed = ", ".join(names)
        if expected > len(names):
            listed += f", ... ({expected} in all)"
        raise _error(node_def, f"NodeDef expected inputs '{listed}' do not match {given} "
                               f"inputs specified; Op<name={op_def.name}>; NodeDef: "
                               f"{summarize(node_def)}")
    if outputs > max(given, MAX_UNMATCHED_OUTPUTS):
        raise _error(node_def, f"Number of outputs is too big: {outputs} (aioflow allows a "
                               f"node at most {MAX_UNMATCHED_OUTPUTS} outputs more than its "
                               f"inputs)")


def input_types(node_def, op_def) -> list[int]:
    """The DataType enums of the node's data inputs, in order."""
    if not _has_lists(op_def):
        return _simple_arg_types(node_def, op_def, outputs=False)
    return _arg_types(node_def, op_def, op_def.input_arg)


def arg_types(node_def, op_def) -> tuple[list[int], list[int]]:
    """(input_types, output_types) in one pass: each type attr is read once."""
    if _has_lists(op_def):
        return (_arg_types(node_def, op_def, op_def.input_arg),
                _arg_types(node_def, op_def, op_def.output_arg))
    attrs = node_def.attr
    values: dict[str, int] = {}
    both = []
    try:
        for args in (_simple_args(op_def, False), _simple_args(op_def, True)):
            types = []
            for fixed, type_attr, ref in args:
                if fixed:
                    types.append(fixed + ref)
                    continue
                value = values.get(type_attr)
                if value is None:
                    value = values[type_attr] = (
                        attrs[type_attr].type if type_attr in attrs
                        else _attr(node_def, op_def, type_attr).type)
                types.append(value + ref)
            both.append(types)
    except KeyError as e:
        raise _missing(node_def, op_def, e) from None
    return both[0], both[1]


def output_types(node_def, op_def) -> list[int]:
    """The DataType enums of the node's outputs, in order."""
    if not _has_lists(op_def):
        return _simple_arg_types(node_def, op_def, outputs=True)
    return _arg_types(node_def, op_def, op_def.output_arg)


def _check_device(node_def) -> None:
    """The device string parses (TF's DeviceSpec messages: one device type, known keys)."""
    if node_def.device:
        try:
            device_spec.DeviceSpec.from_string(node_def.device)
        except ValueError as e:
            raise _error(node_def, str(e)) from None


def _check_parallel_iterations(node_def) -> None:
    """Enter's parallel_iterations: a positive int32. TF 2.21 has no such check (0 or
    less divides by zero in its executor; more than an int32 fails at run); by choice
    aioflow refuses them when the graph is built."""
    n = node_def.attr["parallel_iterations"].i
    if n > _INT32_MAX:
        raise _error(node_def, f"Attr parallel_iterations has value {n} out of range for an "
                               f"int32\n\t; NodeDef: {summarize(node_def)}")
    if n < 1:
        raise _error(node_def, f"Value for attr 'parallel_iterations' of {n} must be at least "
                               f"minimum 1\n\t; NodeDef: {summarize(node_def)}")


# Attr rules of single ops that their OpDefs cannot say.
_OP_ATTR_RULES = {"Enter": _check_parallel_iterations, "RefEnter": _check_parallel_iterations}


def parse_input(name: str) -> tuple[str, int]:
    """Split a NodeDef input: "x" -> ("x", 0), "x:2" -> ("x", 2), "^x" -> ("x", -1).

    As TF's ParseTensorName only ASCII digits make an output index: "x:١" or "x:²" is a
    node name (which then does not exist). An index of more than 10 significant digits is
    a name too (TF wraps it modulo 2**32, by accident)."""
    if name.startswith("^"):
        return name[1:], -1
    node, sep, index = name.rpartition(":")
    if sep and node and index.isascii() and index.isdigit() and len(index.lstrip("0")) <= 10:
        return node, int(index)
    return name, 0


def types_compatible(expected: int, actual: int) -> bool:
    """An output of a ref type may feed an input of its value type, as in TF."""
    return expected == actual or (actual - _REF_OFFSET == expected)
