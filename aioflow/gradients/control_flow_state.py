"""Gradients through v1 control flow: the state of the gradient loops (TF's
control_flow_state), and zeros for outputs without a gradient inside conds and loops."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, control_flow_ops


def is_switch(op) -> bool:
    return op.type in ("Switch", "RefSwitch")


def is_loop_switch(op) -> bool:
    """A Switch of a while loop (its context is a WhileContext)."""
    if not is_switch(op):
        return False
    ctxt = op._control_flow_context
    return ctxt is not None and ctxt.is_while_context()


def is_loop_exit(op) -> bool:
    return op.type in ("Exit", "RefExit")


def maybe_create_control_flow_state(between_op_list, between_ops, colocate):
    """The loop state of the while loops whose Exits lie between xs and ys, else None."""
    for op in between_op_list:
        if is_loop_exit(op):
            raise NotImplementedError("gradients through while loops are not built yet")
    return None


def zeros_like(op, index):
    """Zeros for output `index` of `op`, which got no gradient (TF's ZerosLike): for a
    cond's Switch, made only when the other branch runs (behind a Switch of its input)."""
    val = op.outputs[index]
    if not is_switch(op):
        if val.dtype == dtypes.resource:
            raise NotImplementedError(f"zeros for the resource output {val.name}")
        return _tagged_zeros(array_ops.zeros_like(val, optimize=False))
    ctxt = op._control_flow_context
    if ctxt is None:
        return _tagged_zeros(array_ops.zeros_like(val, optimize=False))
    pred, branch = ctxt.pred, ctxt.branch
    switch_val = control_flow_ops.switch(op.inputs[0], pred)[1 - branch]
    pivot = array_ops.identity(switch_val)
    if val.dtype == dtypes.resource:
        raise NotImplementedError(f"zeros for the resource output {val.name} in a cond")
    zeros_shape = apply_op("Shape", input=switch_val)
    with ops.control_dependencies([pivot]):
        return _tagged_zeros(array_ops.zeros(zeros_shape, dtype=val.dtype))


def _tagged_zeros(tensor):
    """Mark zeros made for a missing gradient, as TF's zeros_like does: a fused op's
    gradient function (the cross-entropies) skips its second-order term for them."""
    tensor._is_zeros_tensor = True
    return tensor
