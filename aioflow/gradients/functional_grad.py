"""Gradients of the functional control-flow ops If / StatelessIf, Case / StatelessCase
and While / StatelessWhile.

They are built as TF builds them, node for node (gradients/cond_grad.py: cond_v2._IfGrad
and _CaseGrad; gradients/while_grad.py: while_v2._WhileGrad): the forward op is rewritten
to output the intermediates its gradient needs (Optionals for If, TensorList
accumulators for While) and the gradient functions are built from the branch / body
FuncGraphs.

The few forms those modules do not build as TF (they raise NotImplementedError before the
forward op changes: a resource intermediate of a branch, a resource loop variable that is
not a variable's handle, a resource of a body that is not one of its inputs, an
IndexedSlices gradient of a resource loop variable) get their gradient by recomputation
here, with TF's values but not TF's graph (a Case has no such fallback: it raises). A
While that falls back after accumulating may leave unused EmptyTensorList nodes in the
outer graph:

* If: an If of the same kind on the same predicate whose branches are the gradient
  functions of the forward branches (gradients/function_gradient.py: the branch body
  recomputed, then backpropagated from the output gradients). Its outputs are the
  gradients of the If's inputs; the predicate gets None, as TF's.
* While: a forward While (of the same kind) recomputes the loop from its inputs and
  pushes every iteration's loop variables onto TensorLists, counting iterations; a
  backward While then pops them, one iteration at a time in reverse, and applies a
  SymbolicGradient of the body to the popped variables and the running gradient.
"""

from __future__ import annotations

import itertools

from aioflow.data.func_graph import FuncGraph, to_function_def
from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients import cond_grad, while_grad
from aioflow.gradients.function_gradient import symbolic_gradient_function_def
from aioflow.gradients.registry import RegisterGradient
from aioflow.ops import array_ops, math_ops
from aioflow.proto import attr_value_pb2

_uid = itertools.count(1)


def _grad_function(graph, func) -> attr_value_pb2.NameAttrList:
    """The gradient function of library function `func` (a NameAttrList), added to the
    graph's library; its NameAttrList."""
    name = f"{func.name}_grad_{next(_uid)}"
    fdef = symbolic_gradient_function_def(graph._library, func.name, dict(func.attr), name)
    graph._library.add_function_def(fdef)
    return attr_value_pb2.NameAttrList(name=name)


def _dense_grads(op, grads) -> list:
    """The output gradients, zeros where none came (a function takes tensors)."""
    out = []
    for t, g in zip(op.outputs, grads, strict=True):
        if g is None:
            g = array_ops.zeros_like(t)
        out.append(ops.convert_to_tensor(g))
    return out


def _zeros_type(t) -> dtypes.DType:
    return dtypes.as_dtype(t.op.get_attr("dtype")) if t.dtype == dtypes.resource else t.dtype


@RegisterGradient("If")
@RegisterGradient("StatelessIf")
def _if_grad(op, *grads):
    try:
        return cond_grad.cond_grad(op, list(grads))
    except NotImplementedError:
        return _if_grad_by_recomputation(op, grads)


@RegisterGradient("Case")
@RegisterGradient("StatelessCase")
def _case_grad(op, *grads):
    return cond_grad.cond_grad(op, list(grads))


def _if_grad_by_recomputation(op, grads):
    graph = op.graph
    inputs = list(op.inputs[1:])
    dys = _dense_grads(op, grads)
    then_grad = _grad_function(graph, op.get_attr("then_branch"))
    else_grad = _grad_function(graph, op.get_attr("else_branch"))
    outputs = apply_op(op.type, cond=op.inputs[0], input=inputs + dys,
                       Tout=[_zeros_type(t) for t in inputs], then_branch=then_grad,
                       else_branch=else_grad, output_shapes=[t.shape for t in inputs])
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return [None] + outputs


# -- While ------------------------------------------------------------------------------------

def _build_function(graph, name: str, arg_types: list, build) -> attr_value_pb2.NameAttrList:
    """A library function `name` of `graph` whose args have `arg_types` and whose results
    are what `build(args)` returns; its NameAttrList."""
    fg = FuncGraph(name, graph)
    with fg.as_default():
        fg.args = [array_ops.placeholder(t, name=f"arg_{i}") for i, t in enumerate(arg_types)]
        outputs = build(list(fg.args))
    graph._library.add_function_def(to_function_def(fg, outputs))
    return attr_value_pb2.NameAttrList(name=name)


def _call(op_type: str, func, args: list, tout: list) -> list:
    out = apply_op(op_type, args=args, Tout=tout, f=func)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _while(op_type: str, loop_vars: list, cond, body) -> list:
    out = apply_op(op_type, input=loop_vars, cond=cond, body=body,
                   output_shapes=[tensor_shape.unknown_shape() for _ in loop_vars])
    return list(out) if isinstance(out, (list, tuple)) else [out]


@RegisterGradient("While")
@RegisterGradient("StatelessWhile")
def _while_grad(op, *grads):
    try:
        return while_grad.while_grad(op, list(grads))
    except NotImplementedError:
        return _while_grad_by_recomputation(op, grads)


def _while_grad_by_recomputation(op, grads):
    graph = op.graph
    cond, body = op.get_attr("cond"), op.get_attr("body")
    inputs = list(op.inputs)
    n = len(inputs)
    types = [t.dtype for t in inputs]
    call = "PartitionedCall" if op.type == "StatelessWhile" else "StatefulPartitionedCall"
    uid = next(_uid)
    variant, i32 = dtypes.variant, dtypes.int32

    def fwd_cond(args):
        return _call(call, cond, args[1:n + 1], [dtypes.bool])[:1]

    def fwd_body(args):
        v, accs = args[1:n + 1], args[n + 1:]
        new_v = _call(call, body, v, types)
        pushed = [apply_op("TensorListPushBack", input_handle=acc, tensor=x)
                  for acc, x in zip(accs, v, strict=True)]
        return [args[0] + 1] + new_v + pushed

    def bwd_cond(args):
        return [math_ops.greater(args[0], 0)]

    def bwd_body(args):
        dv, accs = args[1:n + 1], args[n + 1:]
        popped, values = [], []
        for acc, t in zip(accs, types, strict=True):
            handle, value = apply_op("TensorListPopBack", input_handle=acc, element_shape=-1,
                                     element_dtype=t)
            popped.append(handle)
            values.append(value)
        new_dv = list(apply_op("SymbolicGradient", input=values + dv, Tout=types, f=body))
        return [args[0] - 1] + new_dv + popped

    loop_types = [i32] + types + [variant] * n
    base = f"{body.name}_grad_{uid}"
    fwd = _while(op.type, [array_ops.constant(0)] + inputs + [
        apply_op("EmptyTensorList", element_shape=-1, max_num_elements=-1, element_dtype=t)
        for t in types],
        _build_function(graph, f"{base}_forward_cond", loop_types, fwd_cond),
        _build_function(graph, f"{base}_forward_body", loop_types, fwd_body))
    count, accs = fwd[0], fwd[n + 1:]
    dys = _dense_grads(op, grads)
    bwd = _while(op.type, [count] + dys + accs,
                 _build_function(graph, f"{base}_backward_cond", loop_types, bwd_cond),
                 _build_function(graph, f"{base}_backward_body", loop_types, bwd_body))
    return bwd[1:n + 1]
