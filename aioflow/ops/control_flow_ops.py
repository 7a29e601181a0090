"""TF v1 control flow: `cond`, `case`, `while_loop` and `Assert`, built from Switch/Merge/
Enter/Exit/NextIteration/LoopCond exactly as TensorFlow's v1 Python layer builds them
(same node names, wiring and attrs), through CondContext and WhileContext.

A context is entered on the graph while a branch or loop body is built; the graph calls
`ctx.add_op(op)` for every op created inside it. That hook routes external inputs through
Switches (cond) or constant Enters (while), and gives input-less ops a control input on
the context's pivot, so that they run only when the branch or iteration does.
"""

from __future__ import annotations

import collections
import functools
import logging

from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.nest import (
    assert_same_structure,
    flatten,
    is_nested,
    map_structure,
    pack_sequence_as,
)
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import SparseTensor
from aioflow.ops import array_ops, math_ops
from aioflow.ops.constant_op import constant
from aioflow.ops.tensor_array_ops import TensorArray, build_ta_with_new_flow

__all__ = [
    "cond", "case", "while_loop", "Assert", "switch", "merge", "exit", "no_op", "group",
    "with_dependencies", "tuple", "CondContext", "WhileContext", "ControlFlowContext",
]

_logger = logging.getLogger(__name__)

COND_CONTEXT = "cond_context"
WHILE_CONTEXT = "while_context"

no_op = array_ops.no_op
group = array_ops.group
tuple = array_ops.tuple  # noqa: A001
with_dependencies = array_ops.with_dependencies


def _is_tensor_array(x) -> bool:
    return isinstance(x, TensorArray)


builtins_tuple = type(())

# -- control_flow_util -----------------------------------------------------------------------

def _is_loop_exit(op) -> bool:
    return op.type in ("Exit", "RefExit")


def _is_loop_enter(op) -> bool:
    return op.type in ("Enter", "RefEnter")


def _is_loop_constant_enter(op) -> bool:
    if not _is_loop_enter(op):
        return False
    attr = op._get_attr_proto("is_constant")
    return attr is not None and attr.b


def _output_context(op):
    """The context of `op`'s outputs (an Exit's outputs are in the loop's outer context)."""
    ctxt = op._control_flow_context
    if ctxt is not None and _is_loop_exit(op):
        ctxt = ctxt.outer_context
    return ctxt


def _is_containing_context(ctxt, maybe_containing) -> bool:
    while ctxt is not maybe_containing:
        if ctxt is None:
            return False
        ctxt = ctxt.outer_context
    return True


def _op_in_context(op, ctxt) -> bool:
    return _is_containing_context(op._control_flow_context, ctxt)


def _containing_while_context(ctxt):
    while ctxt is not None:
        if ctxt.is_while_context():
            return ctxt
        ctxt = ctxt.outer_context
    return None


def check_input_from_valid_context(op, input_op) -> None:
    """ValueError if `op` may not take an input from `input_op` (TF's
    CheckInputFromValidContext): a tensor made in a while loop is usable only inside
    that loop (or loops nested in it)."""
    op_ctxt = op._control_flow_context
    input_ctxt = _output_context(input_op)
    if input_ctxt is None or op_ctxt is input_ctxt:
        return
    while_ctxt = _containing_while_context(op_ctxt)
    input_while_ctxt = _containing_while_context(input_ctxt)
    if while_ctxt is None:
        # Enter and Switch are built outside any context, then moved into one.
        if input_while_ctxt is None or _is_loop_enter(op) or op.type in ("Switch",
                                                                           "RefSwitch"):
            return
        raise ValueError(f"Cannot use '{input_op.name}' as input to '{op.name}' because "
                         f"'{input_op.name}' is in a while loop. See info log for more "
                         "details.")
    if _is_containing_context(while_ctxt, input_while_ctxt):
        return
    if _is_gradient_of(while_ctxt, input_while_ctxt, input_ctxt):
        return
    raise ValueError(f"Cannot use '{input_op.name}' as input to '{op.name}' because they "
                     "are in different while loops. See info log for more details.")


def _is_gradient_of(while_ctxt, input_while_ctxt, input_ctxt) -> bool:
    """TF's exceptions for gradient loops: a gradient loop may read its forward loop's
    values (and those of loops nested in it), and the forward loop the values of its
    gradient's accumulators."""
    grad_state = while_ctxt.grad_state
    if grad_state is not None:
        if _is_containing_context(grad_state.forward_context, input_while_ctxt):
            return True
        if grad_state.forward_context is input_while_ctxt.outer_context:
            return True
    input_grad_state = input_while_ctxt.grad_state
    if input_grad_state is not None:
        if input_grad_state.forward_context is while_ctxt:
            return True
        outer = getattr(input_ctxt, "grad_state", None)
        if (outer is not None and outer.forward_context.grad_state is not None
                and outer.forward_context.grad_state.forward_context is while_ctxt):
            return True
    return False


# -- primitive builders ----------------------------------------------------------------------

def switch(data, pred, dtype=None, name=None):
    """(output_false, output_true): `data` forwarded to one of them by `pred`."""
    with ops.name_scope(name, "Switch", [data, pred]) as name:
        data = ops.convert_to_tensor(data, dtype=dtype, name="data")
        pred = ops.convert_to_tensor(pred, name="pred")
        return builtins_tuple(apply_op("Switch", name=name, data=data, pred=pred))


def _switch_ref_or_tensor(data, pred, name="Switch"):
    """A Switch colocated with `data` (ignoring outer colocation, as TF)."""
    data = ops.convert_to_tensor(data, name="data")
    with ops.colocate_with(data, ignore_existing=True):
        if data.dtype.is_ref_dtype:  # a variable stays a ref in the branches
            return builtins_tuple(apply_op("RefSwitch", name=name, data=data, pred=pred))
        return switch(data, pred, name=name)


def merge(inputs, name=None):
    """(output, value_index): the one available input and its index."""
    if any(inp is None for inp in inputs):
        raise ValueError(f"At least one of the merge inputs is None: {inputs}")
    with ops.name_scope(name, "Merge", inputs) as name:
        inputs = [ops.convert_to_tensor(inp) for inp in inputs]
        op_type = "RefMerge" if all(t.dtype.is_ref_dtype for t in inputs) else "Merge"
        return builtins_tuple(apply_op(op_type, name=name, inputs=inputs))


def _identity(data, name=None):
    return array_ops.identity(data, name=name)


def _next_iteration(data, name=None):
    return apply_op("NextIteration", name=name, data=ops.convert_to_tensor(data))


def _enter(data, frame_name, is_constant=False, parallel_iterations=10,
           use_input_shape=True, name=None):
    """Make `data` available to the child frame `frame_name`."""
    data = ops.convert_to_tensor(data)
    op_type = "RefEnter" if data.dtype.is_ref_dtype else "Enter"  # a variable stays a ref
    result = apply_op(op_type, name=name, data=data, frame_name=frame_name,
                      is_constant=is_constant, parallel_iterations=parallel_iterations)
    if use_input_shape:
        result.set_shape(data.shape)
    return result


def exit(data, name=None):  # noqa: A001
    """Make `data` (a loop value) available to the loop's parent frame."""
    return apply_op("Exit", name=name, data=ops.convert_to_tensor(data))


def loop_cond(input, name=None):  # noqa: A002
    return apply_op("LoopCond", name=name, input=input)


def control_trigger(name=None):
    return apply_op("ControlTrigger", name=name)


def abort(error_msg="", exit_without_error=False, name=None):
    return apply_op("Abort", name=name, error_msg=error_msg,
                    exit_without_error=exit_without_error)


# -- TensorArray flows -----------------------------------------------------------------------

def _convert_tensorarray_to_flow(x):
    return x.flow if _is_tensor_array(x) else x


def _convert_flows_to_tensorarrays(tensors_or_tensorarrays, tensors_or_flows):
    if len(tensors_or_tensorarrays) != len(tensors_or_flows):
        raise ValueError(f"Lengths of original Tensor list and new list do not match: "
                         f"{len(tensors_or_tensorarrays)} vs. {len(tensors_or_flows)}")
    return [build_ta_with_new_flow(ta, t) if _is_tensor_array(ta) else t
            for ta, t in zip(tensors_or_tensorarrays, tensors_or_flows, strict=True)]


# -- contexts --------------------------------------------------------------------------------

class ControlFlowContext:
    """The state of one cond branch or while loop while it is built (TF's
    ControlFlowContext): the tensors seen in it, and the external tensors it reaches
    through Switches or Enters."""

    def __init__(self):
        graph = ops.get_default_graph()
        self._graph = graph
        self._outer_context = graph._get_control_flow_context()
        self._nested_contexts: list = []
        if self._outer_context is not None:
            self._outer_context._nested_contexts.append(self)
        self._context_stack: list = []
        # Tensors already seen in this context.
        self._values: set = set()
        # Tensor (external to this context) -> the tensor this context uses for it.
        self._external_values: dict = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def outer_context(self):
        return self._outer_context

    def add_name(self, tensor) -> None:
        self._values.add(tensor)

    def enter(self) -> None:
        """Make this the graph's current control-flow context."""
        self._context_stack.append(self._graph._get_control_flow_context())
        self._graph._set_control_flow_context(self)

    def exit(self) -> None:
        self._graph._set_control_flow_context(self._context_stack.pop())

    def exit_result(self, result) -> None:
        """Make `result` (tensors built in this context) known to the outer context."""
        if self._outer_context is not None:
            for x in flatten(result):
                if isinstance(x, ops.Tensor):
                    self._outer_context.add_name(x)

    def get_while_context(self):
        return self._outer_context.get_while_context() if self._outer_context else None

    def get_control_pivot(self):
        return None

    def is_while_context(self) -> bool:
        return False

    def is_cond_context(self) -> bool:
        return False

    def add_inner_op(self, op) -> None:
        if self._outer_context is not None:
            self._outer_context.add_inner_op(op)

    def _remove_external_control_edges(self, op):
        """Drop `op`'s control inputs from outside the enclosing while loop; returns
        (internal, external) control inputs."""
        while_ctxt = self.get_while_context()
        controls = op.control_inputs
        if while_ctxt is None:
            internal = controls
        else:
            internal = []
            for x in controls:
                ctxt = _output_context(x)
                if ctxt is not None and ctxt.get_while_context() is while_ctxt:
                    internal.append(x)
        external: list = []
        if len(internal) != len(controls):
            external = [x for x in controls if x not in internal]
            op._remove_all_control_inputs()
            op._add_control_inputs(internal)
        return internal, external

    def add_op(self, op) -> None:
        """The graph's hook: `op` was just created in this context."""
        for t in op.inputs:
            check_input_from_valid_context(op, t.op)
        self._add_op_internal(op)

    def _add_op_internal(self, op) -> None:
        raise NotImplementedError

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self._name}'>"


class CondContext(ControlFlowContext):
    """One branch of a cond: external tensors enter it through Switches on `pred`,
    input-less ops run after the branch's pivot (switch_t / switch_f)."""

    def __init__(self, pred, pivot, branch: int, name: str = "cond_text"):
        self._name = ops.get_default_graph().unique_name(name)
        super().__init__()
        self._pred = pred
        self._pivot = pivot
        self._branch = branch
        self._values.add(pred)
        self._external_values[pred] = pred
        self._values.add(pivot)
        pivot.op._control_flow_context = self

    @property
    def pred(self):
        return self._pred

    @property
    def pivot(self):
        return self._pivot

    @property
    def branch(self) -> int:
        return self._branch

    def get_control_pivot(self):
        return self._pivot

    def is_cond_context(self) -> bool:
        return True

    def add_value(self, val):
        """The tensor this branch uses for `val`: `val` itself if it is in the branch,
        else (once per tensor) the `branch` output of a Switch of it on `pred`."""
        if val in self._values:
            result = self._external_values.get(val)
            return val if result is None else result
        result = val
        self._values.add(val)
        if self._outer_context is not None:
            result = self._outer_context.add_value(val)
            self._values.add(result)
            self._external_values[result] = result
        with ops.control_dependencies(None):
            result = _switch_ref_or_tensor(result, self._pred)[self._branch]
            if self._outer_context is not None:
                self._outer_context.add_inner_op(result.op)
        result.op._control_flow_context = self
        # The Switch's outputs are seen by this context and every outer one.
        ctxt = self
        while ctxt is not None:
            ctxt._values.add(result)
            ctxt = ctxt._outer_context
        self._external_values[val] = result
        return result

    def _add_op_internal(self, op) -> None:
        if not op.inputs:
            self._remove_external_control_edges(op)
            if not any(_op_in_context(c, self) for c in op.control_inputs):
                op._add_control_input(self._pivot.op)
        else:
            for index in range(len(op.inputs)):
                x = op.inputs[index]
                if op.type == "Merge" and x.op.type == "NextIteration":
                    real_x = x
                else:
                    real_x = self.add_value(x)
                if real_x is not x:
                    op._update_input(index, real_x)
            self._remove_external_control_edges(op)
        ctxt = self
        while ctxt is not None:
            ctxt._values.update(op.outputs)
            ctxt = ctxt._outer_context
        if self._outer_context is not None:
            self._outer_context.add_inner_op(op)

    def _process_output_tensor(self, val):
        """The tensor the Merge takes for a branch output (a Switch for `lambda: x`)."""
        real_val = val
        if val not in self._values:
            self._values.add(val)
            if self._outer_context is not None:
                real_val = self._outer_context.add_value(val)
                self._values.add(real_val)
                self._external_values[real_val] = real_val
            real_val = _switch_ref_or_tensor(real_val, self._pred)[self._branch]
            self._external_values[val] = real_val
        else:
            external_val = self._external_values.get(val)
            if external_val is not None:
                real_val = external_val
        return real_val

    def _build_cond_tensor(self, v):
        if isinstance(v, ops.Operation):
            # The pivot stands in for an op result.
            return with_dependencies([v], self._pivot)
        v = _convert_tensorarray_to_flow(v)
        return self._process_output_tensor(ops.convert_to_tensor(v))

    def build_cond_branch(self, fn):
        """Call `fn` in this context; returns (its result, the tensors to merge); a
        SparseTensor in the result is its three tensors (TF's expand_composites)."""
        original_result = _expand_composites(fn())
        if original_result is None:
            return None, None
        result = map_structure(self._build_cond_tensor, original_result)
        if not isinstance(result, (list, builtins_tuple)):
            result = [result]
        return original_result, result


_SparseParts = collections.namedtuple("_SparseParts", ["indices", "values", "dense_shape"])


def _expand_composites(result):
    """`result` with each SparseTensor as its (indices, values, dense_shape)."""
    if isinstance(result, SparseTensor):
        return _SparseParts(result.indices, result.values, result.dense_shape)
    if isinstance(result, list):
        return [_expand_composites(r) for r in result]
    if isinstance(result, builtins_tuple) and not isinstance(result, _SparseParts):
        items = [_expand_composites(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else builtins_tuple(items)
    if isinstance(result, dict):
        return {k: _expand_composites(v) for k, v in result.items()}
    return result


def _restore_composites(result):
    """The inverse of _expand_composites: SparseTensors again."""
    if isinstance(result, _SparseParts):
        return SparseTensor(*result)
    if isinstance(result, list):
        return [_restore_composites(r) for r in result]
    if isinstance(result, builtins_tuple):
        items = [_restore_composites(r) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else builtins_tuple(items)
    if isinstance(result, dict):
        return {k: _restore_composites(v) for k, v in result.items()}
    return result


def _unpack_if_singleton(res):
    if isinstance(res, (list, builtins_tuple)) and len(res) == 1:
        return res[0]
    return res


def cond(pred, true_fn=None, false_fn=None, strict: bool = False, name=None,
         fn1=None, fn2=None):
    """`true_fn()` if `pred` else `false_fn()`, as TF v1's cond: Switch on `pred`,
    a CondContext per branch, a Merge per output. Singleton results are unpacked unless
    `strict`."""
    if fn1 is not None:
        if true_fn is not None:
            raise TypeError("cond(): true_fn and fn1 may not be set simultaneously.")
        true_fn = fn1
    elif true_fn is None:
        raise TypeError("cond(): 'true_fn' argument required")
    if fn2 is not None:
        if false_fn is not None:
            raise TypeError("cond(): false_fn and fn2 may not be set simultaneously.")
        false_fn = fn2
    elif false_fn is None:
        raise TypeError("cond(): 'false_fn' argument required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")

    with ops.name_scope(name, "cond", [pred]):
        if isinstance(pred, bool):
            raise TypeError("'pred' must not be a Python bool.")
        p_2, p_1 = switch(pred, pred)
        pivot_1 = array_ops.identity(p_1, name="switch_t")
        pivot_2 = array_ops.identity(p_2, name="switch_f")
        pred = array_ops.identity(pred, name="pred_id")

        context_t = CondContext(pred, pivot_1, branch=1)
        try:
            context_t.enter()
            orig_res_t, res_t = context_t.build_cond_branch(true_fn)
            if orig_res_t is None:
                raise ValueError("'true_fn' must have a return value.")
            context_t.exit_result(res_t)
        finally:
            context_t.exit()

        context_f = CondContext(pred, pivot_2, branch=0)
        try:
            context_f.enter()
            orig_res_f, res_f = context_f.build_cond_branch(false_fn)
            if orig_res_f is None:
                raise ValueError("'false_fn' must have a return value.")
            context_f.exit_result(res_f)
        finally:
            context_f.exit()

        if not strict:
            orig_res_t = _unpack_if_singleton(orig_res_t)
            orig_res_f = _unpack_if_singleton(orig_res_f)
        try:
            assert_same_structure(orig_res_t, orig_res_f)
        except TypeError as e:
            raise TypeError(f"Incompatible return types of 'true_fn' and 'false_fn': {e}") \
                from e
        except ValueError as e:
            raise ValueError(f"Incompatible return values of 'true_fn' and 'false_fn': {e}") \
                from e
        if not res_t:
            raise ValueError("'true_fn' and 'false_fn' must return at least one result.")

        res_t_flat = flatten(res_t)
        res_f_flat = flatten(res_f)
        for x, y in zip(res_t_flat, res_f_flat, strict=True):
            if x.dtype.base_dtype != y.dtype.base_dtype:
                raise ValueError("Outputs of 'true_fn' and 'false_fn' must have the same "
                                 f"type(s). Received {x.dtype.name} from 'true_fn' and "
                                 f"{y.dtype.name} from 'false_fn'.")
        merges = [merge(pair)[0] for pair in zip(res_f_flat, res_t_flat, strict=True)]
        merges = _convert_flows_to_tensorarrays(flatten(orig_res_t), merges)

        if context_t.outer_context is None:
            ops.add_to_collection(COND_CONTEXT, context_t)
            ops.add_to_collection(COND_CONTEXT, context_f)

        merges = _restore_composites(pack_sequence_as(orig_res_t, merges))
        if not strict:
            merges = _unpack_if_singleton(merges)
        return merges


# -- case ------------------------------------------------------------------------------------

def _case_verify_and_canonicalize_args(pred_fn_pairs, exclusive):
    if not isinstance(pred_fn_pairs, (list, builtins_tuple, dict)):
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. Received: "
                        f"{type(pred_fn_pairs)}")
    if isinstance(pred_fn_pairs, collections.OrderedDict):
        pred_fn_pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
        if not exclusive:
            _logger.warning(
                "%s: An unordered dictionary of predicate/fn pairs was provided, but "
                "exclusive=False. The order of conditional tests is deterministic but not "
                "guaranteed.", ops.get_default_graph().get_name_scope())
    for pair in pred_fn_pairs:
        if not isinstance(pair, builtins_tuple) or len(pair) != 2:
            raise TypeError(f"Each entry in 'pred_fn_pairs' must be a 2-tuple. Received "
                            f"{pair}.")
        pred, fn = pair
        if isinstance(pred, ops.Tensor):
            if pred.dtype != dtypes.bool:
                raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        else:
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    predicates, actions = zip(*pred_fn_pairs, strict=True) if pred_fn_pairs else ((), ())
    return list(predicates), list(actions)


def _assert_at_most_n_true(predicates, n, msg):
    """An Assert that at most `n` of `predicates` are true."""
    preds_c = array_ops.stack(predicates, name="preds_c")
    num_true_conditions = math_ops.reduce_sum(math_ops.cast(preds_c, dtypes.int32),
                                              name="num_true_conds")
    condition = math_ops.less_equal(num_true_conditions,
                                    constant(n, name="n_true_conds"))
    preds_names = ", ".join(getattr(p, "name", "?") for p in predicates)
    error_msg = [f"{msg}: more than {n} conditions ({preds_names}) evaluated as True:",
                 preds_c]
    return Assert(condition, data=error_msg, summarize=len(predicates))


def _case_create_default_action(predicates, actions):
    """Use the last action as the default, asserting that exactly its predicate holds."""
    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]
    other_predicates, other_actions = predicates[:k], actions[:k]

    def default_action():
        others_msg = (f"Implementation error: selected default action #{k} was called, "
                      "but some of other predicates are True: ")
        default_msg = ("Input error: None of conditions evaluated as True:",
                       array_ops.stack(predicates, name="preds_c"))
        with ops.control_dependencies([
                _assert_at_most_n_true(other_predicates, n=0, msg=others_msg),
                Assert(predicate, data=default_msg)]):
            return action()

    return default_action, other_predicates, other_actions


def case(pred_fn_pairs, default=None, exclusive: bool = False, strict: bool = False,
         name: str = "case"):
    """The result of the first `fn` whose predicate is true, else `default()`: nested
    v1 conds; with `exclusive`, an Assert that at most one predicate holds."""
    predicates, actions = _case_verify_and_canonicalize_args(pred_fn_pairs, exclusive)
    if default is not None and not callable(default):
        raise TypeError("'default' must be callable.")
    with ops.name_scope(name, "case", [predicates]):
        if default is None:
            default, predicates, actions = _case_create_default_action(predicates, actions)
        fn = default
        for predicate, action in reversed(list(zip(predicates, actions, strict=True))):
            fn = functools.partial(cond, predicate, true_fn=action, false_fn=fn,
                                   strict=strict)
        if exclusive:
            with ops.control_dependencies([
                    _assert_at_most_n_true(predicates, n=1, msg="Input error: exclusive=True")
            ]):
                return fn()
        return fn()


# -- Assert ----------------------------------------------------------------------------------

def Assert(condition, data, summarize=None, name=None):  # noqa: N802
    """An op that fails the run with InvalidArgumentError when `condition` is false,
    printing `data`. Unless all data are string or int32, it is guarded by a cond
    ("AssertGuard") and the guard's Merge op is returned, as TF v1 does."""
    with ops.name_scope(name, "Assert", [condition, data]) as name:
        xs = ops.convert_n_to_tensor(data)
        if all(x.dtype in (dtypes.string, dtypes.int32) for x in xs):
            return apply_op("Assert", name="Assert", condition=condition, data=list(data),
                            summarize=summarize)
        condition = ops.convert_to_tensor(condition, name="Condition")

        def true_assert():
            return apply_op("Assert", name="Assert", condition=condition, data=list(data),
                            summarize=summarize)

        guarded_assert = cond(condition, no_op, true_assert, name="AssertGuard")
        return guarded_assert.op


# -- while_loop ------------------------------------------------------------------------------

def _shape_less_than_or_equal(shape1, shape2) -> bool:
    if shape2.dims is None:
        return True
    if shape1.ndims != shape2.ndims:
        return False
    for dim1, dim2 in zip(shape1.as_list(), shape2.as_list(), strict=True):
        if dim2 is not None and dim1 != dim2:
            return False
    return True


def _get_shape_invariant(var, shape=None):
    if shape is None:
        return var.shape
    return tensor_shape.as_shape(shape)


def _set_shape_invariants(input_vars, enter_vars, shapes) -> None:
    if shapes is None:
        return
    flat_shapes = flatten(shapes)
    if not all(isinstance(s, tensor_shape.TensorShape) for s in flat_shapes):
        raise ValueError("'shapes' must be a (possibly nested) list of shapes.")
    for inp, var, shape in zip(input_vars, enter_vars, flat_shapes, strict=True):
        if not _shape_less_than_or_equal(inp.shape, shape):
            raise ValueError(
                f"The shape invariant specified for {inp.name} is not compatible with the "
                f"initial shape of the loop variable. It enters the loop with shape "
                f"{inp.shape}, but the specified shape invariant is {shape}.")
        var.set_shape(shape)


def _enforce_shape_invariant(merge_var, next_var) -> None:
    m_shape = merge_var.shape
    n_shape = next_var.shape
    if not _shape_less_than_or_equal(n_shape, m_shape):
        enter = merge_var.op.inputs[0].op
        input_t = enter.inputs[0]
        raise ValueError(
            f"Input tensor '{input_t.name}' enters the loop with shape {input_t.shape}, but "
            f"has shape {n_shape} after one iteration. To allow the shape to vary across "
            "iterations, use the `shape_invariants` argument of tf.while_loop to specify a "
            "less-specific shape.")


def _add_next_and_back_edge(m, v, enforce_shape_invariant: bool = True):
    """NextIteration(v), wired back into Merge `m`'s second input."""
    v = ops.convert_to_tensor(v)
    v = _next_iteration(v)
    if enforce_shape_invariant:
        _enforce_shape_invariant(m, v)
    m.op._update_input(1, v)
    return v


class WhileContext(ControlFlowContext):
    """One while loop (frame "<scope>while_context"): loop variables enter through
    Enter/Merge/Switch/Identity, external tensors through constant Enters, and ops with
    only loop-invariant inputs run after the pivot (the first loop variable's Merge while
    building `cond`, its Identity while building `body`)."""

    def __init__(self, maximum_iterations=None, parallel_iterations: int = 10,
                 back_prop: bool = True, swap_memory: bool = False,
                 name: str = "while_context"):
        super().__init__()
        if not isinstance(parallel_iterations, int) or parallel_iterations <= 0:
            raise ValueError("'parallel_iterations' must be a positive integer: "
                             f"{parallel_iterations}")
        self._name = ops.get_default_graph().unique_name(name)
        self._maximum_iterations = maximum_iterations
        self._parallel_iterations = parallel_iterations
        self._back_prop = back_prop
        self._swap_memory = swap_memory
        self._pivot_for_pred = None
        self._pivot_for_body = None
        self._pivot = None
        self._loop_exits: list = []
        self._loop_enters: list = []
        # The gradient loop's state (aioflow.gradients.control_flow_state) when this is
        # the loop computing another loop's gradient; None for a forward loop.
        self._grad_state = None

    @property
    def grad_state(self):
        return self._grad_state

    @property
    def maximum_iterations(self):
        return self._maximum_iterations

    @property
    def parallel_iterations(self) -> int:
        return self._parallel_iterations

    @property
    def back_prop(self) -> bool:
        return self._back_prop

    @property
    def swap_memory(self) -> bool:
        return self._swap_memory

    @property
    def pivot(self):
        return self._pivot

    @property
    def loop_enters(self) -> list:
        return self._loop_enters

    @property
    def loop_exits(self) -> list:
        return self._loop_exits

    def get_while_context(self):
        return self

    def get_control_pivot(self):
        if self._pivot_for_body is not None:
            return self._pivot_for_body
        return self._pivot_for_pred

    def is_while_context(self) -> bool:
        return True

    def add_value(self, val):
        """The tensor the loop uses for `val`: `val` if it is in the loop, else (once per
        tensor) a constant Enter of it into this frame."""
        result = val
        new_value = val not in self._values
        new_value = new_value and val.op._control_flow_context is not self
        if new_value:
            self._values.add(val)
            if self._outer_context is not None:
                result = self._outer_context.add_value(val)
            with ops.control_dependencies(None):
                enter = _enter(result, self._name, is_constant=True,
                               parallel_iterations=self._parallel_iterations)
                if self._outer_context is not None:
                    self._outer_context.add_inner_op(enter.op)
            self._fix_control_inputs_and_context([enter])
            self._values.add(enter)
            self._external_values[val] = enter
            result = enter
        else:
            actual_val = self._external_values.get(val)
            if actual_val is not None:
                result = actual_val
        return result

    def _add_op_internal(self, op) -> None:
        if not op.inputs:
            control_inputs, external_inputs = self._remove_external_control_edges(op)
            if not control_inputs:
                op._add_control_input(self.get_control_pivot().op)
            self._values.update(op.outputs)
        else:
            for index in range(len(op.inputs)):
                x = op.inputs[index]
                real_x = self.add_value(x)
                if real_x is not x:
                    op._update_input(index, real_x)
            _, external_inputs = self._remove_external_control_edges(op)
            self._maybe_add_control_dependency(op)
            self._values.update(op.outputs)
        if self._outer_context is not None or not _is_loop_exit(op):
            # As TF: a value inside a loop has one value per iteration; it cannot be fed
            # or fetched from outside (only the loop's exits can).
            op.graph.prevent_fetching(op)
            for x in op.outputs:
                op.graph.prevent_feeding(x)
        if external_inputs:
            # Pull external control inputs in as Identities of their outputs.
            with ops.control_dependencies(None):
                self.enter()
                external_inputs = [array_ops.identity(x.outputs[0]).op
                                   for x in external_inputs if x.outputs]
                self.exit()
            op._add_control_inputs(external_inputs)
        if self._outer_context is not None:
            self._outer_context.add_inner_op(op)

    def _maybe_add_control_dependency(self, op) -> None:
        """Ops whose inputs are all loop invariants run after the pivot."""
        if op.control_inputs:
            return
        if all(_is_loop_constant_enter(x.op) for x in op.inputs):
            op._add_control_input(self.get_control_pivot().op)

    def _fix_control_inputs_and_context(self, enters) -> None:
        """Give Enters created outside any context this context, and the control inputs
        of enclosing control_dependencies scopes that belong outside the loop."""
        graph = self._graph
        for x in enters:
            inp_op = x.op.inputs[0].op
            control_inputs = graph._control_dependencies_for_inputs([inp_op])
            outer_control_inputs = []
            for op in control_inputs:
                keep = True
                op_ctxt = _output_context(op)
                outer_ctxt = self.outer_context
                outer_while = None if outer_ctxt is None else outer_ctxt.get_while_context()
                while outer_ctxt is not op_ctxt:
                    if outer_ctxt is None or outer_ctxt is outer_while:
                        keep = False
                        break
                    outer_ctxt = outer_ctxt.outer_context
                if keep:
                    outer_control_inputs.append(op)
            x.op._control_flow_context = self
            x.op._add_control_inputs(outer_control_inputs)
            for controller in graph._control_dependencies_stack:
                controller.seen.add(id(x.op))

    def add_forward_loop_counter(self, outer_grad_state):
        """Count this loop's iterations (TF's AddForwardLoopCounter, built for its
        gradient): returns (the count at exit, the NextIteration of the index), both named
        "f_count"; under an outer gradient loop, the counter's start waits for the outer
        loop's index."""
        n = constant(0, name="f_count")
        if outer_grad_state is not None:
            outer_add_op = outer_grad_state.forward_index.op.inputs[0].op
            n.op._add_control_input(outer_add_op)
        self.enter()
        self.add_name(n)
        enter_n = _enter(n, self._name, is_constant=False,
                         parallel_iterations=self._parallel_iterations, name="f_count")
        self._loop_enters.append(enter_n)
        merge_n = merge([enter_n, enter_n])[0]
        switch_n = switch(merge_n, self._pivot)
        index = math_ops.add(switch_n[1], 1)
        next_n = _next_iteration(index)
        merge_n.op._update_input(1, next_n)
        total_iterations = exit(switch_n[0], name="f_count")
        self._loop_exits.append(total_iterations)
        self.exit_result([total_iterations])
        self.exit()
        return total_iterations, next_n

    def _initialize_values(self, values) -> None:
        self._values = set()
        for x in values:
            if not isinstance(x, ops.Tensor):
                raise TypeError(f"'values' must be a list of Tensors. Received: {type(x)}.")
            self._values.add(x)

    def _build_loop(self, pred, body, original_loop_vars, loop_vars, shape_invariants):
        flat_loop_vars = flatten(original_loop_vars)
        self._initialize_values(loop_vars)
        real_vars = loop_vars
        if self._outer_context is not None:
            real_vars = [self._outer_context.add_value(x) for x in loop_vars]
        with ops.control_dependencies(None):
            enter_vars = [_enter(x, self._name, is_constant=False,
                                 parallel_iterations=self._parallel_iterations,
                                 use_input_shape=(shape_invariants is None))
                          for x in real_vars]
            for x in enter_vars:
                if self._outer_context is not None:
                    self._outer_context.add_inner_op(x.op)

        # The closest enclosing control pivot gates Enters of loop invariants.
        outer_context = self._outer_context
        control_pivot = None
        while outer_context is not None and control_pivot is None:
            control_pivot = outer_context.get_control_pivot()
            outer_context = outer_context.outer_context
        if control_pivot is not None:
            for var in enter_vars:
                if _is_loop_constant_enter(var.op.inputs[0].op):
                    var.op._add_control_input(control_pivot.op)

        _set_shape_invariants(real_vars, enter_vars, shape_invariants)
        self._fix_control_inputs_and_context(enter_vars)
        self._initialize_values(enter_vars)
        self._loop_enters = enter_vars

        merge_vars = [merge([x, x])[0] for x in enter_vars]
        self._pivot_for_pred = merge_vars[0]

        packed_vars = pack_sequence_as(
            original_loop_vars, _convert_flows_to_tensorarrays(flat_loop_vars, merge_vars))
        c = ops.convert_to_tensor(pred(*packed_vars))
        self._pivot = loop_cond(c, name="LoopCond")
        switch_vars = [_switch_ref_or_tensor(x, self._pivot) for x in merge_vars]

        vars_for_body = [_identity(x[1]) for x in switch_vars]
        self._pivot_for_body = vars_for_body[0]
        packed_vars_for_body = pack_sequence_as(
            original_loop_vars, _convert_flows_to_tensorarrays(flat_loop_vars, vars_for_body))
        body_result = body(*packed_vars_for_body)
        if not is_nested(body_result):
            body_result = [body_result]
        assert_same_structure(list(packed_vars_for_body), list(body_result))

        original_body_result = body_result
        result = [ops.convert_to_tensor(_convert_tensorarray_to_flow(x))
                  for x in flatten(body_result)]
        if len(merge_vars) != len(result):
            raise ValueError("Number of inputs and outputs of 'body' must match "
                             f"'loop_vars'. Got {len(merge_vars)} for the number of inputs/"
                             f"outputs, and {len(result)} for the number of outputs.")
        for m, v in zip(merge_vars, result, strict=True):
            _add_next_and_back_edge(m, v)

        exit_vars = [exit(x[0]) for x in switch_vars]
        self._loop_exits = exit_vars
        self.exit_result(exit_vars)
        return original_body_result, exit_vars

    def build_loop(self, pred, body, loop_vars, shape_invariants,
                   return_same_structure: bool = False):
        """Add the loop to the graph; returns the loop variables' Exit values."""
        original_loop_vars = loop_vars
        flat = [_convert_tensorarray_to_flow(x) for x in flatten(loop_vars)]
        flat = ops.convert_n_to_tensor(flat)
        if shape_invariants is None:
            shape_invariants = [_get_shape_invariant(x) for x in flat]
        try:
            self.enter()
            original_body_result, exit_vars = self._build_loop(
                pred, body, original_loop_vars, flat, shape_invariants)
        finally:
            self.exit()
        flat_result = flatten(original_body_result)
        exit_vars_with_tensor_arrays = _convert_flows_to_tensorarrays(flat_result, exit_vars)
        packed_exit_vars = pack_sequence_as(original_body_result,
                                            exit_vars_with_tensor_arrays)
        if return_same_structure:
            return packed_exit_vars
        return packed_exit_vars[0] if len(exit_vars) == 1 else packed_exit_vars


def while_loop(cond, body, loop_vars, shape_invariants=None,  # noqa: A002
               parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name=None, maximum_iterations=None,
               return_same_structure: bool = False):
    """Repeat `body` while `cond` holds, as TF v1's while_loop (a WhileContext frame
    named "<scope>while_context"); `maximum_iterations` adds TF's iteration counter."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    with ops.name_scope(name, "while", flatten(loop_vars)):
        if not loop_vars:
            raise ValueError("'loop_vars' must be provided.")
        try_to_pack = len(loop_vars) == 1 and not return_same_structure
        if maximum_iterations is not None:
            maximum_iterations = ops.convert_to_tensor(maximum_iterations,
                                                       name="maximum_iterations")
            if maximum_iterations.shape.ndims != 0:
                raise ValueError("'maximum_iterations' must be a scalar. Received shape: "
                                 f"{maximum_iterations.shape}")
            counter = constant(0, dtype=maximum_iterations.dtype, name="iteration_counter")
            orig_cond, orig_body = cond, body
            limit = maximum_iterations
            if try_to_pack:
                loop_vars = (counter, loop_vars[0])

                def cond(i, lv):
                    return math_ops.logical_and(i < limit, orig_cond(lv))

                def body(i, lv):
                    return (i + 1, orig_body(lv))
            else:
                loop_vars = (counter, loop_vars)

                def cond(i, lv):
                    return math_ops.logical_and(i < limit, orig_cond(*lv))

                def body(i, lv):
                    return (i + 1, orig_body(*lv))
        if shape_invariants is not None:
            if maximum_iterations is not None:
                shape_invariants = (tensor_shape.TensorShape([]), shape_invariants)
            assert_same_structure(loop_vars, shape_invariants)
            shape_invariants = map_structure(_get_shape_invariant, loop_vars,
                                             shape_invariants)

        loop_context = WhileContext(maximum_iterations=maximum_iterations,
                                    parallel_iterations=parallel_iterations,
                                    back_prop=back_prop, swap_memory=swap_memory)
        if loop_context.outer_context is None:
            ops.add_to_collection(WHILE_CONTEXT, loop_context)
        result = loop_context.build_loop(cond, body, loop_vars, shape_invariants,
                                         return_same_structure)
        if maximum_iterations is not None:
            return result[1]
        return result
