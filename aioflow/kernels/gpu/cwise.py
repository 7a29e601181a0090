"""Element-wise math and activations on the GPU, written against the array module
(CuPy's ufuncs on a GPU, NumPy's on the simulated device), with TF's formulas; bool
results of comparisons stay in device memory (a predicate is copied to the host
where a Switch reads it)."""

from __future__ import annotations

import numpy as np

from .base import FLOATS, GpuKernel, register_gpu

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _like(x, value):
    return x.dtype.type(value)


_UNARY = {
    "Neg": lambda xp, x: xp.negative(x),
    "Abs": lambda xp, x: xp.abs(x),
    "Square": lambda xp, x: xp.square(x),
    "Sqrt": lambda xp, x: xp.sqrt(x),
    "Rsqrt": lambda xp, x: _like(x, 1) / xp.sqrt(x),
    "Reciprocal": lambda xp, x: _like(x, 1) / x,
    "Inv": lambda xp, x: _like(x, 1) / x,
    "Exp": lambda xp, x: xp.exp(x),
    "Expm1": lambda xp, x: xp.expm1(x),
    "Log": lambda xp, x: xp.log(x),
    "Log1p": lambda xp, x: xp.log1p(x),
    "Sin": lambda xp, x: xp.sin(x),
    "Cos": lambda xp, x: xp.cos(x),
    "Tanh": lambda xp, x: xp.tanh(x),
    "Sigmoid": lambda xp, x: _like(x, 1) / (_like(x, 1) + xp.exp(-x)),
    "Floor": lambda xp, x: xp.floor(x),
    "Ceil": lambda xp, x: xp.ceil(x),
    "Round": lambda xp, x: xp.round(x),
    "Sign": lambda xp, x: xp.sign(x),
    "Relu": lambda xp, x: xp.maximum(x, _like(x, 0)),
    "Relu6": lambda xp, x: xp.minimum(xp.maximum(x, _like(x, 0)), _like(x, 6)),
    "Elu": lambda xp, x: xp.where(x > 0, x, xp.expm1(x)),
    "Selu": lambda xp, x: _like(x, _SELU_SCALE) * xp.where(
        x > 0, x, _like(x, _SELU_ALPHA) * xp.expm1(x)),
    "Softplus": lambda xp, x: xp.logaddexp(x, _like(x, 0)),
    "Softsign": lambda xp, x: x / (_like(x, 1) + xp.abs(x)),
    "IsNan": lambda xp, x: xp.isnan(x),
    "IsFinite": lambda xp, x: xp.isfinite(x),
}

_BINARY = {
    "Add": lambda xp, a, b: a + b,
    "AddV2": lambda xp, a, b: a + b,
    "Sub": lambda xp, a, b: a - b,
    "Mul": lambda xp, a, b: a * b,
    "RealDiv": lambda xp, a, b: a / b,
    "Div": lambda xp, a, b: a / b,
    "DivNoNan": lambda xp, a, b: xp.where(b == 0, xp.zeros_like(a / b), a / xp.where(
        b == 0, xp.ones_like(b), b)),
    "Maximum": lambda xp, a, b: xp.maximum(a, b),
    "Minimum": lambda xp, a, b: xp.minimum(a, b),
    "Pow": lambda xp, a, b: xp.power(a, b),
    "SquaredDifference": lambda xp, a, b: xp.square(a - b),
    "FloorDiv": lambda xp, a, b: xp.floor_divide(a, b),
    "FloorMod": lambda xp, a, b: xp.mod(a, b),
    "Less": lambda xp, a, b: a < b,
    "LessEqual": lambda xp, a, b: a <= b,
    "Greater": lambda xp, a, b: a > b,
    "GreaterEqual": lambda xp, a, b: a >= b,
    "Equal": lambda xp, a, b: a == b,
    "NotEqual": lambda xp, a, b: a != b,
}

_LOGICAL = {
    "LogicalAnd": lambda xp, a, b: xp.logical_and(a, b),
    "LogicalOr": lambda xp, a, b: xp.logical_or(a, b),
}


class UnaryOp(GpuKernel):
    fn = None

    def work(self, xp, x):
        return (type(self).fn(xp, x),)


class BinaryOp(GpuKernel):
    """A broadcasting binary op (shapes that do not broadcast: the CPU kernel's
    "Incompatible shapes" error, through GpuKernel's fallback)."""

    fn = None

    def work(self, xp, a, b):
        return (type(self).fn(xp, a, b),)


class EqualityOp(BinaryOp):
    """Equal/NotEqual: with incompatible_shape_error=False, shapes that do not broadcast
    give a scalar (False for Equal, True for NotEqual), as TF's."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.strict = ctx.get_attr("incompatible_shape_error", True)
        self.mismatch = ctx.op_type == "NotEqual"

    def work(self, xp, a, b):
        if not self.strict and a.shape != b.shape:
            try:
                np.broadcast_shapes(a.shape, b.shape)
            except ValueError:
                return (xp.asarray(self.mismatch),)
        return super().work(xp, a, b)


class LeakyReluOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.alpha = ctx.get_attr("alpha", 0.2)

    def work(self, xp, x):
        return (xp.where(x > 0, x, _like(x, self.alpha) * x),)


class LogicalNotOp(GpuKernel):
    def work(self, xp, x):
        return (xp.logical_not(x),)


class AddNOp(GpuKernel):
    def work(self, xp, *xs):
        total = xs[0]
        for x in xs[1:]:
            total = total + x
        return (total,)


def _register_all() -> None:
    for op, fn in _UNARY.items():
        register_gpu(op, T=list(FLOATS))(type(f"Gpu{op}Op", (UnaryOp,), {"fn": staticmethod(fn)}))
    for op, fn in _BINARY.items():
        base = EqualityOp if op in ("Equal", "NotEqual") else BinaryOp
        register_gpu(op, T=list(FLOATS) + ["int64"])(
            type(f"Gpu{op}Op", (base,), {"fn": staticmethod(fn)}))
    for op, fn in _LOGICAL.items():
        register_gpu(op)(type(f"Gpu{op}Op", (BinaryOp,), {"fn": staticmethod(fn)}))
    register_gpu("LogicalNot")(LogicalNotOp)
    register_gpu("LeakyRelu", T=list(FLOATS))(LeakyReluOp)
    register_gpu("AddN", T=list(FLOATS) + ["int64"])(AddNOp)


_register_all()
