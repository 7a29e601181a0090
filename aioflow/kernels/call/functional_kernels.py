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
invariant is an InvalidArgumentError (checked after every iteration run as a sub-step;
compiled iterations check the first iteration's results and the loop's last).

Function arity and types are checked against the call's Tin/Tout (or T) when the kernel
is built: InvalidArgumentError naming the call node and the function.
"""

from __future__ import annotations

import asyncio
from time import perf_counter

import numpy as np

from aioflow.framework import errors
from aioflow.framework.function_instantiate import check_call_types
from aioflow.framework.op_kernel import AsyncOpKernel, OpKernel, register_kernel


class _FunctionalKernel(AsyncOpKernel):
    """Shared: instantiating a func attr and checking its signature against the node;
    starting without a task when the work is done at once (TF's AsyncOpKernel done
    callback): `start` returns the outputs, or a coroutine that a task then awaits."""

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

    def start(self, ctx, inputs) -> tuple:
        """(outputs, None) when done at once, else (None, a coroutine giving them)."""
        raise NotImplementedError

    def call(self, body, ctx, args) -> tuple:
        """`start` of one call of `body`: its compiled function, else its sub-step."""
        if body.fast is not None:
            with np.errstate(all="ignore"):
                outs = self.flr.run_compiled(body, ctx, args)
            if outs is not None:
                return outs, None
        return None, self.flr.run_step(body, ctx, args)

    def start_async(self, ctx, inputs, done):
        """The outputs at once, or None and `done(outputs, error)` later, from a task the
        step's cancellation cancels (an aborted step does not wait for the call)."""
        outs, coro = self.start(ctx, inputs)
        if coro is None:
            return outs
        loop = asyncio.get_running_loop()
        task = loop.create_task(_finish(coro, done))
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)
        token = ctx.cancellation.register_callback(
            lambda: loop.call_soon_threadsafe(task.cancel))
        if token is None:
            task.cancel()
        else:
            task.add_done_callback(lambda _: ctx.cancellation.deregister_callback(token))
        return None

    async def compute_async(self, ctx, inputs):
        """The awaited form (a traced step: the bodies run as sub-steps, in the trace)."""
        outs, coro = self.start(ctx, inputs)
        return outs if coro is None else await coro


_TASKS: set = set()  # the tasks of calls in progress (held: the loop keeps weak refs)


async def _finish(coro, done) -> None:
    """Await a call's coroutine and report to the executor (a cancellation too)."""
    try:
        outs = await coro
    except asyncio.CancelledError:
        done(None, errors.CancelledError(None, None, "The function call was cancelled"))
        return
    except BaseException as e:  # noqa: BLE001 - reported as the node's error
        done(None, e)
        return
    done(outs, None)


@register_kernel("PartitionedCall", "CPU")
@register_kernel("StatefulPartitionedCall", "CPU")
class PartitionedCallOp(_FunctionalKernel):
    """Call `f` with the inputs; its results are the outputs."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.fbody = self.body(ctx.node_def.attr["f"].func, ctx.node_def.attr["Tin"].list.type,
                               ctx.node_def.attr["Tout"].list.type, "function")

    def start(self, ctx, inputs):
        return self.call(self.fbody, ctx, inputs)


#: How long a While runs compiled iterations before it lets the event loop run (seconds).
SLICE_S = 0.001
# The states a slice of compiled iterations ends in (runtime/compiled_body.py's too).
_DONE, _MORE, _FALLBACK = "done", "more", "fallback"


def to_bool(value) -> bool:
    """TF's ToBool of a predicate: a scalar's truth value, else whether it has elements."""
    if type(value) is np.bool_:
        return bool(value)
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

    def start(self, ctx, inputs):
        body = self.then_body if to_bool(inputs[0]) else self.else_body
        return self.call(body, ctx, inputs[1:])


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

    def start(self, ctx, inputs):
        index = inputs[0]
        if np.ndim(index) != 0:
            raise errors.InvalidArgumentError(
                None, None, f"branch_index must be a scalar, but got shape "
                            f"{list(np.shape(index))}")
        i = int(index)
        body = self.bodies[i] if 0 <= i < len(self.bodies) else self.bodies[-1]
        return self.call(body, ctx, inputs[1:])


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
        self.compiled = self.cond_body.fast is not None and self.loop_body.fast is not None
        # The whole loop as one generated function (None: iterate the compiled bodies).
        self.fused = self.flr.compile_while(self.cond_body, self.loop_body, to_bool)
        self.invariants = [None if s.unknown_rank else [d.size for d in s.dim]
                           for s in attrs["output_shapes"].list.shape]
        # Fully known invariants are compared as tuples (the common case, per iteration).
        self.exact = [(i, tuple(s)) for i, s in enumerate(self.invariants)
                      if s is not None and -1 not in s]
        self.partial = [(i, s) for i, s in enumerate(self.invariants)
                        if s is not None and -1 in s]
        self.parallel_iterations = attrs["parallel_iterations"].i
        if self.parallel_iterations < 1:
            raise errors.InvalidArgumentError(
                ctx.node_def, None, f"parallel_iterations must be > 0, got "
                                    f"{self.parallel_iterations} (node {ctx.name})")

    def start(self, ctx, inputs):
        values = list(inputs)
        if self.compiled and ctx.stats_collector is None:
            with np.errstate(all="ignore"):
                state, values = self._compiled_slice(ctx, values, True)
            if state == _DONE:
                return self._finished(values), None
            return None, self._rest(ctx, values, state)
        return None, self._rest(ctx, values, _FALLBACK)

    def _finished(self, values):
        if self.exact or self.partial:
            self._check_invariants(values)
        return values

    async def _rest(self, ctx, values, state):
        """The iterations after the first slice: compiled slices with the event loop
        running between them, then (from where they stopped: they are pure) sub-steps."""
        while state == _MORE:
            await asyncio.sleep(0)  # other coroutines of the loop run between slices
            with np.errstate(all="ignore"):
                state, values = self._compiled_slice(ctx, values, False)
        if state == _DONE:
            return self._finished(values)
        run, cond, body = self.flr.run_step, self.cond_body, self.loop_body
        check = bool(self.exact or self.partial)
        while to_bool((await run(cond, ctx, values))[0]):
            values = await run(body, ctx, values)
            if check:
                self._check_invariants(values)
        return values

    def _compiled_slice(self, ctx, values, first: bool) -> tuple:
        """Iterate with the compiled cond and body for about SLICE_S: (_DONE, results),
        (_MORE, the loop vars so far), or (_FALLBACK, the loop vars: the iteration from
        them runs as sub-steps, e.g. an input too large, an error or a traced step)."""
        cond, body = self.cond_body.fast, self.loop_body.fast
        check = self._check_invariants if (self.exact or self.partial) and first else None
        deadline = perf_counter() + SLICE_S
        if self.fused is not None and check is None:
            return self.fused(ctx, values, deadline)
        n = 0
        bool_ = np.bool_
        try:
            while True:
                pred = cond(ctx, values)
                if pred is None:
                    return _FALLBACK, values
                pred = pred[0]
                if not (bool(pred) if type(pred) is bool_ else to_bool(pred)):
                    return _DONE, values
                out = body(ctx, values)
                if out is None:
                    return _FALLBACK, values
                if check is not None:
                    break
                values = out
                n += 1
                if not n & 63 and perf_counter() > deadline:
                    return _MORE, values
        except Exception:  # noqa: BLE001 - the sub-step runs it again and names the node
            return _FALLBACK, values  # (a kernel's error: the read of a missing variable)
        check(out)  # the first iteration's (the last's at the end): a broken invariant
        return self._compiled_slice(ctx, out, False)

    def _check_invariants(self, values) -> None:
        for i, shape in self.exact:
            value = values[i]
            if getattr(value, "shape", None) != shape:  # arrays and NumPy scalars have one
                self._check(i, value, list(shape))
        for i, shape in self.partial:
            self._check(i, values[i], shape)

    def _check(self, i: int, value, shape: list) -> None:
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
