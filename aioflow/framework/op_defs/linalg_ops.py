"""OpDefs of TF's linalg ops a transformer needs: Einsum, BatchMatMulV3, MatrixBandPart and
the MatrixDiag/MatrixDiagPart/MatrixSetDiag families (v1, V2, V3)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import common_shapes as cs
from aioflow.framework import einsum_spec
from aioflow.framework.constant_value import constant_value
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_ALIGN = "align: {'LEFT_RIGHT', 'RIGHT_LEFT', 'LEFT_LEFT', 'RIGHT_RIGHT'} = 'RIGHT_LEFT'"


def _einsum_shape(op) -> list[TensorShape]:
    """The output shape from the equation and the inputs' shapes (TF's messages when they
    do not fit)."""
    equation = op.get_attr("equation")
    equation = equation.decode("latin-1") if isinstance(equation, bytes) \
        else equation
    try:
        spec = einsum_spec.parse(equation)
        if len(spec.inputs) != len(op.inputs):
            return [cs.UNKNOWN]
        shapes = [cs._dims(t.shape) for t in op.inputs]
        dims = einsum_spec.output_dims(spec, shapes)
    except einsum_spec.EquationError as e:
        raise ValueError(f"{e} for '{op.name}' (Einsum)") from None
    return [cs.UNKNOWN if dims is None else TensorShape(dims)]


def _matrix_diag_v1(op) -> list[TensorShape]:
    """[..., n] -> [..., n, n]."""
    d = op.inputs[0].shape
    if d.rank is None or d.rank == 0:
        return [cs.UNKNOWN]
    dims = d.as_list()
    return [TensorShape(dims + dims[-1:])]


def _matrix_diag_part_v1(op) -> list[TensorShape]:
    """[..., m, n] -> [..., min(m, n)]."""
    x = op.inputs[0].shape
    if x.rank is None or x.rank < 2:
        return [cs.UNKNOWN]
    dims = x.as_list()
    m, n = dims[-2:]
    return [TensorShape(dims[:-2] + [None if m is None or n is None else min(m, n)])]


def _k_pair(op, index: int):
    """(lower, upper) of a constant diagonal offset input k, else None."""
    k = constant_value(op.inputs[index])
    if k is None or np.size(k) not in (1, 2):
        return None
    k = [int(v) for v in np.ravel(k)]
    return (k[0], k[-1])


def _matrix_diag_part_v2(op) -> list[TensorShape]:
    """[..., m, n] -> [..., len] for one diagonal, [..., diags, len] for a band (TF's
    MatrixDiagPartV2Shape, with a constant k)."""
    x = op.inputs[0].shape
    k = _k_pair(op, 1)
    if x.rank is None or x.rank < 2 or k is None:
        return [cs.UNKNOWN]
    dims = x.as_list()
    m, n = dims[-2:]
    lower, upper = k
    length = None if m is None or n is None else min(m + min(upper, 0), n - max(lower, 0))
    if lower == upper:
        return [TensorShape(dims[:-2] + [length])]
    return [TensorShape(dims[:-2] + [upper - lower + 1, length])]


def _matrix_diag_v2(op) -> list[TensorShape]:
    """diagonals -> matrices (TF's MatrixDiagV2Shape, with constant k, num_rows, num_cols)."""
    d = op.inputs[0].shape
    k = _k_pair(op, 1)
    rows, cols = cs._scalar_const(op, 2), cs._scalar_const(op, 3)  # (rank 0, as TF's)
    if d.rank is None or d.rank == 0 or k is None or rows is None or cols is None:
        return [cs.UNKNOWN]
    lower, upper = k
    dims = d.as_list()
    batch = dims[:-1] if lower == upper else dims[:-2]
    length = dims[-1]
    if length is None:
        return [cs.UNKNOWN]
    min_rows = length - min(upper, 0)
    min_cols = length + max(lower, 0)
    rows, cols = int(rows), int(cols)
    if rows == -1 and cols == -1:
        rows = cols = max(min_rows, min_cols)
    elif rows == -1:
        rows = min_rows
    elif cols == -1:
        cols = min_cols
    return [TensorShape(batch + [rows, cols])]


(register_op("Einsum").input("inputs: N * T").output("output: T").attr("equation: string")
    .attr("N: int >= 1").attr("T: type").set_shape_fn(_einsum_shape))
(register_op("BatchMatMulV3").input("x: Ta").input("y: Tb").output("output: Tout")
    .attr("Ta: {bfloat16, half, float, double, uint8, int8, int16, int32, int64, complex64, "
          "complex128}")
    .attr("Tb: {bfloat16, half, float, double, uint8, int8, int16, int32, int64, complex64, "
          "complex128}")
    .attr("Tout: {bfloat16, half, float, double, int16, int32, int64, complex64, complex128}")
    .attr("adj_x: bool = false").attr("adj_y: bool = false")
    .attr("grad_x: bool = false").attr("grad_y: bool = false")
    .set_shape_fn(cs.batch_matmul))
(register_op("MatrixBandPart").input("input: T").input("num_lower: Tindex")
    .input("num_upper: Tindex").output("band: T").attr("T: type")
    .attr("Tindex: {int32, int64} = DT_INT64").set_shape_fn(cs.unchanged_shape))
register_op("MatrixDiag").input("diagonal: T").output("output: T").attr("T: type") \
    .set_shape_fn(_matrix_diag_v1)
register_op("MatrixDiagPart").input("input: T").output("diagonal: T").attr("T: type") \
    .set_shape_fn(_matrix_diag_part_v1)
(register_op("MatrixSetDiag").input("input: T").input("diagonal: T").output("output: T")
    .attr("T: type").set_shape_fn(cs.unchanged_shape))
for _name, _align in (("V2", False), ("V3", True)):
    b = (register_op("MatrixDiag" + _name).input("diagonal: T").input("k: int32")
         .input("num_rows: int32").input("num_cols: int32").input("padding_value: T")
         .output("output: T").attr("T: type").set_shape_fn(_matrix_diag_v2))
    if _align:
        b.attr(_ALIGN)
    b = (register_op("MatrixDiagPart" + _name).input("input: T").input("k: int32")
         .input("padding_value: T").output("diagonal: T").attr("T: type")
         .set_shape_fn(_matrix_diag_part_v2))
    if _align:
        b.attr(_ALIGN)
    b = (register_op("MatrixSetDiag" + _name).input("input: T").input("diagonal: T")
         .input("k: int32").output("output: T").attr("T: type")
         .set_shape_fn(cs.unchanged_shape))
    if _align:
        b.attr(_ALIGN)


def _qr_shape(op) -> list[TensorShape]:
    """[..., M, N] -> q [..., M, P], r [..., P, N] with P = min(M, N), or q [..., M, M] and
    r [..., M, N] when full_matrices (TF's QrShapeFn)."""
    x = op.inputs[0].shape
    if x.rank is None:
        return [cs.UNKNOWN, cs.UNKNOWN]
    if x.rank < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {x.rank} for "
                         f"'{op.name}' (op: 'Qr')")
    dims = x.as_list()
    batch, m, n = dims[:-2], dims[-2], dims[-1]
    if op.get_attr("full_matrices"):
        return [TensorShape(batch + [m, m]), TensorShape(batch + [m, n])]
    p = None if m is None or n is None else min(m, n)
    return [TensorShape(batch + [m, p]), TensorShape(batch + [p, n])]


(register_op("Qr").input("input: T").output("q: T").output("r: T")
    .attr("full_matrices: bool = false")
    .attr("T: {double, float, half, complex64, complex128}").set_shape_fn(_qr_shape))
