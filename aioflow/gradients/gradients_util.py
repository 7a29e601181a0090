"""af.gradients: the graph that computes d(sum ys)/d(xs), built as TF 1.x's gradients_util.

The construction follows TF's: under the `gradients` name scope, default `grad_ys` are
`ones(shape(y))` ("gradients/Shape", "gradients/grad_ys_0"); the ops between xs and ys
get pending counts (how many of their outputs' consumers lie between); ops are visited
from ys backwards once all their consumers have given a gradient; several gradients of
one tensor are summed with AddN (or pairwise, the tree method); each op's gradient
function runs in the name scope "<op name>_grad". Loops and conds are handled by
control_flow_state (forward values saved on stacks, gradient loops built per loop).
"""

from __future__ import annotations

import collections
import contextlib
import enum

from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import (
    IndexedSlices,
    convert_n_to_tensor_or_indexed_slices,
)
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients import control_flow_state, indexed_slices_ops
from aioflow.gradients.registry import get_gradient_function
from aioflow.ops import array_ops, math_ops
from aioflow.ops.variables import ResourceVariable
from aioflow.proto import attr_value_pb2

_TRAINABLE = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.complex64,
              dtypes.complex128, dtypes.resource, dtypes.variant, dtypes.bfloat16)


class UnconnectedGradients(enum.Enum):
    """What a gradient of an x no y depends on is: None or zeros."""

    NONE = "none"
    ZERO = "zero"


class AggregationMethod:
    """How several gradients of one tensor are summed."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


def is_trainable(t) -> bool:
    """Whether gradients flow through tensors of `t`'s dtype (floats, complex, resource,
    variant)."""
    dtype = t.dtype if not isinstance(t, dtypes.DType) else t
    return dtype.base_dtype in _TRAINABLE


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _mark_reached_ops(from_ops, reached_ops: set) -> None:
    queue = collections.deque(from_ops)
    while queue:
        op = queue.popleft()
        if op not in reached_ops:
            reached_ops.add(op)
            for output in op.outputs:
                if is_trainable(output):
                    queue.extend(output.consumers())


def _pending_count(to_ops, from_ops, colocate_gradients_with_ops):
    """(to_ops reachable from from_ops, op -> number of its between-consumers, loop
    state or None)."""
    reached_ops: set = set()
    _mark_reached_ops(from_ops, reached_ops)
    reachable_to_ops = {op for op in to_ops if op in reached_ops}
    between_ops: set = set()
    between_op_list: list = []
    queue = collections.deque(to_ops)
    while queue:
        op = queue.popleft()
        if op in reached_ops:
            between_ops.add(op)
            between_op_list.append(op)
            reached_ops.remove(op)
            for inp in op.inputs:
                queue.append(inp.op)
    loop_state = control_flow_state.maybe_create_control_flow_state(
        between_op_list, between_ops, colocate_gradients_with_ops)
    pending_count: dict = collections.defaultdict(int)
    for op in between_op_list:
        for x in op.inputs:
            if x.op in between_ops:
                pending_count[x.op] += 1
    return reachable_to_ops, pending_count, loop_state


@contextlib.contextmanager
def _maybe_colocate_with(op, colocate_gradients_with_ops: bool):
    if colocate_gradients_with_ops:
        with ops.colocate_with(op):
            yield
    else:
        yield


def _default_grad_ys(grad_ys, ys, colocate_gradients_with_ops: bool) -> list:
    """grad_ys with ones(shape(y)) for each None, each given one behind an Identity."""
    if len(grad_ys) != len(ys):
        raise ValueError(f"Length mismatch. Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    grad_ys = convert_n_to_tensor_or_indexed_slices(grad_ys, name="grad_y")
    new_grad_ys = []
    for i, (y, grad_y) in enumerate(zip(ys, grad_ys, strict=True)):
        with _maybe_colocate_with(y.op, colocate_gradients_with_ops):
            if grad_y is None:
                if y.dtype.is_complex:
                    raise TypeError(f"Gradients of complex tensors ({y}) must set grad_ys "
                                    f"(y.dtype = {y.dtype.name})")
                new_grad_ys.append(array_ops.ones(array_ops.shape(y), dtype=y.dtype,
                                                  name=f"grad_ys_{i}"))
                continue
            _check_grad_y_type(y, grad_y)
            if isinstance(grad_y, IndexedSlices):
                new_grad_ys.append(IndexedSlices(
                    array_ops.identity(grad_y.values, name=f"grad_ys_{i}_values"),
                    array_ops.identity(grad_y.indices, name=f"grad_ys_{i}_indices"),
                    None if grad_y.dense_shape is None else
                    array_ops.identity(grad_y.dense_shape, name=f"grad_ys_{i}_shape")))
            else:
                new_grad_ys.append(array_ops.identity(grad_y, name=f"grad_ys_{i}"))
    return new_grad_ys


def _check_grad_y_type(y, grad_y) -> None:
    if y.dtype.is_floating or y.dtype.is_integer:
        if not grad_y.dtype.is_floating and not grad_y.dtype.is_integer:
            raise TypeError(f"Gradient type {grad_y.dtype.name} generated for real or "
                            f"integer-valued tensor {y} with type {y.dtype.name} must be "
                            "real or integer")
    elif y.dtype.is_complex:
        if not grad_y.dtype.is_complex:
            raise TypeError(f"Gradient type {grad_y.dtype.name} generated for "
                            f"complex-valued tensor {y} with type {y.dtype.name} must be "
                            "real")
    elif y.dtype == dtypes.variant:
        if grad_y.dtype != dtypes.variant:
            raise TypeError(f"Gradient type {grad_y.dtype.name} generated for variant "
                            f"tensor {y} with type {y.dtype.name} must be variant")
    elif y.dtype == dtypes.resource:
        if grad_y.dtype == dtypes.resource:
            raise TypeError(f"Input gradient {grad_y} for resource tensor {y} should not "
                            "be a resource")
    else:
        raise TypeError(f"Tensor {y} with type {y.dtype.name} must be numeric to obtain a "
                        "default gradient")


def _stop_ops(from_ops, stop_gradient_ops, pending_count) -> set:
    """The xs' ops that no other x's op feeds, and the stop_gradients' ops."""
    stop_ops = set()
    for op in from_ops:
        if all(pending_count[inp.op] <= 0 for inp in op.inputs):
            stop_ops.add(op)
    stop_ops.update(stop_gradient_ops)
    return stop_ops


def _raise_no_grad_wrt_initial_loop_val(op, from_ops) -> None:
    target_op = None
    queue = collections.deque([op])
    visited: set = set()
    while queue:
        curr = queue.popleft()
        if curr in visited:
            continue
        visited.add(curr)
        if curr in from_ops:
            target_op = curr
            break
        queue.extend(t.op for t in curr.inputs)
    raise ValueError(
        "Cannot compute gradient inside while loop with respect to op "
        f"'{target_op.name if target_op else op.name}'. We do not support taking the "
        "gradient wrt or through the initial value of a loop variable. Gradients can be "
        "computed through loop invariants or wrt the input parameters to the loop body.")


def gradients(ys, xs, grad_ys=None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method=None, stop_gradients=None,
              unconnected_gradients=UnconnectedGradients.NONE) -> list:
    """The symbolic derivatives of sum(ys) with respect to each x in xs (TF 1.x's
    tf.gradients): a list of Tensors, IndexedSlices, or None (or zeros) for an x no y
    depends on."""
    ys = [y._as_graph_element() if hasattr(y, "_as_graph_element") else y
          for y in _as_list(ys)]
    # As TF: the gradient with respect to a resource variable is its handle's.
    xs = [x.handle if isinstance(x, ResourceVariable) else x for x in _as_list(xs)]
    xs = [x._as_graph_element() if hasattr(x, "_as_graph_element") else x for x in xs]
    if grad_ys is not None:
        grad_ys = _as_list(grad_ys)
    try:
        unconnected_gradients = UnconnectedGradients(unconnected_gradients)
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: "
                         f"'{unconnected_gradients}'") from None
    stop_gradients = [] if stop_gradients is None else _as_list(stop_gradients)
    if grad_ys is None:
        grad_ys = [None] * len(ys)
    values = list(ys) + list(xs) + list(stop_gradients) + list(grad_ys)
    with ops.name_scope(name, "gradients", values) as grad_scope:
        graph = ops.get_default_graph()
        graph.unique_name("uid")  # TF's gradient_uid takes this name
        ys = convert_n_to_tensor_or_indexed_slices(ys, name="y")
        xs = convert_n_to_tensor_or_indexed_slices(xs, name="x")
        grad_ys = _default_grad_ys(grad_ys, ys, colocate_gradients_with_ops)
        builder = _GradientBuilder(graph, grad_scope, colocate_gradients_with_ops,
                                   gate_gradients, aggregation_method)
        builder.build(ys, xs, grad_ys, stop_gradients)
    # As TF: the loop post-processing and zeros for unconnected xs are outside the scope.
    if builder.loop_state:
        builder.loop_state.post_processing()
    return [builder.get_grad(x, unconnected_gradients) for x in xs]


class _GradientBuilder:
    """One call of gradients(): the memo of gradients per op output, the ready queue."""

    def __init__(self, graph, grad_scope, colocate, gate_gradients, aggregation_method):
        self.graph = graph
        self.grad_scope = grad_scope
        self.colocate = colocate
        self.gate_gradients = gate_gradients
        if aggregation_method is None:
            aggregation_method = AggregationMethod.DEFAULT
        valid = [AggregationMethod.ADD_N, AggregationMethod.EXPERIMENTAL_TREE,
                 AggregationMethod.EXPERIMENTAL_ACCUMULATE_N]
        if aggregation_method not in valid:
            raise ValueError(f"Invalid `aggregation_method` specified {aggregation_method}. "
                             f"Accepted values are {valid}.")
        self.aggregation_method = aggregation_method
        self.grads: dict = {}

    def build(self, ys, xs, grad_ys, stop_gradients) -> None:
        to_ops = [t.op for t in ys]
        from_ops = [t.op for t in xs]
        stop_gradient_ops = [t.op for t in stop_gradients]
        reachable_to_ops, pending_count, loop_state = _pending_count(
            to_ops, from_ops, self.colocate)
        self.loop_state = loop_state
        for y, grad_y in zip(ys, grad_ys, strict=True):
            self.set_grad(y, grad_y)
        queue: collections.deque = collections.deque()
        to_ops_set: set = set()
        for op in to_ops:
            if pending_count[op] == 0 and op not in to_ops_set and op in reachable_to_ops:
                to_ops_set.add(op)
                queue.append(op)
        if loop_state:
            for y in loop_state.process_unused_loop_exits(pending_count, to_ops_set):
                if is_trainable(y):
                    self.set_grad(y, loop_state.zeros_like_for_exit(y))
                    queue.append(y.op)
        stop_ops = _stop_ops(from_ops, stop_gradient_ops, pending_count)
        while queue:
            op = queue.popleft()
            with _maybe_colocate_with(op, self.colocate):
                self._backprop_op(op, stop_ops, from_ops)
            self._update_pending_and_enqueue_ready(op, queue, pending_count)

    # -- one op ------------------------------------------------------------------------
    def _backprop_op(self, op, stop_ops, from_ops) -> None:
        loop_state = self.loop_state
        if loop_state:
            loop_state.enter_grad_while_context(op, before=True)
        out_grads = self._aggregated_grads(op)
        if loop_state:
            loop_state.exit_grad_while_context(op, before=True)
        grad_fn = None
        # A call of a library function without a registered gradient gets SymbolicGradient.
        is_func_call = _is_partitioned_call(op) or _is_function(self.graph, op.type)
        has_out_grads = any(isinstance(g, (ops.Tensor, IndexedSlices)) or g for g in out_grads)
        if has_out_grads and op not in stop_ops:
            try:
                grad_fn = get_gradient_function(op)
            except LookupError:
                if not is_func_call:
                    raise LookupError(
                        f"No gradient defined for operation'{op.name}' (op type: {op.type}). "
                        "In general every operation must have an associated "
                        "`@tf.RegisterGradient` for correct autodiff, which this op is "
                        "lacking. If you want to pretend this operation is a constant in "
                        "your program, you may insert `tf.stop_gradient`. This can be "
                        "useful to silence the error in cases where you know gradients are "
                        "not needed, e.g. the forward pass of tf.custom_gradient. Please see "
                        "more details in "
                        "https://www.tensorflow.org/api_docs/python/tf/custom_gradient."
                    ) from None
        if loop_state:
            loop_state.enter_grad_while_context(op, before=False)
        ctxt = op._control_flow_context
        if (op.type in ("Switch", "RefSwitch") and ctxt is not None
                and ctxt.is_while_context()
                and ctxt is self.graph._get_control_flow_context()):
            _raise_no_grad_wrt_initial_loop_val(op, from_ops)
        if (grad_fn or is_func_call) and has_out_grads:
            in_grads = self._call_grad_fn(op, grad_fn, is_func_call, out_grads)
        else:
            in_grads = [None] * len(op.inputs)
        for i, (t_in, in_grad) in enumerate(zip(op.inputs, in_grads, strict=False)):
            if in_grad is None:
                continue
            if isinstance(in_grad, ops.Tensor) and t_in.dtype != dtypes.resource:
                try:
                    in_grad.set_shape(t_in.shape)
                except ValueError:
                    raise ValueError(
                        "Incompatible shapes between op input and calculated input "
                        f"gradient. Forward operation: {op.name}. Input index: {i}. "
                        f"Original input shape: {t_in.shape}. Calculated input gradient "
                        f"shape: {in_grad.shape}") from None
            self.set_grad(t_in, in_grad)
        if loop_state:
            loop_state.exit_grad_while_context(op, before=False)

    def _call_grad_fn(self, op, grad_fn, is_func_call, out_grads) -> list:
        for i, out_grad in enumerate(out_grads):
            if (not isinstance(out_grad, (ops.Tensor, IndexedSlices)) and not out_grad
                    and ((not grad_fn and is_func_call) or is_trainable(op.outputs[i]))):
                if self.loop_state:
                    out_grads[i] = self.loop_state.zeros_like_v1_while_loop(op, i)
                elif _supports_default_grad(op.outputs[i]):
                    out_grads[i] = control_flow_state.zeros_like(op, i)
        with ops.name_scope(op.name + "_grad"):
            in_grads = grad_fn(op, *out_grads) if grad_fn else _sym_grad(op, out_grads)
            in_grads = _as_list(in_grads)
            if op.type not in ("While", "StatelessWhile") and len(in_grads) != len(op.inputs):
                raise ValueError(f"Num gradients {len(in_grads)} generated for op "
                                 f"{op.node_def} do not match num inputs {len(op.inputs)}")
            if self.gate_gradients and len([x for x in in_grads if x is not None]) > 1:
                with ops.device(None), ops.colocate_with(None, ignore_existing=True):
                    in_grads = indexed_slices_ops.gated_tuple(in_grads)
        return in_grads

    # -- the memo --------------------------------------------------------------------------
    def set_grad(self, t, grad) -> None:
        op = t.op
        op_grads = self.grads.get(op)
        if not op_grads:
            op_grads = [[] for _ in range(len(op.outputs))]
            self.grads[op] = op_grads
        t_grads = op_grads[t.value_index]
        if isinstance(t_grads, list):
            t_grads.append(grad)
        else:  # a loop Switch's gradient is set once, in the gradient loop
            op_grads[t.value_index] = grad

    def get_grads(self, op) -> list:
        if op in self.grads:
            return self.grads[op]
        return [[] for _ in range(len(op.outputs))]

    def get_grad(self, t, unconnected_gradients):
        op_grads = self.grads.get(t.op)
        if not op_grads:
            if unconnected_gradients == UnconnectedGradients.ZERO:
                return _zeros_like(t)
            return None
        t_grad = op_grads[t.value_index]
        if unconnected_gradients == UnconnectedGradients.ZERO and t_grad is None:
            return _zeros_like(t)
        return t_grad

    def _has_any_not_none_grads(self, op) -> bool:
        for out_grad in self.get_grads(op):
            if isinstance(out_grad, (ops.Tensor, IndexedSlices)):
                return True
            if out_grad and isinstance(out_grad, (list, tuple)):
                if any(g is not None for g in out_grad):
                    return True
        return False

    def _update_pending_and_enqueue_ready(self, op, queue, pending_count) -> None:
        loop_state = self.loop_state
        for x in op.inputs:
            pending_count[x.op] -= 1
            ready = pending_count[x.op] == 0
            if loop_state and not ready:
                ready = pending_count[x.op] > 0 and control_flow_state.is_loop_switch(x.op)
            if not ready:
                continue
            if x.op.type in ("Exit", "RefExit"):
                grad_state = loop_state.get_grad_state(x.op, before=False)
                grad_state.deferred_exits.append(x)
                grad_state.pending_exits_count -= 1
                if grad_state.pending_exits_count == 0:
                    self._enqueue_deferred_exits(grad_state, queue)
            else:
                queue.append(x.op)

    def _enqueue_deferred_exits(self, grad_state, queue) -> None:
        has_not_none_grad = False
        for y in grad_state.deferred_exits:
            if self._has_any_not_none_grads(y.op):
                has_not_none_grad = True
                queue.append(y.op)
            else:
                grad_state.unused_exits.append(y)
        for y in grad_state.unused_exits:
            if has_not_none_grad and is_trainable(y):
                self.set_grad(y, self.loop_state.zeros_like_for_exit(y))
            queue.append(y.op)

    # -- aggregation -----------------------------------------------------------------------
    def _aggregated_grads(self, op) -> list:
        out_grads = self.get_grads(op)
        for i, out_grad in enumerate(out_grads):
            if self.loop_state and isinstance(out_grad, (ops.Tensor, IndexedSlices)):
                continue  # a loop Switch's gradient, already final
            if isinstance(out_grad, (list, tuple)) and not all(
                    isinstance(g, (ops.Tensor, IndexedSlices)) for g in out_grad
                    if g is not None):
                raise TypeError(f"Invalid gradient {out_grad} [index = {i}]. Gradients "
                                "have to be either all Tensors or all IndexedSlices")
            if not out_grad:
                out_grads[i] = None
            elif len(out_grad) < 2:
                out_grads[i] = out_grad[0]
            elif all(isinstance(g, ops.Tensor) for g in out_grad if g is not None):
                if self.aggregation_method in (AggregationMethod.EXPERIMENTAL_TREE,
                                               AggregationMethod.EXPERIMENTAL_ACCUMULATE_N):
                    with ops.name_scope(op.name + "_gradient_sum"):
                        running_sum = out_grad[0]
                        for grad in out_grad[1:]:
                            running_sum = math_ops.add_n([running_sum, grad])
                        out_grads[i] = running_sum
                else:
                    out_grads[i] = _multi_device_add_n(out_grad)
            else:
                out_grads[i] = indexed_slices_ops.aggregate_indexed_slices_gradients(
                    out_grad)
        return out_grads


def _multi_device_add_n(tensor_list):
    """AddN per device (colocated with its first tensor), then AddN of those sums."""
    by_device: dict = collections.defaultdict(list)
    for t in tensor_list:
        by_device[t.device].append(t)
    summands = []
    for dev in sorted(by_device, key=lambda d: d or ""):
        tensors = by_device[dev]
        with ops.colocate_with(tensors[0].op, ignore_existing=True):
            summands.append(math_ops.add_n(tensors))
    return math_ops.add_n(summands)


def _is_partitioned_call(op) -> bool:
    return op.type in ("PartitionedCall", "StatefulPartitionedCall")


def _is_function(graph, op_type: str) -> bool:
    """Whether `op_type` names a function of the graph's library (a direct call)."""
    return graph._library.contains(op_type)


def _zeros_dtype(t):
    """The dtype of a zero gradient for `t`: a variable handle's value dtype (TF's
    default_gradient.get_zeros_dtype reads the handle data; aioflow has none, so the
    handle must come straight from a VarHandleOp), else its own."""
    if t.dtype == dtypes.resource:
        if t.op.type != "VarHandleOp":
            raise ValueError(f"Internal error: Tried to take gradients (or similar) of a "
                             f"variable without handle data:\n{t}")
        return dtypes.as_dtype(t.op.get_attr("dtype"))
    return t.dtype


def _sym_grad(op, out_grads) -> list:
    """Backprop through a function call: a SymbolicGradient of the called function, given
    the call's inputs and its outputs' gradients (TF's _SymGrad)."""
    f_in = list(op.inputs) + list(out_grads)
    f_types = [_zeros_dtype(x) for x in op.inputs]
    f = attr_value_pb2.NameAttrList()
    f.name = op.get_attr("f").name if _is_partitioned_call(op) else op.type
    for key, value in op.node_def.attr.items():
        f.attr[key].CopyFrom(value)
    return list(apply_op("SymbolicGradient", input=f_in, Tout=f_types, f=f))


def _supports_default_grad(t) -> bool:
    if t.dtype == dtypes.resource:
        return False
    return True


def _zeros_like(t):
    if t.dtype == dtypes.resource:
        raise ValueError(f"Cannot make zeros for the resource tensor {t.name} of unknown "
                         "dtype")
    return array_ops.zeros_like(t)

