"""OpDefs of TF's variable ops: the ref variables of state_ops.cc (VariableV2, Assign,
Scatter*, ...) and the resource variables of resource_variable_ops.cc (VarHandleOp,
ReadVariableOp, AssignVariableOp, ...), with TF's names, attrs and flags."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework import tensor_shape
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)
_SCALAR = TensorShape([])
_NUMBER = "T: numbertype"
_INDICES = "Tindices: {int32, int64}"
_MIN_MAX = "T: {half, bfloat16, float, double, int32, int64}"


def _shapes(op) -> str:
    return ", ".join(str(t.shape) for t in op.inputs)


def _merge(op, a: TensorShape, b: TensorShape) -> TensorShape:
    """`a` and `b` merged; TF's shape-function words when they cannot be."""
    if a.rank is not None and b.rank is not None:
        if a.rank != b.rank:
            raise ValueError(f"Shapes must be equal rank, but are {a.rank} and {b.rank} for "
                             f"'{op.name}' ({op.type}) with input shapes: {_shapes(op)}.")
        for i, (x, y) in enumerate(zip(a.as_list(), b.as_list(), strict=True)):
            if x is not None and y is not None and x != y:
                raise ValueError(f"Dimension {i} in both shapes must be equal, but are {x} "
                                 f"and {y}. Shapes are {a} and {b}. for '{op.name}' "
                                 f"({op.type}) with input shapes: {_shapes(op)}.")
    return a.merge_with(b)


def _assign_shape(op) -> list[TensorShape]:
    """validate_shape: ref and value have one shape; otherwise the value's shape."""
    ref, value = op.inputs[0].shape, op.inputs[1].shape
    if op.get_attr("validate_shape"):
        return [_merge(op, ref, value)]
    return [value]


def _assign_update_shape(op) -> list[TensorShape]:
    return [_merge(op, op.inputs[0].shape, op.inputs[1].shape)]


def _scatter_shape(op) -> list[TensorShape]:
    """updates.shape == indices.shape + ref.shape[1:] (or a scalar update), as TF's
    ScatterUpdateShape; the output is the ref's shape."""
    ref, indices, updates = (t.shape for t in op.inputs)
    if ref.rank is not None and indices.rank is not None and updates.rank not in (None, 0):
        if ref.rank == 0:
            raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{op.name}' "
                             f"({op.type}) with input shapes: {_shapes(op)}.")
        _merge(op, updates, indices.concatenate(ref[1:]))
    return [ref]


def _scatter_nd_shape(op) -> list[TensorShape]:
    return [op.inputs[0].shape]


def _variable_shape(op) -> list[TensorShape]:
    shape = op.get_attr("shape")
    return [shape if isinstance(shape, TensorShape) else TensorShape(shape)]


def _count_up_to_shape(op) -> list[TensorShape]:
    shape = op.inputs[0].shape
    if shape.rank not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {shape.rank} for '{op.name}' "
                         f"({op.type}) with input shapes: {_shapes(op)}.")
    return [_SCALAR]


def _resource_gather_shape(op) -> list[TensorShape]:
    return [_UNKNOWN]


def _variable_shape_of(op) -> list[TensorShape]:
    return [TensorShape([None])]


# -- ref variables (state_ops.cc) -------------------------------------------------------------
for _name in ("VariableV2", "Variable"):
    (register_op(_name).output("ref: Ref(dtype)").attr("shape: shape").attr("dtype: type")
        .attr("container: string = ''").attr("shared_name: string = ''").set_is_stateful()
        .set_shape_fn(_variable_shape))
(register_op("Assign").input("ref: Ref(T)").input("value: T").output("output_ref: Ref(T)")
    .attr("T: type").attr("validate_shape: bool = true").attr("use_locking: bool = true")
    .set_allows_uninitialized_input().set_shape_fn(_assign_shape))
for _name in ("AssignAdd", "AssignSub"):
    (register_op(_name).input("ref: Ref(T)").input("value: T").output("output_ref: Ref(T)")
        .attr(_NUMBER).attr("use_locking: bool = false").set_shape_fn(_assign_update_shape))
(register_op("IsVariableInitialized").input("ref: Ref(dtype)").output("is_initialized: bool")
    .attr("dtype: type").set_allows_uninitialized_input().set_shape_fn(cs.scalar))
(register_op("CountUpTo").input("ref: Ref(T)").output("output: T").attr("limit: int")
    .attr("T: {int32, int64}").set_shape_fn(_count_up_to_shape))
(register_op("ResourceCountUpTo").input("resource: resource").output("output: T")
    .attr("limit: int").attr("T: {int32, int64}").set_is_stateful().set_shape_fn(cs.scalar))
(register_op("RefIdentity").input("input: Ref(T)").output("output: Ref(T)").attr("T: type")
    .set_allows_uninitialized_input().set_shape_fn(cs.unchanged_shape))
(register_op("ScatterUpdate").input("ref: Ref(T)").input("indices: Tindices")
    .input("updates: T").output("output_ref: Ref(T)").attr("T: type").attr(_INDICES)
    .attr("use_locking: bool = true").set_shape_fn(_scatter_shape))
for _name, _types in (("ScatterAdd", _NUMBER), ("ScatterSub", _NUMBER),
                      ("ScatterMul", _NUMBER), ("ScatterDiv", _NUMBER),
                      ("ScatterMin", _MIN_MAX), ("ScatterMax", _MIN_MAX)):
    (register_op(_name).input("ref: Ref(T)").input("indices: Tindices").input("updates: T")
        .output("output_ref: Ref(T)").attr(_types).attr(_INDICES)
        .attr("use_locking: bool = false").set_shape_fn(_scatter_shape))
for _name, _types, _locking in (("ScatterNdUpdate", "T: type", "true"),
                                ("ScatterNdAdd", _NUMBER, "false"),
                                ("ScatterNdSub", _NUMBER, "false")):
    (register_op(_name).input("ref: Ref(T)").input("indices: Tindices").input("updates: T")
        .output("output_ref: Ref(T)").attr(_types).attr(_INDICES)
        .attr(f"use_locking: bool = {_locking}").attr("bad_indices_policy: string = ''")
        .set_shape_fn(_scatter_nd_shape))

# -- resource variables (resource_variable_ops.cc) --------------------------------------------
(register_op("VarHandleOp").output("resource: resource").attr("container: string = ''")
    .attr("shared_name: string = ''").attr("debug_name: string = ''").attr("dtype: type")
    .attr("shape: shape").attr("allowed_devices: list(string) = []").set_is_stateful()
    .set_shape_fn(cs.scalar))
def _read_variable_shape(op):
    """The variable's shape when its handle comes straight from a VarHandleOp (TF reads it
    from the handle's shape data), else unknown."""
    handle = op.inputs[0].op
    if handle.type == "VarHandleOp":
        return [tensor_shape.as_shape(handle.get_attr("shape"))]
    return [cs.UNKNOWN]


(register_op("ReadVariableOp").input("resource: resource").output("value: dtype")
    .attr("dtype: type").set_is_stateful().set_shape_fn(_read_variable_shape))
(register_op("AssignVariableOp").input("resource: resource").input("value: dtype")
    .attr("dtype: type").attr("validate_shape: bool = false").set_is_stateful()
    .set_shape_fn(cs.no_outputs))
for _name in ("AssignAddVariableOp", "AssignSubVariableOp"):
    (register_op(_name).input("resource: resource").input("value: dtype").attr("dtype: type")
        .set_is_stateful().set_shape_fn(cs.no_outputs))
(register_op("ResourceGather").input("resource: resource").input("indices: Tindices")
    .output("output: dtype").attr("batch_dims: int = 0").attr("validate_indices: bool = true")
    .attr("dtype: type").attr(_INDICES).set_is_stateful()
    .set_shape_fn(_resource_gather_shape))
(register_op("ResourceScatterUpdate").input("resource: resource").input("indices: Tindices")
    .input("updates: dtype").attr("dtype: type").attr(_INDICES).set_is_stateful()
    .set_shape_fn(cs.no_outputs))
for _name, _types in (("ResourceScatterAdd", "dtype: numbertype"),
                      ("ResourceScatterSub", "dtype: numbertype"),
                      ("ResourceScatterMul", "dtype: numbertype"),
                      ("ResourceScatterDiv", "dtype: numbertype"),
                      ("ResourceScatterMin", "dtype: numbertype"),
                      ("ResourceScatterMax", "dtype: numbertype")):
    (register_op(_name).input("resource: resource").input("indices: Tindices")
        .input("updates: dtype").attr(_types).attr(_INDICES).set_is_stateful()
        .set_shape_fn(cs.no_outputs))
(register_op("VarIsInitializedOp").input("resource: resource").output("is_initialized: bool")
    .set_is_stateful().set_shape_fn(cs.scalar))
(register_op("VariableShape").input("input: resource").output("output: out_type")
    .attr("out_type: {int32, int64} = DT_INT32").set_is_stateful()
    .set_shape_fn(_variable_shape_of))
(register_op("DestroyResourceOp").input("resource: resource")
    .attr("ignore_lookup_error: bool = true").set_is_stateful().set_shape_fn(cs.no_outputs))
