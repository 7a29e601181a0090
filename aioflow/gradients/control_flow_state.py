"""Gradients through v1 control flow (TF's control_flow_state): the state of the gradient
loops, and zeros for outputs without a gradient inside conds and loops.

For each forward while loop between xs and ys, a _GradLoopState builds a gradient loop
(a GradWhileContext of the same name) that runs as many iterations as the forward loop
did: the forward loop counts its iterations ("f_count"), the gradient loop counts them
down ("b_count"). Forward values the gradient needs are pushed on a stack in each forward
iteration ("f_acc", StackPushV2) and popped in reverse in the gradient loop (StackPopV2);
pops wait on the gradient loop's "b_sync" ControlTrigger, pushes in a cond on "f_sync".
Loop invariants' gradients are summed over iterations ("b_acc").
"""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.constant_value import constant_value
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, control_flow_ops, math_ops
from aioflow.ops.constant_op import constant
from aioflow.ops.control_flow_ops import CondContext, WhileContext


def is_switch(op) -> bool:
    return op.type in ("Switch", "RefSwitch")


def is_loop_exit(op) -> bool:
    return op.type in ("Exit", "RefExit")


def is_loop_switch(op) -> bool:
    """A Switch of a while loop (its context is a WhileContext)."""
    if not is_switch(op):
        return False
    ctxt = op._control_flow_context
    return ctxt is not None and ctxt.is_while_context()


def get_while_context(op):
    ctxt = op._control_flow_context
    return ctxt.get_while_context() if ctxt is not None else None


def _loop_constant_enter(value):
    op = value.op
    while op.type in ("Switch", "RefSwitch", "Identity", "RefIdentity"):
        op = op.inputs[0].op
    return op if control_flow_ops._is_loop_constant_enter(op) else None


def _is_constant(tensor) -> bool:
    op = tensor.op
    while op.type == "Identity":
        op = op.inputs[0].op
    return op.type == "Const"


def _shape_op(value):
    """TF's shape_internal(value, optimize=False): a Shape op named "Shape"."""
    return apply_op("Shape", input=value)


def _stack_push(handle, value, swap_memory):
    return apply_op("StackPushV2", handle=handle, elem=value, swap_memory=swap_memory)


class GradWhileContext(WhileContext):
    """The while loop computing a forward loop's gradient (TF's WhileContext with a
    grad_state): forward values it reads come from their history stacks."""

    def __init__(self, grad_state, forward_ctxt):
        super().__init__(maximum_iterations=forward_ctxt.maximum_iterations,
                         parallel_iterations=forward_ctxt.parallel_iterations,
                         back_prop=forward_ctxt.back_prop,
                         swap_memory=forward_ctxt.swap_memory, name=forward_ctxt.name)
        self._grad_state = grad_state

    def add_value(self, val):
        new_value = val not in self._values and val.op._control_flow_context is not self
        if new_value:
            grad_ctxt = self._graph._get_control_flow_context()
            if grad_ctxt is not None:
                grad_ctxt = grad_ctxt.get_while_context()
                if grad_ctxt is not None and grad_ctxt.grad_state is not None:
                    forward_ctxt = get_while_context(val.op)
                    if is_loop_exit(val.op):
                        forward_ctxt = forward_ctxt.outer_context
                        if forward_ctxt is not None:
                            forward_ctxt = forward_ctxt.get_while_context()
                    if forward_ctxt is grad_ctxt.grad_state.forward_context:
                        self._values.add(val)
                        real_val = grad_ctxt.grad_state.get_real_value(val)
                        self._external_values[val] = real_val
                        return real_val
        return super().add_value(val)

    def add_op(self, op) -> None:
        # A Shape/Size/Rank of a forward value runs in the forward loop (TF's AddOp).
        if op.type in ("Shape", "Size", "Rank"):
            grad_ctxt = self._graph._get_control_flow_context()
            if grad_ctxt is not None:
                grad_ctxt = grad_ctxt.get_while_context()
                if grad_ctxt is not None and grad_ctxt.grad_state is not None:
                    input_forward = get_while_context(op.inputs[0].op)
                    if input_forward is grad_ctxt.grad_state.forward_context:
                        input_ctxt = op.inputs[0].op._control_flow_context
                        op._control_flow_context = input_ctxt
                        input_ctxt._add_op_internal(op)
                        return
        super().add_op(op)

    def add_backprop_loop_counter(self, count, outer_grad_state):
        """The gradient loop's counter: from the forward count down to 1 ("b_count"); its
        pred is the loop's pivot. Returns the NextIteration of the index."""
        one = constant(1, name="b_count")
        self.enter()
        self.add_name(count)
        enter_count = control_flow_ops._enter(count, self._name, is_constant=False,
                                              parallel_iterations=self._parallel_iterations,
                                              name="b_count")
        self._loop_enters.append(enter_count)
        merge_count = control_flow_ops.merge([enter_count, enter_count])[0]
        self._pivot_for_pred = merge_count
        pred = math_ops.greater_equal(merge_count, one)
        self._pivot = control_flow_ops.loop_cond(pred, name="b_count")
        switch_count = control_flow_ops.switch(merge_count, self._pivot)
        index = math_ops.subtract(switch_count[1], one)
        self._pivot_for_body = index
        next_count = control_flow_ops._next_iteration(index)
        merge_count.op._update_input(1, next_count)
        final_zero = control_flow_ops.exit(switch_count[0], name="b_count")
        self._loop_exits.append(final_zero)
        if outer_grad_state is not None:
            outer_grad_state.grad_sync._add_control_input(final_zero.op)
        self.exit_result([final_zero])
        self.exit()
        return next_count

    def add_backprop_accumulator(self, op, grad):
        """The sum over iterations of a loop invariant's gradient ("b_acc")."""
        self.exit()
        shape = grad.shape
        outer = self.outer_context
        if shape.is_fully_defined():
            if outer is not None:
                outer.enter()
            acc = constant(0, grad.dtype, shape=shape.as_list(), name="b_acc")
            if outer is not None:
                outer.exit()
        else:
            value = op.inputs[0]
            if isinstance(outer, WhileContext) and outer.grad_state is not None:
                forward_ctxt = self.grad_state.forward_context
                forward_ctxt.outer_context.enter()
                zeros_shape = _shape_op(value)
                forward_ctxt.outer_context.exit()
                outer_grad_state = self.grad_state.outer_grad_state
                history = outer_grad_state.add_forward_accumulator(zeros_shape)
                outer.enter()
                real_shape = outer_grad_state.add_backprop_accumulated_value(history,
                                                                             zeros_shape)
                acc = array_ops.zeros(real_shape, grad.dtype)
                outer.exit()
            else:
                if outer is not None:
                    outer.enter()
                zeros_shape = _shape_op(value)
                acc = array_ops.zeros(zeros_shape, grad.dtype)
                if outer is not None:
                    outer.exit()
        self.enter()
        self.add_name(acc)
        enter_acc = control_flow_ops._enter(acc, self._name, is_constant=False,
                                            parallel_iterations=self._parallel_iterations,
                                            name="b_acc")
        self._loop_enters.append(enter_acc)
        merge_acc = control_flow_ops.merge([enter_acc, enter_acc], name="b_acc")[0]
        switch_acc_false, switch_acc_true = control_flow_ops.switch(merge_acc, self._pivot)
        add_acc = math_ops.add(switch_acc_true, grad)
        next_acc = control_flow_ops._next_iteration(add_acc)
        merge_acc.op._update_input(1, next_acc)
        result_acc = control_flow_ops.exit(switch_acc_false, name="b_acc")
        self._loop_exits.append(result_acc)
        self.exit_result([result_acc])
        return result_acc

    def add_backprop_indexed_slices_accumulator(self, op, grad):
        """A loop invariant's IndexedSlices gradients, concatenated over iterations."""
        values, indices, dense_shape = grad.values, grad.indices, grad.dense_shape
        self.exit()
        outer = self.outer_context
        if outer is not None:
            outer.enter()
        if values.shape.is_fully_defined():
            values_shape = [1] + values.shape.as_list()[1:]
            values_acc = constant(0, values.dtype, shape=values_shape, name="b_acc")
        else:
            values_shape = array_ops.shape(op.inputs[0])[1:]
            values_shape = array_ops.concat([[1], values_shape], 0)
            values_acc = array_ops.zeros(values_shape, dtype=values.dtype)
        indices_acc = constant([0], indices.dtype)
        shape_acc = None
        if dense_shape is not None:
            if dense_shape.shape.is_fully_defined():
                shape_acc = constant(0, dense_shape.dtype, shape=dense_shape.shape.as_list())
            else:
                shape_acc = array_ops.zeros_like(
                    apply_op("Shape", input=op.inputs[0], out_type=dense_shape.dtype),
                    optimize=False)
        if outer is not None:
            outer.exit()
        self.enter()
        self.add_name(values_acc)
        self.add_name(indices_acc)
        init_acc = [indices_acc, values_acc]
        if shape_acc is not None:
            self.add_name(shape_acc)
            init_acc.append(shape_acc)
        enter_acc = [control_flow_ops._enter(x, self._name, is_constant=False,
                                             parallel_iterations=self._parallel_iterations,
                                             use_input_shape=False, name="b_acc")
                     for x in init_acc]
        enter_acc[0].set_shape([None])
        if values_acc.shape.rank is not None:
            enter_acc[1].set_shape([None] + values_acc.shape.as_list()[1:])
        self._loop_enters.extend(enter_acc)
        merge_acc = [control_flow_ops.merge([x, x], name="b_acc")[0] for x in enter_acc]
        switch_acc = [control_flow_ops.switch(x, self._pivot) for x in merge_acc]
        acc_slices = [array_ops.concat([xa[1], xv], 0)
                      for xa, xv in zip(switch_acc[:2], [indices, values], strict=True)]
        if shape_acc is not None:
            acc_slices.append(math_ops.maximum(dense_shape, switch_acc[2][1]))
        next_acc = [control_flow_ops._next_iteration(x) for x in acc_slices]
        for xm, xn in zip(merge_acc, next_acc, strict=True):
            xm.op._update_input(1, xn)
        exit_acc = [control_flow_ops.exit(x[0], name="b_acc") for x in switch_acc]
        self._loop_exits.extend(exit_acc)
        self.exit_result(exit_acc)
        return IndexedSlices(indices=exit_acc[0], values=exit_acc[1],
                             dense_shape=exit_acc[2] if shape_acc is not None else None)


class GradLoopState:
    """One forward loop and its gradient loop (TF's _GradLoopState)."""

    def __init__(self, forward_ctxt, outer_grad_state):
        self.outer_grad_state = outer_grad_state
        self.forward_context = forward_ctxt
        self._forward_sync = None
        self._grad_sync = None
        self.history_map: dict = {}
        self.switch_map: dict = {}
        self.unused_exits: list = []
        self.deferred_exits: list = []
        self.forward_loop_exits = list(forward_ctxt.loop_exits)
        self.pending_exits_count = len(forward_ctxt.loop_exits)
        if outer_grad_state is not None:
            outer_forward_ctxt = outer_grad_state.forward_context
        else:
            outer_forward_ctxt = forward_ctxt.outer_context
        graph = forward_ctxt._graph
        with graph.as_default():
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.enter()
            cnt, forward_index = forward_ctxt.add_forward_loop_counter(outer_grad_state)
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.exit()
        self.forward_index = forward_index
        if outer_grad_state is not None:
            outer_forward_ctxt.add_name(cnt)
            history_cnt = outer_grad_state.add_forward_accumulator(cnt)
            outer_grad_ctxt = outer_grad_state.grad_context
            outer_grad_ctxt.enter()
            self.grad_context = GradWhileContext(self, forward_ctxt)
            real_cnt = outer_grad_state.add_backprop_accumulated_value(history_cnt, cnt)
            self.grad_index = self.grad_context.add_backprop_loop_counter(
                real_cnt, outer_grad_state)
            outer_grad_ctxt.exit()
        else:
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.enter()
            self.grad_context = GradWhileContext(self, forward_ctxt)
            self.grad_index = self.grad_context.add_backprop_loop_counter(
                cnt, outer_grad_state)
            if outer_forward_ctxt is not None:
                outer_forward_ctxt.exit()

    @property
    def forward_sync(self):
        """The forward loop's "f_sync" ControlTrigger: the next iteration's index waits
        for pushes made in a cond."""
        if self._forward_sync is None:
            with ops.control_dependencies(None):
                self._forward_sync = control_flow_ops.control_trigger(name="f_sync")
            self._forward_sync._control_flow_context = self.forward_context
            self.forward_index.op._add_control_input(self._forward_sync)
        return self._forward_sync

    @property
    def grad_sync(self):
        """The gradient loop's "b_sync" ControlTrigger: the next iteration's index waits
        for this iteration's pops (with parallel_iterations > 1)."""
        if self._grad_sync is None:
            with ops.control_dependencies(None):
                self._grad_sync = control_flow_ops.control_trigger(name="b_sync")
            self._grad_sync._control_flow_context = self.grad_context
            self.grad_index.op._add_control_input(self._grad_sync)
            if self.grad_context.outer_context is not None:
                self.grad_context.outer_context.add_inner_op(self._grad_sync)
        return self._grad_sync

    def add_forward_accumulator(self, value, dead_branch: bool = False):
        """A stack ("f_acc") onto which the forward loop pushes `value` each iteration."""
        graph = self.forward_index.graph
        with graph.as_default():
            curr_ctxt = graph._get_control_flow_context()
            with ops.control_dependencies(None):
                if curr_ctxt is not None:
                    curr_ctxt.enter()
                with ops.colocate_with(value):
                    max_size = constant(-1, dtypes.int32)
                    acc = apply_op("StackV2", name="f_acc", max_size=max_size,
                                   elem_type=value.dtype.base_dtype)
                if curr_ctxt is not None:
                    curr_ctxt.exit()
                enter_acc = self.forward_context.add_value(acc)
                swap = self.forward_context.swap_memory
                value_ctxt = control_flow_ops._output_context(value.op)
                if value_ctxt is self.forward_context:
                    self.forward_context.enter()
                    push = _stack_push(enter_acc, value, swap)
                    self.forward_context.exit()
                    self.forward_index.op._add_control_input(push.op)
                else:
                    if not isinstance(value_ctxt, CondContext):
                        raise TypeError(f"value_ctxt is not a CondContext: {value_ctxt}")
                    if dead_branch:
                        value_ctxt.outer_context.enter()
                        push = _stack_push(enter_acc, value, swap)
                        value_ctxt.outer_context.exit()
                        push.op._control_flow_context = value_ctxt
                    else:
                        value_ctxt.enter()
                        push = _stack_push(enter_acc, value, swap)
                        value_ctxt.exit()
                    self.forward_sync._add_control_input(push.op)
                add_op = self.forward_index.op.inputs[0].op
                push.op._add_control_input(add_op)
                return acc

    def add_backprop_accumulated_value(self, history_value, value, dead_branch=False):
        """The pop, in the gradient loop, of the value pushed on `history_value`."""
        history_ctxt = history_value.op._control_flow_context
        cond_ctxt = None
        value_ctxt = value.op._control_flow_context
        while value_ctxt is not None and value_ctxt is not history_ctxt:
            if isinstance(value_ctxt, CondContext):
                cond_ctxt = value_ctxt
                break
            value_ctxt = value_ctxt.outer_context
        with ops.control_dependencies(None):
            self.grad_context.enter()
            if cond_ctxt is not None:
                grad_state = self
                pred = None
                while pred is None and grad_state is not None:
                    pred = grad_state.history_map.get(cond_ctxt.pred.name)
                    grad_state = grad_state.outer_grad_state
                if pred is None:
                    pred = cond_ctxt.pred
                branch = (1 - cond_ctxt.branch) if dead_branch else cond_ctxt.branch
                history_value = control_flow_ops._switch_ref_or_tensor(history_value,
                                                                       pred)[branch]
            pop = apply_op("StackPopV2", handle=history_value,
                           elem_type=value.dtype.base_dtype)
            pop.set_shape(value.shape)
            self.grad_context.exit()
        if self.grad_context.parallel_iterations > 1:
            self.grad_sync._add_control_input(pop.op)
        return pop

    def get_real_value(self, value):
        """The value of forward tensor `value` in this iteration of the gradient loop."""
        real_value = self.history_map.get(value.name)
        if real_value is not None:
            return real_value
        cur_value = value
        cur_grad_state = self
        history_value = None
        while True:
            enter_op = _loop_constant_enter(cur_value)
            if enter_op is not None:
                cur_value = enter_op.inputs[0]
                cur_grad_state = cur_grad_state.outer_grad_state
                if cur_grad_state is None:
                    real_value = self.grad_context.add_value(cur_value)
                    break
            elif _is_constant(cur_value):
                real_value = constant(constant_value(cur_value), dtype=cur_value.dtype)
                break
            else:
                self.grad_context.exit()
                history_value = cur_grad_state.add_forward_accumulator(cur_value)
                self.grad_context.enter()
                break
        if real_value is None:
            real_value = cur_grad_state.add_backprop_accumulated_value(history_value,
                                                                       cur_value)
            if cur_grad_state is not self:
                real_value = self.grad_context.add_value(real_value)
        self.history_map[value.name] = real_value
        return real_value


class ControlFlowState:
    """The gradient loops of one gradients() call, by forward loop (TF's
    _ControlFlowState)."""

    def __init__(self):
        self._map: dict = {}

    def get_grad_state(self, op, before: bool):
        if before and is_loop_exit(op):
            forward_ctxt = op._control_flow_context.outer_context
            if forward_ctxt is not None:
                forward_ctxt = forward_ctxt.get_while_context()
        else:
            forward_ctxt = get_while_context(op)
        if forward_ctxt is not None:
            return self._map.get(forward_ctxt)
        return None

    def process_unused_loop_exits(self, pending_count, to_ops_set) -> list:
        loop_exits = []
        for grad_state in self._map.values():
            for y in grad_state.forward_loop_exits:
                if pending_count[y.op] == 0:
                    grad_state.pending_exits_count -= 1
                    if y.op not in to_ops_set:
                        grad_state.unused_exits.append(y)
                    if grad_state.pending_exits_count == 0:
                        loop_exits.extend(grad_state.unused_exits)
            for y in grad_state.forward_context.loop_enters:
                if pending_count[y.op] == 0:
                    pending_count[y.op] = 1
        return loop_exits

    def enter_grad_while_context(self, op, before: bool) -> None:
        grad_state = self.get_grad_state(op, before)
        if grad_state is not None:
            grad_state.grad_context.enter()

    def exit_grad_while_context(self, op, before: bool) -> None:
        grad_state = self.get_grad_state(op, before)
        if grad_state is not None:
            grad_state.grad_context.exit()

    def add_while_context(self, op, between_op_list, between_ops) -> None:
        forward_ctxt = get_while_context(op)
        if forward_ctxt in self._map:
            return
        outer_forward_ctxt = forward_ctxt.outer_context
        if outer_forward_ctxt is not None:
            outer_forward_ctxt = outer_forward_ctxt.get_while_context()
        outer_grad_state = None
        if outer_forward_ctxt is not None:
            outer_grad_state = self._map.get(outer_forward_ctxt)
        grad_state = GradLoopState(forward_ctxt, outer_grad_state)
        self._map[forward_ctxt] = grad_state
        # All the loop's exits are "between", whether or not ys use them.
        for loop_exit in grad_state.forward_loop_exits:
            if loop_exit.op not in between_ops:
                between_ops.add(loop_exit.op)
                between_op_list.append(loop_exit.op)

    def zeros_like_for_exit(self, val):
        """Zeros for an exit of a loop no y uses, in the right (outer gradient) context."""
        val_shape = val.shape
        forward_ctxt = val.op._control_flow_context
        outer_forward_ctxt = forward_ctxt.outer_context
        if outer_forward_ctxt is not None:
            outer_forward_ctxt = outer_forward_ctxt.get_while_context()
        outer_grad_state = None
        if outer_forward_ctxt is not None:
            outer_grad_state = self._map.get(outer_forward_ctxt)
        if outer_grad_state is not None:
            if val_shape.is_fully_defined():
                outer_grad_state.grad_context.enter()
                result = array_ops.zeros(val_shape.as_list(), val.dtype)
                outer_grad_state.grad_context.exit()
            else:
                forward_ctxt.outer_context.enter()
                shape = _shape_op(val)
                forward_ctxt.outer_context.exit()
                history_shape = outer_grad_state.add_forward_accumulator(shape)
                outer_grad_ctxt = outer_grad_state.grad_context
                outer_grad_ctxt.enter()
                real_shape = outer_grad_state.add_backprop_accumulated_value(history_shape,
                                                                             shape)
                result = array_ops.zeros(real_shape, val.dtype)
                outer_grad_ctxt.exit()
        elif val_shape.is_fully_defined():
            result = array_ops.zeros(val_shape.as_list(), val.dtype)
        else:
            result = array_ops.zeros_like(val, optimize=False)
        return result

    def zeros_like_v1_while_loop(self, op, index):
        """Zeros for output `index` of `op` (no gradient reached it) inside a loop."""
        if is_loop_switch(op):
            return None
        dead_branch = is_switch(op)
        forward_ctxt = get_while_context(op)
        grad_state = self._map.get(forward_ctxt)
        if grad_state is None:
            return zeros_like(op, index)
        op_ctxt = op._control_flow_context
        val = ops.convert_to_tensor(op.outputs[index], name="tensor")
        shape = val.shape
        if shape.is_fully_defined():
            if val.dtype == dtypes.resource:
                raise NotImplementedError(f"zeros for the resource output {val.name}")
            result = constant(0, shape=shape.as_list(), dtype=val.dtype)
            if dead_branch:
                pred = grad_state.history_map.get(op_ctxt.pred.name)
                branch = op_ctxt.branch
                result = control_flow_ops._switch_ref_or_tensor(result, pred)[1 - branch]
        else:
            if dead_branch:
                pred = op_ctxt.pred
                branch = op_ctxt.branch
                op_ctxt.outer_context.enter()
                val = control_flow_ops._switch_ref_or_tensor(op.inputs[0], pred)[1 - branch]
                zeros_shape = _shape_op(val)
                op_ctxt.outer_context.exit()
                val.op._control_flow_context = op_ctxt
                zeros_shape.op._control_flow_context = op_ctxt
            else:
                op_ctxt.enter()
                zeros_shape = _shape_op(val)
                op_ctxt.exit()
            grad_state.grad_context.exit()
            history = grad_state.add_forward_accumulator(zeros_shape, dead_branch=dead_branch)
            grad_state.grad_context.enter()
            shape = grad_state.add_backprop_accumulated_value(history, zeros_shape,
                                                              dead_branch)
            result = array_ops.zeros(shape, val.dtype)
        return result

    def post_processing(self) -> None:
        """Close each gradient loop's "b_switch" Merges that got no back edge with zeros."""
        for grad_state in self._map.values():
            for b_merge in grad_state.switch_map.values():
                if b_merge.op.inputs[0] is not b_merge.op.inputs[1]:
                    continue
                dtype = b_merge.op.inputs[0].dtype
                shape = b_merge.op.inputs[0].shape
                if shape.is_fully_defined():
                    grad_state.grad_context.enter()
                    grad_val = constant(0, dtype=dtype, shape=shape.as_list())
                    next_grad_val = control_flow_ops._next_iteration(grad_val)
                    grad_state.grad_context.exit()
                else:
                    outer_grad_ctxt = grad_state.grad_context.outer_context
                    if outer_grad_ctxt is not None:
                        outer_grad_ctxt.enter()
                    enter_grad = b_merge.op.inputs[0].op.inputs[0]
                    grad_shape = _shape_op(enter_grad)
                    grad_val = array_ops.zeros(grad_shape)
                    if outer_grad_ctxt is not None:
                        outer_grad_ctxt.exit()
                    grad_state.grad_context.enter()
                    next_grad_val = control_flow_ops._next_iteration(grad_val)
                    grad_state.grad_context.exit()
                b_merge.op._update_input(1, next_grad_val)


def maybe_create_control_flow_state(between_op_list, between_ops, colocate):
    """The state of the while loops whose Exits lie between xs and ys, else None."""
    loop_state = None
    for op in list(between_op_list):
        if is_loop_exit(op):
            if loop_state is None:
                loop_state = ControlFlowState()
            if colocate:
                with ops.colocate_with(op):
                    loop_state.add_while_context(op, between_op_list, between_ops)
            else:
                loop_state.add_while_context(op, between_op_list, between_ops)
    return loop_state


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
    zeros_shape = _shape_op(switch_val)
    with ops.control_dependencies([pivot]):
        return _tagged_zeros(array_ops.zeros(zeros_shape, dtype=val.dtype))


def _tagged_zeros(tensor):
    """Mark zeros made for a missing gradient, as TF's zeros_like does: a fused op's
    gradient function (the cross-entropies) skips its second-order term for them."""
    tensor._is_zeros_tensor = True
    return tensor


__all__ = ["ControlFlowState", "GradLoopState", "GradWhileContext",
           "maybe_create_control_flow_state", "zeros_like"]
