"""The gradient of a functional While / StatelessWhile as TF builds it (while_v2._WhileGrad,
tensorflow/python/ops/while_v2.py), node for node.

1. The cond and body FuncGraphs are rebuilt from the library (function_def_to_graph,
   the While's output_shapes as input shapes), or, for a While this module built (a
   gradient's gradient), are the graphs it was built from.
2. The body's gradient is a FuncGraph `<body>_grad_<uid>` taking (counter,
   maximum_iterations, the forward iteration count, the output gradients of the
   trainable loop variables that have one) and returning (counter + 1, the two counts,
   the gradients of those loop variables) through Identities, then one output per
   capture. It is tf.gradients of the body's outputs with respect to its inputs
   (unconnected: zeros). A body tensor it uses is captured as TF does:
   - a loop invariant (a body input returned unchanged): captured as is, returned as is;
   - a Const: copied;
   - any other: accumulated. An EmptyTensorList `<tensor>_<i>/accumulator` (of its
     dtype and shape, at most maximum_iterations elements) is made in the outer graph
     and becomes a new input of the forward While; the forward body pushes the tensor
     onto it (TensorListPushBack) and returns it; the forward cond takes it too. The
     gradient body captures the forward While's output for that list and pops one
     value per iteration (TensorListPopBack), returning the popped list.
   Shape / Size / Rank / TensorListElementShape / TensorListLength of body tensors are
   built in the forward body instead (then accumulated like any intermediate).
3. If anything was accumulated the forward While is rewritten: cond and body become
   `<name>_rewritten`, T / output_shapes / inputs / outputs grow by the accumulators,
   and `_num_original_outputs` counts every output.
4. The gradient While `<while>_grad` loops while counter < the forward count
   (cond `<forward cond>_grad_<uid>`), is lowered with Switch/Merge, and its outputs go
   through Identities; the While's inputs get their gradients in order (None where the
   output had no gradient).

An IndexedSlices gradient of a loop variable leaves the body's gradient as its
components through Identities, then is made dense there (the loop variable is a tensor).

Cases this does not build as TF (a resource of the body that is not one of its inputs,
a resource loop variable that is not a variable's handle, an IndexedSlices gradient of
a resource loop variable) raise NotImplementedError before the forward While changes; the
caller then builds the gradient by recomputation (gradients/functional_grad.py).
"""

from __future__ import annotations

import numpy as np

from aioflow.data.auto_control_deps import add_control_dependencies, read_only_resource_inputs
from aioflow.data.control_flow_func_graph import ControlFlowFuncGraph
from aioflow.data.function_def_to_graph import function_def_to_graph
from aioflow.framework import dtypes, ops, tensor_shape
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.cond_grad import (
    create_new_tf_function,
    flatten,
    mark_as_return,
    unique_grad_fn_name,
)
from aioflow.gradients.gradients_util import UnconnectedGradients, gradients, is_trainable
from aioflow.gradients.handle_data import variable_handle_data
from aioflow.ops import array_ops, constant_op
from aioflow.proto import attr_value_pb2

#: Ops on body tensors the gradient builds in the forward body (TF's
#: optimized_reduction_ops).
_OPTIMIZED_REDUCTION_OPS = frozenset({"Shape", "Size", "Rank", "TensorListElementShape",
                                      "TensorListLength"})


def _key(t: ops.Tensor) -> tuple:
    return (id(t.graph), t.op.name, t.value_index)


def _is_loop_invariant(tensor, inputs, outputs) -> bool:
    return any(tensor is t for t in inputs) and any(tensor is t for t in outputs)


def _get_accumulator(tensor: ops.Tensor):
    """The body output that is `tensor` pushed onto the accumulator the body takes at the
    same index (TF's _get_accumulator), or None."""
    graph = tensor.graph
    if not isinstance(graph, ControlFlowFuncGraph):
        return None

    def graph_output(t):
        if any(out is t for out in graph.outputs):
            return t
        consumers = t.consumers()
        if consumers and consumers[0].type == "Identity" and any(
                consumers[0].outputs[0] is out for out in graph.outputs):
            return consumers[0].outputs[0]
        return None

    for consumer in tensor.consumers():
        if consumer.type != "TensorListPushBack":
            continue
        in_index = next((i for i, t in enumerate(graph.inputs) if t is consumer.inputs[0]),
                        None)
        if in_index is None:
            continue
        output = graph_output(consumer.outputs[0])
        if output is None:
            continue
        out_index = next(i for i, t in enumerate(graph.outputs) if t is output)
        if out_index == in_index:
            return output
    return None


def _element_shape(shape: tensor_shape.TensorShape):
    """TF's list_ops._build_element_shape."""
    if shape.rank is None:
        return -1
    if shape.rank == 0:
        return ops.convert_to_tensor(np.zeros([0], np.int32))
    return [-1 if d is None else d for d in shape.as_list()]


class WhileBodyGradFuncGraph(ControlFlowFuncGraph):
    """The gradient graph of a While's body: accumulates the forward body's
    intermediates (TF's _WhileBodyGradFuncGraph)."""

    def __init__(self, name, forward_cond_graph, forward_body_graph, maximum_iterations,
                 forward_while_op):
        super().__init__(name, ops.get_default_graph())
        self.extra_inputs: list[ops.Tensor] = []
        self.internal_capture_to_output: dict = {}
        self.forward_graph = forward_body_graph
        self.forward_cond_graph = forward_cond_graph
        self.maximum_iterations = maximum_iterations
        self.forward_while_op = forward_while_op
        self._indirect_captures: dict = {}
        self._moved_ops: dict = {}
        self.structured_outputs: list = []

    def create_op(self, op_type, inputs, dtypes_=None, input_types=None, name=None,
                  attrs=None, op_def=None, **kwargs):
        if (op_type in _OPTIMIZED_REDUCTION_OPS
                and all(t.graph is self.forward_graph for t in inputs)
                and all(_get_accumulator(t) is None for t in inputs)):
            return self._move_op_to_forward_graph(op_type, inputs, dtypes_, input_types,
                                                  name, attrs, op_def, **kwargs)
        return super().create_op(op_type, inputs, dtypes_, input_types, name, attrs, op_def,
                                 **kwargs)

    def _move_op_to_forward_graph(self, op_type, inputs, dtypes_, input_types, name, attrs,
                                  op_def, **kwargs):
        cache_key = (op_type, tuple(_key(t) for t in inputs), name,
                     tuple(sorted((k, v.SerializeToString(deterministic=True))
                                  for k, v in (attrs or {}).items())))
        cached = self._moved_ops.get(cache_key)
        if cached is not None:
            return cached
        fwd = self.forward_graph
        if name is not None and name.endswith("/"):
            name = name[:-1]
        with fwd.as_default():
            op = fwd.create_op(op_type, inputs, dtypes_, input_types, name, attrs, op_def,
                               **kwargs)
        self._moved_ops[cache_key] = op
        return op

    def _capture_helper(self, tensor: ops.Tensor, name: str) -> ops.Tensor:
        captured = self._indirect_captures.get(_key(tensor))
        if captured is not None:
            return captured
        fwd = self.forward_graph
        if tensor.graph is not fwd:
            already = self.is_captured(tensor)
            captured = super()._capture_helper(tensor, name)
            if not already:
                self.internal_capture_to_output[_key(captured)] = captured
                self._indirect_captures[_key(tensor)] = captured
            return captured
        while tensor.op.type == "Identity":
            tensor = tensor.op.inputs[0]
        captured = self._indirect_captures.get(_key(tensor))
        if captured is not None:
            return captured
        if _is_loop_invariant(tensor, fwd.inputs, fwd.outputs):
            captured = super()._capture_helper(tensor, name)
            self.internal_capture_to_output[_key(captured)] = captured
            self._indirect_captures[_key(tensor)] = captured
            return captured
        if tensor.op.type == "Const":
            value = constant_op.constant(tensor.op.get_attr("value"),
                                         dtype=tensor.dtype)
            self._indirect_captures[_key(tensor)] = value
            return value
        if tensor.dtype == dtypes.resource:
            return self._resource_capture_helper(tensor)
        accumulator = _get_accumulator(tensor)
        if accumulator is None:
            accumulator = self._accumulate(tensor)
        captured_accumulator = super()._capture_helper(accumulator, name)
        new_list, captured = apply_op("TensorListPopBack", input_handle=captured_accumulator,
                                      element_shape=-1, element_dtype=tensor.dtype)
        # TF's shape function reads the element shape from the list's handle data (the
        # accumulator was made with the tensor's shape); aioflow's lists carry none.
        captured.set_shape(tensor.shape)
        self._indirect_captures[_key(tensor)] = captured
        self.internal_capture_to_output[_key(captured_accumulator)] = new_list
        return captured

    def _resource_capture_helper(self, tensor: ops.Tensor) -> ops.Tensor:
        """A resource of the body is not accumulated: it must be a loop invariant (the
        body input it comes from is returned unchanged); the While's input for it is
        captured instead."""
        fwd = self.forward_graph
        index = _resource_input_index(tensor, fwd.inputs)
        if _resource_input_index(fwd.outputs[index], fwd.inputs) != index:
            raise AssertionError(f"Resource tensors must be loop invariants "
                                 f"{fwd.forward_while.inputs[index]}")
        captured = self.capture(fwd.forward_while.inputs[index])
        self._indirect_captures[_key(tensor)] = captured
        return captured

    def _accumulate(self, tensor: ops.Tensor) -> ops.Tensor:
        """A new accumulator of `tensor`: made empty in the outer graph, pushed onto in the
        forward body (and returned by it), taken by the forward cond."""
        fwd = self.forward_graph
        outer = fwd.outer_graph
        with outer.as_default():
            context = outer._get_control_flow_context()
            with outer.control_dependencies(None):
                outer._set_control_flow_context(context)
                name = f"{tensor.name}/accumulator".replace(":", "_")
                tensor_list = apply_op("EmptyTensorList", name=name,
                                       element_shape=_element_shape(tensor.shape),
                                       max_num_elements=self.maximum_iterations,
                                       element_dtype=tensor.dtype)
        self.extra_inputs.append(tensor_list)
        with fwd.as_default():
            accumulator = apply_op("TensorListPushBack", input_handle=tensor_list,
                                   tensor=tensor)
        fwd.outputs.append(accumulator)
        with self.forward_cond_graph.as_default():
            self.forward_cond_graph.capture(tensor_list)
        return accumulator


def _resource_input_index(tensor: ops.Tensor, inputs: list) -> int:
    """The index of the graph input a resource tensor is (through Identities), as TF's
    resource_input_index; NotImplementedError for a resource made any other way (TF
    also follows function calls and nested control flow)."""
    while tensor.op.type == "Identity":
        tensor = tensor.op.inputs[0]
    for i, t in enumerate(inputs):
        if t is tensor:
            return i
    raise NotImplementedError(f"the resource {tensor.name} of a While body is not an input")


def _get_graph(while_op, attr: str) -> ControlFlowFuncGraph:
    """The While's cond or body: the graph it was built from when this module built it
    (a gradient While, as TF keeps it on the op), else rebuilt from the library."""
    graph = getattr(while_op, f"_{attr}_graph", None)
    if graph is None:
        shapes = [tensor_shape.TensorShape(s) for s in while_op.get_attr("output_shapes")]
        fdef = while_op.graph._library.find(while_op.get_attr(attr).name)
        graph = function_def_to_graph(fdef, while_op.graph, shapes)
    graph.forward_while = while_op
    return graph


def _is_trainable(t) -> bool:
    if not is_trainable(t):
        return False
    if t.op.type == "TensorListPopBack" and t.value_index == 0:
        return is_trainable(dtypes.as_dtype(t.op.get_attr("element_dtype")))
    return True


def _preprocess_grad(grad, body_output, while_input, while_output):
    if not _is_trainable(body_output):
        return None
    if while_output.dtype in (dtypes.resource, dtypes.variant) and grad is None:
        if while_output.dtype != dtypes.resource:
            return array_ops.zeros_like(while_output)
        handle_data = variable_handle_data(while_input)
        if handle_data is None:  # TF's supports_default_grad: no handle data, no zeros
            raise NotImplementedError("the gradient of a resource that is not a variable")
        shape = apply_op("VariableShape", input=while_output)
        return array_ops.zeros(shape, dtype=handle_data[1])
    if isinstance(grad, IndexedSlices):
        return ops.convert_to_tensor(grad)
    return grad


def _placeholders_like(tensors: list) -> list:
    return [array_ops.placeholder(t.dtype, shape=t.shape) for t in tensors]


def _create_grad_func(ys, xs, grads, cond_graph, body_graph, name, while_op,
                      maximum_iterations):
    total_iters = while_op.outputs[0]
    counter = constant_op.constant(0, dtype=total_iters.dtype, name="grad_counter")
    args = [counter, maximum_iterations, total_iters] + list(grads)
    graph = WhileBodyGradFuncGraph(name, cond_graph, body_graph, maximum_iterations, while_op)
    with graph.as_default():
        params = _placeholders_like(args)
        graph.inputs = list(params)
        grad_outs = gradients(list(ys), list(xs), grad_ys=params[3:],
                              unconnected_gradients=UnconnectedGradients.ZERO)
        if any(isinstance(g, IndexedSlices) and x.dtype == dtypes.resource
               for g, x in zip(grad_outs, xs, strict=True)):
            raise NotImplementedError("an IndexedSlices gradient of a resource loop variable")
        results = [params[0] + 1, params[1], params[2]] + list(grad_outs)
        graph.structured_outputs = [mark_as_return(t) for t in results]
    graph.control_outputs = add_control_dependencies(graph, flatten(graph.structured_outputs))
    graph.outputs = flatten(graph.structured_outputs)
    for _, inner in graph.captures:
        output = graph.internal_capture_to_output[_key(inner)]
        graph.outputs.append(output)
        graph.structured_outputs.append(output)
    return graph, args


def _rewrite_output_indexed_slices_as_tensors(grad_graph) -> None:
    """An IndexedSlices gradient of a loop variable made dense in the gradient body, so
    the body's input and output match (TF's while_v2_indexed_slices_rewriter for a
    variable that is not a resource; a resource one raised NotImplementedError before)."""
    for i, out in enumerate(grad_graph.structured_outputs):
        if isinstance(out, IndexedSlices):
            with grad_graph.as_default():
                grad_graph.structured_outputs[i] = ops.convert_to_tensor(out)
    grad_graph.outputs = flatten(grad_graph.structured_outputs)


def _rewrite_forward_op(while_op, cond_graph, body_graph, grad_graph, orig_num_params):
    cond_graph.name += "_rewritten"
    body_graph.name += "_rewritten"
    new_inputs = grad_graph.extra_inputs
    new_outputs = body_graph.outputs[orig_num_params:]
    for attr, graph in (("cond", cond_graph), ("body", body_graph)):
        while_op._set_attr(attr, attr_value_pb2.AttrValue(
            func=attr_value_pb2.NameAttrList(name=create_new_tf_function(graph))))
    while_op._set_attr("T", attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(
        type=[t.dtype.as_datatype_enum for t in body_graph.outputs])))
    while_op._set_attr("output_shapes", attr_value_pb2.AttrValue(
        list=attr_value_pb2.AttrValue.ListValue(
            shape=[s.as_proto() for s in body_graph.output_shapes])))
    for t in new_inputs:
        while_op._add_input(t)
    while_op._add_outputs([t.dtype for t in new_outputs], [t.shape for t in new_outputs])


def _resolve_grad_captures(body_graph, grad_graph, while_op) -> list:
    resolved = []
    for t in grad_graph.external_captures:
        if t.graph is body_graph:
            t = next(while_op.outputs[i] for i, out in enumerate(body_graph.outputs)
                     if out is t)
        resolved.append(t)
    return resolved


def _build_cond_grad(name: str, loop_vars: list) -> ControlFlowFuncGraph:
    graph = ControlFlowFuncGraph(name, ops.get_default_graph())
    with graph.as_default():
        params = _placeholders_like(loop_vars)
        graph.inputs = list(params)
        graph.outputs = [array_ops.identity(params[0] < params[2])]
    graph.control_outputs = add_control_dependencies(graph, graph.outputs)
    return graph


def _build_while_op(loop_vars, cond_graph, body_graph, parallel_iterations, name):
    stateful = any(op.op_def is not None and op.op_def.is_stateful
                   for graph in (cond_graph, body_graph) for op in graph.get_operations())
    outputs = apply_op("While" if stateful else "StatelessWhile", name=name,
                       input=loop_vars,
                       cond=attr_value_pb2.NameAttrList(name=create_new_tf_function(cond_graph)),
                       body=attr_value_pb2.NameAttrList(name=create_new_tf_function(body_graph)),
                       output_shapes=[t.shape for t in body_graph.outputs],
                       parallel_iterations=parallel_iterations)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    op = outputs[0].op
    op._cond_graph, op._body_graph = cond_graph, body_graph
    op._set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=True))
    read_only = read_only_resource_inputs(cond_graph) & read_only_resource_inputs(body_graph)
    op._set_attr("_read_only_resource_inputs", attr_value_pb2.AttrValue(
        list=attr_value_pb2.AttrValue.ListValue(i=sorted(read_only))))
    op._set_attr("_num_original_outputs",
                 attr_value_pb2.AttrValue(i=len(body_graph.outputs)))
    return outputs


def while_grad(op, grads) -> list:
    """TF's _WhileGrad: the gradients of the While's (original) inputs."""
    while_op = op
    cond_graph = _get_graph(while_op, "cond")
    body_graph = _get_graph(while_op, "body")
    orig_num_params = len(body_graph.outputs)
    maximum_iterations = op.inputs[1]
    parallel_iterations = op.get_attr("parallel_iterations")
    try:
        num_original_outputs = while_op.get_attr("_num_original_outputs")
    except (ValueError, KeyError):
        num_original_outputs = len(while_op.outputs)
    num_intermediates = len(while_op.outputs) - num_original_outputs
    grads = [_preprocess_grad(g, body_out, while_in, while_out)
             for g, body_out, while_in, while_out in zip(
                 grads[:num_original_outputs], body_graph.outputs[:num_original_outputs],
                 while_op.inputs[:num_original_outputs],
                 while_op.outputs[:num_original_outputs], strict=True)]
    grads += [None] * num_intermediates
    chosen = [(y, x, g) for y, x, g in zip(body_graph.outputs, body_graph.inputs, grads,
                                           strict=True) if g is not None]
    ys, xs, non_none_grads = zip(*chosen, strict=True)
    grad_graph, args = _create_grad_func(ys, xs, non_none_grads, cond_graph, body_graph,
                                         unique_grad_fn_name(body_graph.name), while_op,
                                         maximum_iterations)
    if grad_graph.extra_inputs:
        _rewrite_forward_op(while_op, cond_graph, body_graph, grad_graph, orig_num_params)
    while_op._set_attr("_num_original_outputs",
                       attr_value_pb2.AttrValue(i=len(while_op.outputs)))
    loop_vars = args + _resolve_grad_captures(body_graph, grad_graph, while_op)
    _rewrite_output_indexed_slices_as_tensors(grad_graph)
    cond_grad_graph = _build_cond_grad(unique_grad_fn_name(op.get_attr("cond").name),
                                       loop_vars)
    outputs = _build_while_op(loop_vars, cond_grad_graph, grad_graph, parallel_iterations,
                              f"{while_op.name}_grad")
    outputs = [array_ops.identity(t) for t in outputs]
    result, index = [], 3
    for g in grads:
        if g is None:
            result.append(None)
        else:
            result.append(outputs[index])
            index += 1
    return result
