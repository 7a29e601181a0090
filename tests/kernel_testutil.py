"""Run one kernel on NumPy inputs, as the executor would, without building a graph.

`run_kernel("AddV2", [x, y])` builds a NodeDef whose type attrs (T, N, ...) are inferred
from the inputs through the op's OpDef, whose other attrs come from keyword arguments
(Python values: DType -> type, bool -> b, int -> i, float -> f, str/bytes -> s, list ->
list, ndarray -> tensor, TensorShape -> shape) or the OpDef's defaults, creates the
kernel with `create_kernel` and returns the list of its outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aioflow.framework import dtypes, op_def_registry, tensor_shape, tensor_util
from aioflow.framework.op_kernel import create_kernel
from aioflow.proto import attr_value_pb2, node_def_pb2
from aioflow.runtime.kernel_library import load_builtin_kernels

load_builtin_kernels()


def attr_value(value: Any) -> attr_value_pb2.AttrValue:
    """An AttrValue for a plain Python value."""
    out = attr_value_pb2.AttrValue()
    if isinstance(value, attr_value_pb2.AttrValue):
        return value
    if isinstance(value, dtypes.DType):
        out.type = value.as_datatype_enum
    elif isinstance(value, (bool, np.bool_)):
        out.b = bool(value)
    elif isinstance(value, (int, np.integer)):
        out.i = int(value)
    elif isinstance(value, (float, np.floating)):
        out.f = float(value)
    elif isinstance(value, str):
        out.s = value.encode()
    elif isinstance(value, bytes):
        out.s = value
    elif isinstance(value, np.ndarray):
        out.tensor.CopyFrom(tensor_util.make_tensor_proto(value))
    elif isinstance(value, tensor_shape.TensorShape):
        out.shape.CopyFrom(value.as_proto())
    elif isinstance(value, (list, tuple)):
        lst = out.list
        lst.SetInParent()
        for v in value:
            if isinstance(v, dtypes.DType):
                lst.type.append(v.as_datatype_enum)
            elif isinstance(v, (bool, np.bool_)):
                lst.b.append(bool(v))
            elif isinstance(v, (int, np.integer)):
                lst.i.append(int(v))
            elif isinstance(v, (float, np.floating)):
                lst.f.append(float(v))
            elif isinstance(v, (str, bytes)):
                lst.s.append(v.encode() if isinstance(v, str) else v)
            elif isinstance(v, tensor_shape.TensorShape):
                lst.shape.append(v.as_proto())
            else:
                raise TypeError(f"Cannot make a list attr item from {v!r}")
    else:
        raise TypeError(f"Cannot make an attr from {value!r}")
    return out


def _dtype_of(value) -> dtypes.DType:
    return dtypes.as_dtype(np.asarray(value).dtype)


def make_node_def(op_type: str, inputs: list, name: str | None = None,
                  **attrs) -> node_def_pb2.NodeDef:
    """A NodeDef for `op_type` fed `inputs`: type and number attrs inferred, defaults filled."""
    op_def = op_def_registry.get(op_type)
    node = node_def_pb2.NodeDef(name=name or op_type, op=op_type)
    inferred: dict[str, Any] = {}
    args = list(op_def.input_arg)
    pos = 0
    for i, arg in enumerate(args):
        rest = len(args) - 1 - i  # the single inputs after this one
        if arg.number_attr:
            n = attrs.get(arg.number_attr, len(inputs) - pos - rest)
            inferred[arg.number_attr] = n
        elif arg.type_list_attr:
            n = len(inputs) - pos - rest
            inferred[arg.type_list_attr] = [_dtype_of(v) for v in inputs[pos:pos + n]]
        else:
            n = 1
        values = inputs[pos:pos + n]
        pos += n
        if arg.type_attr and values:
            inferred.setdefault(arg.type_attr, _dtype_of(values[0]))
    for key, value in {**inferred, **attrs}.items():
        node.attr[key].CopyFrom(attr_value(value))
    for attr in op_def.attr:
        if attr.name not in node.attr and attr.HasField("default_value"):
            node.attr[attr.name].CopyFrom(attr.default_value)
    return node


def create(op_type: str, inputs: list, **attrs):
    """The kernel for `op_type` with these inputs and attrs."""
    return create_kernel(make_node_def(op_type, inputs, **attrs), device_type="CPU")


def run_kernel(op_type: str, inputs: list, **attrs) -> list:
    """The outputs of `op_type`'s CPU kernel on `inputs` (NumPy values), computed as the
    executor runs kernels: with NumPy's floating-point warnings off (TF yields inf/nan
    silently)."""
    kernel = create(op_type, inputs, **attrs)
    with np.errstate(all="ignore"):
        return list(kernel.compute(None, list(inputs)))


def run1(op_type: str, inputs: list, **attrs):
    """The single output of `op_type`'s CPU kernel on `inputs`."""
    outputs = run_kernel(op_type, inputs, **attrs)
    assert len(outputs) == 1, outputs
    return outputs[0]


def stopped_warm_helper(monkeypatch):
    """The process's warm helper (aioflow/kernels/warm_helper.py) replaced by one whose
    thread has ended, so that it takes no job (None where the process has none: no
    numba, one core)."""
    from aioflow.kernels import warm_helper

    if not warm_helper.ENABLED:
        return None
    assert warm_helper.wait_ready(300), warm_helper._compile.last_error
    helper = warm_helper.WarmHelper()
    helper.stop()
    monkeypatch.setattr(warm_helper._Global, "helper", helper)
    return helper


def rand_f32(*shape, seed=0) -> np.ndarray:
    """Standard-normal float32 values of `shape`, seeded by the seed and the shape."""
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def const_array(a) -> np.ndarray:
    """A read-only copy of `a`, as a Const's value."""
    a = np.array(a)
    a.setflags(write=False)
    return a
