"""OpDefs of TF's math ops (tensorflow/core/ops/math_ops.cc): element-wise arithmetic,
comparisons, logic, Cast, AddN, matrix products, reductions, Range, Select, Cumsum."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

# Type sets, spelled (and ordered) as TF's OpDefs list them.
_FLOAT = "{bfloat16, half, float, double}"
_FLOAT_COMPLEX = "{bfloat16, half, float, double, complex64, complex128}"
_SIGNED_COMPLEX = ("{bfloat16, half, float, double, int8, int16, int32, int64, complex64, "
                   "complex128}")
_DIV = ("{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, uint32, uint64, "
        "int64, complex64, complex128}")
_MINMAX = ("{bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, int64, "
           "uint64}")
_REDUCE_IDX = "Tidx: {int32, int64} = DT_INT32"


def _unary(name: str, types: str, out: str = "T"):
    """x: T -> y: T (or bool), same shape."""
    return (register_op(name).input("x: T").output(f"y: {out}").attr(f"T: {types}")
            .set_shape_fn(cs.unchanged_shape))


def _binary(name: str, types: str, out: str = "T", commutative: bool = False):
    """x: T, y: T -> z: T (or bool), NumPy broadcasting."""
    b = (register_op(name).input("x: T").input("y: T").output(f"z: {out}").attr(f"T: {types}")
         .set_shape_fn(cs.broadcast_binary))
    return b.set_is_commutative() if commutative else b


# -- element-wise binary ---------------------------------------------------------------------
_binary("Add", "{bfloat16, half, float, double, uint8, int8, int16, int32, int64, complex64, "
               "complex128, string}")
_binary("AddV2", "{bfloat16, half, float, double, uint8, uint16, uint32, uint64, int8, int16, "
                 "int32, int64, complex64, complex128}", commutative=True).set_is_aggregate()
_binary("Sub", "{bfloat16, half, float, double, uint8, int8, uint16, int16, int32, int64, "
               "complex64, complex128, uint32, uint64}")
_binary("Mul", _DIV, commutative=True)
_binary("Div", _DIV)
_binary("RealDiv", _DIV)
_binary("DivNoNan", "{half, float, bfloat16, double, complex64, complex128}")
_binary("FloorDiv", _DIV)
_binary("FloorMod", "{int8, int16, int32, int64, uint8, uint16, uint32, uint64, bfloat16, half, "
                    "float, double}")
_binary("TruncateDiv", _DIV)
_binary("TruncateMod", "{int32, int64, bfloat16, half, float, double}")
# TF lists half twice here (float16 and half); the registry keeps one.
_binary("Mod", "{int32, int64, half, bfloat16, float, double}")
_binary("Pow", "{bfloat16, float, half, double, int8, int16, int32, int64, complex64, complex128}")
_binary("Maximum", _MINMAX)
_binary("Minimum", _MINMAX)
_binary("SquaredDifference", "{bfloat16, half, float, double, int32, int64, complex64, complex128}",
        commutative=True)
# x == 0 gives 0 whatever y is (TF's xdivy/xlogy/xlog1py functors).
_XTYPES = "{half, bfloat16, float, double, complex64, complex128}"
_binary("Xdivy", _XTYPES)
_binary("Xlogy", _XTYPES)
_binary("Xlog1py", _XTYPES)
(register_op("Atan2").input("y: T").input("x: T").output("z: T").attr(f"T: {_FLOAT}")
    .set_shape_fn(cs.broadcast_binary))

# -- element-wise unary ----------------------------------------------------------------------
_unary("Neg", _SIGNED_COMPLEX)
_unary("Abs", "{bfloat16, half, float, double, int8, int16, int32, int64}")
_unary("Sign", _SIGNED_COMPLEX)
_unary("Square", "{bfloat16, half, float, double, int8, int16, int32, int64, uint8, uint16, "
                 "uint32, uint64, complex64, complex128}")
for _name in ("Sqrt", "Rsqrt", "Exp", "Expm1", "Log", "Log1p", "Sin", "Cos", "Tan", "Asin",
              "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Sigmoid"):
    _unary(_name, _FLOAT_COMPLEX)
for _name in ("Asinh", "Acosh", "Atanh"):
    _unary(_name, _FLOAT_COMPLEX)
_unary("Reciprocal", _SIGNED_COMPLEX)
_unary("Inv", _SIGNED_COMPLEX)
for _name in ("Floor", "Ceil"):
    _unary(_name, _FLOAT)
_unary("Round", _SIGNED_COMPLEX)
_unary("Rint", _FLOAT)
for _name in ("IsNan", "IsInf", "IsFinite"):
    _unary(_name, _FLOAT, out="bool")
for _name in ("Erf", "Erfc"):
    _unary(_name, _FLOAT)

# -- comparisons and logic -------------------------------------------------------------------
for _name in ("Less", "LessEqual", "Greater", "GreaterEqual"):
    _binary(_name, "realnumbertype", out="bool")
for _name in ("Equal", "NotEqual"):
    (register_op(_name).input("x: T").input("y: T").output("z: bool").attr("T: type")
        .attr("incompatible_shape_error: bool = true").set_is_commutative()
        .set_shape_fn(cs.equality))
for _name in ("LogicalAnd", "LogicalOr"):
    (register_op(_name).input("x: bool").input("y: bool").output("z: bool").set_is_commutative()
        .set_shape_fn(cs.broadcast_binary))
register_op("LogicalNot").input("x: bool").output("y: bool").set_shape_fn(cs.unchanged_shape)

# -- casts and aggregation -------------------------------------------------------------------
(register_op("Cast").input("x: SrcT").output("y: DstT").attr("SrcT: type").attr("DstT: type")
    .attr("Truncate: bool = false").set_shape_fn(cs.unchanged_shape))
(register_op("AddN").input("inputs: N * T").output("sum: T").attr("N: int >= 1")
    .attr("T: {numbertype, variant}").set_is_commutative().set_is_aggregate()
    .set_shape_fn(cs.merge_all_inputs))

# -- matrix products -------------------------------------------------------------------------
(register_op("MatMul").input("a: T").input("b: T").output("product: T")
    .attr("transpose_a: bool = false").attr("transpose_b: bool = false")
    .attr("T: {bfloat16, half, float, double, int32, int64, uint8, uint16, uint32, uint64, "
          "complex64, complex128}")
    .attr("grad_a: bool = false").attr("grad_b: bool = false")
    .set_shape_fn(cs.matmul))
for _name, _types in (
    ("BatchMatMul", "{bfloat16, half, float, double, int32, int64, complex64, complex128}"),
    ("BatchMatMulV2", "{bfloat16, half, float, double, int16, int32, int64, uint8, uint16, "
                      "uint32, uint64, complex64, complex128}"),
):
    (register_op(_name).input("x: T").input("y: T").output("output: T").attr(f"T: {_types}")
        .attr("adj_x: bool = false").attr("adj_y: bool = false")
        .attr("grad_x: bool = false").attr("grad_y: bool = false")
        .set_shape_fn(cs.batch_matmul))

# -- reductions ------------------------------------------------------------------------------
for _name, _types in (("Sum", "numbertype"), ("Mean", "numbertype"), ("Prod", "numbertype"),
                      ("Max", "{realnumbertype, quantizedtype}"),
                      ("Min", "{realnumbertype, quantizedtype}")):
    (register_op(_name).input("input: T").input("reduction_indices: Tidx").output("output: T")
        .attr("keep_dims: bool = false").attr(f"T: {_types}").attr(_REDUCE_IDX)
        .set_shape_fn(cs.reduction))
for _name in ("All", "Any"):
    (register_op(_name).input("input: bool").input("reduction_indices: Tidx")
        .output("output: bool").attr("keep_dims: bool = false").attr(_REDUCE_IDX)
        .set_shape_fn(cs.reduction))
(register_op("ArgMax").input("input: T").input("dimension: Tidx").output("output: output_type")
    .attr("T: {realnumbertype, quantizedtype, bool}").attr("Tidx: {int16, int32, int64} = DT_INT32")
    .attr("output_type: {int16, uint16, int32, int64} = DT_INT64")
    .set_shape_fn(cs.arg_min_max))
(register_op("ArgMin").input("input: T").input("dimension: Tidx").output("output: output_type")
    .attr("T: {realnumbertype, quantizedtype, bool}").attr(_REDUCE_IDX)
    .attr("output_type: {int32, int64} = DT_INT64")
    .set_shape_fn(cs.arg_min_max))

# -- sequences and selection -----------------------------------------------------------------
(register_op("Range").input("start: Tidx").input("limit: Tidx").input("delta: Tidx")
    .output("output: Tidx")
    .attr("Tidx: {bfloat16, half, float, double, int8, int16, int32, int64, uint16, uint32, "
          "uint64} = DT_INT32")
    .set_shape_fn(cs.range_shape))
(register_op("Select").input("condition: bool").input("t: T").input("e: T").output("output: T")
    .attr("T: type").set_shape_fn(cs.select))
(register_op("SelectV2").input("condition: bool").input("t: T").input("e: T").output("output: T")
    .attr("T: type").set_shape_fn(cs.select_v2))
for _name in ("Cumsum", "Cumprod"):
    (register_op(_name).input("x: T").input("axis: Tidx").output("out: T")
        .attr("exclusive: bool = false").attr("reverse: bool = false").attr("T: numbertype")
        .attr(_REDUCE_IDX).set_shape_fn(cs.unchanged_shape))


# -- special functions, clipping, bucketing, LinSpace, Bincount ------------------------

def _vector(op) -> list[TensorShape]:
    return [TensorShape([None])]


for _name in ("Lgamma", "Digamma"):
    (register_op(_name).input("x: T").output("y: T").attr(f"T: {_FLOAT}")
        .set_shape_fn(cs.unchanged_shape))
(register_op("ClipByValue").input("t: T").input("clip_value_min: T").input("clip_value_max: T")
    .output("output: T").attr("T: numbertype").set_shape_fn(cs.unchanged_shape))
(register_op("Bucketize").input("input: T").output("output: int32")
    .attr("T: {int32, int64, float, double}").attr("boundaries: list(float)")
    .set_shape_fn(cs.unchanged_shape))
(register_op("LinSpace").input("start: T").input("stop: T").input("num: Tidx")
    .output("output: T").attr("T: {bfloat16, half, float, double}")
    .attr("Tidx: {int32, int64} = DT_INT32").set_shape_fn(_vector))
(register_op("Bincount").input("arr: int32").input("size: int32").input("weights: T")
    .output("bins: T").attr("T: {int32, int64, float, double}").set_shape_fn(_vector))
