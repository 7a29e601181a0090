"""OpDefs of the call-frame ops (`_Arg`/`_Retval`: a session rewrites feeds and fetches
into them, a function body reads its arguments and writes its results with them) and of
TF's functional ops (function calls, If, Case, While)."""

from aioflow.framework import tensor_shape
from aioflow.framework.function_shapes import call_output_shapes
from aioflow.framework.op_def_registry import register_op


def _arg_shape(op):
    return [tensor_shape.unknown_shape()]


register_op("_Arg").output("output: T").attr("T: type").attr("index: int >= 0") \
    .set_is_stateful().set_shape_fn(_arg_shape)
register_op("_Retval").input("input: T").attr("T: type").attr("index: int >= 0") \
    .set_is_stateful().set_shape_fn(lambda op: [])
register_op("_DeviceArg").output("output: T").attr("T: type").attr("index: int >= 0") \
    .set_is_stateful().set_shape_fn(_arg_shape)
register_op("_DeviceRetval").input("input: T").attr("T: type").attr("index: int >= 0") \
    .set_is_stateful().set_shape_fn(lambda op: [])


# -- the functional ops (TF's functional_ops.cc): function calls and control flow v2 ----

def _unknown_outputs(op):
    return [tensor_shape.unknown_shape() for _ in op.outputs]


def _declared_or_unknown(op):
    """The `output_shapes` attr when it is set (If, Case, While), else unknown shapes."""
    shapes = op.get_attr("output_shapes")
    if shapes and len(shapes) == len(op.outputs):
        return [tensor_shape.as_shape(s) for s in shapes]
    return _unknown_outputs(op)


def _while_shape(op):
    """TF's WhileShapeInferenceFn: the shape invariants when given, else the inputs'."""
    shapes = op.get_attr("output_shapes")
    if shapes and len(shapes) == len(op.outputs):
        return [tensor_shape.as_shape(s) for s in shapes]
    return [t.shape for t in op.inputs]


def _call_shapes(op):
    """The function body's result shapes for the call's input shapes (TF's ShapeRefiner
    infers a call's shapes from its function), else unknown shapes."""
    shapes = call_output_shapes(op)
    if shapes is None or len(shapes) != len(op.outputs):
        return _unknown_outputs(op)
    return shapes


for _name, _stateful in (("PartitionedCall", False), ("StatefulPartitionedCall", True)):
    _b = (register_op(_name).input("args: Tin").output("output: Tout")
          .attr("Tin: list(type) >= 0").attr("Tout: list(type) >= 0").attr("f: func")
          .attr("config: string = ''").attr("config_proto: string = ''")
          .attr("executor_type: string = ''").set_shape_fn(_call_shapes))
    if _stateful:
        _b.set_is_stateful().set_is_distributed_communication()

for _name, _stateful in (("If", True), ("StatelessIf", False)):
    _b = (register_op(_name).input("cond: Tcond").input("input: Tin").output("output: Tout")
          .attr("Tcond: type").attr("Tin: list(type) >= 0").attr("Tout: list(type) >= 0")
          .attr("then_branch: func").attr("else_branch: func")
          .attr("output_shapes: list(shape) = []").set_shape_fn(_declared_or_unknown))
    if _stateful:
        _b.set_is_stateful()

for _name, _stateful in (("Case", True), ("StatelessCase", False)):
    _b = (register_op(_name).input("branch_index: int32").input("input: Tin")
          .output("output: Tout").attr("Tin: list(type) >= 0").attr("Tout: list(type) >= 0")
          .attr("branches: list(func) >= 1").attr("output_shapes: list(shape) = []")
          .set_shape_fn(_declared_or_unknown))
    if _stateful:
        _b.set_is_stateful()

for _name, _stateful in (("While", True), ("StatelessWhile", False)):
    _b = (register_op(_name).input("input: T").output("output: T")
          .attr("T: list(type) >= 0").attr("cond: func").attr("body: func")
          .attr("output_shapes: list(shape) = []").attr("parallel_iterations: int = 10")
          .set_shape_fn(_while_shape))
    if _stateful:
        _b.set_is_stateful()

# A TF 2 export marks each variable it reads by reference (ResourceVariable's
# copy-on-read mode off); no outputs.
register_op("DisableCopyOnRead").input("resource: resource").set_is_stateful() \
    .set_shape_fn(lambda op: [])


def _symbolic_gradient_shape(op):
    """Output i (the gradient of f's input i) has input i's shape (TF's shape fn)."""
    if len(op.inputs) < len(op.outputs):
        raise ValueError(f"SymbolicGradient '{op.name}' has fewer inputs than outputs")
    return [op.inputs[i].shape for i in range(len(op.outputs))]


# The gradient of function f: inputs are f's inputs then the gradients of its outputs;
# outputs are the gradients of f's inputs (tf.gradients emits it for a function call that
# has no registered gradient; kernels/call/symbolic_gradient_kernels.py runs it).
register_op("SymbolicGradient").input("input: Tin").output("output: Tout") \
    .attr("Tin: list(type) >= 1").attr("Tout: list(type) >= 1").attr("f: func") \
    .set_shape_fn(_symbolic_gradient_shape)
