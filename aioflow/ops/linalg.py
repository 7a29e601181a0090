"""The `af.linalg` namespace: TF's `tf.linalg` names for the linalg builders."""

from aioflow.ops.linalg_ops import band_part, diag, diag_part, einsum, qr, set_diag
from aioflow.ops.math_ops import matmul

__all__ = ["band_part", "diag", "diag_part", "einsum", "qr", "set_diag", "matmul"]
