"""apply_op: add an op to the default graph from keyword arguments, as TF's generated
wrappers do — inputs converted to tensors, type attrs inferred, attrs checked against
the OpDef, defaults filled in."""

from __future__ import annotations

import contextlib
from typing import Any

from aioflow.framework import dtypes, node_def_util, ops
from aioflow.framework.attr_value import python_to_attr_value
from aioflow.framework.op_def_registry import get, get_registration
from aioflow.framework.value_repr import summarize


def _allowed(attr_def) -> list[int]:
    return list(attr_def.allowed_values.list.type) if attr_def.HasField("allowed_values") else []


def _names(enums) -> str:
    return ", ".join(dtypes.as_dtype(e).name for e in enums)


def apply_op(op_type: str, name: str | None = None, **keywords: Any):
    """Create an `op_type` op on the default graph (or the graph of its inputs).

    Keywords name the OpDef's input args and attrs. Returns the Operation's single
    output, its list of outputs, or the Operation itself when it has none — as TF's
    generated wrappers return.
    """
    op = apply_op_raw(op_type, name, **keywords)
    op_def = op.op_def
    if not op.outputs:
        return op
    if len(op_def.output_arg) == 1 and not (op_def.output_arg[0].number_attr
                                            or op_def.output_arg[0].type_list_attr):
        return op.outputs[0]
    return op.outputs


def apply_op_raw(op_type: str, name: str | None = None, **keywords: Any) -> ops.Operation:
    """Like apply_op, but always returns the Operation."""
    op_def = get(op_type)
    reg = get_registration(op_type)
    attr_defs = {a.name: a for a in op_def.attr}
    attrs: dict[str, Any] = {}
    graph = _graph_for(keywords, op_def)
    with graph.as_default(), graph.name_scope(name or op_type) as scope:
        inputs: list[ops.Tensor] = []
        input_types: list[dtypes.DType] = []
        inferred_from: dict[str, str] = {}
        for arg in op_def.input_arg:
            if arg.name not in keywords:
                raise TypeError(f"{op_type} missing required input '{arg.name}'")
            value = keywords.pop(arg.name)
            tensors = _convert_arg(op_type, arg, value, attrs, keywords, attr_defs,
                                   inferred_from)
            inputs.extend(tensors)
            if arg.is_ref:  # as TF's: a ref arg takes l-values, kept as ref types
                if not all(t.dtype.is_ref_dtype for t in tensors):
                    raise TypeError(f"'{op_type}' Op requires that input '{arg.name}' be a "
                                    f"mutable tensor (e.g.: a tf.Variable)")
                input_types.extend(t.dtype for t in tensors)
            else:  # a ref given to a value input is read: its base type
                input_types.extend(t.dtype.base_dtype for t in tensors)
        attr_protos = {}
        for attr_def in op_def.attr:
            key = attr_def.name
            if key in keywords:
                value = keywords.pop(key)
                if key in attrs and attr_def.type == "type" and value is not None:
                    if dtypes.as_dtype(value) != attrs[key]:
                        raise TypeError(f"Input of {op_type} has type {attrs[key].name} that "
                                        f"does not match attr {key}={dtypes.as_dtype(value).name}")
                if value is None and attr_def.HasField("default_value"):
                    attr_protos[key] = attr_def.default_value
                    continue
                attrs.setdefault(key, value)
            if key in attrs:
                try:
                    attr_protos[key] = python_to_attr_value(attrs[key], attr_def.type)
                except (TypeError, ValueError) as e:
                    raise type(e)(f"Attr '{key}' of '{op_type}' Op: {e}") from e
                _check_attr(op_type, attr_def, attr_protos[key])
            elif attr_def.HasField("default_value"):
                attr_protos[key] = attr_def.default_value
            else:
                raise TypeError(f"No argument for attr {key} of op {op_type}")
        if keywords:
            raise TypeError(f"{op_type} got unexpected keyword arguments: "
                            f"{', '.join(sorted(keywords))}")
        output_types = _output_types(op_def, attr_protos, len(inputs))
        with contextlib.ExitStack() as colocation:  # as TF's: with the refs it takes
            for ref in _ref_inputs(op_def, inputs):
                colocation.enter_context(graph.colocate_with(ref.op))
            return graph.create_op(op_type, inputs, output_types, input_types=input_types,
                                   name=scope, attrs=attr_protos, op_def=op_def,
                                   compute_shapes=reg.shape_fn is not None, checked=True)


def _ref_inputs(op_def, inputs: list) -> list:
    """The inputs given to ref args (an op is colocated with the variables it updates)."""
    if not any(arg.is_ref for arg in op_def.input_arg):
        return []
    return [t for t in inputs if t.dtype.is_ref_dtype]


def _graph_for(keywords: dict, op_def) -> ops.Graph:
    """The graph of the first input tensor; the default graph when it is a function
    being traced that captures that tensor (tf.data's functions)."""
    default = ops.get_default_graph()
    if default.building_function:
        return default
    captures_from = getattr(default, "captures_from", None)
    for arg in op_def.input_arg:
        value = keywords.get(arg.name)
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, ops.Tensor):
                if captures_from is not None and v.graph is not default and \
                        captures_from(v.graph):
                    return default
                return v.graph
    return default


def _convert_arg(op_type, arg, value, attrs, keywords, attr_defs,
                 inferred_from=None) -> list[ops.Tensor]:
    """Convert one input arg's value(s), inferring its type / number attrs.

    As TF's op_def_library: Python values become Consts named after the arg (a list's
    elements `<arg>_<i>`) inside the op's name scope; a type attr set by an earlier input
    fixes the dtype later inputs convert to."""
    inferred_from = {} if inferred_from is None else inferred_from
    is_list = bool(arg.number_attr or arg.type_list_attr)
    if is_list:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"Expected list for '{arg.name}' argument to '{op_type}' Op, "
                            f"not {summarize(value)}.")
        values = list(value)
    else:
        values = [value]
    if arg.type_list_attr:
        wanted = keywords.get(arg.type_list_attr)
        tensors = [ops.convert_to_tensor(v, dtype=None if wanted is None else wanted[i],
                                         name=f"{arg.name}_{i}")
                   for i, v in enumerate(values)]
        attrs[arg.type_list_attr] = [t.dtype.base_dtype for t in tensors]
        inferred_from.setdefault(arg.type_list_attr, arg.name)
        return tensors
    if arg.number_attr:
        attrs[arg.number_attr] = len(values)
        inferred_from.setdefault(arg.number_attr, arg.name)
    if arg.type:
        dtype = dtypes.as_dtype(arg.type)
    else:
        dtype = attrs.get(arg.type_attr)
        if dtype is None and keywords.get(arg.type_attr) is not None:
            dtype = dtypes.as_dtype(keywords[arg.type_attr])
            inferred_from.setdefault(arg.type_attr, "Attr")
    default = None
    allowed: list[int] = []
    if dtype is None and arg.type_attr in attr_defs:
        attr_def = attr_defs[arg.type_attr]
        if attr_def.HasField("default_value"):
            default = dtypes.as_dtype(attr_def.default_value.type)
            allowed = _allowed(attr_def)
    if is_list and dtype is None:
        # A list's dtype comes from its first Tensor (as TF does).
        dtype = next((v.dtype.base_dtype for v in values if isinstance(v, ops.Tensor)),
                     None)
    tensors = []
    for i, v in enumerate(values):
        name = f"{arg.name}_{i}" if is_list else arg.name
        try:
            if dtype is None and allowed and not is_list:
                # TF first tries the natural dtype, then the attr's default.
                try:
                    t = ops.convert_to_tensor(v, name=name)
                except TypeError:
                    t = None
                if t is None or t.dtype.as_datatype_enum not in allowed:
                    t = ops.convert_to_tensor(v, name=name, preferred_dtype=default)
            else:
                t = ops.convert_to_tensor(v, dtype=dtype, name=name, preferred_dtype=default)
        except (TypeError, ValueError) as e:
            if dtype is None:
                raise
            if isinstance(e, TypeError) and not is_list and not isinstance(v, ops.Tensor):
                raise TypeError(f"Expected {dtype.name} passed to parameter '{arg.name}' of op "
                                f"'{op_type}', got {summarize(v)} of type '{type(v).__name__}' "
                                f"instead. Error: {e}") from e
            if is_list:
                observed = ", ".join(_observed_type(x) for x in values)
                prefix = (f"Tensors in list passed to '{arg.name}' of '{op_type}' Op have "
                          f"types [{observed}]")
                if arg.type:
                    raise TypeError(f"{prefix} that do not match expected type "
                                    f"{dtype.name}.") from e
                if arg.type_attr in attrs:
                    raise TypeError(f"{prefix} that do not match type {dtype.name} inferred "
                                    "from earlier arguments.") from e
                raise TypeError(f"{prefix} that don't all match.") from e
            observed = _observed_type(v)
            if arg.type:
                raise TypeError(f"Input '{arg.name}' of '{op_type}' Op has type {observed} "
                                f"that does not match expected type of {dtype.name}.") from e
            raise TypeError(f"Input '{arg.name}' of '{op_type}' Op has type {observed} that "
                            f"does not match type {dtype.name} of argument "
                            f"'{inferred_from.get(arg.type_attr, arg.name)}'.") from e
        if dtype is None:
            dtype = t.dtype.base_dtype
        elif t.dtype.base_dtype != dtype:
            if is_list:
                raise TypeError(f"All tensors passed to '{arg.name}' of '{op_type}' Op must "
                                "have the same type.")
            raise TypeError(f"Input '{arg.name}' of '{op_type}' Op has type {t.dtype.name} "
                            f"that does not match type {dtype.name} of argument "
                            f"'{inferred_from.get(arg.type_attr, arg.name)}'.")
        tensors.append(t)
    if arg.type_attr and dtype is not None:
        attr_def = attr_defs.get(arg.type_attr)
        allowed = _allowed(attr_def) if attr_def is not None else []
        if allowed and dtype.as_datatype_enum not in allowed:
            raise TypeError(f"Value passed to parameter '{arg.name}' has DataType {dtype.name} "
                            f"not in list of allowed values: {_names(allowed)}")
        attrs[arg.type_attr] = dtype
        inferred_from.setdefault(arg.type_attr, arg.name)
    return tensors


def _observed_type(value) -> str:
    """The dtype name `value` converts to by itself (as TF's error messages report it)."""
    if isinstance(value, ops.Tensor):
        return value.dtype.name
    try:
        with ops.Graph().as_default():
            return ops.convert_to_tensor(value).dtype.name
    except (TypeError, ValueError):
        return "<NOT CONVERTIBLE TO TENSOR>"


def _check_attr(op_type: str, attr_def, proto) -> None:
    if attr_def.type == "type":
        allowed = _allowed(attr_def)
        if allowed and proto.type not in allowed:
            raise TypeError(f"Value passed to parameter '{attr_def.name}' has DataType "
                            f"{dtypes.as_dtype(proto.type).name} not in list of allowed values: "
                            f"{_names(allowed)}")
    elif attr_def.type == "string" and attr_def.HasField("allowed_values"):
        if proto.s not in attr_def.allowed_values.list.s:
            allowed_s = ", ".join(repr(s.decode()) for s in attr_def.allowed_values.list.s)
            raise ValueError(f"Attr '{attr_def.name}' of '{op_type}' Op passed string "
                             f"'{proto.s.decode()}' not in: {allowed_s}.")
    if attr_def.has_minimum:
        n = len(proto.list.ListFields()[0][1]) if proto.WhichOneof("value") == "list" and \
            proto.list.ListFields() else (proto.i if attr_def.type == "int" else 0)
        if n < attr_def.minimum:
            raise ValueError(f"Attr '{attr_def.name}' of '{op_type}' Op passed {n} less than "
                             f"minimum {attr_def.minimum}.")


def _output_types(op_def, attr_protos, num_inputs: int) -> list[dtypes.DType]:
    """The output dtypes; ValueError, as TF's, for a count that does not fit an int32 or
    that passes node_def_util's limit on outputs no input accounts for (checked before
    any list is built)."""
    counts = [len(attr_protos[arg.type_list_attr].list.type) if arg.type_list_attr else
              attr_protos[arg.number_attr].i if arg.number_attr else 1
              for arg in op_def.output_arg]
    for count in counts:
        if count > 2**31 - 1:
            raise ValueError(f"Number of outputs is too big: {count}")
    if sum(counts) > max(num_inputs, node_def_util.MAX_UNMATCHED_OUTPUTS):
        raise ValueError(f"Number of outputs is too big: {sum(counts)} (aioflow allows a node "
                         f"at most {node_def_util.MAX_UNMATCHED_OUTPUTS} outputs more than its "
                         f"inputs)")
    out: list[dtypes.DType] = []
    for arg, count in zip(op_def.output_arg, counts, strict=True):
        if arg.type_list_attr:
            out.extend(dtypes.as_dtype(t) for t in attr_protos[arg.type_list_attr].list.type)
            continue
        dtype = dtypes.as_dtype(arg.type if arg.type else attr_protos[arg.type_attr].type)
        if arg.is_ref:
            dtype = dtype._as_ref
        out.extend([dtype] * count)
    return out
