"""Kernel of TF's SymbolicGradient (tensorflow/core/ops/functional_ops.cc; the runtime's
InstantiateSymbolicGradient): calls the gradient function of `f` — the library's own
gradient of f when it registers one, else the gradient built from f's body — with f's
inputs followed by the gradients of f's outputs; its results are the gradients of f's
inputs. tf.gradients emits it for a call of a function without a registered gradient."""

from __future__ import annotations

from aioflow.framework.function_instantiate import check_call_types
from aioflow.framework.op_kernel import register_kernel
from aioflow.kernels.call.functional_kernels import _FunctionalKernel


@register_kernel("SymbolicGradient", "CPU")
class SymbolicGradientOp(_FunctionalKernel):
    """Run the gradient function of `f` on (f's inputs, dys)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        attrs = ctx.node_def.attr
        func = attrs["f"].func
        self.fbody = self.flr.instantiate_gradient(func, self.node_def)
        check_call_types(self.node_def, self.fbody.name, "arguments", attrs["Tin"].list.type,
                         self.fbody.arg_types, "f")
        check_call_types(self.node_def, self.fbody.name, "results", attrs["Tout"].list.type,
                         self.fbody.ret_types, "f")

    def start(self, ctx, inputs):
        return self.call(self.fbody, ctx, inputs)
