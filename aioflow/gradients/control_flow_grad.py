"""Gradient functions of the v1 control-flow ops (TF's control_flow_grad.py): a cond's
Switch and Merge swap roles in the gradient (Merge "cond_grad" / Switch on the pred); a
while loop's Exit becomes the gradient loop's Enter ("b_exit"), its Switch a Merge
("b_switch") with a back edge, its Enter an Exit or (loop invariants) an accumulator."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import control_flow_ops, math_ops
from aioflow.ops.control_flow_ops import CondContext, WhileContext


def _switch_grad(op, *grad):
    graph = ops.get_default_graph()
    op_ctxt = op._control_flow_context
    grad_ctxt = graph._get_control_flow_context()
    if isinstance(op_ctxt, WhileContext):
        merge_grad = grad_ctxt.grad_state.switch_map.get(op)
        if merge_grad is not None:
            # The second time: the back edge of the gradient loop.
            if grad[1] is not None:
                control_flow_ops._add_next_and_back_edge(merge_grad, grad[1],
                                                         enforce_shape_invariant=False)
            return None, None
        if grad[0] is not None:
            # The first time: the gradient of the loop's Exit enters the gradient loop.
            merge_grad = control_flow_ops.merge([grad[0], grad[0]], name="b_switch")[0]
            grad_ctxt.grad_state.switch_map[op] = merge_grad
            return merge_grad, None
        return None, None
    if isinstance(op_ctxt, CondContext):
        zero_grad = grad[1 - op_ctxt.branch]
        if zero_grad is None:
            if op.inputs[0].dtype == dtypes.resource:
                return control_flow_ops.merge([grad[op_ctxt.branch]] * 2,
                                              name="cond_resource_grad")[0], None
            return None, None
        return control_flow_ops.merge(list(grad), name="cond_grad")[0], None
    false_grad = control_flow_ops.switch(grad[0], op.inputs[1])[0]
    true_grad = control_flow_ops.switch(grad[1], op.inputs[1])[1]
    return control_flow_ops.merge([false_grad, true_grad])[0], None


RegisterGradient("Switch")(_switch_grad)
RegisterGradient("RefSwitch")(_switch_grad)


def _merge_grad(op, grad, _):
    input_op = op.inputs[0].op
    graph = ops.get_default_graph()
    op_ctxt = control_flow_ops._output_context(input_op)
    grad_ctxt = graph._get_control_flow_context()
    if isinstance(op_ctxt, WhileContext):
        return control_flow_ops._switch_ref_or_tensor(grad, grad_ctxt.pivot)
    if isinstance(op_ctxt, CondContext):
        pred = op_ctxt.pred
        grad_state = getattr(grad_ctxt, "grad_state", None) if grad_ctxt else None
        if grad_state is not None:
            # In a gradient loop: the pred of this iteration, from its history stack.
            real_pred = grad_state.history_map.get(pred.name)
            if real_pred is None:
                grad_ctxt = grad_state.grad_context
                grad_ctxt.exit()
                history_pred = grad_state.add_forward_accumulator(pred)
                grad_ctxt.enter()
                real_pred = grad_state.add_backprop_accumulated_value(history_pred, pred)
                grad_state.history_map[pred.name] = real_pred
            pred = real_pred
        return control_flow_ops._switch_ref_or_tensor(grad, pred, name="cond_grad")
    num_inputs = len(op.inputs)
    cond = [math_ops.equal(op.outputs[1], i) for i in range(num_inputs)]
    return [control_flow_ops._switch_ref_or_tensor(grad, cond[i])[1]
            for i in range(num_inputs)]


RegisterGradient("Merge")(_merge_grad)
RegisterGradient("RefMerge")(_merge_grad)


def _exit_grad(op, grad):
    graph = ops.get_default_graph()
    op_ctxt = op._control_flow_context
    grad_ctxt = graph._get_control_flow_context()
    if not grad_ctxt.back_prop:
        return None
    if getattr(op_ctxt, "grad_state", None):
        raise TypeError("Second-order gradient for while loops not supported.")
    if isinstance(grad, ops.Tensor):
        grad_ctxt.add_name(grad)
    else:
        if not isinstance(grad, IndexedSlices):
            raise TypeError(f"Type {type(grad)} not supported, must be either"
                            "`indexed_slices.IndexedSlices` or `SparseTensor`.")
        grad_ctxt.add_name(grad.values)
        grad_ctxt.add_name(grad.indices)
        if grad.dense_shape is not None:
            grad_ctxt.add_name(grad.dense_shape)
    grad_ctxt.enter()
    result = control_flow_ops._enter(grad, grad_ctxt.name, is_constant=False,
                                     parallel_iterations=grad_ctxt.parallel_iterations,
                                     name="b_exit")
    grad_ctxt.loop_enters.append(result)
    grad_ctxt.exit()
    return result


RegisterGradient("Exit")(_exit_grad)
RegisterGradient("RefExit")(_exit_grad)


def _next_iteration_grad(_, grad):
    return grad


RegisterGradient("NextIteration")(_next_iteration_grad)
RegisterGradient("RefNextIteration")(_next_iteration_grad)


def _enter_grad(op, grad):
    graph = ops.get_default_graph()
    grad_ctxt = graph._get_control_flow_context()
    if grad_ctxt is None or not grad_ctxt.back_prop:
        return grad
    if getattr(grad_ctxt, "grad_state", None) is None:
        return grad
    if op.get_attr("is_constant"):
        # A loop invariant: its gradient is the sum over iterations.
        if isinstance(grad, ops.Tensor):
            return grad_ctxt.add_backprop_accumulator(op, grad)
        if isinstance(grad, IndexedSlices):
            return grad_ctxt.add_backprop_indexed_slices_accumulator(op, grad)
        raise TypeError(f"Type {type(grad)} not supported,must be Tensor or Indexed Slices")
    result = control_flow_ops.exit(grad)
    grad_ctxt.loop_exits.append(result)
    grad_ctxt.exit_result([result])
    return result


RegisterGradient("Enter")(_enter_grad)
RegisterGradient("RefEnter")(_enter_grad)


@RegisterGradient("LoopCond")
def _loop_cond_grad(_):
    return None
