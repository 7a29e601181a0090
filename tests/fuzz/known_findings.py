"""Fuzz findings: for each, a few-line reproducer and the failure fingerprint it produced
(FINDINGS.md describes them). test_fuzz_findings.py runs every reproducer: a fixed
finding is a regression test, an open one an xfail; the generic fuzz tests tolerate a
failure only when its fingerprint is an open finding's. When a fix lands, mark the
finding fixed (its test must then pass)."""

from __future__ import annotations

import dataclasses
import fnmatch
import pathlib
import struct
from collections.abc import Callable

from fuzz_runner import FuzzCase, Outcome

from aioflow.proto import (
    attr_value_pb2,
    graph_pb2,
    node_def_pb2,
    tensor_pb2,
    tensor_shape_pb2,
    types_pb2,
)

DT_FLOAT, DT_INT32 = types_pb2.DT_FLOAT, types_pb2.DT_INT32


def attr(**kwargs) -> attr_value_pb2.AttrValue:
    """An AttrValue from one keyword: attr(type=1), attr(s=b"x"), attr(shape=[2, 3])."""
    (kind, value), = kwargs.items()
    if kind == "shape":
        proto = tensor_shape_pb2.TensorShapeProto()
        for d in value:
            proto.dim.add(size=d)
        return attr_value_pb2.AttrValue(shape=proto)
    return attr_value_pb2.AttrValue(**{kind: value})


def const(name: str, dtype: int, dims: list[int], content: bytes = b"",
          int_val: list[int] = ()) -> node_def_pb2.NodeDef:
    """A Const node holding a TensorProto with the given dims and raw content."""
    tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_content=content, int_val=int_val)
    for d in dims:
        tensor.tensor_shape.dim.add(size=d)
    return node(name, "Const", dtype=attr(type=dtype), value=attr_value_pb2.AttrValue(
        tensor=tensor))


def node(name: str, op: str, inputs=(), **attrs) -> node_def_pb2.NodeDef:
    out = node_def_pb2.NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        out.attr[key].CopyFrom(value)
    return out


def graph(*nodes) -> bytes:
    gd = graph_pb2.GraphDef()
    gd.node.extend(nodes)
    return gd.SerializeToString(deterministic=True)


def placeholder(name: str, dtype: int = DT_FLOAT, shape=None) -> node_def_pb2.NodeDef:
    attrs = {"dtype": attr(type=dtype)}
    if shape is not None:
        attrs["shape"] = attr(shape=shape)
    return node(name, "Placeholder", **attrs)


@dataclasses.dataclass
class Finding:
    """A failure the fuzzer found: its id (FINDINGS.md heading), the fingerprint pattern
    (fnmatch over Outcome.fingerprint), a reproducer, and whether it is fixed."""

    id: str
    fingerprint: str
    repro: Callable[[], FuzzCase]
    # Run the reproducer in a subprocess with short limits (timeout s, guard s): for
    # findings that hold the loop, whose abandoned thread must not stay in pytest.
    isolate: tuple[float, float] | None = None
    fixed: bool = True  # False: still open (xfail; the generic fuzz tests tolerate it)

    def matches(self, outcome_or_fingerprint) -> bool:
        fp = outcome_or_fingerprint.fingerprint if isinstance(outcome_or_fingerprint, Outcome) \
            else outcome_or_fingerprint
        return fnmatch.fnmatchcase(fp, self.fingerprint)


def _unknown_dtype_enum():
    return FuzzCase("repro", graph(placeholder("p", dtype=99)), fetches=["p:0"])


def _const_huge_shape_without_content():
    return FuzzCase("repro", graph(const("c", DT_FLOAT, [2**36])), fetches=["c:0"])


def _enter_frame_name_not_utf8():
    return FuzzCase("repro", graph(
        placeholder("x"),
        node("e", "Enter", ["x"], T=attr(type=DT_FLOAT), frame_name=attr(s=b"\xff")),
        node("out", "Exit", ["e"], T=attr(type=DT_FLOAT))), {"x:0": 1.0}, ["out:0"])


def _input_index_superscript_digit():
    return FuzzCase("repro", graph(
        placeholder("x"), node("y", "Identity", ["x:\u00b2"], T=attr(type=DT_FLOAT))),
        {"x:0": 1.0}, ["y:0"])


def _transpose_perm_out_of_range():
    return FuzzCase("repro", graph(
        placeholder("x", shape=[2, 3]), const("perm", DT_INT32, [2], int_val=[0, 5]),
        node("t", "Transpose", ["x", "perm"], T=attr(type=DT_FLOAT),
             Tperm=attr(type=DT_INT32))), fetches=["t:0"])


def _expand_dims_empty_axis():
    return FuzzCase("repro", graph(
        placeholder("x", shape=[2]), const("dim", DT_INT32, [0]),
        node("e", "ExpandDims", ["x", "dim"], T=attr(type=DT_FLOAT),
             Tdim=attr(type=DT_INT32))), fetches=["e:0"])


def _feed_python_int_out_of_range():
    return FuzzCase("repro", graph(
        placeholder("x", dtype=DT_INT32, shape=[]),
        node("y", "Identity", ["x"], T=attr(type=DT_INT32))), {"x:0": 2**70}, ["y:0"])


def _reduction_axes_const_holding_inf():
    axis = const("axis", DT_INT32, [1])
    axis.attr["value"].tensor.dtype = DT_FLOAT  # the value's dtype differs from the attr's
    axis.attr["value"].tensor.float_val.append(float("inf"))
    return FuzzCase("repro", graph(
        placeholder("x", shape=[2]), axis,
        node("s", "Sum", ["x", "axis"], T=attr(type=DT_FLOAT), Tidx=attr(type=DT_INT32))),
        fetches=["s:0"])


def _slice_begin_longer_than_rank():
    return FuzzCase("repro", graph(
        placeholder("x", shape=[]), const("begin", DT_INT32, [2], int_val=[0, 0]),
        const("size", DT_INT32, [2], int_val=[-1, -1]),
        node("s", "Slice", ["x", "begin", "size"], T=attr(type=DT_FLOAT),
             Index=attr(type=DT_INT32))), fetches=["s:0"])


def _number_attr_huge():
    return FuzzCase("repro", graph(
        placeholder("x"), node("s", "AddN", ["x"], T=attr(type=DT_FLOAT), N=attr(i=2**40))),
        {"x:0": 1.0}, ["s:0"])


def _tensor_array_huge_size():
    return FuzzCase("repro", graph(
        const("size", DT_INT32, [], int_val=[2**31 - 1]),
        node("ta", "TensorArrayV3", ["size"], dtype=attr(type=DT_FLOAT))), fetches=["ta:1"])


def _gather_batch_dims_min_int64():
    return FuzzCase("repro", graph(
        placeholder("params", shape=[2]), placeholder("indices", DT_INT32, shape=[1]),
        placeholder("axis", DT_INT32, shape=[]),
        node("g", "GatherV2", ["params", "indices", "axis"], Tparams=attr(type=DT_FLOAT),
             Tindices=attr(type=DT_INT32), Taxis=attr(type=DT_INT32),
             batch_dims=attr(i=-(2**63))),
    ), fetches=["g:0"])


def _fold_batch_norm_invalid_const(dtype: int = DT_FLOAT, unknown_rank: bool = True):
    """MatMul * Const, the Const's tensor of unknown rank (or of an unknown dtype): the
    remapper's batch-norm folding read it and raised; the Const's kernel must say it."""
    scale = const("scale", DT_FLOAT, [])
    scale.attr["value"].tensor.dtype = dtype
    scale.attr["value"].tensor.float_val.append(2.0)
    scale.attr["value"].tensor.tensor_shape.unknown_rank = unknown_rank
    return FuzzCase("repro", graph(
        placeholder("x", shape=[1, 2]),
        const("w", DT_FLOAT, [2, 2], content=b"\0" * 16),
        node("mm", "MatMul", ["x", "w"], T=attr(type=DT_FLOAT)),
        scale, node("y", "Mul", ["mm", "scale"], T=attr(type=DT_FLOAT))),
        {"x:0": [[1.0, 2.0]]}, ["y:0"])


def _colocation_name_not_utf8(with_target: bool = True):
    """A `_class: loc:@<bytes>` colocation list whose name is not UTF-8: the importer
    (with a second node, the colocation loop runs) and the placer decoded it and raised.
    Such a name matches no node (names are checked); TF groups by the bytes."""
    y = node("y", "Identity", ["x"], T=attr(type=DT_FLOAT))
    y.attr["_class"].list.s.append(b"loc:@\xb3\xff")
    nodes = [placeholder("x", shape=[]), y]
    if with_target:
        nodes.append(node("z", "Identity", ["y"], T=attr(type=DT_FLOAT)))
    return FuzzCase("repro", graph(*nodes), {"x:0": 1.5}, ["y:0"])


def _multinomial_num_samples_vector():
    return FuzzCase("repro", graph(
        placeholder("logits", shape=[2, 3]), const("num", DT_INT32, [2], int_val=[1, 2]),
        node("m", "Multinomial", ["logits", "num"], T=attr(type=DT_FLOAT),
             output_dtype=attr(type=types_pb2.DT_INT64))), fetches=["m:0"])


def _random_uniform_huge_shape(dims=(2**31 - 1, 2)):
    return FuzzCase("repro", graph(
        const("shape", DT_INT32, [len(dims)], int_val=list(dims)),
        node("r", "RandomUniform", ["shape"], T=attr(type=DT_INT32),
             dtype=attr(type=types_pb2.DT_DOUBLE))), fetches=["r:0"])


def _scalar_summary_tag_not_utf8():
    tags = const("tags", types_pb2.DT_STRING, [])
    tags.attr["value"].tensor.string_val.append(b"\xff\xfe")
    return FuzzCase("repro", graph(
        tags, placeholder("v", shape=[]),
        node("s", "ScalarSummary", ["tags", "v"], T=attr(type=DT_FLOAT))),
        {"v:0": 1.5}, ["s:0"])


def _scale_and_translate_kernel_type_not_utf8():
    return FuzzCase("repro", graph(
        placeholder("images", shape=[1, 2, 2, 1]),
        const("size", DT_INT32, [2], int_val=[2, 2]), placeholder("scale", shape=[2]),
        placeholder("translation", shape=[2]),
        node("s", "ScaleAndTranslate", ["images", "size", "scale", "translation"],
             T=attr(type=DT_FLOAT), kernel_type=attr(s=b"\xff"))),
        {"scale:0": [1.0, 1.0], "translation:0": [0.0, 0.0]}, ["s:0"])


def _fused_matmul_fused_ops_not_utf8():
    return FuzzCase("repro", graph(
        placeholder("a", shape=[1, 2]), placeholder("b", shape=[2, 2]),
        placeholder("bias", shape=[2]),
        node("f", "_FusedMatMul", ["a", "b", "bias"], T=attr(type=DT_FLOAT),
             num_args=attr(i=1), fused_ops=attr_value_pb2.AttrValue(
                 list=attr_value_pb2.AttrValue.ListValue(s=[b"BiasAdd", b"\xff"])))),
        {"a:0": [[1.0, 2.0]], "b:0": [[1.0, 0.0], [0.0, 1.0]], "bias:0": [0.0, 0.0]},
        ["f:0"])


def _parse_example_key_not_scalar():
    keys = const("key", types_pb2.DT_STRING, [0])
    return FuzzCase("repro", graph(
        placeholder("serialized", dtype=types_pb2.DT_STRING, shape=[1]),
        placeholder("names", dtype=types_pb2.DT_STRING, shape=[0]), keys,
        node("p", "ParseExample", ["serialized", "names", "key"], Nsparse=attr(i=1),
             Ndense=attr(i=0), sparse_types=attr_value_pb2.AttrValue(
                 list=attr_value_pb2.AttrValue.ListValue(type=[DT_FLOAT])),
             Tdense=attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue()),
             dense_shapes=attr_value_pb2.AttrValue(
                 list=attr_value_pb2.AttrValue.ListValue()))),
        {"serialized:0": [b""], "names:0": []}, ["p:0"])


def _parse_single_example_types_shorter_than_keys():
    return FuzzCase("repro", graph(
        placeholder("serialized", dtype=types_pb2.DT_STRING, shape=[]),
        node("p", "ParseSingleExample", ["serialized"], num_sparse=attr(i=1),
             sparse_keys=attr_value_pb2.AttrValue(
                 list=attr_value_pb2.AttrValue.ListValue(s=[b"a"])),
             dense_keys=attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue()),
             sparse_types=attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(
                 type=[DT_FLOAT, DT_FLOAT])),
             Tdense=attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue()),
             dense_shapes=attr_value_pb2.AttrValue(
                 list=attr_value_pb2.AttrValue.ListValue()))),
        {"serialized:0": b""}, ["p:0"])


def _unsorted_segment_num_segments_past_numpy():
    return FuzzCase("repro", graph(
        placeholder("data", shape=[2]), const("ids", DT_INT32, [2], int_val=[0, 1]),
        node("n", "Const", dtype=attr(type=types_pb2.DT_INT64),
             value=attr_value_pb2.AttrValue(tensor=tensor_pb2.TensorProto(
                 dtype=types_pb2.DT_INT64, int64_val=[2**63 - 1]))),
        node("s", "UnsortedSegmentMin", ["data", "ids", "n"], T=attr(type=DT_FLOAT),
             Tindices=attr(type=DT_INT32), Tnumsegments=attr(type=types_pb2.DT_INT64))),
        {"data:0": [1.0, 2.0]}, ["s:0"])


def _anonymous_seed_generator_seed_not_scalar():
    return FuzzCase("repro", graph(
        node("seed", "Const", dtype=attr(type=types_pb2.DT_INT64),
             value=attr_value_pb2.AttrValue(tensor=tensor_pb2.TensorProto(
                 dtype=types_pb2.DT_INT64, int64_val=[1, 2],
                 tensor_shape=tensor_shape_pb2.TensorShapeProto(
                     dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2)])))),
        node("seed2", "Const", dtype=attr(type=types_pb2.DT_INT64),
             value=attr_value_pb2.AttrValue(tensor=tensor_pb2.TensorProto(
                 dtype=types_pb2.DT_INT64, int64_val=[3]))),
        node("reshuffle", "Const", dtype=attr(type=types_pb2.DT_BOOL),
             value=attr_value_pb2.AttrValue(tensor=tensor_pb2.TensorProto(
                 dtype=types_pb2.DT_BOOL, bool_val=[True]))),
        node("g", "AnonymousSeedGenerator", ["seed", "seed2", "reshuffle"])),
        fetches=["g:0"])


def _set_operation_not_utf8():
    return FuzzCase("repro", graph(
        const("a", DT_INT32, [1, 2], int_val=[1, 2]), const("b", DT_INT32, [1, 2], int_val=[2, 3]),
        node("s", "DenseToDenseSetOperation", ["a", "b"], T=attr(type=DT_INT32),
             set_operation=attr(s=b"\xff\xfe"))), {}, ["s:0"])


def _stack_name_not_utf8():
    return FuzzCase("repro", graph(
        const("n", DT_INT32, [], int_val=[1]),
        node("s", "StackV2", ["n"], elem_type=attr(type=DT_FLOAT), stack_name=attr(s=b"\xff"))),
        {}, ["s:0"])


def _int64_const(name: str, dims: list[int], values: list[int]) -> node_def_pb2.NodeDef:
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_INT64, int64_val=values)
    for d in dims:
        tensor.tensor_shape.dim.add(size=d)
    return node(name, "Const", dtype=attr(type=types_pb2.DT_INT64),
                value=attr_value_pb2.AttrValue(tensor=tensor))


def _pad_past_numpy():
    return FuzzCase("repro", graph(
        placeholder("x", shape=[1]), _int64_const("p", [1, 2], [2**62, 2**62 + 3]),
        node("y", "Pad", ["x", "p"], T=attr(type=DT_FLOAT),
             Tpaddings=attr(type=types_pb2.DT_INT64))), {"x:0": [1.0]}, ["y:0"])


def _parallel_concat_start_past_numpy():
    return FuzzCase("repro", graph(
        node("p", "_ParallelConcatStart", dtype=attr(type=DT_FLOAT),
             shape=attr(shape=[2**62, 2**40]))), {}, ["p:0"])


def _unsorted_segment_scalar_ids_empty_data():
    return FuzzCase("repro", graph(
        const("data", DT_FLOAT, [0]), const("ids", DT_INT32, [], int_val=[0]),
        const("n", DT_INT32, [], int_val=[2]),
        node("s", "UnsortedSegmentSum", ["data", "ids", "n"], T=attr(type=DT_FLOAT),
             Tindices=attr(type=DT_INT32), Tnumsegments=attr(type=DT_INT32))), {}, ["s:0"])


def _random_gamma_tiny_negative_alpha():
    return FuzzCase("repro", graph(
        const("shape", DT_INT32, [0]), placeholder("alpha", shape=[2]),
        node("g", "RandomGamma", ["shape", "alpha"], S=attr(type=DT_INT32),
             T=attr(type=DT_FLOAT), seed2=attr(i=-2))),
        {"alpha:0": [-2.6061601e-18, 0.5]}, ["g:0"])


def _truncated_normal_empty_past_numpy(op: str = "TruncatedNormal"):
    """An empty output NumPy cannot address: [0, 2^63-1, 2] ("array is too big")."""
    content = struct.pack("<3q", 0, 2**63 - 1, 2)
    return FuzzCase("repro", graph(
        const("shape", types_pb2.DT_INT64, [3], content),
        node("op", op, ["shape"], T=attr(type=types_pb2.DT_INT64), dtype=attr(type=DT_FLOAT),
             seed=attr(i=2), seed2=attr(i=2))), {}, ["op:0"])


def _random_int_empty_past_numpy():
    """RandomUniformInt's empty [2^63-1, 0, 2^63-1] output (TF 2.21: "Could not allocate
    ndarray"; here TF's OOM, as the other random ops)."""
    content = struct.pack("<3q", 2**63 - 1, 0, 2**63 - 1)
    one = struct.pack("<q", 1)
    return FuzzCase("repro", graph(
        const("shape", types_pb2.DT_INT64, [3], content),
        const("lo", types_pb2.DT_INT64, [], struct.pack("<q", 0)),
        const("hi", types_pb2.DT_INT64, [], one),
        node("op", "RandomUniformInt", ["shape", "lo", "hi"], T=attr(type=types_pb2.DT_INT64),
             Tout=attr(type=types_pb2.DT_INT64), seed=attr(i=2), seed2=attr(i=2))),
        {}, ["op:0"])


def _random_gamma_empty_past_numpy():
    """RandomGamma's empty [0, 2^63-1, 2] output: TF's OOM, as the other random ops."""
    content = struct.pack("<3q", 0, 2**63 - 1, 2)
    return FuzzCase("repro", graph(
        const("shape", types_pb2.DT_INT64, [3], content),
        const("alpha", DT_FLOAT, [], struct.pack("<f", 1.0)),
        node("op", "RandomGamma", ["shape", "alpha"], S=attr(type=types_pb2.DT_INT64),
             T=attr(type=DT_FLOAT), seed=attr(i=2), seed2=attr(i=2))), {}, ["op:0"])


def _all_with_an_int_t_attr():
    """All (no T in its OpDef) given an int attr named T: ignored, as TF ignores it."""
    return FuzzCase("repro", graph(
        placeholder("x", types_pb2.DT_BOOL, shape=[2]), const("axis", DT_INT32, [], int_val=[0]),
        node("a", "All", ["x", "axis"], T=attr(i=0), Tidx=attr(type=DT_INT32))),
        {"x:0": [True, False]}, ["a:0"])


def _sparse_segment_mean_grad_scalar_grad():
    return FuzzCase("repro", graph(
        placeholder("grad", shape=[]), const("i", DT_INT32, [0]), const("s", DT_INT32, [0]),
        const("d", DT_INT32, [], int_val=[3]),
        node("g", "SparseSegmentMeanGrad", ["grad", "i", "s", "d"], T=attr(type=DT_FLOAT),
             Tidx=attr(type=DT_INT32), Tsegmentids=attr(type=DT_INT32))),
        {"grad:0": 1.0}, ["g:0"])


def _as_string_precision_past_c_int():
    """AsString with a precision no C int holds (2^33): printf cannot take it."""
    return FuzzCase("repro", graph(
        placeholder("x", shape=[2]),
        node("op", "AsString", ["x"], T=attr(type=DT_FLOAT), precision=attr(i=2**33))),
        {"x:0": [1.0, 2.0]}, ["op:0"])


def _broadcast_to_past_numpy():
    """A scalar broadcast to [2^63-1]: more than NumPy (or memory) can hold."""
    return FuzzCase("repro", graph(
        placeholder("x", shape=[]),
        const("shape", types_pb2.DT_INT64, [1], struct.pack("<q", 2**63 - 1)),
        node("op", "BroadcastTo", ["x", "shape"], T=attr(type=DT_FLOAT),
             Tidx=attr(type=types_pb2.DT_INT64))),
        {"x:0": 1.0}, ["op:0"])


def _merge_checkpoints_name_too_long():
    """MergeV2Checkpoints of a prefix past the OS's name limit: ENAMETOOLONG is TF's
    InvalidArgumentError (ErrnoToCode), not UnknownError."""
    def strings(name, values):
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=values)
        if len(values) != 1:
            tensor.tensor_shape.dim.add(size=len(values))
        return node(name, "Const", dtype=attr(type=types_pb2.DT_STRING),
                    value=attr_value_pb2.AttrValue(tensor=tensor))
    return FuzzCase("repro", graph(
        strings("prefixes", [b"x" * 300, b"y"]), strings("dest", [b"x" * 300]),
        node("op", "MergeV2Checkpoints", ["prefixes", "dest"])), {}, [], ["op"])


def _multinomial_bfloat16_row_without_finite_logit():
    """Multinomial of bfloat16 logits whose row has no finite value: the row's lowest
    finite logit came from np.finfo, which does not know bfloat16 (NumPy kind 'V')."""
    return FuzzCase("repro", graph(
        const("logits", types_pb2.DT_BFLOAT16, [1, 2], struct.pack("<2H", 0xFF80, 0xFF80)),
        const("num", DT_INT32, [], int_val=[3]),
        node("op", "Multinomial", ["logits", "num"], T=attr(type=types_pb2.DT_BFLOAT16),
             output_dtype=attr(type=types_pb2.DT_INT64), seed=attr(i=1), seed2=attr(i=2))),
        {}, ["op:0"])


def _saved_case(name: str):
    """A reproducer the long run saved (tests/fuzz/saved_cases/<name>/)."""
    return FuzzCase.load(pathlib.Path(__file__).resolve().parent / "saved_cases" / name)


FINDINGS = [
    Finding("unknown-dtype-enum", "FAIL:TypeError@import@framework/dtypes.py:as_dtype",
            _unknown_dtype_enum),
    Finding("const-huge-shape-without-content",
            "FAIL:MemoryError@import@framework/tensor_util.py:*",
            _const_huge_shape_without_content),
    Finding("enter-frame-name-not-utf8",
            "FAIL:UnicodeDecodeError@run@graph/control_flow_info.py:*",
            _enter_frame_name_not_utf8),  # frame names kept as bytes (surrogateescape)
    Finding("input-index-superscript-digit",
            "FAIL:ValueError@import@framework/node_def_util.py:parse_input",
            _input_index_superscript_digit),
    Finding("transpose-perm-out-of-range",
            "FAIL:IndexError@import@framework/common_shapes.py:transpose*",
            _transpose_perm_out_of_range),
    Finding("expand-dims-empty-axis",
            "FAIL:IndexError@import@framework/common_shapes.py:expand_dims",
            _expand_dims_empty_axis),
    Finding("reduction-axes-const-holding-inf",
            "FAIL:OverflowError@import@framework/common_shapes.py:_const_ints*",
            _reduction_axes_const_holding_inf),
    Finding("slice-begin-longer-than-rank",
            "FAIL:IndexError@import@framework/common_shapes.py:slice_shape*",
            _slice_begin_longer_than_rank),
    Finding("number-attr-huge", "FAIL:MemoryError@import@framework/node_def_util.py:*",
            _number_attr_huge),
    Finding("tensor-array-huge-size-holds-the-loop",
            "FAIL:loop-blocked@run@kernels/data_flow/tensor_array_kernels.py:*",
            _tensor_array_huge_size,
            isolate=(4.0, 2.0)),  # the case (start, run, close) within 4 s at load 10
    Finding("gather-batch-dims-min-int64",
            "FAIL:OverflowError@import@framework/tensor_shape.py:unknown_shape",
            _gather_batch_dims_min_int64),
    # TF 2.21's client raises the same OverflowError with the same words: the runner
    # classifies it as client:OverflowError (fuzz_runner._SAME_AS_TF).
    Finding("feed-python-int-out-of-range",
            "FAIL:OverflowError@run@client/session.py:convert_feed_value",
            _feed_python_int_out_of_range),
    Finding("fold-batch-norm-const-of-unknown-rank",
            "FAIL:ValueError@run@framework/tensor_util.py:make_ndarray",
            _fold_batch_norm_invalid_const),
    Finding("fold-batch-norm-const-of-unknown-dtype",
            "FAIL:TypeError@run@framework/tensor_util.py:_make_ndarray",
            lambda: _fold_batch_norm_invalid_const(dtype=24, unknown_rank=False)),
    Finding("colocation-name-not-utf8",
            "FAIL:UnicodeDecodeError@import@framework/importer.py:_colocation_names*",
            _colocation_name_not_utf8),
    Finding("colocation-name-not-utf8-placer",
            "FAIL:UnicodeDecodeError@run@runtime/placer.py:_group_of",
            lambda: _colocation_name_not_utf8(with_target=False)),
    # Issue 30: raw causes behind typed errors (the harness counts them as failures)
    Finding("multinomial-num-samples-not-scalar",
            "FAIL:wrapped-TypeError@import@framework/op_defs/random_ops.py:_multinomial",
            _multinomial_num_samples_vector),
    Finding("random-uniform-shape-past-memory",
            "FAIL:wrapped-*@run@kernels/random/*", _random_uniform_huge_shape),
    Finding("random-uniform-shape-overflows-int64",
            "FAIL:wrapped-*@run@kernels/random/*",
            lambda: _random_uniform_huge_shape((2**31 - 1,) * 3)),
    Finding("scalar-summary-tag-not-utf8",
            "FAIL:wrapped-UnicodeEncodeError@run@kernels/io/summary_kernels.py:*",
            _scalar_summary_tag_not_utf8),
    Finding("scale-and-translate-kernel-type-not-utf8",
            "FAIL:wrapped-UnicodeDecodeError@run@kernels/image/resize_area_kernels.py:*",
            _scale_and_translate_kernel_type_not_utf8),
    Finding("fused-matmul-fused-ops-not-utf8",
            "FAIL:wrapped-UnicodeDecodeError@run@kernels/nn/fused_kernels.py:*",
            _fused_matmul_fused_ops_not_utf8),
    Finding("parse-example-key-not-scalar",
            "FAIL:wrapped-IndexError@run@kernels/io/parsing_kernels.py:*",
            _parse_example_key_not_scalar),
    Finding("unsorted-segment-num-segments-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/math/segment_kernels.py:*",
            _unsorted_segment_num_segments_past_numpy),
    Finding("anonymous-seed-generator-seed-not-scalar",
            "FAIL:wrapped-TypeError@run@kernels/data/shuffle_kernels.py:compute",
            _anonymous_seed_generator_seed_not_scalar),
    Finding("parse-single-example-types-shorter-than-keys",
            "FAIL:wrapped-ValueError@run@kernels/io/parsing_kernels.py:*",
            _parse_single_example_types_shorter_than_keys),
    # The long run of 2026-11-29 (session 9's new kernels and old allocations)
    Finding("set-operation-not-utf8",
            "FAIL:wrapped-UnicodeDecodeError@run@kernels/sparse/set_kernels.py:*",
            _set_operation_not_utf8),
    Finding("stack-name-not-utf8",
            "FAIL:wrapped-UnicodeDecodeError@run@kernels/data_flow/stack_kernels.py:*",
            _stack_name_not_utf8),
    Finding("pad-output-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/array/pad_fill.py:*", _pad_past_numpy),
    Finding("parallel-concat-start-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/array/parallel_concat_kernels.py:*",
            _parallel_concat_start_past_numpy),
    Finding("unsorted-segment-scalar-ids-empty-data",
            "FAIL:wrapped-ValueError@run@kernels/math/segment_kernels.py:compute",
            _unsorted_segment_scalar_ids_empty_data),
    Finding("random-gamma-pow-overflow",
            "FAIL:wrapped-OverflowError@run@kernels/random/philox.py:*",
            _random_gamma_tiny_negative_alpha),
    Finding("sparse-segment-mean-grad-scalar-grad",
            "FAIL:wrapped-IndexError@run@kernels/math/grad_kernels.py:*",
            _sparse_segment_mean_grad_scalar_grad),
    # Session 10's final long run (random kernels' empty outputs past NumPy's reach).
    Finding("truncated-normal-empty-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/random/random_kernels.py:*",
            _truncated_normal_empty_past_numpy),
    Finding("all-with-an-int-t-attr",
            "FAIL:AttributeError@run@kernels/math/reduction_kernels.py:__init__",
            _all_with_an_int_t_attr),
    Finding("random-uniform-empty-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/random/random_kernels.py:*",
            lambda: _truncated_normal_empty_past_numpy("RandomUniform")),
    # Session 11's final long run: raw ValueErrors behind InvalidArgumentError.
    Finding("as-string-precision-past-c-int",
            "FAIL:wrapped-ValueError@run@kernels/strings/string_kernels.py:_c_format",
            _as_string_precision_past_c_int),
    Finding("broadcast-to-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/array/array_kernels.py:compute",
            _broadcast_to_past_numpy),
    # Session 12's long run (RandomUniformInt; RandomGamma had the same empty path).
    Finding("random-uniform-int-empty-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/random/random_kernels.py:compute",
            _random_int_empty_past_numpy),
    Finding("random-gamma-empty-past-numpy",
            "FAIL:wrapped-ValueError@run@kernels/random/random_kernels.py:compute",
            _random_gamma_empty_past_numpy),
    # Found by the last long run of 2026-11-29; fixed the next session (frame_state.py).
    Finding("tensor-array-gather-none-input",
            "FAIL:wrapped-AttributeError@run2@kernels/data_flow/tensor_array_kernels.py:*",
            lambda: _saved_case("tensor-array-gather-none-input")),
    # Session 13's first long run: an OSError's class by errno, as TF's ErrnoToCode.
    Finding("merge-checkpoints-name-too-long",
            "FAIL:wrapped-OSError@run@lib/tensor_bundle.py:*",
            _merge_checkpoints_name_too_long),
    # Session 13's final long run.
    Finding("multinomial-bfloat16-row-without-finite-logit",
            "FAIL:wrapped-ValueError@run@kernels/random/random_kernels.py:multinomial",
            _multinomial_bfloat16_row_without_finite_logit),
]


def known(outcome_or_fingerprint) -> Finding | None:
    """The known-open finding an unacceptable outcome (or fingerprint) matches, if any."""
    return next((f for f in FINDINGS if not f.fixed and f.matches(outcome_or_fingerprint)),
                None)
