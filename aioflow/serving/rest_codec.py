"""TF Serving's REST JSON for predict (json_tensor.cc's rules): requests in the row
("instances") or columnar ("inputs") format, bytes as {"b64": ...}; responses as
{"predictions": ...} (row) or {"outputs": ...} (columnar), output tensors whose key ends
in "_bytes" written as {"b64": ...}, NaN and Infinity written as TF Serving writes them.

JSON goes through orjson when it is installed (arrays are written straight from NumPy
buffers; see docs/performance.md for what it saves), else the standard library.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math

import numpy as np

from aioflow.framework import errors

try:
    import orjson
except ImportError:  # the standard library does the same, slower
    orjson = None

_ORJSON_OPTS = (orjson.OPT_SERIALIZE_NUMPY if orjson is not None else 0)


#: TF's DataTypeString where it differs from the dtype's name.
_TF_TYPE_STRING = {"float32": "float", "float64": "double", "float16": "half"}


def type_string(dtype) -> str:
    """A dtype as TF's DataTypeString spells it (float, double, int32, string, ...)."""
    return _TF_TYPE_STRING.get(dtype.name, dtype.name)


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _debug(value) -> str:
    try:
        text = json.dumps(value, allow_nan=True)
    except RecursionError:
        text = "[" * 101
    return text if len(text) <= 100 else text[:97] + "..."


_TOO_DEEP = "JSON Parse error: The document is nested too deeply"


def loads(body: bytes):
    """Parse a request body (NaN and Infinity accepted, as rapidjson's flag does)."""
    if not body.strip():
        raise _invalid("JSON Parse error: The document is empty")
    if orjson is not None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # NaN/Infinity literals, or a real error: the standard parser tells
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise _invalid(f"JSON Parse error: {e}") from None
    except RecursionError:  # (orjson refuses past 1024 levels; json recurses)
        raise _invalid(_TOO_DEEP) from None


def dumps(obj) -> bytes:
    """Serialize a response object (arrays as nested lists)."""
    if orjson is not None:
        try:
            return orjson.dumps(obj, option=_ORJSON_OPTS)
        except TypeError:
            pass  # an array orjson does not write (non-native byte order, ...)
    return json.dumps(obj, default=_json_default, allow_nan=True).encode()


def _json_default(value):
    if isinstance(value, np.ndarray | np.generic):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# -- requests -----------------------------------------------------------------------------

def _is_b64(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "b64" in value


def _decode_b64(value):
    text = value["b64"]
    if not isinstance(text, str):
        raise _invalid(f"JSON Value: {_debug(value)} not formatted correctly for base64 data")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid("Unable to base64 decode") from None


def _strings(value):
    """Nested lists of strings or {"b64": ...} objects -> nested lists of bytes."""
    if isinstance(value, list):
        return [_strings(v) for v in value]
    if isinstance(value, str):
        return value.encode("utf-8")
    if _is_b64(value):
        return _decode_b64(value)
    raise _invalid(f"JSON Value: {_debug(value)} Type: {_json_type(value)} is not of "
                   "expected type: string")


def _json_type(value) -> str:
    return {dict: "Object", list: "Array", str: "String", bool: "Bool",
            type(None): "Null"}.get(type(value), "Number")


def _first_bad_leaf(value, accept):
    """The first leaf of nested lists that `accept` refuses, or None."""
    if isinstance(value, list):
        for v in value:
            bad = _first_bad_leaf(v, accept)
            if bad is not None:
                return bad
        return None
    return None if accept(value) else value


def _is_bool(v) -> bool:
    return isinstance(v, bool)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


#: Below this many values np.asarray is the faster conversion.
_FLATTEN_FROM = 4096


def _nested_to_array(value) -> np.ndarray:
    """Nested lists as an array. Large ones are flattened level by level first
    (chain.from_iterable, in C) with each level's lengths checked: 3 to 5 times faster
    than np.asarray on the nested lists of an image."""
    size, first = 1, value
    while type(first) is list and first:
        size *= len(first)
        first = first[0]
    if size < _FLATTEN_FROM:
        try:
            return np.asarray(value)
        except ValueError:
            raise ValueError("the lists are ragged (not all of one length and depth)") \
                from None
    shape = []
    level = [value]
    while level and type(level[0]) is list:
        n = len(level[0])
        if any(type(x) is not list or len(x) != n for x in level):
            raise ValueError("the lists are ragged (not all of one length and depth)")
        shape.append(n)
        level = list(itertools.chain.from_iterable(level))
    array = np.array(level)
    if array.ndim != 1 or len(level) != math.prod(shape):
        raise ValueError("the lists are ragged (not all of one length and depth)")
    return array.reshape(shape)


def to_array(value, dtype) -> np.ndarray:
    """A JSON value as an array of `dtype` (an aioflow DType), with TF Serving's type
    rules: numbers for numeric tensors (integers for integer ones), true/false for bool,
    strings or {"b64": ...} for string tensors."""
    if dtype.name == "string":
        return np.array(_strings(value), dtype=object)
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    try:
        array = _nested_to_array(value)
    except ValueError as e:
        raise _invalid(f"JSON Value: {_debug(value)} is not a tensor of a shape: {e}") from None
    kind = array.dtype.kind
    if np_dtype.kind == "b":
        ok, accept = kind == "b", _is_bool
    elif np_dtype.kind in "iu":
        ok, accept = kind in "iu", _is_int
    else:
        ok, accept = kind in "iuf", _is_number
    if not ok:
        bad = _first_bad_leaf(value, accept)
        bad = value if bad is None else bad
        raise _invalid(f"JSON Value: {_debug(bad)} Type: {_json_type(bad)} is not of "
                       f"expected type: {type_string(dtype)}")
    if np_dtype.kind in "iu" and array.size and (
            array.min() < np.iinfo(np_dtype).min or array.max() > np.iinfo(np_dtype).max):
        raise _invalid(f"JSON Value: {_debug(value)} is out of range of {type_string(dtype)}")
    return array.astype(np_dtype, copy=False)


def parse_predict(doc, input_specs: dict) -> tuple[dict[str, np.ndarray], str]:
    """A parsed predict request -> ({input key: array}, "row" or "columnar")."""
    try:
        return _parse_predict(doc, input_specs)
    except RecursionError:  # (lists nested deeper than Python recurses)
        raise _invalid(_TOO_DEEP) from None


def _parse_predict(doc, input_specs: dict) -> tuple[dict[str, np.ndarray], str]:
    if not isinstance(doc, dict):
        raise _invalid(f"JSON Value: {_debug(doc)} Is not object")
    has_instances, has_inputs = "instances" in doc, "inputs" in doc
    if has_instances == has_inputs:
        if has_instances:
            raise _invalid(f"JSON Value: {_debug(doc)} Not formatted correctly expecting "
                           "only one of 'inputs' or 'instances' keys to exist ")
        raise _invalid("Missing 'inputs' or 'instances' key")
    if has_instances:
        return _parse_rows(doc["instances"], input_specs, doc), "row"
    return _parse_columns(doc["inputs"], input_specs), "columnar"


def _parse_rows(instances, specs: dict, doc) -> dict[str, np.ndarray]:
    if not isinstance(instances, list):
        raise _invalid(f"JSON Value: {_debug(doc)} Expecting 'instances' to be an list/array")
    if not instances:
        raise _invalid(f"JSON Value: {_debug(doc)} No values in 'instances' array")
    names = sorted(specs)
    named = isinstance(instances[0], dict) and not _is_b64(instances[0])
    if not named:
        if len(specs) != 1:
            raise _invalid("Expecting object but got list at item 0 of input list")
        name = names[0]
        for i, item in enumerate(instances):
            if isinstance(item, dict) and not _is_b64(item):
                raise _invalid(f"Expecting value/list but got object at item {i} of input "
                               "list")
        return {name: _element_array(instances, specs[name], None)}
    columns: dict[str, list] = {name: [] for name in names}
    for i, item in enumerate(instances):
        if not isinstance(item, dict) or _is_b64(item):
            raise _invalid(f"Expecting object but got list at item {i} of input list")
        if sorted(item) != names:
            raise _invalid(f"Failed to process element: {i} of 'instances' list. JSON object: "
                           f"{_debug(item)} keys must be equal to: {','.join(names)}")
        for name in names:
            columns[name].append(item[name])
    return {name: _element_array(columns[name], specs[name], name) for name in names}


def _element_array(values: list, spec, name) -> np.ndarray:
    try:
        return to_array(values, spec.dtype)
    except errors.InvalidArgumentError as e:
        where = f" key: {name}" if name is not None else ""
        raise _invalid(f"Failed to process element: 0{where} of 'instances' list. Error: "
                       f"{e.message}") from None


def _parse_columns(inputs, specs: dict) -> dict[str, np.ndarray]:
    if isinstance(inputs, dict) and not _is_b64(inputs):
        for name in specs:
            if name not in inputs:
                raise _invalid(f"Missing named input: {name} in 'inputs' object.")
        # extra keys are reported by the signature check (TF's input-size message)
        return {name: to_array(value, specs[name].dtype) if name in specs
                else np.asarray(value) for name, value in inputs.items()}
    if len(specs) != 1:
        raise _invalid("inputs is a plain value/list, but expecting an object as multiple "
                       "input tensors required as per tensorinfo_map")
    name = next(iter(specs))
    return {name: to_array(inputs, specs[name].dtype)}


# -- responses ----------------------------------------------------------------------------

def _json_value(key: str, array: np.ndarray):
    """An output array in a form `dumps` writes as TF Serving does."""
    kind = array.dtype.kind
    if kind == "O" or kind == "S":
        if key.endswith("_bytes"):
            return _map_bytes(array.tolist(), lambda b: {"b64": base64.b64encode(b).decode()})
        return _map_bytes(array.tolist(), lambda b: b.decode("utf-8", "replace"))
    if kind == "c":
        raise errors.InvalidArgumentError(
            None, None, f"Tensor {key} of type {array.dtype} can not be converted to JSON")
    if kind == "f":
        if array.dtype.itemsize < 4 or array.dtype not in (np.float32, np.float64):
            array = array.astype(np.float32)  # float16, bfloat16
        if not np.isfinite(array).all():
            return _NonFinite(array)
    return array


class _NonFinite:
    """An array holding NaN or Infinity: written by the standard library, which spells
    them NaN and Infinity as TF Serving does (orjson would write null)."""

    def __init__(self, array):
        self.array = array


def _map_bytes(value, fn):
    if isinstance(value, list):
        return [_map_bytes(v, fn) for v in value]
    return fn(value if isinstance(value, bytes) else bytes(value))


def format_predict(outputs: dict[str, np.ndarray], fmt: str) -> bytes:
    """The response body for `outputs` in the request's format."""
    if len(outputs) == 1:  # one output (the usual case): no batch sizes to compare
        ((key, value),) = outputs.items()
        value = _json_value(key, np.asarray(value))
        body = {"predictions" if fmt != "columnar" else "outputs": value}
        if isinstance(value, _NonFinite):
            return json.dumps(body, default=_plain, allow_nan=True).encode()
        return dumps(body)
    values = {k: _json_value(k, np.asarray(v)) for k, v in outputs.items()}
    if fmt == "columnar":
        body = {"outputs": next(iter(values.values())) if len(values) == 1 else values}
    else:
        sizes = {k: (np.shape(v.array if isinstance(v, _NonFinite) else v) or (None,))[0]
                 for k, v in values.items()}
        if len(set(sizes.values())) > 1:
            first = next(iter(sizes))
            other = next(k for k in sizes if sizes[k] != sizes[first])
            raise _invalid(f"Batch size for output tensor {other} is {sizes[other]} and does "
                           f"not match batch size for output tensor {first} "
                           f"({sizes[first]})")
        if len(values) == 1:
            body = {"predictions": next(iter(values.values()))}
        else:
            n = next(iter(sizes.values()))
            body = {"predictions": [{k: _row(v, i) for k, v in values.items()}
                                    for i in range(n or 0)]}
    if any(isinstance(v, _NonFinite) for v in values.values()):
        return json.dumps(body, default=_plain, allow_nan=True).encode()
    return dumps(body)


def _row(value, i):
    if isinstance(value, _NonFinite):
        return _NonFinite(value.array[i])
    return value[i]


def _plain(value):
    if isinstance(value, _NonFinite):
        return value.array.tolist()
    return _json_default(value)
