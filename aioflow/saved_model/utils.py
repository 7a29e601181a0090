"""tf.compat.v1.saved_model.utils: TensorInfo helpers (defined in signature_def_utils)."""

from aioflow.saved_model.signature_def_utils import (
    build_tensor_info,
    get_tensor_from_tensor_info,
)

__all__ = ["build_tensor_info", "get_tensor_from_tensor_info"]
