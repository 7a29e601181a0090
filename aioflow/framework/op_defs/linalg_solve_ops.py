"""OpDef of TF's MatrixTriangularSolve (tensorflow/core/ops/linalg_ops.cc), which Qr's
gradient solves with: matrix [..., M, M] and rhs [..., M, N] with broadcast batch
dimensions give [..., M, N]."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape


def _triangular_solve_shape(op) -> list[TensorShape]:
    matrix, rhs = op.inputs[0].shape, op.inputs[1].shape
    if matrix.rank is None or rhs.rank is None:
        return [cs.UNKNOWN]
    if matrix.rank < 2 or rhs.rank < 2:
        raise ValueError(f"Shape must be at least rank 2 for '{op.name}' "
                         f"(op: 'MatrixTriangularSolve')")
    batch = cs.broadcast_shapes(TensorShape(matrix.as_list()[:-2]),
                                TensorShape(rhs.as_list()[:-2]))
    return [batch.concatenate(TensorShape(rhs.as_list()[-2:]))]


(register_op("MatrixTriangularSolve").input("matrix: T").input("rhs: T").output("output: T")
    .attr("lower: bool = true").attr("adjoint: bool = false")
    .attr("T: {bfloat16, double, float, half, complex64, complex128}")
    .set_shape_fn(_triangular_solve_shape))
