"""OpDefs of TF's array ops (tensorflow/core/ops/array_ops.cc): constants, placeholders,
identities, reshaping, concatenation and splitting, slicing, gathering and scattering,
reversing, padding."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_INT_INDEX = "{int32, int64} = DT_INT32"

(register_op("Const").output("output: dtype").attr("value: tensor").attr("dtype: type")
    .set_shape_fn(cs.const))
(register_op("Placeholder").output("output: dtype").attr("dtype: type")
    .attr("shape: shape = { unknown_rank: true }").set_shape_fn(cs.shape_attr))
(register_op("PlaceholderWithDefault").input("input: dtype").output("output: dtype")
    .attr("dtype: type").attr("shape: shape").set_shape_fn(cs.shape_attr))

for _name in ("Identity", "Snapshot", "StopGradient"):
    (register_op(_name).input("input: T").output("output: T").attr("T: type")
        .set_shape_fn(cs.unchanged_shape))
(register_op("PreventGradient").input("input: T").output("output: T").attr("T: type")
    .attr("message: string = ''").set_shape_fn(cs.unchanged_shape))
(register_op("IdentityN").input("input: T").output("output: T").attr("T: list(type) >= 1")
    .set_shape_fn(cs.unchanged_shapes))

# -- shapes and reshaping --------------------------------------------------------------------
(register_op("Reshape").input("tensor: T").input("shape: Tshape").output("output: T")
    .attr("T: type").attr(f"Tshape: {_INT_INDEX}").set_shape_fn(cs.reshape))
(register_op("Transpose").input("x: T").input("perm: Tperm").output("y: T")
    .attr("T: type").attr(f"Tperm: {_INT_INDEX}").set_shape_fn(cs.transpose))
(register_op("ExpandDims").input("input: T").input("dim: Tdim").output("output: T")
    .attr("T: type").attr(f"Tdim: {_INT_INDEX}").set_shape_fn(cs.expand_dims))
(register_op("Squeeze").input("input: T").output("output: T").attr("T: type")
    .attr("squeeze_dims: list(int) >= 0 = []").set_shape_fn(cs.squeeze))
(register_op("Shape").input("input: T").output("output: out_type").attr("T: type")
    .attr(f"out_type: {_INT_INDEX}").set_shape_fn(cs.shape_op))
(register_op("ShapeN").input("input: N * T").output("output: N * out_type").attr("N: int >= 1")
    .attr("T: type").attr(f"out_type: {_INT_INDEX}").set_shape_fn(cs.shape_op))
(register_op("Size").input("input: T").output("output: out_type").attr("T: type")
    .attr(f"out_type: {_INT_INDEX}").set_shape_fn(cs.scalar))
(register_op("Rank").input("input: T").output("output: int32").attr("T: type")
    .set_shape_fn(cs.scalar))
(register_op("Fill").input("dims: index_type").input("value: T").output("output: T")
    .attr("T: type").attr(f"index_type: {_INT_INDEX}").set_shape_fn(cs.fill))
(register_op("BroadcastTo").input("input: T").input("shape: Tidx").output("output: T")
    .attr("T: type").attr(f"Tidx: {_INT_INDEX}").set_shape_fn(cs.fill))
(register_op("ZerosLike").input("x: T").output("y: T").attr("T: type")
    .set_shape_fn(cs.unchanged_shape))
(register_op("OnesLike").input("x: T").output("y: T")
    .attr("T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, int64, "
          "uint64, complex64, complex128, bool}")
    .set_shape_fn(cs.unchanged_shape))

# -- joining and splitting -------------------------------------------------------------------
(register_op("ConcatV2").input("values: N * T").input("axis: Tidx").output("output: T")
    .attr("N: int >= 2").attr("T: type").attr(f"Tidx: {_INT_INDEX}").set_shape_fn(cs.concat))
(register_op("Concat").input("concat_dim: int32").input("values: N * T").output("output: T")
    .attr("N: int >= 2").attr("T: type").set_shape_fn(cs.concat))
(register_op("Pack").input("values: N * T").output("output: T").attr("N: int >= 1")
    .attr("T: type").attr("axis: int = 0").set_shape_fn(cs.pack))
(register_op("Unpack").input("value: T").output("output: num * T").attr("num: int >= 0")
    .attr("T: type").attr("axis: int = 0").set_shape_fn(cs.unpack))
(register_op("Split").input("split_dim: int32").input("value: T")
    .output("output: num_split * T").attr("num_split: int >= 1").attr("T: type")
    .set_shape_fn(cs.split))
(register_op("SplitV").input("value: T").input("size_splits: Tlen").input("split_dim: int32")
    .output("output: num_split * T").attr("num_split: int >= 1").attr("T: type")
    .attr("Tlen: {int8, int32, int64} = DT_INT64").set_shape_fn(cs.split_v))
(register_op("Tile").input("input: T").input("multiples: Tmultiples").output("output: T")
    .attr("T: type").attr(f"Tmultiples: {_INT_INDEX}").set_shape_fn(cs.tile))
(register_op("Pad").input("input: T").input("paddings: Tpaddings").output("output: T")
    .attr("T: type").attr(f"Tpaddings: {_INT_INDEX}").set_shape_fn(cs.pad))
(register_op("PadV2").input("input: T").input("paddings: Tpaddings")
    .input("constant_values: T").output("output: T")
    .attr("T: type").attr(f"Tpaddings: {_INT_INDEX}").set_shape_fn(cs.pad))
(register_op("MirrorPad").input("input: T").input("paddings: Tpaddings").output("output: T")
    .attr("T: type").attr(f"Tpaddings: {_INT_INDEX}").attr("mode: {'REFLECT', 'SYMMETRIC'}")
    .set_shape_fn(cs.mirror_pad))
(register_op("ReverseV2").input("tensor: T").input("axis: Tidx").output("output: T")
    .attr(f"Tidx: {_INT_INDEX}")
    .attr("T: {uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, bfloat16, half, "
          "float, double, complex64, complex128, string}")
    .set_shape_fn(cs.reverse_v2))

# -- slicing and gathering -------------------------------------------------------------------
(register_op("StridedSlice").input("input: T").input("begin: Index").input("end: Index")
    .input("strides: Index").output("output: T").attr("T: type")
    .attr("Index: {int16, int32, int64}")
    .attr("begin_mask: int = 0").attr("end_mask: int = 0").attr("ellipsis_mask: int = 0")
    .attr("new_axis_mask: int = 0").attr("shrink_axis_mask: int = 0")
    .set_shape_fn(cs.strided_slice))
(register_op("Slice").input("input: T").input("begin: Index").input("size: Index")
    .output("output: T").attr("T: type").attr("Index: {int32, int64}")
    .set_shape_fn(cs.slice_shape))
(register_op("GatherV2").input("params: Tparams").input("indices: Tindices")
    .input("axis: Taxis").output("output: Tparams").attr("batch_dims: int = 0")
    .attr("Tparams: type").attr("Tindices: {int16, int32, int64}").attr("Taxis: {int32, int64}")
    .set_shape_fn(cs.gather))
(register_op("Gather").input("params: Tparams").input("indices: Tindices")
    .output("output: Tparams").attr("validate_indices: bool = true").attr("Tparams: type")
    .attr("Tindices: {int32, int64}").set_shape_fn(cs.gather))
(register_op("Where").input("input: T").output("index: int64")
    .attr("T: {numbertype, bool} = DT_BOOL").set_shape_fn(cs.where))
(register_op("OneHot").input("indices: TI").input("depth: int32").input("on_value: T")
    .input("off_value: T").output("output: T").attr("axis: int = -1").attr("T: type")
    .attr("TI: {uint8, int8, int32, int64} = DT_INT64").set_shape_fn(cs.one_hot))
(register_op("GatherNd").input("params: Tparams").input("indices: Tindices")
    .output("output: Tparams").attr("Tparams: type").attr("Tindices: {int16, int32, int64}")
    .attr("bad_indices_policy: string = ''").set_shape_fn(cs.gather_nd))
(register_op("ScatterNd").input("indices: Tindices").input("updates: T").input("shape: Tindices")
    .output("output: T").attr("T: type").attr("Tindices: {int16, int32, int64}")
    .attr("bad_indices_policy: string = ''").set_shape_fn(cs.scatter_nd))


def _ensure_shape(op):
    """The input's shape merged with the `shape` attr (TF's EnsureShape shape fn)."""
    return [op.inputs[0].shape.merge_with(op.get_attr("shape"))]


# tf.ensure_shape: TF 2 exports carry it (a Keras model's inputs, tf.function bodies).
(register_op("EnsureShape").input("input: T").output("output: T").attr("shape: shape")
    .attr("T: type").set_shape_fn(_ensure_shape))


# -- unique values, set differences, reordering, tensor scatters, fake quantization -----

def _vector(op) -> list[TensorShape]:
    return [TensorShape([None])]


def _unique(op) -> list[TensorShape]:
    """y: [?]; idx: x's length; count: [?]."""
    x = op.inputs[0].shape
    idx = TensorShape([x.as_list()[0]]) if x.rank == 1 else TensorShape([None])
    return [TensorShape([None]), idx] + [TensorShape([None])] * (len(op.outputs) - 2)


def _unique_v2(op) -> list[TensorShape]:
    x = op.inputs[0].shape
    y = cs.UNKNOWN if x.rank is None else cs._of_rank(x.rank)
    return [y, TensorShape([None])] + [TensorShape([None])] * (len(op.outputs) - 2)


def _per_channel(op) -> list[TensorShape]:
    data, low = op.inputs[0].shape, op.inputs[1].shape
    if data.rank and low.rank == 1:
        a, b = data.as_list()[-1], low.as_list()[0]
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimensions must be equal, but are {a} and {b} for "
                             f"'{op.name}' ({op.type}) with input shapes: {data}, {low}, "
                             f"{op.inputs[2].shape}.")
    return [data]


(register_op("Unique").input("x: T").output("y: T").output("idx: out_idx").attr("T: type")
    .attr("out_idx: {int32, int64} = DT_INT32").set_shape_fn(_unique))
(register_op("UniqueWithCounts").input("x: T").output("y: T").output("idx: out_idx")
    .output("count: out_idx").attr("T: type").attr("out_idx: {int32, int64} = DT_INT32")
    .set_shape_fn(_unique))
(register_op("UniqueV2").input("x: T").input("axis: Taxis").output("y: T")
    .output("idx: out_idx").attr("T: type").attr("Taxis: {int32, int64} = DT_INT64")
    .attr("out_idx: {int32, int64} = DT_INT32").set_shape_fn(_unique_v2))
(register_op("UniqueWithCountsV2").input("x: T").input("axis: Taxis").output("y: T")
    .output("idx: out_idx").output("count: out_idx").attr("T: type")
    .attr("Taxis: {int32, int64} = DT_INT64").attr("out_idx: {int32, int64} = DT_INT32")
    .set_shape_fn(_unique_v2))
(register_op("BroadcastArgs").input("s0: T").input("s1: T").output("r0: T")
    .attr("T: {int32, int64} = DT_INT32").set_shape_fn(_vector))
(register_op("ReverseSequence").input("input: T").input("seq_lengths: Tlen").output("output: T")
    .attr("seq_dim: int").attr("batch_dim: int = 0").attr("T: type")
    .attr("Tlen: {int32, int64} = DT_INT64").set_shape_fn(cs.unchanged_shape))
(register_op("InvertPermutation").input("x: T").output("y: T")
    .attr(f"T: {_INT_INDEX}").set_shape_fn(cs.unchanged_shape))
(register_op("ListDiff").input("x: T").input("y: T").output("out: T").output("idx: out_idx")
    .attr("T: type").attr(f"out_idx: {_INT_INDEX}")
    .set_shape_fn(lambda op: [TensorShape([None]), TensorShape([None])]))
(register_op("TensorScatterUpdate").input("tensor: T").input("indices: Tindices")
    .input("updates: T").output("output: T").attr("T: type")
    .attr("Tindices: {int16, int32, int64, uint16}").attr("bad_indices_policy: string = ''")
    .set_shape_fn(cs.unchanged_shape))
for _name in ("TensorScatterAdd", "TensorScatterSub", "TensorScatterMax", "TensorScatterMin"):
    (register_op(_name).input("tensor: T").input("indices: Tindices").input("updates: T")
        .output("output: T").attr("T: type").attr("Tindices: {int32, int64}")
        .attr("bad_indices_policy: string = ''").set_shape_fn(cs.unchanged_shape))
(register_op("ScatterNdNonAliasingAdd").input("input: T").input("indices: Tindices")
    .input("updates: T").output("output: T")
    .attr("T: {numbertype, bool}").attr("Tindices: {int32, int64}")
    .attr("bad_indices_policy: string = ''").set_shape_fn(cs.unchanged_shape))
(register_op("FakeQuantWithMinMaxArgs").input("inputs: float").output("outputs: float")
    .attr("min: float = -6.0").attr("max: float = 6.0").attr("num_bits: int = 8")
    .attr("narrow_range: bool = false").set_shape_fn(cs.unchanged_shape))
(register_op("FakeQuantWithMinMaxVars").input("inputs: float").input("min: float")
    .input("max: float").output("outputs: float").attr("num_bits: int = 8")
    .attr("narrow_range: bool = false").set_shape_fn(cs.unchanged_shape))
(register_op("FakeQuantWithMinMaxVarsPerChannel").input("inputs: float").input("min: float")
    .input("max: float").output("outputs: float").attr("num_bits: int = 8")
    .attr("narrow_range: bool = false").set_shape_fn(_per_channel))


def _diag_part_shape(op):
    """[D1..Dk] of a [D1..Dk, D1..Dk] input (TF's DiagPart shape function)."""
    shape = op.inputs[0].shape
    if shape.rank is None or shape.rank % 2:
        return [TensorShape(None)]
    half = shape.rank // 2
    dims = shape.as_list()
    return [TensorShape([a if a is not None else b
                         for a, b in zip(dims[:half], dims[half:], strict=True)])]


(register_op("DiagPart").input("input: T").output("diagonal: T")
    .attr("T: {bfloat16, half, float, double, int32, int64, complex64, complex128}")
    .set_shape_fn(_diag_part_shape))
