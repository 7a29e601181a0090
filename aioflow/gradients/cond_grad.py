"""The gradient of a functional If / StatelessIf and Case / StatelessCase as TF builds it
(cond_v2._IfGrad and _CaseGrad, tensorflow/python/ops/cond_v2.py), node for node. What is
said of an If's two branches holds for a Case's N; a Case's gradient is a Case named
`gradient`, lowered as the forward Case is.

1. The branch FuncGraphs are rebuilt from the library (function_def_to_graph, the If's
   input shapes), or, for an If this module built (a gradient's gradient), are the
   graphs it was built from, as TF keeps them on the op; their inputs stand for the
   If's inputs 1..n.
2. Each branch's gradient is built in a FuncGraph `<branch>_grad_<uid>` by tf.gradients
   of the branch's trainable outputs with respect to its inputs, with the If's output
   gradients as grad_ys (captured from the outer graph). An intermediate of the forward
   branch used there is wrapped in the forward branch by OptionalFromValue and unwrapped
   with OptionalGetValue where it is captured (a Const is copied instead); each result
   goes through an Identity. A gradient one branch has and the other lacks becomes zeros
   in the other.
3. If any intermediate was wrapped, the forward If is rewritten: both branches output
   their optionals (the shorter list padded with OptionalNone), become functions
   `<branch>_rewritten`, and the If gets the new Tout / output_shapes and outputs.
4. The gradient If (`If` when a gradient branch holds a stateful op, else
   `StatelessIf`) takes the predicate and the union of both gradient graphs' captures,
   each resolved to the outer graph (a forward branch's output to the If's output, a
   forward branch's input to the If's input), in first-use order; a branch lacking one
   gets a Placeholder for it. It is lowered with Switch/Merge (`_lower_using_switch_merge`),
   and `_read_only_resource_inputs` lists the resource inputs both branches only read.
   Its outputs go through Identities; the predicate's gradient is None.

An IndexedSlices gradient leaves a gradient graph as its components (values, indices,
dense_shape), each through an Identity; where another branch's gradient is a tensor
there, that one becomes IndexedSlices of all its rows (Range over its first dimension).

Cases this does not build as TF (a resource intermediate of a branch) raise
NotImplementedError before anything outside the new FuncGraphs
changes; the caller then builds the gradient by recomputation
(gradients/functional_grad.py).
"""

from __future__ import annotations

import itertools

from aioflow.data.auto_control_deps import add_control_dependencies, read_only_resource_inputs
from aioflow.data.control_flow_func_graph import ControlFlowFuncGraph
from aioflow.data.function_def_to_graph import function_def_to_graph
from aioflow.data.graph_to_function_def import graph_to_function_def
from aioflow.framework import dtypes, ops
from aioflow.framework.indexed_slices import IndexedSlices
from aioflow.framework.op_def_library import apply_op
from aioflow.gradients.gradients_util import gradients, is_trainable
from aioflow.gradients.handle_data import copy_handle_data, variable_handle_data
from aioflow.ops import array_ops, constant_op, math_ops
from aioflow.proto import attr_value_pb2

_uid = itertools.count(1)

_READ_ONLY_ATTR = "_read_only_resource_inputs"


def unique_grad_fn_name(forward_name: str) -> str:
    """TF's name of a gradient function: `<forward>_grad_<uid>`."""
    return f"{forward_name}_grad_{next(_uid)}"


def create_new_tf_function(func_graph: ControlFlowFuncGraph) -> str:
    """Add `func_graph` to its outer graph's library as a function; its name."""
    fdef = graph_to_function_def(func_graph, attrs={
        "_construction_context": attr_value_pb2.AttrValue(s=b"kEagerRuntime")})
    func_graph.outer_graph._library.add_function_def(fdef)
    return func_graph.name


def _key(t: ops.Tensor) -> tuple:
    return (id(t.graph), t.op.name, t.value_index)


class CondGradFuncGraph(ControlFlowFuncGraph):
    """The gradient graph of one branch: captures the forward branch's intermediates
    through optionals (TF's _CondGradFuncGraph)."""

    def __init__(self, name: str, forward_graph: ControlFlowFuncGraph):
        super().__init__(name, ops.get_default_graph())
        self.op_needs_rewrite = False
        self.forward_graph = forward_graph
        self._indirect_captures: dict = {}
        self.wrapped_intermediates: dict = {}  # forward tensor key -> its optional
        self._captured_constants: dict = {}
        self.structured_outputs: list = []

    def _capture_helper(self, tensor: ops.Tensor, name: str) -> ops.Tensor:
        fwd = self.forward_graph
        if (tensor.graph is not fwd or any(tensor is t for t in fwd.inputs)
                or any(tensor is t for t in fwd.outputs)):
            return super()._capture_helper(tensor, name)
        key = _key(tensor)
        if key in self._captured_constants:
            return self._captured_constants[key]
        if tensor.op.type == "Const":
            value = tensor.op.get_attr("value")
            self._captured_constants[key] = constant_op.constant(value, dtype=tensor.dtype)
            return self._captured_constants[key]
        if key in self._indirect_captures:
            return self._indirect_captures[key]
        if tensor.dtype == dtypes.resource:
            raise NotImplementedError("a resource intermediate of an If branch")
        if key not in self.wrapped_intermediates:
            self.wrapped_intermediates[key] = self._wrapped(tensor)
        captured = super()._capture_helper(self.wrapped_intermediates[key], name)
        value = apply_op("OptionalGetValue", optional=captured, output_types=[tensor.dtype],
                         output_shapes=[tensor.shape])
        value = value[0] if isinstance(value, (list, tuple)) else value
        self._indirect_captures[key] = value
        return value

    def _wrapped(self, tensor: ops.Tensor) -> ops.Tensor:
        """The optional of `tensor` the forward branch outputs (made if it has none)."""
        fwd = self.forward_graph
        for consumer in tensor.consumers():
            if consumer.type == "OptionalFromValue" and any(
                    consumer.outputs[0] is out for out in fwd.outputs):
                return consumer.outputs[0]
        with fwd.as_default():
            optional = apply_op("OptionalFromValue", components=[tensor])
        self.op_needs_rewrite = True
        return optional


def _branch_attrs(op) -> list[tuple[attr_value_pb2.NameAttrList, str]]:
    """(function, the attribute TF caches its FuncGraph in) for each branch of an If or
    a Case."""
    if op.type in ("If", "StatelessIf"):
        return [(op.get_attr("then_branch"), "_true_graph"),
                (op.get_attr("else_branch"), "_false_graph")]
    return [(func, f"_branch_graph_{i}") for i, func in enumerate(op.get_attr("branches"))]


def _branch_graphs(op) -> list[ControlFlowFuncGraph]:
    """The op's branches as FuncGraphs whose inputs stand for the op's inputs 1..n: the
    graphs it was built from when this module built it (a gradient If or Case), else
    rebuilt from the library."""
    inputs = list(op.inputs[1:])
    graphs = []
    for func, cached in _branch_attrs(op):
        graph = getattr(op, cached, None)
        if graph is None:
            fdef = op.graph._library.find(func.name)
            graph = function_def_to_graph(fdef, op.graph, [t.shape for t in inputs])
        for outer, inner in zip(inputs, graph.inputs, strict=True):
            copy_handle_data(outer, inner)
        graph.reset_captures(inputs, graph.inputs)
        graph.forward_op = op
        graphs.append(graph)
    return graphs


def _create_grad_func(func_graph, grads, name: str) -> CondGradFuncGraph:
    graph = CondGradFuncGraph(name, func_graph)
    with graph.as_default():
        ys, grad_ys = [], []
        for y, grad_y in zip(func_graph.outputs, grads, strict=True):
            if is_trainable(y):
                ys.append(y)
                grad_ys.append(grad_y)
        result = gradients(ys, func_graph.inputs, grad_ys=grad_ys)
        graph.structured_outputs = [mark_as_return(g) for g in result]
    graph.control_outputs = add_control_dependencies(graph, flatten(graph.structured_outputs))
    return graph


def mark_as_return(g):
    """A result of a function graph through Identities, an IndexedSlices component by
    component (TF's func_graph_from_py_func over composites)."""
    if g is None:
        return None
    if isinstance(g, IndexedSlices):
        return IndexedSlices(*(None if t is None else array_ops.identity(t)
                               for t in (g.values, g.indices, g.dense_shape)))
    return array_ops.identity(g)


def flatten(structured: list) -> list:
    """The tensors of `structured` (IndexedSlices expanded), Nones left out."""
    flat = []
    for t in structured:
        if isinstance(t, IndexedSlices):
            flat.extend(c for c in (t.values, t.indices, t.dense_shape) if c is not None)
        elif t is not None:
            flat.append(t)
    return flat


def _pack(structured: list, tensors: list) -> list:
    """`tensors` (flat) in the structure of `structured` (TF's _pack_sequence_as)."""
    out, it = [], iter(tensors)
    for t in structured:
        if t is None:
            out.append(None)
        elif isinstance(t, IndexedSlices):
            values, indices = next(it), next(it)
            out.append(IndexedSlices(values, indices,
                                     None if t.dense_shape is None else next(it)))
        else:
            out.append(next(it))
    return out


def as_indexed_slices(x: ops.Tensor) -> IndexedSlices:
    """TF's math_ops._as_indexed_slices: all of `x`'s rows."""
    x_shape = array_ops._shape_without_out_type(x, optimize=True)  # TF's shape_internal
    return IndexedSlices(x, math_ops.range(0, x_shape[0]), x_shape)


def _make_output_composite_tensors_match(branch_graphs) -> None:
    """Where one branch's gradient is IndexedSlices and another's a tensor, make the
    tensor IndexedSlices too."""
    for i, outs in enumerate(zip(*(g.structured_outputs for g in branch_graphs),
                                 strict=True)):
        if not any(isinstance(t, IndexedSlices) for t in outs):
            continue
        for graph, t in zip(branch_graphs, outs, strict=True):
            if isinstance(t, ops.Tensor):
                with graph.as_default():
                    graph.structured_outputs[i] = as_indexed_slices(t)
    for graph in branch_graphs:
        graph.outputs = flatten(graph.structured_outputs)


def _make_indexed_slices_indices_types_match(branch_graphs) -> None:
    """IndexedSlices indices int32 in one branch and int64 in another: int64 in all."""
    for i, outs in enumerate(zip(*(g.structured_outputs for g in branch_graphs),
                                 strict=True)):
        if not isinstance(outs[0], IndexedSlices):
            continue
        if len({t.indices.dtype for t in outs}) == 1:
            continue
        for graph, t in zip(branch_graphs, outs, strict=True):
            if t.indices.dtype == dtypes.int32:
                with graph.as_default():
                    graph.structured_outputs[i] = IndexedSlices(
                        t.values, math_ops.cast(t.indices, dtypes.int64), t.dense_shape)
    for graph in branch_graphs:
        graph.outputs = flatten(graph.structured_outputs)


def _create_zeros_for_none_grads(forward_graphs, grad_graphs) -> None:
    for i, outs in enumerate(zip(*(g.structured_outputs for g in grad_graphs), strict=True)):
        if any(t is None for t in outs) and any(t is not None for t in outs):
            for fwd, grad_graph, t in zip(forward_graphs, grad_graphs, outs, strict=True):
                if t is None:
                    with grad_graph.as_default():
                        grad_graph.structured_outputs[i] = _zeros_like(fwd, fwd.inputs[i])
    for grad_graph in grad_graphs:
        grad_graph.outputs = flatten(grad_graph.structured_outputs)


def _zeros_like(branch_graph, t: ops.Tensor) -> ops.Tensor:
    """TF's default_gradient.zeros_like: for a resource, zeros of its variable's shape and
    dtype (the handle data the branch input gets from the If's input)."""
    if t.dtype != dtypes.resource:
        return array_ops.zeros_like(t)
    outer = next(o for o, inner in branch_graph.captures if inner is t)
    handle_data = variable_handle_data(outer)
    if handle_data is None:
        raise NotImplementedError("zeros for a resource that is not a variable's handle")
    return array_ops.zeros(*handle_data)


def _make_intermediates_match(branch_graphs, branch_optionals) -> list[list]:
    size = max(len(o) for o in branch_optionals)
    out = []
    for graph, optionals in zip(branch_graphs, branch_optionals, strict=True):
        with graph.as_default():
            nones = [apply_op("OptionalNone") for _ in range(size - len(optionals))]
        out.append(list(optionals) + nones)
    return out


def _func(name: str) -> attr_value_pb2.AttrValue:
    return attr_value_pb2.AttrValue(func=attr_value_pb2.NameAttrList(name=name))


def _rewrite_forward_op(op, branch_graphs, grad_graphs) -> None:
    """Make the forward op also output the optionals the gradient graphs capture."""
    extra = _make_intermediates_match(
        branch_graphs, [list(g.wrapped_intermediates.values()) for g in grad_graphs])
    for graph, outputs in zip(branch_graphs, extra, strict=True):
        graph.outputs.extend(outputs)
        graph.name += "_rewritten"
    if op.type in ("If", "StatelessIf"):
        for attr, graph in zip(("then_branch", "else_branch"), branch_graphs, strict=True):
            op._set_attr(attr, _func(create_new_tf_function(graph)))
    else:
        op._set_attr("branches", attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(
            func=[attr_value_pb2.NameAttrList(name=create_new_tf_function(graph))
                  for graph in branch_graphs])))
    first = branch_graphs[0]
    op._set_attr("Tout", attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(
        type=[t.dtype.as_datatype_enum for t in first.outputs])))
    op._set_attr("output_shapes", attr_value_pb2.AttrValue(
        list=attr_value_pb2.AttrValue.ListValue(
            shape=[s.as_proto() for s in first.output_shapes])))
    op._add_outputs([t.dtype for t in extra[0]], [t.shape for t in extra[0]])


def _resolve_grad_inputs(cond_graph, grad_graph) -> list[ops.Tensor]:
    """The outer tensors to pass for the gradient graph's captures."""
    resolved = []
    for t in grad_graph.external_captures:
        if t.graph is not grad_graph.outer_graph:
            for i, out in enumerate(cond_graph.outputs):
                if out is t:
                    t = cond_graph.forward_op.outputs[i]
                    break
            else:
                for i, inner in enumerate(cond_graph.internal_captures):
                    if inner is t:
                        t = cond_graph.external_captures[i]
                        break
                else:
                    raise ValueError(f"Could not find external tensor capture {t} in "
                                     "captures or outputs")
        resolved.append(t)
    return resolved


def _make_inputs_match(branch_graphs, branch_inputs) -> list[ops.Tensor]:
    seen, new_inputs = set(), []
    for inputs in branch_inputs:
        for t in inputs:
            if id(t) not in seen:
                seen.add(id(t))
                new_inputs.append(t)
    for graph, inputs in zip(branch_graphs, branch_inputs, strict=True):
        params = {id(t): p for t, p in zip(inputs, graph.inputs, strict=True)}
        input_list = []
        for t in new_inputs:
            param = params.get(id(t))
            if param is None:
                with graph.as_default():
                    param = array_ops.placeholder(t.dtype, shape=t.shape)
            input_list.append(param)
        graph.inputs = input_list
        graph.reset_captures(new_inputs, input_list)
    return new_inputs


def _output_shapes(graphs) -> list:
    shapes = []
    for outs in zip(*(g.outputs for g in graphs), strict=True):
        shape = outs[0].shape
        for other in outs[1:]:
            shape = shape.most_specific_compatible_shape(other.shape)
        shapes.append(shape)
    return shapes


def _build_grad_op(forward, selector, graphs, branch_inputs) -> list:
    """The gradient If or Case (cond_v2._build_cond with building_gradient=True, or
    _build_case named "gradient")."""
    _make_indexed_slices_indices_types_match(graphs)
    op_inputs = _make_inputs_match(graphs, branch_inputs)
    stateful = any(op.op_def is not None and op.op_def.is_stateful
                   for graph in graphs for op in graph.get_operations())
    common = {"input": op_inputs, "Tout": [t.dtype for t in graphs[0].outputs],
              "output_shapes": _output_shapes(graphs)}
    if forward.type in ("If", "StatelessIf"):
        true_graph, false_graph = graphs
        tensors = apply_op(
            "If" if stateful else "StatelessIf", cond=selector,
            then_branch=attr_value_pb2.NameAttrList(name=create_new_tf_function(true_graph)),
            else_branch=attr_value_pb2.NameAttrList(name=create_new_tf_function(false_graph)),
            **common)
        lowering = True
    else:
        tensors = apply_op(
            "Case" if stateful else "StatelessCase", name="gradient", branch_index=selector,
            branches=[attr_value_pb2.NameAttrList(name=create_new_tf_function(g))
                      for g in graphs], **common)
        try:  # a Case's gradient lowers as the Case does (TF's default: lowered)
            lowering = forward.get_attr("_lower_using_switch_merge")
        except (ValueError, KeyError):
            lowering = True
    tensors = list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]
    if tensors:
        op = tensors[0].op
        for (_, cached), graph in zip(_branch_attrs(op), graphs, strict=True):
            setattr(op, cached, graph)
        op._set_attr("_lower_using_switch_merge", attr_value_pb2.AttrValue(b=lowering))
        read_only = set.intersection(*(read_only_resource_inputs(g) for g in graphs))
        op._set_attr(_READ_ONLY_ATTR, attr_value_pb2.AttrValue(
            list=attr_value_pb2.AttrValue.ListValue(i=sorted(i + 1 for i in read_only))))
        op.graph.prevent_fetching(op)
    return _pack(graphs[0].structured_outputs, [array_ops.identity(t) for t in tensors])


def cond_grad(op, grads) -> list:
    """TF's _IfGrad / _CaseGrad: [None for the predicate or branch index] + the gradients
    of the op's inputs."""
    branch_graphs = _branch_graphs(op)
    grad_graphs = [_create_grad_func(g, grads, unique_grad_fn_name(g.name))
                   for g in branch_graphs]
    _create_zeros_for_none_grads(branch_graphs, grad_graphs)
    if any(g.op_needs_rewrite for g in grad_graphs):
        _rewrite_forward_op(op, branch_graphs, grad_graphs)
    grad_inputs = [_resolve_grad_inputs(fwd, grad)
                   for fwd, grad in zip(branch_graphs, grad_graphs, strict=True)]
    _make_output_composite_tensors_match(grad_graphs)
    return [None] + _build_grad_op(op, op.inputs[0], grad_graphs, grad_inputs)
