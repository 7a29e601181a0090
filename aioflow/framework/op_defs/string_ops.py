"""OpDefs of TF's string ops (tensorflow/core/ops/string_ops.cc): joins, substrings,
lengths, number <-> string conversions, regular expressions (RE2 in TF), splitting,
case and whitespace, hash buckets, base64, StringFormat.

Spelled and ordered as TF 2.21's OpDefs (tests/test_kernels_string.py compares them field
by field with tests/data/string_opdefs.json, written by TensorFlow)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)
_SCALAR = TensorShape([])


def _with_rank(op, index: int, rank: int) -> TensorShape:
    """Input `index`'s shape, which must have `rank` (ValueError as TF's WithRank)."""
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.rank} for "
                         f"'{op.name}' ({op.type}) with input shapes: "
                         f"{', '.join(str(t.shape) for t in op.inputs)}.")
    return shape if shape.rank is not None else TensorShape([None] * rank)


def _as_bytes(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8")


def template_pieces(template: bytes, placeholder: bytes) -> list[bytes]:
    """StringFormat's template cut at each placeholder (TF's str_util::Split)."""
    if not placeholder:
        return list(template[i:i + 1] for i in range(len(template))) or [b""]
    return template.split(placeholder)


def _string_format(op) -> list[TensorShape]:
    """A scalar; the template must have one placeholder per input."""
    pieces = template_pieces(_as_bytes(op.get_attr("template")),
                             _as_bytes(op.get_attr("placeholder")))
    if len(pieces) - 1 != len(op.inputs):
        raise ValueError(f"num placeholders in template and num inputs must match: "
                         f"{len(pieces) - 1} vs. {len(op.inputs)} for '{op.name}' "
                         f"({op.type})")
    return [_SCALAR]


def _string_join(op) -> list[TensorShape]:
    """Non-scalar inputs share one shape, the output's; all scalars give a scalar."""
    out = None
    for t in op.inputs:
        shape = t.shape
        if shape.rank is None:
            return [_UNKNOWN]
        if shape.rank == 0:
            continue
        out = shape if out is None else out.merge_with(shape)
    return [_SCALAR if out is None else out]


def _substr(op) -> list[TensorShape]:
    """pos and len have one shape; the output is input broadcast with it."""
    pos = op.inputs[1].shape.merge_with(op.inputs[2].shape)
    return [cs.broadcast_shapes(op.inputs[0].shape, pos)]


def _with_scalar_inputs(*indices: int):
    def fn(op) -> list[TensorShape]:
        for i in indices:
            _with_rank(op, i, 0)
        return [op.inputs[0].shape]
    return fn


def _split_v2(op) -> list[TensorShape]:
    _with_rank(op, 0, 1)
    _with_rank(op, 1, 0)
    return [TensorShape([None, 2]), TensorShape([None]), TensorShape([2])]


(register_op("StringJoin").input("inputs: N * string").output("output: string")
    .attr("N: int >= 0").attr("separator: string = ''").set_shape_fn(_string_join))
(register_op("ReduceJoin").input("inputs: string").input("reduction_indices: int32")
    .output("output: string").attr("keep_dims: bool = false").attr("separator: string = ''")
    .set_shape_fn(cs.reduction))
(register_op("Substr").input("input: string").input("pos: T").input("len: T")
    .output("output: string").attr("T: {int32, int64}")
    .attr("unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'").set_shape_fn(_substr))
(register_op("StringLength").input("input: string").output("output: int32")
    .attr("unit: {'BYTE', 'UTF8_CHAR'} = 'BYTE'").set_shape_fn(cs.unchanged_shape))
(register_op("AsString").input("input: T").output("output: string")
    .attr("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
          "uint32, uint64, complex64, complex128, bool, variant, string}")
    .attr("precision: int = -1").attr("scientific: bool = false")
    .attr("shortest: bool = false").attr("width: int = -1").attr("fill: string = ''")
    .set_shape_fn(cs.unchanged_shape))
(register_op("StringToNumber").input("string_tensor: string").output("output: out_type")
    .attr("out_type: {float, double, int32, int64, uint32, uint64} = DT_FLOAT")
    .set_shape_fn(cs.unchanged_shape))
(register_op("RegexReplace").input("input: string").input("pattern: string")
    .input("rewrite: string").output("output: string").attr("replace_global: bool = true")
    .set_shape_fn(_with_scalar_inputs(1, 2)))
(register_op("StaticRegexReplace").input("input: string").output("output: string")
    .attr("pattern: string").attr("rewrite: string").attr("replace_global: bool = true")
    .set_shape_fn(cs.unchanged_shape))
(register_op("StaticRegexFullMatch").input("input: string").output("output: bool")
    .attr("pattern: string").set_shape_fn(cs.unchanged_shape))
(register_op("RegexFullMatch").input("input: string").input("pattern: string")
    .output("output: bool").set_shape_fn(_with_scalar_inputs(1)))
(register_op("StringSplitV2").input("input: string").input("sep: string")
    .output("indices: int64").output("values: string").output("shape: int64")
    .attr("maxsplit: int = -1").set_shape_fn(_split_v2))
for _name in ("StringStrip",):
    (register_op(_name).input("input: string").output("output: string")
        .set_shape_fn(cs.unchanged_shape))
for _name in ("StringUpper", "StringLower"):
    (register_op(_name).input("input: string").output("output: string")
        .attr("encoding: string = ''").set_shape_fn(cs.unchanged_shape))
(register_op("StringToHashBucketFast").input("input: string").output("output: int64")
    .attr("num_buckets: int >= 1").set_shape_fn(cs.unchanged_shape))
(register_op("StringToHashBucketStrong").input("input: string").output("output: int64")
    .attr("num_buckets: int >= 1").attr("key: list(int)").set_shape_fn(cs.unchanged_shape))
(register_op("EncodeBase64").input("input: string").output("output: string")
    .attr("pad: bool = false").set_shape_fn(cs.unchanged_shape))
(register_op("DecodeBase64").input("input: string").output("output: string")
    .set_shape_fn(cs.unchanged_shape))
(register_op("StringFormat").input("inputs: T").output("output: string")
    .attr("T: list(type) >= 0").attr("template: string = '%s'")
    .attr("placeholder: string = '%s'").attr("summarize: int = 3")
    .set_shape_fn(_string_format))
