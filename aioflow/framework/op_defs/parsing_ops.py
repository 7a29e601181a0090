"""OpDefs of TF's tf.Example parsing ops (tensorflow/core/ops/parsing_ops.cc):
ParseExampleV2 (what tf.io.parse_example builds), and the older ParseExample and
ParseSingleExample that imported graphs carry.

Spelled as TF 2.21's OpDefs (tests/test_parse_example.py compares them field by field
with tests/data/parse_example_tf.json, written by TensorFlow)."""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_TYPES = "{float,int64,string}"


def _outputs(op, batch: TensorShape, num_sparse: int) -> list[TensorShape]:
    """Shapes for `batch` examples (a rank-0 or rank-1 shape): sparse indices, values and
    shapes, then the dense values (the batch shape + each dense shape)."""
    rank = batch.rank
    index_width = None if rank is None else rank + 1
    out = [TensorShape([None, index_width]) for _ in range(num_sparse)]
    out += [TensorShape([None]) for _ in range(num_sparse)]
    out += [TensorShape([index_width]) for _ in range(num_sparse)]
    for shape in op.get_attr("dense_shapes"):
        if rank is None or shape.rank is None:
            out.append(TensorShape(None))
        else:
            out.append(TensorShape(batch.as_list() + shape.as_list()))
    return out


def _serialized(op, most: int) -> TensorShape:
    shape = op.inputs[0].shape
    if shape.rank is not None and shape.rank > most:
        raise ValueError(f"Shape must be at most rank {most} but is rank {shape.rank} for "
                         f"'{op.name}' ({op.type}) with input shapes: "
                         f"{', '.join(str(t.shape) for t in op.inputs)}.")
    return shape


def _parse_example_v2(op) -> list[TensorShape]:
    batch = _serialized(op, 1)
    out = _outputs(op, batch, op.get_attr("num_sparse"))
    ragged = len(op.get_attr("ragged_value_types"))
    out += [TensorShape([None]) for _ in range(ragged)]
    splits = TensorShape([None]) if batch.rank != 0 else TensorShape([2])
    return out + [splits for _ in range(ragged)]


def _parse_example(op) -> list[TensorShape]:
    batch = op.inputs[0].shape
    if batch.rank is not None and batch.rank != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {batch.rank} for "
                         f"'{op.name}' ({op.type})")
    return _outputs(op, batch if batch.rank else TensorShape([None]), op.get_attr("Nsparse"))


def _parse_single_example(op) -> list[TensorShape]:
    _serialized(op, 0)
    return _outputs(op, TensorShape([]), op.get_attr("num_sparse"))


(register_op("ParseExample").input("serialized: string").input("names: string")
    .input("sparse_keys: Nsparse * string").input("dense_keys: Ndense * string")
    .input("dense_defaults: Tdense").output("sparse_indices: Nsparse * int64")
    .output("sparse_values: sparse_types").output("sparse_shapes: Nsparse * int64")
    .output("dense_values: Tdense").attr("Nsparse: int >= 0").attr("Ndense: int >= 0")
    .attr(f"sparse_types: list({_TYPES}) >= 0").attr(f"Tdense: list({_TYPES}) >= 0")
    .attr("dense_shapes: list(shape) >= 0").set_shape_fn(_parse_example))
(register_op("ParseExampleV2").input("serialized: string").input("names: string")
    .input("sparse_keys: string").input("dense_keys: string").input("ragged_keys: string")
    .input("dense_defaults: Tdense").output("sparse_indices: num_sparse * int64")
    .output("sparse_values: sparse_types").output("sparse_shapes: num_sparse * int64")
    .output("dense_values: Tdense").output("ragged_values: ragged_value_types")
    .output("ragged_row_splits: ragged_split_types").attr(f"Tdense: list({_TYPES}) >= 0")
    .attr("num_sparse: int >= 0").attr(f"sparse_types: list({_TYPES}) >= 0")
    .attr(f"ragged_value_types: list({_TYPES}) >= 0")
    .attr("ragged_split_types: list({int32,int64}) >= 0")
    .attr("dense_shapes: list(shape) >= 0").set_shape_fn(_parse_example_v2))
(register_op("ParseSingleExample").input("serialized: string").input("dense_defaults: Tdense")
    .output("sparse_indices: num_sparse * int64").output("sparse_values: sparse_types")
    .output("sparse_shapes: num_sparse * int64").output("dense_values: Tdense")
    .attr("num_sparse: int >= 0").attr("sparse_keys: list(string) >= 0")
    .attr("dense_keys: list(string) >= 0").attr(f"sparse_types: list({_TYPES}) >= 0")
    .attr(f"Tdense: list({_TYPES}) >= 0").attr("dense_shapes: list(shape) >= 0")
    .set_shape_fn(_parse_single_example))
