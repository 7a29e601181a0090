"""Gradients through v1 control flow: the state of the gradient loops (TF's
control_flow_state), and zeros for outputs without a gradient inside conds and loops."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
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
    """Zeros for output `index` of `op`, which got no gradient (TF's ZerosLike): inside a
    cond, made only when the branch runs (behind a Switch of the op's first input)."""
    if is_switch(op):
        return None
    ctxt = op._control_flow_context
    val = ops.convert_to_tensor(op.outputs[index], name="tensor")
    array_ops.shape(val)  # TF builds (and leaves unused) this Shape
    if ctxt is not None:
        pred, branch = ctxt.pred, ctxt.branch
        switch_val = control_flow_ops.switch(op.inputs[0], pred)[1 - branch]
        pivot = array_ops.identity(switch_val)
        if val.dtype == dtypes.resource:
            raise NotImplementedError("zeros for a resource in a cond")
        zeros_shape = ops.get_default_graph().create_op(
            "Shape", [switch_val], [dtypes.int32], name=None,
            attrs=None).outputs[0]
        with ops.control_dependencies([pivot]):
            return array_ops.zeros(zeros_shape, dtype=val.dtype)
    return array_ops.zeros_like(val, optimize=False)
