"""OpDefs of TF's DynamicPartition, DynamicStitch and ParallelDynamicStitch
(tensorflow/core/ops/data_flow_ops.cc): what embedding lookups over partitioned variables
are built from. Spelled as TF 2.21's (tests/test_misc_ops.py compares them with
tests/data/misc_ops_tf.json, written by TensorFlow)."""

from __future__ import annotations

import numpy as np

from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _prefix_error(op, a: int, b: int, shapes: str) -> ValueError:
    return ValueError(f"Dimensions must be equal, but are {a} and {b} for '{op.name}' "
                      f"({op.type}) with input shapes: {shapes}.")


def _partition(op) -> list[TensorShape]:
    """Each output: [?] + data.shape[partitions.rank:]; partitions a prefix of data."""
    data, parts = op.inputs[0].shape, op.inputs[1].shape
    n = op.get_attr("num_partitions")
    if data.rank is None or parts.rank is None:
        return [TensorShape(None)] * n
    for a, b in zip(data.as_list(), parts.as_list(), strict=False):
        if a is not None and b is not None and a != b:
            raise _prefix_error(op, a, b, f"{data}, {parts}")
    return [TensorShape([None] + data.as_list()[parts.rank:])] * n


def _stitch(op) -> list[TensorShape]:
    """[max index + 1] + the data's shape past each indices' shape."""
    n = op.get_attr("N")
    rest = None
    for indices, data in zip(op.inputs[:n], op.inputs[n:], strict=True):
        if indices.shape.rank is None or data.shape.rank is None:
            continue
        dims, idims = data.shape.as_list(), indices.shape.as_list()
        for a, b in zip(dims, idims, strict=False):
            if a is not None and b is not None and a != b:
                raise _prefix_error(op, a, b, f"{indices.shape}, {data.shape}")
        rest = dims[len(idims):] if rest is None else rest
    # All indices constant: the first dim is the largest index + 1 (TF's shape function).
    values = [constant_value(t) for t in op.inputs[:n]]
    first = None
    if all(v is not None for v in values):
        first = max([int(np.max(v)) for v in values if np.size(v)], default=-1) + 1
    return [TensorShape(None if rest is None else [first] + rest)]


(register_op("DynamicPartition").input("data: T").input("partitions: int32")
    .output("outputs: num_partitions * T").attr("num_partitions: int >= 1").attr("T: type")
    .set_shape_fn(_partition))
for _name in ("DynamicStitch", "ParallelDynamicStitch"):
    (register_op(_name).input("indices: N * int32").input("data: N * T").output("merged: T")
        .attr("N: int >= 1").attr("T: type").set_shape_fn(_stitch))
