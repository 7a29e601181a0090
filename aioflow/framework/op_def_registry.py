"""The op registry: each op's OpDef (inputs, outputs, attrs) and its shape function.

Ops are declared with TensorFlow's REGISTER_OP spec syntax, e.g.::

    register_op("AddV2").input("x: T").input("y: T").output("z: T") \
        .attr("T: {half, float, double, int32, int64}").set_is_commutative() \
        .set_shape_fn(common_shapes.broadcast_binary)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from aioflow.framework import dtypes, errors
from aioflow.framework.attr_value import python_to_attr_value
from aioflow.proto import op_def_pb2, types_pb2

OpDef = op_def_pb2.OpDef

_TYPE_NAMES = {
    "half": dtypes.float16, "bfloat16": dtypes.bfloat16, "float": dtypes.float32,
    "double": dtypes.float64, "int8": dtypes.int8, "int16": dtypes.int16,
    "int32": dtypes.int32, "int64": dtypes.int64, "uint8": dtypes.uint8,
    "uint16": dtypes.uint16, "uint32": dtypes.uint32, "uint64": dtypes.uint64,
    "bool": dtypes.bool, "string": dtypes.string, "complex64": dtypes.complex64,
    "complex128": dtypes.complex128, "resource": dtypes.resource, "variant": dtypes.variant,
    "qint8": dtypes.qint8, "quint8": dtypes.quint8, "qint16": dtypes.qint16,
    "quint16": dtypes.quint16, "qint32": dtypes.qint32,
}

_REAL = ["float", "double", "int32", "uint8", "int16", "int8", "int64", "bfloat16", "uint16",
         "half", "uint32", "uint64"]
_QUANTIZED = ["qint8", "quint8", "qint32", "qint16", "quint16"]
_TYPE_GROUPS = {
    "numbertype": ["float", "double", "int32", "uint8", "int16", "int8", "complex64", "int64",
                   "qint8", "quint8", "qint32", "bfloat16", "qint16", "quint16", "uint16",
                   "complex128", "half", "uint32", "uint64"],
    "realnumbertype": _REAL,
    "quantizedtype": _QUANTIZED,
    "floatingtype": ["half", "bfloat16", "float", "double"],
    "numerictype": _REAL + ["complex64", "complex128"],
}

ShapeFn = Callable[..., list]


@dataclass
class OpRegistration:
    """What the registry knows of one op: its OpDef and its shape function."""

    op_def: OpDef
    shape_fn: ShapeFn | None = None
    attr_types: dict[str, str] = field(default_factory=dict)
    finished: bool = False


_registry: dict[str, OpRegistration] = {}
_loaded = False
_load_lock = threading.RLock()


class OpDefBuilder:
    """Fluent declaration of an op, in TF's REGISTER_OP syntax; registers as it goes."""

    def __init__(self, name: str):
        if name in _registry:
            raise ValueError(f"Op '{name}' is already registered")
        self._reg = OpRegistration(OpDef(name=name))
        _registry[name] = self._reg

    def input(self, spec: str) -> OpDefBuilder:
        _parse_arg(spec, self._reg.op_def.input_arg.add())
        return self

    def output(self, spec: str) -> OpDefBuilder:
        _parse_arg(spec, self._reg.op_def.output_arg.add())
        return self

    def attr(self, spec: str) -> OpDefBuilder:
        attr = self._reg.op_def.attr.add()
        _parse_attr(spec, attr)
        self._reg.attr_types[attr.name] = attr.type
        return self

    def set_is_stateful(self) -> OpDefBuilder:
        self._reg.op_def.is_stateful = True
        return self

    def set_is_distributed_communication(self) -> OpDefBuilder:
        self._reg.op_def.is_distributed_communication = True
        return self

    def set_is_commutative(self) -> OpDefBuilder:
        self._reg.op_def.is_commutative = True
        return self

    def set_is_aggregate(self) -> OpDefBuilder:
        self._reg.op_def.is_aggregate = True
        return self

    def set_allows_uninitialized_input(self) -> OpDefBuilder:
        self._reg.op_def.allows_uninitialized_input = True
        return self

    def set_type_constructor(self, full_type) -> OpDefBuilder:
        """TF's SetTypeConstructor: `full_type` (a FullTypeDef) becomes the
        experimental_full_type of each output declared so far."""
        for arg in self._reg.op_def.output_arg:
            arg.experimental_full_type.CopyFrom(full_type)
        return self

    def deprecated(self, version: int, explanation: str) -> OpDefBuilder:
        """TF's Deprecated(version, explanation): the op's OpDef.deprecation."""
        self._reg.op_def.deprecation.version = version
        self._reg.op_def.deprecation.explanation = explanation
        return self

    def set_shape_fn(self, fn: ShapeFn) -> OpDefBuilder:
        self._reg.shape_fn = fn
        return self

    def doc(self, summary: str) -> OpDefBuilder:
        self._reg.op_def.summary = summary
        return self


register_op = OpDefBuilder

_ARG_RE = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*$")


def _parse_arg(spec: str, arg) -> None:
    m = _ARG_RE.match(spec)
    if not m:
        raise ValueError(f"Bad arg spec {spec!r}")
    arg.name, type_spec = m.group(1), m.group(2)
    ref = re.fullmatch(r"Ref\((.+)\)", type_spec)
    if ref:
        arg.is_ref = True
        type_spec = ref.group(1).strip()
    number = re.fullmatch(r"(\w+)\s*\*\s*(\w+)", type_spec)
    if number:
        arg.number_attr = number.group(1)
        type_spec = number.group(2)
    if type_spec in _TYPE_NAMES:
        arg.type = _TYPE_NAMES[type_spec].as_datatype_enum
    elif type_spec.isidentifier():
        # An attr name: of type "type", or "list(type)" (settled by _finish once the
        # attrs are declared).
        arg.type_attr = type_spec
    else:
        raise ValueError(f"Bad type in arg spec {spec!r}")


# The default follows an "=" that is not part of ">=" (a minimum).
_ATTR_RE = re.compile(r"^\s*(\w+)\s*:\s*(.+?)\s*(?:(?<![<>])=\s*(.+?))?\s*$")


def _parse_attr(spec: str, attr) -> None:
    m = _ATTR_RE.match(spec)
    if not m:
        raise ValueError(f"Bad attr spec {spec!r}")
    attr.name, type_spec, default = m.group(1), m.group(2).strip(), m.group(3)
    minimum = re.fullmatch(r"(.+?)\s*>=\s*(-?\d+)", type_spec)
    if minimum:
        type_spec = minimum.group(1).strip()
        attr.has_minimum = True
        attr.minimum = int(minimum.group(2))
    is_list = type_spec.startswith("list(")
    inner = type_spec[5:-1].strip() if is_list else type_spec
    if inner.startswith("{"):
        values = [v.strip() for v in inner[1:-1].split(",") if v.strip()]
        if values and values[0][0] in "'\"":
            attr.type = "list(string)" if is_list else "string"
            attr.allowed_values.list.s.extend(v.strip("'\"").encode() for v in values)
        else:
            attr.type = "list(type)" if is_list else "type"
            attr.allowed_values.list.type.extend(_expand_types(values))
    elif inner in _TYPE_GROUPS:
        attr.type = "list(type)" if is_list else "type"
        attr.allowed_values.list.type.extend(_expand_types([inner]))
    else:
        attr.type = type_spec if not is_list else f"list({inner})"
    if default is not None:
        attr.default_value.CopyFrom(_parse_default(default, attr.type))


def _expand_types(names: list[str]) -> list[int]:
    out: list[int] = []
    for name in names:
        for t in _TYPE_GROUPS.get(name, [name]):
            if t not in _TYPE_NAMES:
                raise ValueError(f"Unknown type {t!r} in attr spec")
            enum = _TYPE_NAMES[t].as_datatype_enum
            if enum not in out:
                out.append(enum)
    return out


def _parse_default(text: str, attr_type: str):
    text = text.strip()
    base = attr_type[5:-1] if attr_type.startswith("list(") else attr_type
    if attr_type.startswith("list("):
        items = [t.strip() for t in text.strip("[]").split(",") if t.strip()]
        return python_to_attr_value([_parse_scalar(t, base) for t in items], attr_type)
    return python_to_attr_value(_parse_scalar(text, base), attr_type)


def _parse_scalar(text: str, kind: str):
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text == "true"
    if kind == "string":  # C escapes read as TF's text-format parse reads them
        text = text.strip("'\"")
        return text.encode().decode("unicode_escape") if "\\" in text else text
    if kind == "type":
        name = text[3:].lower() if text.startswith("DT_") else text
        return _TYPE_NAMES[name]
    if kind == "shape":
        if "unknown_rank" in text:
            return None
        return [int(d) for d in re.findall(r"-?\d+", text)]
    raise ValueError(f"Cannot parse default {text!r} for attr of type {kind}")


def _finish(reg: OpRegistration) -> None:
    """An arg naming an attr of type list(type) uses type_list_attr, not type_attr."""
    reg.finished = True
    for arg in list(reg.op_def.input_arg) + list(reg.op_def.output_arg):
        if arg.type_attr and reg.attr_types.get(arg.type_attr, "type").startswith("list("):
            arg.type_list_attr = arg.type_attr
            arg.type_attr = ""


def _ensure_loaded() -> None:
    """Register the built-in ops once. Another thread asking while the import runs waits
    for it (marking the registry loaded before the import finished let a racing thread
    see an empty registry)."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            import aioflow.framework.op_defs  # noqa: F401  (registers the built-in ops)
            _loaded = True


def get_registration(op_type: str) -> OpRegistration | None:
    _ensure_loaded()
    reg = _registry.get(op_type)
    if reg is not None and not reg.finished:
        _finish(reg)
    return reg


def get(op_type: str) -> OpDef:
    """The OpDef of `op_type`; NotFoundError if it is not registered."""
    reg = get_registration(op_type)
    if reg is None:
        raise errors.NotFoundError(
            None, None, f"Op type not registered '{op_type}' in binary running aioflow."
        )
    return reg.op_def


def registered_ops() -> dict[str, OpDef]:
    _ensure_loaded()
    return {name: get_registration(name).op_def for name in list(_registry)}


def dtype_enum(name: str) -> int:
    return getattr(types_pb2, name)
