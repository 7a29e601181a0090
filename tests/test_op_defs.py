"""The built-in OpDefs against TensorFlow's, field by field.

TF_OPDEFS holds TensorFlow 2.21's OpDefs (text format, descriptions left out) for a
sample of the core ops; each registered OpDef must equal them exactly.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from google.protobuf import text_format
from op_def_compare import ours

from aioflow.framework import dtypes, op_def_registry
from aioflow.proto import op_def_pb2, types_pb2

TF_OPDEFS = {
    "MatMul": (
        'name: "MatMul" input_arg { name: "a" type_attr: "T" } input_arg { name: "b" '
        'type_attr: "T" } output_arg { name: "product" type_attr: "T" } attr { name: '
        '"transpose_a" type: "bool" default_value { b: false } } attr { name: "transpose_b" '
        'type: "bool" default_value { b: false } } attr { name: "T" type: "type" '
        'allowed_values { list { type: DT_BFLOAT16 type: DT_HALF type: DT_FLOAT type: '
        'DT_DOUBLE type: DT_INT32 type: DT_INT64 type: DT_UINT8 type: DT_UINT16 type: '
        'DT_UINT32 type: DT_UINT64 type: DT_COMPLEX64 type: DT_COMPLEX128 } } } attr { name: '
        '"grad_a" type: "bool" default_value { b: false } } attr { name: "grad_b" type: '
        '"bool" default_value { b: false } }'
    ),
    "ConcatV2": (
        'name: "ConcatV2" input_arg { name: "values" type_attr: "T" number_attr: "N" } '
        'input_arg { name: "axis" type_attr: "Tidx" } output_arg { name: "output" type_attr: '
        '"T" } attr { name: "N" type: "int" has_minimum: true minimum: 2 } attr { name: "T" '
        'type: "type" } attr { name: "Tidx" type: "type" default_value { type: DT_INT32 } '
        'allowed_values { list { type: DT_INT32 type: DT_INT64 } } }'
    ),
    "Placeholder": (
        'name: "Placeholder" output_arg { name: "output" type_attr: "dtype" } attr { name: '
        '"dtype" type: "type" } attr { name: "shape" type: "shape" default_value { shape { '
        'unknown_rank: true } } }'
    ),
    "Equal": (
        'name: "Equal" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type: DT_BOOL } attr { name: "T" type: '
        '"type" } attr { name: "incompatible_shape_error" type: "bool" default_value { b: '
        'true } } is_commutative: true'
    ),
    "Sum": (
        'name: "Sum" input_arg { name: "input" type_attr: "T" } input_arg { name: '
        '"reduction_indices" type_attr: "Tidx" } output_arg { name: "output" type_attr: "T" } '
        'attr { name: "keep_dims" type: "bool" default_value { b: false } } attr { name: "T" '
        'type: "type" allowed_values { list { type: DT_FLOAT type: DT_DOUBLE type: DT_INT32 '
        'type: DT_UINT8 type: DT_INT16 type: DT_INT8 type: DT_COMPLEX64 type: DT_INT64 type: '
        'DT_QINT8 type: DT_QUINT8 type: DT_QINT32 type: DT_BFLOAT16 type: DT_QINT16 type: '
        'DT_QUINT16 type: DT_UINT16 type: DT_COMPLEX128 type: DT_HALF type: DT_UINT32 type: '
        'DT_UINT64 } } } attr { name: "Tidx" type: "type" default_value { type: DT_INT32 } '
        'allowed_values { list { type: DT_INT32 type: DT_INT64 } } }'
    ),
    "ArgMax": (
        'name: "ArgMax" input_arg { name: "input" type_attr: "T" } input_arg { name: '
        '"dimension" type_attr: "Tidx" } output_arg { name: "output" type_attr: "output_type" '
        '} attr { name: "T" type: "type" allowed_values { list { type: DT_FLOAT type: '
        'DT_DOUBLE type: DT_INT32 type: DT_UINT8 type: DT_INT16 type: DT_INT8 type: DT_INT64 '
        'type: DT_BFLOAT16 type: DT_UINT16 type: DT_HALF type: DT_UINT32 type: DT_UINT64 '
        'type: DT_QINT8 type: DT_QUINT8 type: DT_QINT32 type: DT_QINT16 type: DT_QUINT16 '
        'type: DT_BOOL } } } attr { name: "Tidx" type: "type" default_value { type: DT_INT32 '
        '} allowed_values { list { type: DT_INT16 type: DT_INT32 type: DT_INT64 } } } attr { '
        'name: "output_type" type: "type" default_value { type: DT_INT64 } allowed_values { '
        'list { type: DT_INT16 type: DT_UINT16 type: DT_INT32 type: DT_INT64 } } }'
    ),
    "Cast": (
        'name: "Cast" input_arg { name: "x" type_attr: "SrcT" } output_arg { name: "y" '
        'type_attr: "DstT" } attr { name: "SrcT" type: "type" } attr { name: "DstT" type: '
        '"type" } attr { name: "Truncate" type: "bool" default_value { b: false } }'
    ),
    "Squeeze": (
        'name: "Squeeze" input_arg { name: "input" type_attr: "T" } output_arg { name: '
        '"output" type_attr: "T" } attr { name: "T" type: "type" } attr { name: '
        '"squeeze_dims" type: "list(int)" default_value { list { } } has_minimum: true }'
    ),
    "Unpack": (
        'name: "Unpack" input_arg { name: "value" type_attr: "T" } output_arg { name: '
        '"output" type_attr: "T" number_attr: "num" } attr { name: "num" type: "int" '
        'has_minimum: true } attr { name: "T" type: "type" } attr { name: "axis" type: "int" '
        'default_value { i: 0 } }'
    ),
    "AddV2": (
        'name: "AddV2" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_BFLOAT16 type: DT_HALF type: DT_FLOAT type: '
        'DT_DOUBLE type: DT_UINT8 type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 type: '
        'DT_INT8 type: DT_INT16 type: DT_INT32 type: DT_INT64 type: DT_COMPLEX64 type: '
        'DT_COMPLEX128 } } } is_aggregate: true is_commutative: true'
    ),
    "Where": (
        'name: "Where" input_arg { name: "input" type_attr: "T" } output_arg { name: "index" '
        'type: DT_INT64 } attr { name: "T" type: "type" default_value { type: DT_BOOL } '
        'allowed_values { list { type: DT_FLOAT type: DT_DOUBLE type: DT_INT32 type: DT_UINT8 '
        'type: DT_INT16 type: DT_INT8 type: DT_COMPLEX64 type: DT_INT64 type: DT_QINT8 type: '
        'DT_QUINT8 type: DT_QINT32 type: DT_BFLOAT16 type: DT_QINT16 type: DT_QUINT16 type: '
        'DT_UINT16 type: DT_COMPLEX128 type: DT_HALF type: DT_UINT32 type: DT_UINT64 type: '
        'DT_BOOL } } }'
    ),
    "BiasAdd": (
        'name: "BiasAdd" input_arg { name: "value" type_attr: "T" } input_arg { name: "bias" '
        'type_attr: "T" } output_arg { name: "output" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_FLOAT type: DT_DOUBLE type: DT_INT32 type: '
        'DT_UINT8 type: DT_INT16 type: DT_INT8 type: DT_COMPLEX64 type: DT_INT64 type: '
        'DT_QINT8 type: DT_QUINT8 type: DT_QINT32 type: DT_BFLOAT16 type: DT_QINT16 type: '
        'DT_QUINT16 type: DT_UINT16 type: DT_COMPLEX128 type: DT_HALF type: DT_UINT32 type: '
        'DT_UINT64 } } } attr { name: "data_format" type: "string" default_value { s: "NHWC" '
        '} allowed_values { list { s: "NHWC" s: "NCHW" } } }'
    ),
    "StridedSlice": (
        'name: "StridedSlice" input_arg { name: "input" type_attr: "T" } input_arg { name: '
        '"begin" type_attr: "Index" } input_arg { name: "end" type_attr: "Index" } input_arg '
        '{ name: "strides" type_attr: "Index" } output_arg { name: "output" type_attr: "T" } '
        'attr { name: "T" type: "type" } attr { name: "Index" type: "type" allowed_values { '
        'list { type: DT_INT16 type: DT_INT32 type: DT_INT64 } } } attr { name: "begin_mask" '
        'type: "int" default_value { i: 0 } } attr { name: "end_mask" type: "int" '
        'default_value { i: 0 } } attr { name: "ellipsis_mask" type: "int" default_value { i: '
        '0 } } attr { name: "new_axis_mask" type: "int" default_value { i: 0 } } attr { name: '
        '"shrink_axis_mask" type: "int" default_value { i: 0 } }'
    ),
    "LeakyRelu": (
        'name: "LeakyRelu" input_arg { name: "features" type_attr: "T" } output_arg { name: '
        '"activations" type_attr: "T" } attr { name: "alpha" type: "float" default_value { f: '
        '0.2 } } attr { name: "T" type: "type" default_value { type: DT_FLOAT } '
        'allowed_values { list { type: DT_HALF type: DT_BFLOAT16 type: DT_FLOAT type: '
        'DT_DOUBLE } } }'
    ),
    "IdentityN": (
        'name: "IdentityN" input_arg { name: "input" type_list_attr: "T" } output_arg { name: '
        '"output" type_list_attr: "T" } attr { name: "T" type: "list(type)" has_minimum: true '
        'minimum: 1 }'
    ),
    "AddN": (
        'name: "AddN" input_arg { name: "inputs" type_attr: "T" number_attr: "N" } output_arg '
        '{ name: "sum" type_attr: "T" } attr { name: "N" type: "int" has_minimum: true '
        'minimum: 1 } attr { name: "T" type: "type" allowed_values { list { type: DT_FLOAT '
        'type: DT_DOUBLE type: DT_INT32 type: DT_UINT8 type: DT_INT16 type: DT_INT8 type: '
        'DT_COMPLEX64 type: DT_INT64 type: DT_QINT8 type: DT_QUINT8 type: DT_QINT32 type: '
        'DT_BFLOAT16 type: DT_QINT16 type: DT_QUINT16 type: DT_UINT16 type: DT_COMPLEX128 '
        'type: DT_HALF type: DT_UINT32 type: DT_UINT64 type: DT_VARIANT } } } is_aggregate: '
        'true is_commutative: true'
    ),
    "Const": (
        'name: "Const" output_arg { name: "output" type_attr: "dtype" } attr { name: "value" '
        'type: "tensor" } attr { name: "dtype" type: "type" }'
    ),
    "NoOp": (
        'name: "NoOp"'
    ),
    "BatchMatMulV2": (
        'name: "BatchMatMulV2" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "output" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_BFLOAT16 type: DT_HALF type: DT_FLOAT type: '
        'DT_DOUBLE type: DT_INT16 type: DT_INT32 type: DT_INT64 type: DT_UINT8 type: '
        'DT_UINT16 type: DT_UINT32 type: DT_UINT64 type: DT_COMPLEX64 type: DT_COMPLEX128 } } '
        '} attr { name: "adj_x" type: "bool" default_value { b: false } } attr { name: '
        '"adj_y" type: "bool" default_value { b: false } } attr { name: "grad_x" type: "bool" '
        'default_value { b: false } } attr { name: "grad_y" type: "bool" default_value { b: '
        'false } }'
    ),
    "GatherV2": (
        'name: "GatherV2" input_arg { name: "params" type_attr: "Tparams" } input_arg { name: '
        '"indices" type_attr: "Tindices" } input_arg { name: "axis" type_attr: "Taxis" } '
        'output_arg { name: "output" type_attr: "Tparams" } attr { name: "batch_dims" type: '
        '"int" default_value { i: 0 } } attr { name: "Tparams" type: "type" } attr { name: '
        '"Tindices" type: "type" allowed_values { list { type: DT_INT16 type: DT_INT32 type: '
        'DT_INT64 } } } attr { name: "Taxis" type: "type" allowed_values { list { type: '
        'DT_INT32 type: DT_INT64 } } }'
    ),
    "Range": (
        'name: "Range" input_arg { name: "start" type_attr: "Tidx" } input_arg { name: '
        '"limit" type_attr: "Tidx" } input_arg { name: "delta" type_attr: "Tidx" } output_arg '
        '{ name: "output" type_attr: "Tidx" } attr { name: "Tidx" type: "type" default_value '
        '{ type: DT_INT32 } allowed_values { list { type: DT_BFLOAT16 type: DT_HALF type: '
        'DT_FLOAT type: DT_DOUBLE type: DT_INT8 type: DT_INT16 type: DT_INT32 type: DT_INT64 '
        'type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 } } }'
    ),
    "_Send": (
        'name: "_Send" input_arg { name: "tensor" type_attr: "T" } attr { name: "T" type: '
        '"type" } attr { name: "tensor_name" type: "string" } attr { name: "send_device" '
        'type: "string" } attr { name: "send_device_incarnation" type: "int" } attr { name: '
        '"recv_device" type: "string" } attr { name: "client_terminated" type: "bool" '
        'default_value { b: false } } is_stateful: true'
    ),
    "_Recv": (
        'name: "_Recv" output_arg { name: "tensor" type_attr: "tensor_type" } attr { name: '
        '"tensor_type" type: "type" } attr { name: "tensor_name" type: "string" } attr { '
        'name: "send_device" type: "string" } attr { name: "send_device_incarnation" type: '
        '"int" } attr { name: "recv_device" type: "string" } attr { name: '
        '"client_terminated" type: "bool" default_value { b: false } } is_stateful: true '
        'is_distributed_communication: true'
    ),
    "GatherNd": (
        'name: "GatherNd" input_arg { name: "params" type_attr: "Tparams" } input_arg { name: '
        '"indices" type_attr: "Tindices" } output_arg { name: "output" type_attr: "Tparams" } '
        'attr { name: "Tparams" type: "type" } attr { name: "Tindices" type: "type" '
        'allowed_values { list { type: DT_INT16 type: DT_INT32 type: DT_INT64 } } } attr { '
        'name: "bad_indices_policy" type: "string" default_value { s: "" } }'
    ),
    "ScatterNd": (
        'name: "ScatterNd" input_arg { name: "indices" type_attr: "Tindices" } input_arg { '
        'name: "updates" type_attr: "T" } input_arg { name: "shape" type_attr: "Tindices" } '
        'output_arg { name: "output" type_attr: "T" } attr { name: "T" type: "type" } attr { '
        'name: "Tindices" type: "type" allowed_values { list { type: DT_INT16 type: DT_INT32 '
        'type: DT_INT64 } } } attr { name: "bad_indices_policy" type: "string" default_value '
        '{ s: "" } }'
    ),
    "ReverseV2": (
        'name: "ReverseV2" input_arg { name: "tensor" type_attr: "T" } input_arg { name: '
        '"axis" type_attr: "Tidx" } output_arg { name: "output" type_attr: "T" } attr { name: '
        '"Tidx" type: "type" default_value { type: DT_INT32 } allowed_values { list { type: '
        'DT_INT32 type: DT_INT64 } } } attr { name: "T" type: "type" allowed_values { list { '
        'type: DT_UINT8 type: DT_INT8 type: DT_UINT16 type: DT_INT16 type: DT_INT32 type: '
        'DT_UINT32 type: DT_INT64 type: DT_UINT64 type: DT_BOOL type: DT_BFLOAT16 type: '
        'DT_HALF type: DT_FLOAT type: DT_DOUBLE type: DT_COMPLEX64 type: DT_COMPLEX128 type: '
        'DT_STRING } } }'
    ),
    "MirrorPad": (
        'name: "MirrorPad" input_arg { name: "input" type_attr: "T" } input_arg { name: '
        '"paddings" type_attr: "Tpaddings" } output_arg { name: "output" type_attr: "T" } '
        'attr { name: "T" type: "type" } attr { name: "Tpaddings" type: "type" default_value '
        '{ type: DT_INT32 } allowed_values { list { type: DT_INT32 type: DT_INT64 } } } attr '
        '{ name: "mode" type: "string" allowed_values { list { s: "REFLECT" s: "SYMMETRIC" } '
        '} }'
    ),
    "BitwiseAnd": (
        'name: "BitwiseAnd" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_INT8 type: DT_INT16 type: DT_INT32 type: '
        'DT_INT64 type: DT_UINT8 type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 } } } '
        'is_commutative: true'
    ),
    "BitwiseOr": (
        'name: "BitwiseOr" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_INT8 type: DT_INT16 type: DT_INT32 type: '
        'DT_INT64 type: DT_UINT8 type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 } } } '
        'is_commutative: true'
    ),
    "BitwiseXor": (
        'name: "BitwiseXor" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_INT8 type: DT_INT16 type: DT_INT32 type: '
        'DT_INT64 type: DT_UINT8 type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 } } } '
        'is_commutative: true'
    ),
    "Invert": (
        'name: "Invert" input_arg { name: "x" type_attr: "T" } output_arg { name: "y" '
        'type_attr: "T" } attr { name: "T" type: "type" allowed_values { list { type: DT_INT8 '
        'type: DT_INT16 type: DT_INT32 type: DT_INT64 type: DT_UINT8 type: DT_UINT16 type: '
        'DT_UINT32 type: DT_UINT64 } } }'
    ),
    "LeftShift": (
        'name: "LeftShift" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_INT8 type: DT_INT16 type: DT_INT32 type: '
        'DT_INT64 type: DT_UINT8 type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 } } }'
    ),
    "RightShift": (
        'name: "RightShift" input_arg { name: "x" type_attr: "T" } input_arg { name: "y" '
        'type_attr: "T" } output_arg { name: "z" type_attr: "T" } attr { name: "T" type: '
        '"type" allowed_values { list { type: DT_INT8 type: DT_INT16 type: DT_INT32 type: '
        'DT_INT64 type: DT_UINT8 type: DT_UINT16 type: DT_UINT32 type: DT_UINT64 } } }'
    ),
}


@pytest.mark.parametrize("name", sorted(TF_OPDEFS))
def test_op_def_equals_tensorflows(name):
    expected = text_format.Parse(TF_OPDEFS[name], op_def_pb2.OpDef())
    assert ours(name) == expected, text_format.MessageToString(ours(name))


def test_matmul_attrs_and_defaults():
    op_def = op_def_registry.get("MatMul")
    assert [a.name for a in op_def.input_arg] == ["a", "b"]
    assert [a.name for a in op_def.output_arg] == ["product"]
    attrs = {a.name: a for a in op_def.attr}
    assert list(attrs) == ["transpose_a", "transpose_b", "T", "grad_a", "grad_b"]
    for name in ("transpose_a", "transpose_b", "grad_a", "grad_b"):
        assert attrs[name].type == "bool"
        assert attrs[name].default_value.b is False
    assert types_pb2.DT_FLOAT in attrs["T"].allowed_values.list.type
    assert types_pb2.DT_BOOL not in attrs["T"].allowed_values.list.type


def test_concat_v2_args():
    op_def = op_def_registry.get("ConcatV2")
    values, axis = op_def.input_arg
    assert (values.name, values.type_attr, values.number_attr) == ("values", "T", "N")
    assert (axis.name, axis.type_attr) == ("axis", "Tidx")
    n = next(a for a in op_def.attr if a.name == "N")
    assert n.has_minimum and n.minimum == 2


def test_placeholder_shape_default_is_unknown_rank():
    attr = next(a for a in op_def_registry.get("Placeholder").attr if a.name == "shape")
    assert attr.type == "shape"
    assert attr.default_value.shape.unknown_rank


def test_flags():
    assert op_def_registry.get("AddV2").is_commutative
    assert op_def_registry.get("AddV2").is_aggregate
    assert op_def_registry.get("AddN").is_aggregate
    assert op_def_registry.get("Equal").is_commutative
    assert not op_def_registry.get("Sub").is_commutative
    assert not op_def_registry.get("Const").is_stateful


def test_identity_n_uses_a_type_list():
    arg = op_def_registry.get("IdentityN").input_arg[0]
    assert arg.type_list_attr == "T" and not arg.type_attr


@pytest.mark.parametrize("name", """
    Const Placeholder PlaceholderWithDefault Identity IdentityN NoOp StopGradient
    PreventGradient Snapshot Add AddV2 Sub Mul Div RealDiv DivNoNan FloorDiv FloorMod
    TruncateDiv TruncateMod Mod Pow Maximum Minimum SquaredDifference Neg Abs Sign Square Sqrt
    Rsqrt Exp Expm1 Log Log1p Sin Cos Tan Tanh Sigmoid Reciprocal Inv Floor Ceil Round Rint
    IsNan IsInf IsFinite Erf Atan2 Less LessEqual Greater GreaterEqual Equal NotEqual
    LogicalAnd LogicalOr LogicalNot Cast AddN MatMul BatchMatMulV2 Sum Mean Max Min Prod All
    Any ArgMax ArgMin Reshape Transpose ConcatV2 Concat Pack Unpack ExpandDims Squeeze Shape
    ShapeN Size Rank Fill Range Select SelectV2 StridedSlice Slice Tile ZerosLike OnesLike
    Where GatherV2 Gather OneHot BroadcastTo Split SplitV Pad PadV2 Cumsum Relu Relu6 Elu
    Selu Softplus Softsign LeakyRelu Softmax LogSoftmax BiasAdd GatherNd ScatterNd ReverseV2
    MirrorPad BitwiseAnd BitwiseOr BitwiseXor Invert LeftShift RightShift""".split())
def test_core_op_is_registered_with_a_shape_fn(name):
    reg = op_def_registry.get_registration(name)
    assert reg is not None and reg.shape_fn is not None


def test_type_group_expands_in_tf_order():
    attr = next(a for a in op_def_registry.get("Sum").attr if a.name == "T")
    names = [dtypes.as_dtype(t).name for t in attr.allowed_values.list.type]
    assert names[:4] == ["float32", "float64", "int32", "uint8"]
    assert names[-3:] == ["float16", "uint32", "uint64"]


def test_op_coverage_page_is_current():
    """docs/op_coverage.md lists every registered op: regenerate it when ops change. In a
    fresh process: tests register ops of their own in this one."""
    docs = pathlib.Path(__file__).resolve().parent.parent / "docs"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import gen_op_coverage as g; "
            "sys.stdout.write(g.render())")
    out = subprocess.run([sys.executable, "-c", code, str(docs)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    page = (docs / "op_coverage.md").read_text()
    assert page == out.stdout, "run python docs/gen_op_coverage.py"
