"""Kernels of the v1 control-flow ops (Switch, Merge, Enter, Exit, NextIteration, LoopCond,
ControlTrigger, Abort) and of Assert and CheckNumerics.

The executor owns frames, iterations and deadness: Enter/Exit/NextIteration only forward
their input here, Switch routes it by returning None (not produced) for the untaken
output, and Merge receives None for dead or missing inputs.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.io.tensor_summary import summarize_value

# Control flow only routes values, so one kernel would serve NumPy and CuPy arrays alike;
# add "GPU" here (TF keeps `pred`, `value_index` and LoopCond in host memory) once the
# GPU kernel set exists, so that the Placer keeps loops next to their data. TF's CPU
# Switch also declares `pred` host memory: a predicate sent from another device arrives
# through a _HostRecv (graph/partition_control_flow.py).
_DEVICES = ("CPU",)


def _register(op_type: str, **host_memory):
    """Register a kernel class for `op_type` on each device type of _DEVICES."""
    def wrap(cls):
        for device in _DEVICES:
            register_kernel(op_type, device,
                            host_memory=host_memory.get(device, ()))(cls)
        return cls
    return wrap


def _shape_str(shape) -> str:
    """TF's TensorShape::DebugString: "[2,3]", "[]"."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


@_register("Switch", CPU=("pred",), GPU=("pred",))
@_register("RefSwitch", CPU=("pred",), GPU=("pred",))
class SwitchOp(OpKernel):
    """Forward `data` to output_true if `pred` else to output_false; the other is dead."""

    def compute(self, ctx, inputs):
        data, pred = inputs
        if pred.ndim:  # NumPy scalars and 0-d arrays both have ndim == 0
            raise errors.InvalidArgumentError(
                None, None, "The second input must be a scalar, but it has shape "
                f"{_shape_str(np.shape(pred))}")
        if pred:
            return (None, data)
        return (data, None)


@_register("_SwitchN", GPU=("output_index",))
class SwitchNOp(OpKernel):
    """Forward `data` to output `output_index` (out of range: the last, as TF's); the
    other outputs are dead."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_outs = ctx.get_attr("num_outs")

    def compute(self, ctx, inputs):
        data, index = inputs
        if np.ndim(index):
            raise errors.InvalidArgumentError(
                None, None, f"output_index must be a scalar, but it has shape "
                            f"{_shape_str(np.shape(index))}")
        i = int(index)
        if not 0 <= i < self.num_outs:
            i = self.num_outs - 1
        outs = [None] * self.num_outs
        outs[i] = data
        return outs


@_register("Merge", GPU=("value_index",))
@_register("RefMerge", GPU=("value_index",))
class MergeOp(OpKernel):
    """Forward the first available (non-dead) input and its index as an int32."""

    def compute(self, ctx, inputs):
        for i, value in enumerate(inputs):
            if value is not None:
                return (value, _INDICES[i] if i < len(_INDICES) else np.int32(i))
        return (None, None)


_INDICES = tuple(np.int32(i) for i in range(8))


class _ForwardOp(OpKernel):
    """Output the input unchanged (the executor moves it between frames/iterations)."""

    forwards_input = True

    def compute(self, ctx, inputs):
        return (inputs[0],)


for _op in ("Enter", "RefEnter", "Exit", "RefExit", "NextIteration", "RefNextIteration"):
    _register(_op)(type(f"{_op}Op", (_ForwardOp,), {"__doc__": _ForwardOp.__doc__}))


@_register("LoopCond", GPU=("input", "output"))
class LoopCondOp(OpKernel):
    """Forward the loop predicate (the executor reads it through the loop's Switches)."""

    forwards_input = True
    compilable = True  # a pure forward: it joins its predicate's segment (Less, LoopCond)

    def compute(self, ctx, inputs):
        return (inputs[0],)


@_register("ControlTrigger")
class ControlTriggerOp(OpKernel):
    """No outputs: a control-edge anchor that runs even when its inputs are dead."""

    def compute(self, ctx, inputs):
        return ()


@register_kernel("Abort", "CPU")
class AbortOp(OpKernel):
    """Fail the step with AbortedError (TF aborts the process; aioflow fails the run)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        msg = ctx.get_attr("error_msg", b"")
        self.error_msg = msg.decode("utf-8", "replace") if isinstance(msg, bytes) else msg
        self.exit_without_error = bool(ctx.get_attr("exit_without_error", False))

    def compute(self, ctx, inputs):
        if self.exit_without_error:
            raise errors.AbortedError(None, None, f"Exiting the process: {self.error_msg}")
        raise errors.AbortedError(None, None,
                                  f"Abort_op intentional failure; {self.error_msg}")


# -- Assert ----------------------------------------------------------------------------------

@register_kernel("Assert", "CPU")
class AssertOp(OpKernel):
    """Raise InvalidArgumentError "assertion failed: [d0] [d1] ..." when `condition` is
    false, summarizing each data tensor to `summarize` entries."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.summarize = int(ctx.get_attr("summarize", 3))

    def compute(self, ctx, inputs):
        cond = inputs[0]
        shape = np.shape(cond)
        if not (len(shape) == 0 or (len(shape) == 1 and shape[0] == 1)):
            raise errors.InvalidArgumentError(
                None, None, f"In[0] should be a scalar: {_shape_str(shape)}")
        if bool(np.reshape(cond, ())):
            return ()
        parts = [f"[{summarize_value(x, self.summarize)}]" for x in inputs[1:]]
        raise errors.InvalidArgumentError(None, None, "assertion failed: " + " ".join(parts))


@register_kernel("CheckNumerics", "CPU")
class CheckNumericsOp(OpKernel):
    """Pass the input through; InvalidArgumentError if it holds NaN or Inf values."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        msg = ctx.get_attr("message")
        self.message = msg.decode("utf-8", "replace") if isinstance(msg, bytes) else msg
        dtype = ctx.get_attr("T", None)
        self.is_bfloat16 = dtype is not None and dtype == dtypes.bfloat16

    def is_expensive(self, inputs) -> bool:
        return np.size(inputs[0]) > (1 << 16)

    def compute(self, ctx, inputs):
        x = inputs[0]
        arr = np.asarray(x)
        if self.is_bfloat16 or arr.dtype.kind not in "fc":
            arr = arr.astype(np.float32)
        has_nan = bool(np.isnan(arr).any())
        has_inf = bool(np.isinf(arr).any())
        if has_nan or has_inf:
            status = "Inf and NaN" if (has_nan and has_inf) else ("NaN" if has_nan else "Inf")
            raise errors.InvalidArgumentError(
                None, None, f"{self.message} : Tensor had {status} values")
        return (x,)
