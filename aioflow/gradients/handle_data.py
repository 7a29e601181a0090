"""What TF keeps as a resource handle's handle data, for the variables the gradients
need: the variable's shape and dtype when a handle is traced (through Identities) to a
VarHandleOp, or was given them as a function graph's input standing for such a handle
(TF's copy_handle_data from an If's input to its branches' inputs)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops, tensor_shape


def variable_handle_data(t: ops.Tensor):
    """(shape, dtype) of the variable whose handle `t` is, or None when unknown."""
    while t.op.type == "Identity":
        t = t.op.inputs[0]
    copied = getattr(t, "_handle_data", None)
    if copied is not None:
        return copied
    if t.op.type != "VarHandleOp":
        return None
    return (tensor_shape.TensorShape(t.op.get_attr("shape")),
            dtypes.as_dtype(t.op.get_attr("dtype")))


def copy_handle_data(source: ops.Tensor, target: ops.Tensor) -> None:
    """Give `target` the handle data of `source` (when it has some)."""
    if source.dtype == dtypes.resource:
        data = variable_handle_data(source)
        if data is not None:
            target._handle_data = data
