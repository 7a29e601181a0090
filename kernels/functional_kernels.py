"""Kernels of TF's functional ops: PartitionedCall, StatefulPartitionedCall, If,
StatelessIf, Case, StatelessCase, While, StatelessWhile (tensorflow/core/kernels/
functional_ops.cc, partitioned_function_ops.cc).

Each is an async kernel: it instantiates its functions when it is built (through the
device's FunctionLibraryRuntime, runtime/function_runtime.py: the bodies are built once
and cached) and, when it runs, awaits their bodies as sub-steps of the step. A While
awaits its cond and body once per iteration and holds no thread; its iterations run one
after another (TF's functional While does the same: `parallel_iterations` bounds the
iterations in flight, and one is always within the bound). The `output_shapes` of a
While are its shape invariants: a body result whose shape is not compatible with its
invariant is an InvalidArgumentError, as TF's.

Function arity and types are checked against the call's Tin/Tout (or T) when the kernel
is built: InvalidArgumentError naming the call node and the function.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.function_instantiate import check_call_types
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel


class _FunctionalKernel(AsyncOpKernel):
    """Shared: instantiating a func attr and checking its signature against the node."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.flr = ctx.function_library
        self.node_def = ctx.node_def
        if self.flr is None:
            raise errors.UnimplementedError(
                ctx.node_def, None, f"{ctx.op_type} node {ctx.name} needs a function "
                                    f"library runtime (this executor was built without one)")

    def body(self, func, tin, tout, what: str):
        """The instantiated body of `func` (a NameAttrList), checked against the
        types the node passes (`tin`) and expects back (`tout`)."""
        body = self.flr.instantiate(func.name, {k: v for k, v in func.attr.items()},
                                    self.node_def)
        check_call_types(self.node_def, body.name, "arguments", tin, body.arg_types, what)
        if tout is not None:
            check_call_types(self.node_def, body.name, "results", tout, body.ret_types, what)
        return body


@register_kernel("PartitionedCall", "CPU")
@register_kernel("StatefulPartitionedCall", "CPU")
class PartitionedCallOp(_FunctionalKernel):
    """Call `f` with the inputs; its results are the outputs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fbody = self.body(ctx.node_def.attr["f"].func, ctx.node_def.attr["Tin"].list.type,
                               ctx.node_def.attr["Tout"].list.type, "function")

    async def compute_async(self, ctx, inputs):
        return await self.flr.run(self.fbody, ctx, inputs)


def to_bool(value) -> bool:
    """TF's ToBool of a predicate: a scalar's truth value, else whether it has elements."""
    if np.ndim(value) == 0:
        if isinstance(value, (bytes, str)) or (isinstance(value, np.ndarray)
                                               and value.dtype.kind in "SUO"):
            return len(value.item() if isinstance(value, np.ndarray) else value) > 0
        return bool(value)
    return np.size(value) > 0


@register_kernel("If", "CPU")
@register_kernel("StatelessIf", "CPU")
class IfOp(_FunctionalKernel):
    """Call `then_branch` when `cond` is true, else `else_branch`, with the inputs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        attrs = ctx.node_def.attr
        tin, tout = attrs["Tin"].list.type, attrs["Tout"].list.type
        self.then_body = self.body(attrs["then_branch"].func, tin, tout, "then_branch")
        self.else_body = self.body(attrs["else_branch"].func, tin, tout, "else_branch")

    async def compute_async(self, ctx, inputs):
        body = self.then_body if to_bool(inputs[0]) else self.else_body
        return await self.flr.run(body, ctx, inputs[1:])


@register_kernel("Case", "CPU")
@register_kernel("StatelessCase", "CPU")
class CaseOp(_FunctionalKernel):
    """Call `branches[branch_index]` (out of range: the last branch, TF's default)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        attrs = ctx.node_def.attr
        tin, tout = attrs["Tin"].list.type, attrs["Tout"].list.type
        self.bodies = [self.body(f, tin, tout, f"branches[{i}]")
                       for i, f in enumerate(attrs["branches"].list.func)]

    async def compute_async(self, ctx, inputs):
        index = inputs[0]
        if np.ndim(index) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"branch_index must be a scalar, but got shape "
                            f"{list(np.shape(index))}")
        i = int(index)
        body = self.bodies[i] if 0 <= i < len(self.bodies) else self.bodies[-1]
        return await self.flr.run(body, ctx, inputs[1:])


@register_kernel("While", "CPU")
@register_kernel("StatelessWhile", "CPU")
class WhileOp(_FunctionalKernel):
    """While `cond(vars)` is true, `vars = body(vars)`; the outputs are the last vars."""

    def __init__(self, ctx):
        super().__init__(ctx)
        attrs = ctx.node_def.attr
        types = attrs["T"].list.type
        self.cond_body = self.body(attrs["cond"].func, types, None, "cond")
        if self.cond_body.num_rets != 1:
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"Function '{self.cond_body.name}' (cond of node "
                                    f"{ctx.name}) must return one value, not "
                                    f"{self.cond_body.num_rets}")
        self.loop_body = self.body(attrs["body"].func, types, types, "body")
        self.invariants = [None if s.unknown_rank else [d.size for d in s.dim]
                           for s in attrs["output_shapes"].list.shape]
        self.parallel_iterations = attrs["parallel_iterations"].i
        if self.parallel_iterations < 1:
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"parallel_iterations must be > 0, got "
                                    f"{self.parallel_iterations} (node {ctx.name})")

    async def compute_async(self, ctx, inputs):
        run, cond, body = self.flr.run, self.cond_body, self.loop_body
        values = list(inputs)
        check = any(s is not None for s in self.invariants)
        while to_bool((await run(cond, ctx, values))[0]):
            values = await run(body, ctx, values)
            if check:
                self._check_invariants(values)
        return values

    def _check_invariants(self, values) -> None:
        for i, (value, shape) in enumerate(zip(values, self.invariants, strict=False)):
            if shape is None:
                continue
            got = np.shape(value)
            if len(got) != len(shape) or any(d not in (-1, g) for d, g in zip(shape, got,
                                                                              strict=True)):
                raise errors.InvalidArgumentError(
                    None, None, f"Loop variable {i} of {self.name}: the body returned shape "
                                f"{list(got)}, which is not compatible with its shape "
                                f"invariant {shape} (output_shapes)")


@register_kernel("DisableCopyOnRead", "CPU")
class DisableCopyOnReadOp(OpKernel):
    """TF 2 exports mark variables read by reference (no copy-on-read mode): aioflow's
    variables have no such mode, so there is nothing to do."""

    def compute(self, ctx, inputs):
        return ()
