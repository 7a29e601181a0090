"""The `af.strings` namespace: TF's `tf.strings` names (split is TF 1's, returning an
af.SparseTensor; see aioflow/ops/string_ops.py). TF keeps the base64 pair in `tf.io`;
they are here too, as `af.strings.encode_base64` / `decode_base64`."""

from aioflow.ops.logging_ops import string_format as format  # noqa: A001 - TF's name
from aioflow.ops.string_ops import (
    as_string,
    decode_base64,
    encode_base64,
    join,
    length,
    lower,
    reduce_join,
    regex_full_match,
    regex_replace,
    split,
    strip,
    substr,
    to_hash_bucket_fast,
    to_hash_bucket_strong,
    to_number,
    upper,
)

__all__ = [
    "as_string", "decode_base64", "encode_base64", "format", "join", "length", "lower",
    "reduce_join", "regex_full_match", "regex_replace", "split", "strip", "substr",
    "to_hash_bucket_fast", "to_hash_bucket_strong", "to_number", "upper",
]
