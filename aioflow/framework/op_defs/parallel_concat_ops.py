"""OpDefs of TF's ParallelConcat (array_ops.cc) and of the two internal ops that
ParallelConcatRemovePass rewrites it into (inplace_ops.cc): `_ParallelConcatStart`
(an uninitialized buffer, stateful so it is never folded or shared) and
`_ParallelConcatUpdate` (writes one input into row `loc` of that buffer)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _shapes_str(op) -> str:
    return ", ".join("?" if t.shape.rank is None else
                     "[" + ",".join("?" if d is None else str(d) for d in t.shape.as_list()) + "]"
                     for t in op.inputs)


def _fail(op, message: str):
    return ValueError(f"{message} for '{{{{node {op.name}}}}}' ({op.type}) with input shapes: "
                      f"{_shapes_str(op)}.")


def parallel_concat_shape(op) -> list[TensorShape]:
    """TF's: the `shape` attr, fully defined; every input fully defined, of rank >= 1,
    one row, and the attr's shape beyond the first dim."""
    shape = op.get_attr("shape")
    if not shape.is_fully_defined():
        raise _fail(op, "shape attr must be fully defined.")
    row = TensorShape([1]).concatenate(shape[1:]) if shape.rank else shape
    for i, t in enumerate(op.inputs):
        if not t.shape.is_fully_defined():
            raise _fail(op, "All input shapes must be fully defined.")
        if t.shape.rank < 1:
            raise _fail(op, f"The rank of all input shapes must be greater than 0, but "
                            f"input {i} had rank {t.shape.rank}.")
        if t.shape[0] != 1:
            raise _fail(op, "Size of first dimension must be 1.")
        _check_merge(op, i, t.shape, row)
    return [shape]


def _check_merge(op, i: int, got: TensorShape, row: TensorShape) -> None:
    """TF's Merge of input `i`'s shape with the row the attr implies, and its words."""
    a, b = got.as_list(), row.as_list()
    context = f"\n\tFrom merging shape {i} with other shapes."
    if len(a) != len(b):
        raise _fail(op, f"Shapes must be equal rank, but are {len(a)} and {len(b)}{context}")
    for dim, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            raise _fail(op, f"Dimension {dim} in both shapes must be equal, but are {x} and "
                            f"{y}. Shapes are [{','.join(map(str, a))}] and "
                            f"[{','.join(map(str, b))}].{context}")


(register_op("ParallelConcat").input("values: N * T").output("output: T")
    .attr("N: int >= 1").attr("T: type").attr("shape: shape")
    .set_shape_fn(parallel_concat_shape))
(register_op("_ParallelConcatStart").output("output: dtype").attr("shape: shape")
    .attr("dtype: type").set_is_stateful().set_shape_fn(cs.shape_attr))
(register_op("_ParallelConcatUpdate").input("value: T").input("update: T").output("output: T")
    .attr("T: type").attr("loc: int").set_shape_fn(cs.unchanged_shape))
