"""Gradient functions of the TensorArray ops (TF's tensor_array_grad.py): each forward
TensorArray gets a gradient TensorArray per gradients() call (TensorArrayGradV3, keyed by
the call's "gradients" name scope); a read's gradient is a write to it, a write's a read,
a gather's a scatter, and so on."""

from __future__ import annotations

from aioflow.framework import ops
from aioflow.gradients.registry import NotDifferentiable, RegisterGradient
from aioflow.ops import array_ops
from aioflow.ops.tensor_array_ops import TensorArray

for _op_type in ("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3",
                 "TensorArrayCloseV3"):
    NotDifferentiable(_op_type)


def _grad_source(op_or_tensor) -> str:
    """The name scope of the gradients() call that made `op_or_tensor`."""
    tokens = op_or_tensor.name.split("/")
    positions = [i for i, t in enumerate(tokens) if t.startswith("gradients")]
    if not positions:
        raise ValueError(
            "Expected op/tensor name to start with gradients (excluding scope), got: "
            f"{op_or_tensor.name}. This means that a tf.gradients op with this op in its "
            "dependency path has a custom name that does not start with 'gradients'. Please "
            "make sure all calls to tf.gradients that have non-empty `name` arguments use "
            "names that start with 'gradients'.")
    return "/".join(tokens[:positions[-1] + 1])


def _grad_array(op, dtype, flow, source):
    return TensorArray(dtype=dtype, handle=op.inputs[0], flow=flow,
                       colocate_with_first_write_call=False).grad(source=source, flow=flow)


def _write_barrier(op, flow):
    flow_out = array_ops.identity(op.outputs[0], "flow_out")
    with ops.control_dependencies([flow_out]):
        return array_ops.identity(flow, "write_barrier")


@RegisterGradient("TensorArrayReadV3")
def _read_grad(op, grad):
    index, flow = op.inputs[1], op.inputs[2]
    g = _grad_array(op, op.get_attr("dtype"), flow, _grad_source(grad))
    return [None, None, g.write(index, grad).flow]


@RegisterGradient("TensorArrayWriteV3")
def _write_grad(op, flow):
    index = op.inputs[1]
    source = _grad_source(flow)
    flow = _write_barrier(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, source)
    return [None, None, g.read(index), flow]


@RegisterGradient("TensorArrayGatherV3")
def _gather_grad(op, grad):
    indices, flow = op.inputs[1], op.inputs[2]
    g = _grad_array(op, op.get_attr("dtype"), flow, _grad_source(grad))
    return [None, None, g.scatter(indices, grad).flow]


@RegisterGradient("TensorArrayScatterV3")
def _scatter_grad(op, flow):
    indices = op.inputs[1]
    source = _grad_source(flow)
    flow = _write_barrier(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, source)
    return [None, None, g.gather(indices), flow]


@RegisterGradient("TensorArrayConcatV3")
def _concat_grad(op, grad, unused_lengths_grad):
    flow = op.inputs[1]
    lengths = op.outputs[1]
    g = _grad_array(op, op.get_attr("dtype"), flow, _grad_source(grad))
    return [None, g.split(grad, lengths=lengths).flow]


@RegisterGradient("TensorArraySplitV3")
def _split_grad(op, flow):
    source = _grad_source(flow)
    flow = _write_barrier(op, flow)
    g = _grad_array(op, op.get_attr("T"), flow, source)
    return [None, g.concat(), None, flow]
