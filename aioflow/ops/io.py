"""The `af.io` namespace: TF's `tf.io` names aioflow has (the base64 pair is also in
af.strings)."""

from aioflow.ops.io_ops import read_file
from aioflow.ops.string_ops import decode_base64, encode_base64

__all__ = ["read_file", "decode_base64", "encode_base64"]
