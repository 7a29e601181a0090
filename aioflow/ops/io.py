"""The `af.io` namespace: TF's `tf.io` names aioflow has (the base64 pair is also in
af.strings; the tf.Example parsing names are also at the top level, as TF 1 has them)."""

from aioflow.ops.io_ops import read_file
from aioflow.ops.parsing_ops import (
    FixedLenFeature,
    FixedLenSequenceFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from aioflow.ops.string_ops import decode_base64, encode_base64

__all__ = ["read_file", "decode_base64", "encode_base64", "FixedLenFeature",
           "FixedLenSequenceFeature", "VarLenFeature", "parse_example",
           "parse_single_example"]
