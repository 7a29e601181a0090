"""OpDefs of TF's space <-> batch and space <-> depth rearrangements (array_ops.cc):
SpaceToBatchND / BatchToSpaceND (what dilated convolutions of TF 1 graphs are built
from), the older 4-D SpaceToBatch / BatchToSpace, SpaceToDepth / DepthToSpace.

Spelled as TF 2.21's OpDefs (tests/test_space_batch.py compares them field by field with
tests/data/space_batch_tf.json, written by TensorFlow)."""

from __future__ import annotations

import numpy as np

from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_INDEX = "{int32, int64} = DT_INT32"
_FORMATS = "{'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'"


def _rank_error(op, index: int, rank: int) -> None:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise ValueError(f"{op.op_def.input_arg[index].name} must have rank {rank}. for "
                         f"'{op.name}' ({op.type}) with input shapes: "
                         f"{', '.join(str(t.shape) for t in op.inputs)}.")


def _nd(op, to_batch: bool) -> list[TensorShape]:
    """Known dims where the block shape and paddings / crops are constants."""
    _rank_error(op, 1, 1)
    _rank_error(op, 2, 2)
    shape = op.inputs[0].shape
    if shape.rank is None:
        return [TensorShape(None)]
    dims = shape.as_list()
    block, pads = constant_value(op.inputs[1]), constant_value(op.inputs[2])
    if block is None or pads is None or np.any(np.asarray(block) < 1):
        return [TensorShape([None] * len(dims))]
    block, pads = np.ravel(block).astype(int).tolist(), np.asarray(pads).astype(int)
    if len(dims) < 1 + len(block):
        return [TensorShape([None] * len(dims))]
    out = list(dims)
    product = int(np.prod(block))
    if out[0] is not None:
        out[0] = out[0] * product if to_batch else (
            out[0] // product if out[0] % product == 0 else None)
    for i, b in enumerate(block):
        d = dims[1 + i]
        if d is None:
            continue
        size = (d + pads[i].sum()) if to_batch else d * b - pads[i].sum()
        if size < 0 or (to_batch and size % b):
            out[1 + i] = None  # (the kernel reports it, in TF's words)
        else:
            out[1 + i] = int(size // b if to_batch else size)
    return [TensorShape(out)]


def _legacy(op, to_batch: bool) -> list[TensorShape]:
    shape = op.inputs[0].shape
    return [TensorShape([None] * 4) if shape.rank == 4 or shape.rank is None
            else TensorShape(None)]


def _depth(op, to_depth: bool) -> list[TensorShape]:
    shape = op.inputs[0].shape
    if shape.rank is None:
        return [TensorShape([None] * 4)]
    if shape.rank != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {shape.rank} for '{op.name}' "
                         f"({op.type}) with input shapes: {shape}.")
    fmt = op.get_attr("data_format")
    if (fmt.decode() if isinstance(fmt, bytes) else fmt) != "NHWC":
        return [TensorShape([None] * 4)]
    b, h, w, c = shape.as_list()
    bs = op.get_attr("block_size")
    if to_depth:
        return [TensorShape([b, h and h // bs, w and w // bs, c and c * bs * bs])]
    return [TensorShape([b, h and h * bs, w and w * bs, c and c // (bs * bs)])]


(register_op("SpaceToBatchND").input("input: T").input("block_shape: Tblock_shape")
    .input("paddings: Tpaddings").output("output: T").attr("T: type")
    .attr(f"Tblock_shape: {_INDEX}").attr(f"Tpaddings: {_INDEX}")
    .set_shape_fn(lambda op: _nd(op, True)))
(register_op("BatchToSpaceND").input("input: T").input("block_shape: Tblock_shape")
    .input("crops: Tcrops").output("output: T").attr("T: type")
    .attr(f"Tblock_shape: {_INDEX}").attr(f"Tcrops: {_INDEX}")
    .set_shape_fn(lambda op: _nd(op, False)))
(register_op("SpaceToBatch").input("input: T").input("paddings: Tpaddings")
    .output("output: T").attr("T: type").attr(f"Tpaddings: {_INDEX}")
    .attr("block_size: int >= 2").set_shape_fn(lambda op: _legacy(op, True)))
(register_op("BatchToSpace").input("input: T").input("crops: Tidx").output("output: T")
    .attr("T: type").attr("block_size: int >= 2").attr(f"Tidx: {_INDEX}")
    .set_shape_fn(lambda op: _legacy(op, False)))
(register_op("SpaceToDepth").input("input: T").output("output: T").attr("T: type")
    .attr("block_size: int >= 2").attr(f"data_format: {_FORMATS}")
    .set_shape_fn(lambda op: _depth(op, True)))
(register_op("DepthToSpace").input("input: T").output("output: T").attr("T: type")
    .attr("block_size: int >= 2").attr(f"data_format: {_FORMATS}")
    .set_shape_fn(lambda op: _depth(op, False)))
