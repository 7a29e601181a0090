"""Kernels of the call-frame ops: `_Arg` reads a fed value, `_Retval` stores a fetched one."""

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel


@register_kernel("_Arg", "CPU")
class ArgOp(OpKernel):
    """Output the run's argument number `index` (a fed value)."""

    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.index = ctx.get_attr("index")

    def compute(self, ctx, inputs):
        args = ctx.args
        if 0 <= self.index < len(args):
            return (args[self.index],)
        # TF's FunctionCallFrame::GetArg (an _Arg written into a user graph by hand)
        raise errors.InvalidArgumentError(
            None, None, f"GetArg {self.index} is not within [0, {len(args)})")


@register_kernel("_Retval", "CPU")
class RetvalOp(OpKernel):
    """Store the input as the run's return value number `index` (a fetched value)."""

    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.index = ctx.get_attr("index")

    def compute(self, ctx, inputs):
        retvals = ctx.retvals
        if 0 <= self.index < len(retvals):
            retvals[self.index] = inputs[0]
            return ()
        raise errors.InvalidArgumentError(
            None, None, f"SetRetval {self.index} is not within [0, {len(retvals)})")


@register_kernel("_DeviceArg", "CPU")
class DeviceArgOp(ArgOp):
    """`_Arg` of a multi-device function's argument that stays on its device."""


@register_kernel("_DeviceRetval", "CPU")
class DeviceRetvalOp(RetvalOp):
    """`_Retval` of a multi-device function's result that stays on its device."""
