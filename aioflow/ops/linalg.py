"""The `af.linalg` namespace: TF's `tf.linalg` names for the linalg builders."""

from aioflow.ops.linalg_ops import (
    adjoint,
    band_part,
    diag,
    diag_part,
    einsum,
    qr,
    set_diag,
    triangular_solve,
)
from aioflow.ops.math_ops import matmul

__all__ = ["adjoint", "triangular_solve", "band_part", "diag", "diag_part", "einsum", "qr",
           "set_diag", "matmul"]
