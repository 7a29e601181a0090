"""FunctionLibraryRuntime: instantiate a function of a library on a device and run it as a
sub-step of the caller's step (TF's FunctionLibraryRuntime, function.cc).

How to use it (the call kernels do this; a SavedModel loader calls signature functions
the same way):

    flr = FunctionLibraryRuntime(library, device, device_mgr, config)
    body = flr.instantiate("__inference_f_12", attrs={})   # built once, cached
    outputs = await flr.run(body, kernel_ctx, [x, y])       # a list of arrays

- `library` is a FunctionLibraryDefinition (framework/function_library.py), read when a
  function is instantiated: it may grow afterwards (a session's library does).
- A DirectSession keeps one per device over its library:
  `session._direct.function_runtime(device)`; functions run through it see the
  session's variables (the device's ResourceMgr); a body's own stateful kernels belong
  to its instantiation (cached for the session), not to the session's OpSegment.
- `instantiate(name, attrs)` instantiates the FunctionDef (framework/
  function_instantiate.py), builds the body graph, runs the PRE_PLACEMENT passes on
  it (the functional-ops lowering among them), places every node on this runtime's
  device, runs POST_PLACEMENT, prunes the body as TF's PruneFunctionBody (results,
  control outputs, stateful and control-flow nodes stay), runs POST_REWRITE_FOR_EXEC and
  the GraphOptimizer, and builds one ExecutorImpl: the path of a session's partition.
  The result (a FunctionBody: arg and result types, the executor) is cached per
  (name, attrs); it is built on the calling thread (a session builds its executors,
  and with them their calls' bodies, on a build thread). A missing function is
  NotFoundError, a malformed one InvalidArgumentError, both naming the function.
- `await run(body, kernel_ctx, args)` runs the body as a sub-step of the step
  `kernel_ctx` (an OpKernelContext) belongs to: the same step id, rendezvous, step
  resources and stats collector (a traced step records the body's nodes), a call frame
  of its own, a cancellation the caller's cancels. The body's executor state is drained
  by the loop's runner like any run: a body of inline kernels completes within the
  awaiting call (no loop round trip) while the loop's slice budget lasts. Errors keep
  their class and name the node inside the body and the function. Cancelling the
  awaiting task aborts the body. With no step (kernel_ctx None), a fresh context is
  used: `await flr.run(body, None, args)` runs a function on its own.
- A body of cheap pure kernels is also compiled to one Python function
  (compiled_body.py): `run` calls it directly when it can (no sub-step at all), and
  falls back to the sub-step for large inputs, errors and traced steps.
  `run_compiled(body, kernel_ctx, args)` is that direct call alone (a While's loop).
"""

from __future__ import annotations

import asyncio
import itertools
import threading

import numpy as np

from aioflow.framework import errors
from aioflow.framework.function_instantiate import (
    InstantiatedFunction,
    canonical_attrs,
    function_not_found,
    instantiate,
)
from aioflow.framework.kernel_context import OpKernelContext
from aioflow.gradients.function_gradient import symbolic_gradient_function_def
from aioflow.graph import construct
from aioflow.graph.algorithm import prune_for_reverse_reachability
from aioflow.passes.graph_optimizer import optimize_graph
from aioflow.passes.registry import Grouping, PassOptions, global_registry
from aioflow.proto import config_pb2
from aioflow.runtime.compiled_body import compile_body, compile_while
from aioflow.runtime.executor import ExecutorImpl, run_states
from aioflow.runtime.loop_runner import get_runner
from aioflow.runtime.segments import segments_default
from aioflow.runtime.step_context import StepContext


class FunctionBody:
    """One instantiation: its name, flat arg and result types, and its executor."""

    __slots__ = ("name", "arg_types", "ret_types", "num_rets", "impl", "instantiated", "fast")

    def __init__(self, inst: InstantiatedFunction, impl: ExecutorImpl, fast=None):
        self.name = inst.name
        self.arg_types = inst.arg_types
        self.ret_types = inst.ret_types
        self.num_rets = len(inst.ret_types)
        self.impl = impl
        self.instantiated = inst
        # The body compiled to one function (compiled_body.py), or None.
        self.fast = fast

    def __repr__(self) -> str:
        return f"<FunctionBody {self.name} args={len(self.arg_types)} rets={self.num_rets}>"


_building = threading.local()
_grad_uid = itertools.count(1)  # names of the gradient functions SymbolicGradient builds


class FunctionLibraryRuntime:
    """The functions of `library` on one device; instantiations cached."""

    def __init__(self, library, device, device_mgr=None, config=None,
                 inline_all: bool = False, segments: bool | None = None):
        self.library = library
        self.device = device
        self.device_mgr = device_mgr
        self.config = config if config is not None else config_pb2.ConfigProto()
        self.inline_all = inline_all
        self.segments = segments
        self._lock = threading.Lock()
        self._bodies: dict[tuple, FunctionBody] = {}

    # -- instantiating -----------------------------------------------------------------
    def instantiate(self, name: str, attrs=None, caller=None) -> FunctionBody:
        """The cached body of `name` with `attrs` (AttrValues by name), built if need be;
        `caller`: the calling NodeDef, named by errors."""
        attrs = dict(attrs or {})
        key = (name, canonical_attrs(attrs))
        body = self._bodies.get(key)
        if body is not None:
            return body
        if self.library.find(name) is None:
            raise function_not_found(name, caller)
        stack = getattr(_building, "stack", None)
        if stack is None:
            stack = _building.stack = []
        if key in stack:
            raise errors.UnimplementedError(
                caller, None, f"Function {name} calls itself (recursive functions are not "
                              f"supported)")
        stack.append(key)
        try:
            body = self._build(name, attrs, caller)
        finally:
            stack.pop()
        with self._lock:
            return self._bodies.setdefault(key, body)

    def instantiate_gradient(self, func, caller=None) -> FunctionBody:
        """The body a SymbolicGradient of `func` (a NameAttrList) runs: the library's
        gradient function of func.name when it registers one, else the gradient built from
        func's body (gradients/function_gradient.py), cached like any instantiation."""
        attrs = dict(func.attr)
        grad = self.library.find_gradient(func.name)
        if grad is not None:
            return self.instantiate(grad, attrs, caller)
        key = ("SymbolicGradient", func.name, canonical_attrs(attrs))
        body = self._bodies.get(key)
        if body is not None:
            return body
        if self.library.find(func.name) is None:
            raise function_not_found(func.name, caller)
        grad_name = f"{func.name}_SymbolicGradient_{next(_grad_uid)}"
        # Built on a copy (gradients of If/While inside f add functions of their own),
        # then everything new joins this runtime's library, where nested calls look.
        library = self.library.copy()
        try:
            library.add_function_def(
                symbolic_gradient_function_def(library, func.name, attrs, grad_name))
        except (LookupError, ValueError, TypeError) as e:
            raise errors.InvalidArgumentError(
                caller, None, f"Cannot build the gradient of function {func.name}: {e}") from e
        self.library.add_library(library)
        body = self._build(grad_name, {}, caller)
        with self._lock:
            return self._bodies.setdefault(key, body)

    def _build(self, name: str, attrs: dict, caller) -> FunctionBody:
        inst = instantiate(self.library, name, attrs)
        try:
            graph = construct.convert_graph_def_to_graph(inst.graph_def, self.library)
        except errors.OpError as e:
            raise type(e)(e.node_def, None, f"{e.message}\n\tIn function '{name}'") from e
        options = PassOptions(graph=graph, config=self.config, device_mgr=self.device_mgr)
        registry = global_registry()
        registry.run_grouping(Grouping.PRE_PLACEMENT, options)
        graph = options.graph
        for node in graph.op_nodes():
            node.assigned_device_name = self.device.name
        registry.run_grouping(Grouping.POST_PLACEMENT, options)
        graph = options.graph
        _prune_body(graph, inst)
        registry.run_grouping(Grouping.POST_REWRITE_FOR_EXEC, options)
        graph = options.graph
        graph_options = self.config.graph_options
        optimize_graph(graph, graph_options.optimizer_options, self.device.device_type,
                       graph_options.rewrite_options)
        impl = ExecutorImpl(graph, self.device, inline_all=self.inline_all,
                            segments=self.segments, function_library=self,
                            share_kernels=False)
        compiled = self.segments if self.segments is not None else segments_default()
        fast = compile_body(impl, name) if compiled and not self.inline_all else None
        return FunctionBody(inst, impl, fast)

    # -- running ------------------------------------------------------------------------
    @staticmethod
    def compile_while(cond: FunctionBody, body: FunctionBody, to_bool):
        """The While loop of `cond` and `body` as one generated function (compiled_body.
        compile_while), or None when either has no compiled form."""
        if cond.fast is None or body.fast is None:
            return None
        return compile_while(cond.impl, body.impl, len(body.arg_types),
                             f"{cond.name}/{body.name}", to_bool)

    @staticmethod
    def run_compiled(body: FunctionBody, kernel_ctx: OpKernelContext, args) -> list | None:
        """The results of `body` run as its compiled function, or None: run it as a
        sub-step (it has none, an input is too large, a kernel failed, or the step is
        traced). Call it under np.errstate(all="ignore"), as the executor runs kernels."""
        fast = body.fast
        if fast is None or kernel_ctx.stats_collector is not None:
            return None
        try:
            return fast(kernel_ctx, args)
        except Exception:  # noqa: BLE001 - the sub-step reports it, naming the node
            return None

    async def run(self, body: FunctionBody, kernel_ctx: OpKernelContext | None,
                  args: list) -> list:
        """The results of `body` called with `args`, as a sub-step of `kernel_ctx`'s step
        (or its compiled function, when it has one and it can)."""
        if body.fast is not None and kernel_ctx is not None:
            with np.errstate(all="ignore"):
                outs = self.run_compiled(body, kernel_ctx, args)
            if outs is not None:
                return outs
        return await self.run_step(body, kernel_ctx, args)

    async def run_step(self, body: FunctionBody, kernel_ctx: OpKernelContext | None,
                       args: list) -> list:
        """`run` as a sub-step of the caller's step, always."""
        if kernel_ctx is None:
            kernel_ctx = OpKernelContext(0, [], 0, resource_mgr=self.device.resource_mgr)
        ctx = kernel_ctx.for_call(args, body.num_rets)
        parent = kernel_ctx.cancellation
        token = parent.register_callback(ctx.cancellation.start_cancel)
        if token is None:
            raise errors.CancelledError(None, None, f"Function {body.name} was called in a "
                                                    f"cancelled step")
        step = StepContext.for_call(ctx)
        try:
            await run_states([body.impl.new_state(step, get_runner(
                asyncio.get_running_loop()))], step)
        except errors.OpError as e:
            raise _in_function(e, body.name) from e
        finally:
            parent.deregister_callback(token)
        retvals = ctx.retvals
        for i, value in enumerate(retvals):
            if value is None:
                raise errors.InvalidArgumentError(
                    None, None, f"Function {body.name}: result {i} was not computed (it is "
                                f"dead, in an untaken branch of a cond)")
        return retvals


def _prune_body(graph, inst: InstantiatedFunction) -> None:
    """TF's PruneFunctionBody: keep what the results, the control outputs, the stateful
    nodes (but unused arguments) and the control-flow nodes need."""
    control_ret = set(inst.control_ret)
    roots = [n for n in graph.op_nodes()
             if n.name in control_ret or n.is_control_flow
             or (n.op_def is not None and n.op_def.is_stateful and n.type_string != "_Arg")]
    prune_for_reverse_reachability(graph, roots)


def _in_function(err: errors.OpError, name: str) -> errors.OpError:
    """The body's error, of its class, saying which function it happened in."""
    cls = type(err)
    out = cls.__new__(cls)
    errors.OpError.__init__(out, err.node_def, None,
                            f"{err.message}\n\t [[{{{{function_node {name}}}}}]]",
                            err.error_code)
    return out
