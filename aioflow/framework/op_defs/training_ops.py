"""OpDefs of TF's optimizer update ops (tensorflow/core/ops/training_ops.cc): each update
rule in its four forms, Apply* (ref variables, output `out`), ResourceApply* (resource
handles, stateful, no output), SparseApply* and ResourceSparseApply* (rows `indices` of
the variable, `indices` right after `grad`), with TF's input order, attrs and defaults.

The shape function is TF's: the variable and its slots merge into one shape, the
hyper-parameters are scalars, a dense grad merges with the variable's shape, a sparse
grad's first dimension is the length of the vector `indices` and its trailing dimensions
merge with the variable's. A resource input's shape is unknown here (no handle data).
"""

from __future__ import annotations

from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_UNKNOWN = TensorShape(None)


def _shapes(op) -> str:
    return ", ".join(str(t.shape) for t in op.inputs)


def _merge(op, a: TensorShape, b: TensorShape) -> TensorShape:
    """`a` merged with `b`; TF's shape-function words when they do not agree."""
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


def _with_rank(op, index: int, rank: int) -> TensorShape:
    shape = op.inputs[index].shape
    if shape.rank is not None and shape.rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {shape.rank} for "
                         f"'{op.name}' ({op.type}) with input shapes: {_shapes(op)}.")
    return shape if shape.rank is not None else TensorShape([None] * rank)


def _var_shape(op, index: int) -> TensorShape:
    tensor = op.inputs[index]
    return _UNKNOWN if tensor.dtype.name == "resource" else tensor.shape


def _shape_fn(n_vars: int, grad: int, sparse: bool):
    """TF's Apply*ShapeFn: vars 0..n_vars-1 merge; the grad (and indices) as above; every
    other input a scalar; output 0 (ref forms only) the merged shape."""

    def fn(op) -> list[TensorShape]:
        s = _var_shape(op, 0)
        for i in range(1, n_vars):
            s = _merge(op, s, _var_shape(op, i))
        after = grad + (2 if sparse else 1)
        for i in list(range(n_vars, grad)) + list(range(after, len(op.inputs))):
            _with_rank(op, i, 0)
        g = op.inputs[grad].shape
        if not sparse:
            s = _merge(op, s, g)
        else:
            indices = _with_rank(op, grad + 1, 1)
            if g.rank is not None:
                if g.rank == 0:
                    raise ValueError(f"Shape must be at least rank 1 but is rank 0 for "
                                     f"'{op.name}' ({op.type}) with input shapes: "
                                     f"{_shapes(op)}.")
                n, first = indices.as_list()[0], g.as_list()[0]
                if n is not None and first is not None and n != first:
                    raise ValueError(f"Dimensions must be equal, but are {n} and {first} "
                                     f"for '{op.name}' ({op.type}) with input shapes: "
                                     f"{_shapes(op)}.")
                s = _merge(op, s, TensorShape([None] + g.as_list()[1:]))
        return [s] if op.outputs else []

    return fn


def _register(name: str, inputs: list[str], n_vars: int, extra_attrs: tuple[str, ...] = (),
              sparse_forms: bool = True, dense_forms: bool = True,
              resource_only: bool = False) -> None:
    """The op's dense and sparse forms, ref and resource. `inputs` lists the dense form's
    inputs ("name" or "name: type"; the first `n_vars` are variables, untyped ones T)."""
    grad = next(i for i, s in enumerate(inputs) if s.split(":")[0] in ("grad", "delta"))
    forms = []
    if dense_forms:
        forms.append((False, "Apply"))
    if sparse_forms:
        forms.append((True, "SparseApply"))
    for sparse, prefix in forms:
        args = list(inputs)
        if sparse:  # (a sparse delta is named grad)
            args[grad] = "grad"
            args.insert(grad + 1, "indices: Tindices")
        for resource in (False, True) if not resource_only else (True,):
            b = register_op(("Resource" if resource else "") + prefix + name)
            for i, spec in enumerate(args):
                if ":" in spec:
                    b.input(spec)
                elif i < n_vars:
                    b.input(f"{spec}: resource" if resource else f"{spec}: Ref(T)")
                else:
                    b.input(f"{spec}: T")
            if not resource:
                b.output("out: Ref(T)")
            b.attr("T: numbertype")
            if sparse:
                b.attr("Tindices: {int32, int64}")
            b.attr("use_locking: bool = false")
            for attr in extra_attrs:
                b.attr(attr)
            if resource:
                b.set_is_stateful()
            b.set_shape_fn(_shape_fn(n_vars, grad, sparse))


_NESTEROV = ("use_nesterov: bool = false",)
_UPDATE_SLOTS = ("update_slots: bool = true",)
_LINEAR_BY_LR = ("multiply_linear_by_lr: bool = false",)

_register("GradientDescent", ["var", "alpha", "delta"], 1, sparse_forms=False)
_register("ProximalGradientDescent", ["var", "alpha", "l1", "l2", "delta"], 1)
_register("Adadelta", ["var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"], 3)
_register("Adagrad", ["var", "accum", "lr", "grad"], 2, _UPDATE_SLOTS)
_register("AdagradV2", ["var", "accum", "lr", "epsilon", "grad"], 2, _UPDATE_SLOTS)
_register("ProximalAdagrad", ["var", "accum", "lr", "l1", "l2", "grad"], 2)
_register("AdagradDA", ["var", "gradient_accumulator", "gradient_squared_accumulator", "grad",
                        "lr", "l1", "l2", "global_step: int64"], 3)
_register("Ftrl", ["var", "accum", "linear", "grad", "lr", "l1", "l2", "lr_power"], 3,
          _LINEAR_BY_LR)
_register("FtrlV2", ["var", "accum", "linear", "grad", "lr", "l1", "l2", "l2_shrinkage",
                     "lr_power"], 3, _LINEAR_BY_LR)
_register("Momentum", ["var", "accum", "lr", "grad", "momentum"], 2, _NESTEROV)
_register("KerasMomentum", ["var", "accum", "lr", "grad", "momentum"], 2, _NESTEROV,
          resource_only=True)
_register("Adam", ["var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
                   "epsilon", "grad"], 3, _NESTEROV, sparse_forms=False)
_register("AdamWithAmsgrad", ["var", "m", "v", "vhat", "beta1_power", "beta2_power", "lr",
                              "beta1", "beta2", "epsilon", "grad"], 4, sparse_forms=False,
          resource_only=True)
_register("AdaMax", ["var", "m", "v", "beta1_power", "lr", "beta1", "beta2", "epsilon",
                     "grad"], 3, sparse_forms=False)
_register("RMSProp", ["var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"], 3)
_register("CenteredRMSProp", ["var", "mg", "ms", "mom", "lr", "rho", "momentum", "epsilon",
                              "grad"], 4)
_register("AddSign", ["var", "m", "lr", "alpha", "sign_decay", "beta", "grad"], 2,
          sparse_forms=False)
_register("PowerSign", ["var", "m", "lr", "logbase", "sign_decay", "beta", "grad"], 2,
          sparse_forms=False)
