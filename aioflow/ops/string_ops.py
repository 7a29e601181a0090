"""String builders with TF's names and node layouts (`tf.strings.*`, `tf.io.encode_base64`
and `tf.io.decode_base64`): each builds the op TF's builder builds.

- `regex_replace` writes StaticRegexReplace when pattern and rewrite are Python strings
  (else RegexReplace), and `regex_full_match` StaticRegexFullMatch for a Python-string
  pattern, as TF's builders do.
- `reduce_join` with axis=None reduces every axis, listed last to first (a constant when
  the rank is known, else Range(Rank - 1, -1, -1)), as TF's.
- `split` is TF 1's `tf.compat.v1.strings.split` with result_type="SparseTensor": a
  StringSplitV2 node whose outputs make an `af.SparseTensor` (indices [n, 2], values [n],
  dense_shape [2] = [batch, longest row]); a scalar input is expanded to a vector first.
  (TF 2's `tf.strings.split` returns a RaggedTensor, which aioflow does not have; its
  values and row splits are the SparseTensor's values and the row starts of its indices.)
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.framework.tensor_shape import TensorShape
from aioflow.ops import array_ops, math_ops
from aioflow.ops.constant_op import constant

_TEXT = (str, bytes)


def _strings(value, name: str = "input") -> ops.Tensor:
    return ops.convert_to_tensor(value, dtype=dtypes.string, name=name)


def join(inputs, separator: str = "", name: str | None = None) -> ops.Tensor:
    """Element-wise join of string tensors (scalars broadcast) with `separator`."""
    return apply_op("StringJoin", name=name, inputs=list(inputs), separator=separator)


def reduce_join(inputs, axis=None, keepdims: bool = False, separator: str = "",
                name: str | None = None, keep_dims=None,
                reduction_indices=None) -> ops.Tensor:
    """Joins the strings along `axis` (every axis when None)."""
    if keep_dims is not None:
        keepdims = keep_dims
    if axis is None:
        axis = reduction_indices
    with ops.name_scope(None, "ReduceJoin", [inputs, axis]):
        inputs_t = _strings(inputs, name="inputs")
        if axis is None:
            rank = inputs_t.shape.rank
            if rank is not None:
                axis = constant(np.arange(rank - 1, -1, -1), dtype=dtypes.int32)
            else:
                axis = math_ops.range(array_ops.rank(inputs_t) - 1, -1, -1)
        return apply_op("ReduceJoin", name=name, inputs=inputs_t, reduction_indices=axis,
                        keep_dims=bool(keepdims), separator=separator)


def substr(input, pos, len, unit: str = "BYTE", name: str | None = None) -> ops.Tensor:  # noqa: A002
    """input[pos:pos + len] in bytes or UTF-8 characters (unit "UTF8_CHAR")."""
    return apply_op("Substr", name=name, input=input, pos=pos, len=len, unit=unit)


def length(input, unit: str = "BYTE", name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Length of each string in bytes or UTF-8 characters (int32)."""
    return apply_op("StringLength", name=name, input=input, unit=unit)


def as_string(input, precision: int = -1, scientific: bool = False,  # noqa: A002
              shortest: bool = False, width: int = -1, fill: str = "",
              name: str | None = None) -> ops.Tensor:
    """Numbers and bools formatted as strings (printf-style options, as TF's)."""
    return apply_op("AsString", name=name, input=input, precision=precision,
                    scientific=scientific, shortest=shortest, width=width, fill=fill)


def to_number(string_tensor, out_type=dtypes.float32, name: str | None = None) -> ops.Tensor:
    """Parses each string as a number of `out_type`."""
    return apply_op("StringToNumber", name=name, string_tensor=string_tensor,
                    out_type=dtypes.as_dtype(out_type))


def regex_replace(input, pattern, rewrite, replace_global: bool = True,  # noqa: A002
                  name: str | None = None) -> ops.Tensor:
    """Replaces RE2 `pattern` matches with `rewrite` (\\0..\\9 name groups)."""
    if isinstance(pattern, _TEXT) and isinstance(rewrite, _TEXT):
        return apply_op("StaticRegexReplace", name=name, input=input, pattern=pattern,
                        rewrite=rewrite, replace_global=replace_global)
    return apply_op("RegexReplace", name=name, input=input, pattern=pattern, rewrite=rewrite,
                    replace_global=replace_global)


def regex_full_match(input, pattern, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Whether each string matches RE2 `pattern` entirely (bool)."""
    if isinstance(pattern, _TEXT):
        return apply_op("StaticRegexFullMatch", name=name, input=input, pattern=pattern)
    return apply_op("RegexFullMatch", name=name, input=input, pattern=pattern)


def split(input=None, sep=None, maxsplit: int = -1, result_type: str = "SparseTensor",  # noqa: A002
          source=None, name: str | None = None) -> SparseTensor:
    """Splits a vector of strings on `sep` (runs of whitespace when None or "") into an
    af.SparseTensor, as `tf.compat.v1.strings.split`."""
    if input is None:
        input = source  # noqa: A001
    if result_type != "SparseTensor":
        raise ValueError("aioflow's strings.split returns a SparseTensor (no RaggedTensor); "
                         f"result_type={result_type!r} is not supported")
    with ops.name_scope(name, "StringSplit", [input]):
        input_t = _strings(input)
        if input_t.shape.rank == 0:
            input_t = array_ops.expand_dims(input_t, 0)
        sep_t = ops.convert_to_tensor("" if sep is None else sep, dtype=dtypes.string)
        indices, values, shape = apply_op("StringSplitV2", input=input_t, sep=sep_t,
                                          maxsplit=maxsplit)
        indices.set_shape(TensorShape([None, 2]))
        values.set_shape(TensorShape([None]))
        shape.set_shape(TensorShape([2]))
        return SparseTensor(indices, values, shape)


def strip(input, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Strips leading and trailing ASCII whitespace."""
    return apply_op("StringStrip", name=name, input=input)


def upper(input, encoding: str = "", name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Upper case (ASCII; Unicode with encoding "utf-8")."""
    return apply_op("StringUpper", name=name, input=input, encoding=encoding)


def lower(input, encoding: str = "", name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Lower case (ASCII; Unicode with encoding "utf-8")."""
    return apply_op("StringLower", name=name, input=input, encoding=encoding)


def to_hash_bucket_fast(input, num_buckets: int, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Fingerprint64(s) % num_buckets (int64), TF's buckets exactly."""
    return apply_op("StringToHashBucketFast", name=name, input=input, num_buckets=num_buckets)


def to_hash_bucket_strong(input, num_buckets: int, key, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """SipHash-2-4 under `key` (two ints) % num_buckets (int64)."""
    return apply_op("StringToHashBucketStrong", name=name, input=input,
                    num_buckets=num_buckets, key=list(key))


def encode_base64(input, pad: bool = False, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Web-safe base64 ('-' and '_'), '=' padded only with pad."""
    return apply_op("EncodeBase64", name=name, input=input, pad=pad)


def decode_base64(input, name: str | None = None) -> ops.Tensor:  # noqa: A002
    """Decodes web-safe base64, padded or not."""
    return apply_op("DecodeBase64", name=name, input=input)


__all__ = [
    "as_string", "decode_base64", "encode_base64", "join", "length", "lower", "reduce_join",
    "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket_fast",
    "to_hash_bucket_strong", "to_number", "upper",
]
