"""Linalg builders with TF's names and node layout: einsum, band_part, diag, diag_part,
set_diag (MatrixDiagV3 & co., as TF 2.21's Python writes them), triangular_solve,
adjoint and their v1 `matrix_*` names."""

from __future__ import annotations

import collections

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops


def _resolve_equation(equation: str, n_inputs: int) -> str:
    """TF's Python resolution: spaces dropped, an implicit output (no "->") made explicit
    as TF's einsum does (the labels used once, sorted, after any ellipsis)."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        return equation
    counts = collections.Counter(c for c in equation.replace("...", "") if c != ",")
    out = "".join(sorted(c for c, n in counts.items() if n == 1))
    return equation + "->" + ("..." if "..." in equation else "") + out


def _labels(sub: str) -> list:
    return [c for c in sub.replace("...", ".")]


def einsum(equation: str, *inputs, **kwargs) -> ops.Tensor:
    """Tensor contraction by an einsum equation: one `Einsum` op for one or two inputs
    (under the scope "einsum"), a left-to-right chain of them for more."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for this function: {sorted(kwargs)}")
    equation = _resolve_equation(equation, len(inputs))
    with ops.name_scope(name, "einsum", list(inputs)):
        in_part, out_part = equation.split("->")
        subs = in_part.split(",")
        if len(subs) != len(inputs) or len(inputs) <= 2:
            return apply_op("Einsum", inputs=list(inputs), equation=equation)
        acc, acc_sub = inputs[0], subs[0]
        for k in range(1, len(inputs)):
            later = set("".join(subs[k + 1:]) + out_part)
            seen = []
            for c in _labels(acc_sub) + _labels(subs[k]):
                if c not in seen and (c == "." or c in later):
                    seen.append(c)
            new_sub = "".join("..." if c == "." else c for c in seen)
            if k == len(inputs) - 1:
                new_sub = out_part
            acc = apply_op("Einsum", inputs=[acc, inputs[k]],
                           equation=f"{acc_sub},{subs[k]}->{new_sub}")
            acc_sub = new_sub
        return acc


Qr = collections.namedtuple("Qr", ["q", "r"])


def qr(input, full_matrices: bool = False, name: str | None = None) -> Qr:  # noqa: A002
    """The QR decomposition of each innermost matrix, `input = q @ r` (a `Qr` op), as
    `tf.linalg.qr`: returns (q, r)."""
    q, r = apply_op("Qr", name=name, input=input, full_matrices=full_matrices)
    return Qr(q, r)


def band_part(input, num_lower, num_upper, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Keeps a band around the diagonal of each innermost matrix (a `MatrixBandPart` op)."""
    return apply_op("MatrixBandPart", name=name, input=input, num_lower=num_lower,
                    num_upper=num_upper)


def diag(diagonal, name: str = "diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align: str = "RIGHT_LEFT") -> ops.Tensor:
    """Matrices with the given diagonals (a `MatrixDiagV3` op)."""
    with ops.name_scope(name, "diag", [diagonal]) as scope:
        diagonal = ops.convert_to_tensor(diagonal, name="diagonal")
        return apply_op("MatrixDiagV3", name=scope, diagonal=diagonal,
                        k=ops.convert_to_tensor(k, dtype=dtypes.int32, name="k"),
                        num_rows=ops.convert_to_tensor(num_rows, dtype=dtypes.int32,
                                                       name="num_rows"),
                        num_cols=ops.convert_to_tensor(num_cols, dtype=dtypes.int32,
                                                       name="num_cols"),
                        padding_value=ops.convert_to_tensor(padding_value, dtype=diagonal.dtype,
                                                            name="padding_value"),
                        align=align)


def diag_part(input, name: str = "diag_part", k=0, padding_value=0,  # noqa: A002
              align: str = "RIGHT_LEFT") -> ops.Tensor:
    """The diagonals of each innermost matrix (a `MatrixDiagPartV3` op)."""
    with ops.name_scope(name, "diag_part", [input]) as scope:
        input = ops.convert_to_tensor(input, name="input")  # noqa: A001
        return apply_op("MatrixDiagPartV3", name=scope, input=input,
                        k=ops.convert_to_tensor(k, dtype=dtypes.int32, name="k"),
                        padding_value=ops.convert_to_tensor(padding_value, dtype=input.dtype,
                                                            name="padding_value"),
                        align=align)


def set_diag(input, diagonal, name: str = "set_diag", k=0,  # noqa: A002
             align: str = "RIGHT_LEFT") -> ops.Tensor:
    """The input with its diagonals replaced (a `MatrixSetDiagV3` op)."""
    with ops.name_scope(name, "set_diag", [input, diagonal]) as scope:
        return apply_op("MatrixSetDiagV3", name=scope, input=input, diagonal=diagonal,
                        k=ops.convert_to_tensor(k, dtype=dtypes.int32, name="k"), align=align)


def matrix_triangular_solve(matrix, rhs, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> ops.Tensor:
    """x with matrix @ x = rhs for triangular matrices (a `MatrixTriangularSolve` op), as
    `tf.linalg.triangular_solve`."""
    with ops.name_scope(name, "triangular_solve", [matrix, rhs]):
        return apply_op("MatrixTriangularSolve", matrix=matrix, rhs=rhs, lower=lower,
                        adjoint=adjoint)


def adjoint(matrix, name: str | None = None) -> ops.Tensor:
    """The conjugate transpose of each innermost matrix, as `tf.linalg.adjoint`."""
    with ops.name_scope(name, "adjoint", [matrix]):
        matrix = ops.convert_to_tensor(matrix, name="matrix")
        return array_ops.matrix_transpose(matrix, conjugate=True)


matrix_band_part = band_part
triangular_solve = matrix_triangular_solve
matrix_diag = diag
matrix_diag_part = diag_part
matrix_set_diag = set_diag

__all__ = ["adjoint", "einsum", "band_part", "matrix_triangular_solve", "triangular_solve",
           "diag", "diag_part", "set_diag", "matrix_band_part", "matrix_diag",
           "matrix_diag_part", "matrix_set_diag"]
