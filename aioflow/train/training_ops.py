"""Builders of TF's optimizer update ops (gen_training_ops): `apply_momentum(var, accum,
lr, grad, momentum, use_locking=..., use_nesterov=...)` and the like, one per op, taking
their inputs in the OpDef's order. A ref op takes ref variables (their refs are wired);
a Resource* op takes handles."""

from __future__ import annotations

import re

from aioflow.framework import op_def_registry
from aioflow.framework.op_def_library import apply_op


def _ref(value):
    """A ref variable's ref tensor; anything else as it is."""
    if hasattr(value, "_ref") and not getattr(value, "_is_resource", False):
        return value._ref()
    return value


def _builder(op_type: str):
    op_def = op_def_registry.get(op_type)
    names = [a.name for a in op_def.input_arg]
    refs = {a.name for a in op_def.input_arg if a.is_ref}

    def build(*args, use_locking: bool = False, name=None, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{op_type} takes {len(names)} inputs, got {len(args)}")
        inputs = dict(zip(names, args, strict=False))
        for key in names[len(args):]:
            if key not in kwargs:
                raise TypeError(f"{op_type} missing required input '{key}'")
            inputs[key] = kwargs.pop(key)
        for key in refs:
            inputs[key] = _ref(inputs[key])
        return apply_op(op_type, name=name, use_locking=use_locking, **inputs, **kwargs)

    words = op_type.replace("RMSProp", "RmsProp").replace("AdagradDA", "AdagradDa")
    build.__name__ = build.__qualname__ = re.sub(r"(?<!^)(?=[A-Z])", "_", words).lower()
    build.__doc__ = f"A {op_type} op (inputs in its OpDef's order)."
    return build


_OPS = [f"{resource}{sparse}Apply{rule}"
        for rule in ("GradientDescent", "ProximalGradientDescent", "Adadelta", "Adagrad",
                     "AdagradV2", "ProximalAdagrad", "AdagradDA", "Ftrl", "FtrlV2",
                     "Momentum", "Adam", "RMSProp", "CenteredRMSProp", "AdaMax", "AddSign",
                     "PowerSign")
        for sparse in ("", "Sparse") for resource in ("", "Resource")
        if op_def_registry.get_registration(f"{resource}{sparse}Apply{rule}") is not None]

for _op in _OPS:
    _fn = _builder(_op)
    globals()[_fn.__name__] = _fn
