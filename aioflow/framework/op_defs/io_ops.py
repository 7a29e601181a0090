"""OpDefs of the checkpoint ops TF writes into every saved graph (tensorflow/core/ops/
io_ops.cc): SaveV2, RestoreV2, MergeV2Checkpoints (so such graphs import; their kernels
belong to the checkpoint package), ShardedFilename and ShardedFilespec (kernels in
aioflow/kernels/strings/string_kernels.py), and ReadFile (aioflow/kernels/io/file_io_kernels.py:
what reads a
SavedModel's assets) and MatchingFiles (the same kernel file: the names a glob finds).
"""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_SCALAR = TensorShape([])


def _matching_files(op) -> list[TensorShape]:
    """A vector of the names found; the pattern(s) a scalar or a vector."""
    rank = op.inputs[0].shape.rank
    if rank is not None and rank > 1:
        raise ValueError(f"Shape must be at most rank 1 but is rank {rank} for "
                         f"'{op.name}' (MatchingFiles) with input shapes: "
                         f"{op.inputs[0].shape}.")
    return [TensorShape([None])]


def _scalar_inputs(op) -> list[TensorShape]:
    """Every input a scalar (ValueError otherwise, as TF's WithRank), one scalar output."""
    for t in op.inputs:
        if t.shape.rank not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {t.shape.rank} for "
                             f"'{op.name}' ({op.type}) with input shapes: "
                             f"{', '.join(str(x.shape) for x in op.inputs)}.")
    return [_SCALAR] * len(op.outputs)


def _restore_v2(op) -> list[TensorShape]:
    return [TensorShape(None)] * len(op.outputs)


(register_op("SaveV2").input("prefix: string").input("tensor_names: string")
    .input("shape_and_slices: string").input("tensors: dtypes")
    .attr("dtypes: list(type) >= 1").set_is_stateful().set_shape_fn(cs.no_outputs))
(register_op("RestoreV2").input("prefix: string").input("tensor_names: string")
    .input("shape_and_slices: string").output("tensors: dtypes")
    .attr("dtypes: list(type) >= 1").set_is_stateful().set_shape_fn(_restore_v2))
(register_op("MergeV2Checkpoints").input("checkpoint_prefixes: string")
    .input("destination_prefix: string").attr("delete_old_dirs: bool = true")
    .attr("allow_missing_files: bool = false").set_is_stateful()
    .set_shape_fn(cs.no_outputs))
(register_op("ShardedFilename").input("basename: string").input("shard: int32")
    .input("num_shards: int32").output("filename: string").set_shape_fn(_scalar_inputs))
(register_op("ShardedFilespec").input("basename: string").input("num_shards: int32")
    .output("filename: string").set_shape_fn(_scalar_inputs))
(register_op("MatchingFiles").input("pattern: string").output("filenames: string")
    .set_shape_fn(_matching_files))
register_op("ReadFile").input("filename: string").output("contents: string") \
    .set_shape_fn(_scalar_inputs)
