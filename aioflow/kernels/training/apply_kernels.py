"""CPU kernels of TF's optimizer update ops: Apply*, ResourceApply*, SparseApply* and
ResourceSparseApply* of every rule (GradientDescent, Momentum, Adam, Adagrad, RMSProp,
Ftrl, ...), with TF's checks and messages, registered for the types TF registers.

One kernel class serves the four forms of a rule: the form is read from the op's name
(Resource*: handles; *SparseApply*: rows `indices`), the rule and the hyper-parameters'
checks from the table below. The update runs under the locks of all the variables
(variable_access.py); calls whose gradient is large go to the pool. The common dense
rules run as one compiled pass when numba is there (dense_jit.py), with the NumPy
rule's results.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aioflow.framework import dtypes, errors, op_def_registry
from aioflow.framework.op_kernel import OpKernel, register_kernel

from ..math.cwise_kernels import BIG, shape_str
from . import dense_jit, dense_rules, sparse_rules
from .variable_access import LockedVariables

_FLOAT = ("half", "bfloat16", "float", "double")
_COMPLEX = ("complex64", "complex128")
_DTYPES = {"half": dtypes.float16, "bfloat16": dtypes.bfloat16, "float": dtypes.float32,
           "double": dtypes.float64, "complex64": dtypes.complex64,
           "complex128": dtypes.complex128}

_L1 = "l1 regularization strength is not a scalar: "
_L2 = "l2 regularization strength is not a scalar: "
_LR_SPACE = {"lr": "lr is not a scalar : "}  # TF's words in these kernels, space and all
_POSITIVE_LR = {"lr": ("lr is not a positive scalar: ", "positive")}
_NON_NEGATIVE_L = {
    "l1": ("l1 regularization strength is not a non-negative scalar: ", "non_negative"),
    "l2": ("l2 regularization strength is not a non-negative scalar: ", "non_negative")}


@dataclass(frozen=True)
class Rule:
    """One update rule: its dense and sparse functions, the number of variables, the
    messages of its scalar checks (dense, sparse; default "<name> is not a scalar: "),
    the names its shape messages give the slots, and the types TF registers it for."""

    dense: object
    sparse: object
    n_vars: int
    dense_checks: dict = field(default_factory=dict)
    sparse_checks: dict = field(default_factory=dict)
    slot_names: tuple = ()
    types: tuple = _FLOAT + _COMPLEX
    sparse_types: tuple | None = None
    inner_dim_check: bool = False
    keras_index_message: bool = False


_FTRL_SPARSE = {**_POSITIVE_LR, **_NON_NEGATIVE_L,
                "lr_power": ("lr_power is not a non-positive scalar: ", "non_positive"),
                "l2_shrinkage": ("l2 shrinkage regularization strength is not a "
                                 "non-negative scalar: ", "non_negative")}
_FTRL_DENSE = {"l1": _L1, "l2": _L2, "lr_power": "lr_power is not a scalar",
               "l2_shrinkage": "l2 shrinkage regularization strength is not a scalar: "}

RULES = {
    "GradientDescent": Rule(dense_rules.gradient_descent, None, 1),
    "ProximalGradientDescent": Rule(
        dense_rules.proximal_gradient_descent, dense_rules.proximal_gradient_descent, 1,
        {"l1": _L1, "l2": _L2}, {"alpha": "lr is not a scalar: ", "l1": _L1, "l2": _L2},
        types=("float", "double"), inner_dim_check=True),
    "Adadelta": Rule(dense_rules.adadelta, dense_rules.adadelta, 3,
                     slot_names=("accum", "accum_update")),
    "Adagrad": Rule(dense_rules.adagrad, dense_rules.adagrad, 2, inner_dim_check=True),
    "AdagradV2": Rule(dense_rules.adagrad_v2, dense_rules.adagrad_v2, 2,
                      inner_dim_check=True),
    "ProximalAdagrad": Rule(
        dense_rules.proximal_adagrad, dense_rules.proximal_adagrad, 2,
        {**_POSITIVE_LR, **_NON_NEGATIVE_L}, {**_POSITIVE_LR, **_NON_NEGATIVE_L},
        types=("float", "double"), inner_dim_check=True),
    "AdagradDA": Rule(dense_rules.adagrad_da, sparse_rules.adagrad_da, 3,
                      {"l1": _L1, "l2": _L2}, {"l1": _L1, "l2": _L2},
                      slot_names=("accum", "accum"), types=("float", "double"),
                      inner_dim_check=True),
    "Ftrl": Rule(dense_rules.ftrl, sparse_rules.ftrl, 3, _FTRL_DENSE, _FTRL_SPARSE,
                 types=_FLOAT, inner_dim_check=True),
    "FtrlV2": Rule(dense_rules.ftrl, sparse_rules.ftrl, 3, _FTRL_DENSE, _FTRL_SPARSE,
                   types=_FLOAT, inner_dim_check=True),
    "Momentum": Rule(dense_rules.momentum, dense_rules.momentum, 2, {}, _LR_SPACE),
    "KerasMomentum": Rule(dense_rules.keras_momentum, dense_rules.keras_momentum, 2, {},
                          _LR_SPACE, keras_index_message=True),
    "Adam": Rule(dense_rules.adam, None, 3, _LR_SPACE),
    "AdamWithAmsgrad": Rule(dense_rules.adam_with_amsgrad, None, 4, _LR_SPACE,
                            types=_FLOAT),
    "AdaMax": Rule(dense_rules.ada_max, None, 3, _LR_SPACE,
                   types=("half", "float", "double")),
    "RMSProp": Rule(dense_rules.rms_prop, sparse_rules.rms_prop, 3, _LR_SPACE,
                    sparse_types=("half", "float", "double") + _COMPLEX),
    "CenteredRMSProp": Rule(dense_rules.centered_rms_prop, sparse_rules.centered_rms_prop,
                            4, _LR_SPACE,
                            sparse_types=("half", "float", "double") + _COMPLEX),
    "AddSign": Rule(dense_rules.add_sign, None, 2, types=_FLOAT),
    "PowerSign": Rule(dense_rules.power_sign, None, 2, types=_FLOAT),
}

_ATTRS = ("use_nesterov", "update_slots", "multiply_linear_by_lr")
#: Gradient elements above which a compiled dense update goes to the pool (Adam: ~0.2 ms
#: a million elements on one core; the NumPy rules go from BIG).
_FUSED_BIG = 1 << 20


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class ApplyOp(OpKernel):
    """Any form of any rule (see the module docstring)."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        name = self.op_type
        self.resource = name.startswith("Resource")
        self.sparse = "SparseApply" in name
        self.rule = RULES[name.split("Apply", 1)[1]]
        self.fn = self.rule.sparse if self.sparse else self.rule.dense
        op_def = op_def_registry.get(name)
        arg_names = [a.name for a in op_def.input_arg]
        n = self.rule.n_vars
        inputs = list(ctx.node_def.input)
        self.var_names = [inputs[i] if i < len(inputs) else arg_names[i] for i in range(n)]
        self.slot_names = self.rule.slot_names or tuple(arg_names[1:n])
        self.grad_index = next(i for i, a in enumerate(arg_names) if a in ("grad", "delta"))
        self.grad_name = arg_names[self.grad_index]
        checks = self.rule.sparse_checks if self.sparse else self.rule.dense_checks
        self.scalars = []
        for i, arg in enumerate(arg_names):
            if i < n or i == self.grad_index or arg == "indices":
                continue
            check = checks.get(arg, f"{arg} is not a scalar: ")
            message, kind = check if isinstance(check, tuple) else (check, None)
            self.scalars.append((i, arg, message, kind))
        self.attrs = {a: ctx.get_attr(a) for a in _ATTRS if ctx.has_attr(a)}
        self.dtype = ctx.get_attr("T").as_numpy_dtype
        self._np_dtype = np.dtype(self.dtype)
        self.fused = None if self.sparse else dense_jit.fused_for(self.fn)

    def is_expensive(self, inputs: list) -> bool:
        size = np.size(inputs[self.grad_index])
        if self.fused is not None and self.fused.group.ready():
            return size > _FUSED_BIG
        return size > BIG

    def compute(self, ctx, inputs):
        with LockedVariables(ctx, inputs, self.var_names, self.resource) as bufs:
            h = self._hyper(inputs)
            grad = np.asarray(inputs[self.grad_index])
            if self.sparse:
                self._sparse(bufs, h, grad, np.asarray(inputs[self.grad_index + 1]))
            else:
                self._dense(bufs, h, grad)
        return () if self.resource else (inputs[0],)

    def _hyper(self, inputs) -> dict:
        h = dict(self.attrs)
        dtype = self._np_dtype
        for i, arg, message, kind in self.scalars:
            value = inputs[i]
            if value.__class__ is not np.ndarray:
                value = np.asarray(value)
            if value.ndim != 0 or (kind is not None and not _holds(kind, value)):
                raise _invalid(f"{message}{shape_str(value.shape)}")
            if arg == "global_step":
                h[arg] = int(value)
            else:  # the scalar of T (a 0-d input of T is read as it is)
                h[arg] = value[()] if value.dtype == dtype else self.dtype(value)
        return h

    def _check_slots(self, bufs) -> None:
        var = bufs[0]
        for name, buf in zip(self.slot_names, bufs[1:], strict=False):
            if buf.shape != var.shape:
                raise _invalid(f"var and {name} do not have the same shape"
                               f"{shape_str(var.shape)} {shape_str(buf.shape)}")

    def _dense(self, bufs, h, grad) -> None:
        self._check_slots(bufs)
        var = bufs[0]
        if grad.shape != var.shape:
            raise _invalid(f"var and {self.grad_name} do not have the same shape"
                           f"{shape_str(var.shape)} {shape_str(grad.shape)}")
        if self.fused is None or not self.fused(bufs, h, grad):
            self.fn(bufs, h, grad)

    def _sparse(self, bufs, h, grad, indices) -> None:
        self._check_slots(bufs)
        var = bufs[0]
        if var.ndim < 1:
            raise _invalid("var must be at least 1 dimensional")
        if indices.ndim != 1:
            raise _invalid("indices must be one-dimensional")
        for d in range(1, var.ndim):
            if grad.ndim <= d or var.shape[d] != grad.shape[d]:
                raise _invalid(f"var and grad must match in dimension {d}")
        n = indices.shape[0]
        if grad.ndim < 1 or grad.shape[0] != n:
            raise _invalid("grad must be the same size as indices in the first dimension.")
        inner = int(np.prod(var.shape[1:], dtype=np.int64))
        if self.rule.inner_dim_check and inner <= 0:
            raise _invalid("Inner dimension should be greater than zero.")
        if n == 0:
            return
        flat = indices.astype(np.int64, copy=False)
        self._check_indices(flat, var.shape[0])
        h["vector"] = inner == 1
        sparse_rules.update_rows(self.fn, bufs, h, grad, flat)

    def _check_indices(self, flat, first_dim: int) -> None:
        bad = (flat < 0) | (flat >= first_dim)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            if self.rule.keras_index_message:
                raise _invalid(f"indices[{i}] = {flat[i]} is not in [0, {first_dim})")
            raise _invalid(f"Index {flat[i]} at offset {i} in indices is out of range")


def _holds(kind, value) -> bool:
    if kind == "positive":
        return bool(value > 0)
    if kind == "non_negative":
        return bool(value >= 0)
    if kind == "non_positive":
        return bool(value <= 0)
    return True


def _register() -> None:
    resource_only = {"KerasMomentum", "AdamWithAmsgrad"}
    for family, rule in RULES.items():
        forms = [("Apply", rule.types)]
        if rule.sparse is not None:
            forms.append(("SparseApply", rule.sparse_types or rule.types))
        for prefix, types in forms:
            allowed = [_DTYPES[t] for t in types]
            names = ["Resource" + prefix + family]
            if family not in resource_only:
                names.append(prefix + family)
            for name in names:
                if prefix == "SparseApply":
                    register_kernel(name, T=allowed, Tindices=[dtypes.int32, dtypes.int64])(
                        ApplyOp)
                else:
                    register_kernel(name, T=allowed)(ApplyOp)


_register()
