"""Conversion between Python values and AttrValue protos, by the attr's OpDef type."""

from __future__ import annotations

from typing import Any

from aioflow.framework import dtypes, tensor_shape
from aioflow.framework.value_repr import summarize
from aioflow.proto import attr_value_pb2

AttrValue = attr_value_pb2.AttrValue


def attr_value_to_python(value: AttrValue) -> Any:
    """The Python value of an AttrValue: bytes, int, float, bool, DType, TensorShape,
    ndarray, NameAttrList, or a list of these (as TF's Operation.get_attr returns)."""
    kind = value.WhichOneof("value")
    if kind == "list":
        lst = value.list
        for field in ("s", "i", "f", "b"):
            items = getattr(lst, field)
            if items:
                return list(items)
        if lst.type:
            return [dtypes.as_dtype(t) for t in lst.type]
        if lst.shape:
            return [tensor_shape.TensorShape(s) for s in lst.shape]
        if lst.tensor:
            from aioflow.framework import tensor_util

            return [tensor_util.make_ndarray(t) for t in lst.tensor]
        if lst.func:
            return list(lst.func)
        return []
    if kind == "s":
        return value.s
    if kind == "i":
        return value.i
    if kind == "f":
        return value.f
    if kind == "b":
        return value.b
    if kind == "type":
        return dtypes.as_dtype(value.type)
    if kind == "shape":
        return tensor_shape.TensorShape(value.shape)
    if kind == "tensor":
        from aioflow.framework import tensor_util

        return tensor_util.make_ndarray(value.tensor)
    if kind == "func":
        return value.func
    if kind == "placeholder":
        return value.placeholder
    return None


def _shape_proto(value):
    return tensor_shape.as_shape(value).as_proto()


def _tensor_proto(value):
    from aioflow.framework import tensor_util
    from aioflow.proto import tensor_pb2

    if isinstance(value, tensor_pb2.TensorProto):
        return value
    return tensor_util.make_tensor_proto(value)


def _to_bytes(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def python_to_attr_value(value: Any, attr_type: str) -> AttrValue:
    """An AttrValue holding `value` as the OpDef attr type `attr_type` says
    ("int", "float", "bool", "string", "type", "shape", "tensor", "func", "list(...)").
    Raises TypeError/ValueError when the value does not fit."""
    if isinstance(value, AttrValue):
        return value
    out = AttrValue()
    if attr_type.startswith("list("):
        inner = attr_type[5:-1]
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"Expected list for attr of type '{attr_type}', got "
                            f"{summarize(value)}")
        lst = out.list
        if inner == "int":
            lst.i.extend(_check_int(v) for v in value)
        elif inner == "float":
            lst.f.extend(float(v) for v in value)
        elif inner == "bool":
            lst.b.extend(_check_bool(v) for v in value)
        elif inner == "string":
            lst.s.extend(_to_bytes(v) for v in value)
        elif inner == "type":
            lst.type.extend(dtypes.as_dtype(v).as_datatype_enum for v in value)
        elif inner == "shape":
            lst.shape.extend(_shape_proto(v) for v in value)
        elif inner == "tensor":
            lst.tensor.extend(_tensor_proto(v) for v in value)
        elif inner == "func":
            lst.func.extend(_func(v) for v in value)
        else:
            raise TypeError(f"Unknown attr type '{attr_type}'")
        # An empty list still has to say it is a list.
        if not value:
            out.list.SetInParent()
        return out
    if attr_type == "int":
        out.i = _check_int(value)
    elif attr_type == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(
            value, "__float__"
        ):
            raise TypeError(f"Expected float for attr, got {summarize(value)}")
        out.f = float(value)
    elif attr_type == "bool":
        out.b = _check_bool(value)
    elif attr_type == "string":
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"Expected string for attr, got {summarize(value)} of type "
                            f"{type(value).__name__}")
        out.s = _to_bytes(value)
    elif attr_type == "type":
        out.type = dtypes.as_dtype(value).as_datatype_enum
    elif attr_type == "shape":
        out.shape.CopyFrom(_shape_proto(value))
    elif attr_type == "tensor":
        out.tensor.CopyFrom(_tensor_proto(value))
    elif attr_type == "func":
        out.func.CopyFrom(_func(value))
    else:
        raise TypeError(f"Unknown attr type '{attr_type}'")
    return out


def _check_int(value) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"Expected int for attr, got {summarize(value)} of type "
                        f"{type(value).__name__}")
    return int(value)


def _check_bool(value) -> bool:
    if not isinstance(value, (bool,)) and type(value).__name__ != "bool_":
        raise TypeError(f"Expected bool for attr, got {summarize(value)} of type "
                        f"{type(value).__name__}")
    return bool(value)


def _func(value):
    if isinstance(value, attr_value_pb2.NameAttrList):
        return value
    if isinstance(value, str):
        return attr_value_pb2.NameAttrList(name=value)
    raise TypeError(f"Expected a function name for attr, got {summarize(value)}")


def attr_value_kind(value: AttrValue) -> str:
    """The OpDef type name that an AttrValue holds ("int", "list(type)", ...)."""
    names = {"s": "string", "i": "int", "f": "float", "b": "bool", "type": "type",
             "shape": "shape", "tensor": "tensor", "func": "func", "placeholder": "placeholder"}
    kind = value.WhichOneof("value")
    if kind == "list":
        lst = value.list
        for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
            if len(getattr(lst, field)):
                return f"list({names[field]})"
        return "list"
    return names.get(kind, "none")
