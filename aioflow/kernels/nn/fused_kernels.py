"""CPU kernels (NumPy) for the fused ops TF's remapper writes and aioflow's graph optimizer
writes too (aioflow/passes/remapper.py): _FusedConv2D, _FusedDepthwiseConv2dNative and
_FusedMatMul.

Each computes its convolution or product and then, in the same call, its `fused_ops`
chain in place on the output: a bias (BiasAdd) or an inference batch norm
(FusedBatchNorm: y * scale / sqrt(variance + epsilon) + offset - mean * that), then an
activation (Relu, Relu6, Elu, LeakyRelu; for MatMul also Tanh and Sigmoid). The
convolutions finish each block of output rows while it is in cache (conv_kernels'
epilogue), so the chain costs no extra pass over memory and no extra tensor, which is
what the fusion is for. Chains TF does not fuse are TF's Unimplemented errors.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import attr_text, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.math.matmul_kernels import MatMulOp
from aioflow.kernels.nn import epilogue_jit
from aioflow.kernels.nn.conv_kernels import POOL_FLOPS, Conv2DOp, DepthwiseConv2dNativeOp

_FLOAT_TYPES = [dtypes.float16, dtypes.float32, dtypes.float64]


# -- activations, in place -----------------------------------------------------------------------

def _relu(y, alpha):
    np.maximum(y, 0, out=y)


def _relu6(y, alpha):
    np.maximum(y, 0, out=y)
    np.minimum(y, 6, out=y)


def _elu(y, alpha):
    """x for x > 0, exp(x) - 1 otherwise (TF's Elu)."""
    neg = np.minimum(y, 0)
    np.expm1(neg, out=neg)
    np.maximum(y, 0, out=y)
    y += neg


def _leaky_relu(y, alpha):
    """x for x > 0, alpha * x otherwise (TF's LeakyRelu, any alpha)."""
    scaled = y * y.dtype.type(alpha)
    (np.maximum if alpha <= 1 else np.minimum)(y, scaled, out=y)


def _tanh(y, alpha):
    np.tanh(y, out=y)


def _sigmoid(y, alpha):
    np.negative(y, out=y)
    np.exp(y, out=y)
    y += 1
    np.reciprocal(y, out=y)


def _swish(y, alpha):
    """x * sigmoid(x), as x / (1 + exp(-x)) (TF's _MklSwish: the remapper's fusion of
    Sigmoid and Mul, the swish activation of EfficientNet's Keras layers)."""
    d = np.negative(y)
    np.exp(d, out=d)
    d += 1
    np.divide(y, d, out=y)


CONV_ACTIVATIONS = {"Relu": _relu, "Relu6": _relu6, "Elu": _elu, "LeakyRelu": _leaky_relu,
                    "_MklSwish": _swish}
MATMUL_ACTIVATIONS = dict(CONV_ACTIVATIONS, Tanh=_tanh, Sigmoid=_sigmoid)


def _fusion_error(fused_ops) -> errors.UnimplementedError:
    return errors.UnimplementedError(
        None, None, f"Fusion is not implemented: [{','.join(fused_ops)}]")


def fused_op_names(ctx) -> list[str]:
    return [attr_text(o) for o in ctx.get_attr("fused_ops", [])]


def has_residual_add(ctx) -> bool:
    """Whether the chain is BiasAdd, Add (a residual addend) [, activation]."""
    return fused_op_names(ctx)[:2] == ["BiasAdd", "Add"]


def parse_fused_ops(ctx, kind: str, activations: dict, residual_add: bool = False):
    """(base, activation fn or None, epsilon, alpha) from the node's attrs; `base` is
    'BiasAdd' or 'FusedBatchNorm'. TF's Unimplemented for any other chain and its
    InvalidArgument when num_args does not fit the chain. `residual_add`: the chain is
    BiasAdd, Add [, activation] (_FusedConv2D's residual connection, two arguments)."""
    ops = fused_op_names(ctx)
    num_args = ctx.get_attr("num_args")
    if residual_add:
        if num_args != 2:
            raise errors.InvalidArgumentError(
                None, None, "Fused Conv2D must have two extra arguments: bias and add.")
        if len(ops) > 3 or (len(ops) == 3 and ops[2] not in activations):
            raise _fusion_error(ops)
        act = activations[ops[2]] if len(ops) == 3 else None
        return "BiasAdd", act, ctx.get_attr("epsilon", 0.0001), ctx.get_attr(
            "leakyrelu_alpha", 0.2)
    bases = ("BiasAdd", "FusedBatchNorm") if kind != "MatMul" else ("BiasAdd",)
    if not ops or ops[0] not in bases or len(ops) > 2 or (
            len(ops) == 2 and ops[1] not in activations):
        raise _fusion_error(ops)
    want = 1 if ops[0] == "BiasAdd" else 4
    if num_args != want:
        what = ("one extra argument: bias." if want == 1
                else "4 extra arguments: scale, offset, mean, variance.")
        noun = "Fused MatMul" if kind == "MatMul" else f"Fused {kind}"
        if want == 4:
            noun += " with batch norm"
        raise errors.InvalidArgumentError(None, None, f"{noun} must have {what}")
    act = activations[ops[1]] if len(ops) == 2 else None
    return ops[0], act, ctx.get_attr("epsilon", 0.0001), ctx.get_attr("leakyrelu_alpha", 0.2)


def make_epilogue(base: str, act, epsilon: float, alpha: float, args, channels: int,
                  dtype):
    """fn(block) applying the chain in place on a block (..., channels) of output."""
    for i, a in enumerate(args):
        if a.ndim != 1 or a.shape[0] != channels:
            name = "bias" if base == "BiasAdd" else ("scale", "offset", "mean", "variance")[i]
            raise errors.InvalidArgumentError(
                None, None, f"{name} must be 1-dimensional of size {channels}, got "
                f"{shape_str(a.shape)}")
    if base == "BiasAdd":
        bias = np.asarray(args[0], dtype)
        scale = None
    else:
        s, offset, mean, var = (np.asarray(a, np.float64) for a in args)
        mult = s / np.sqrt(var + np.float64(np.float32(epsilon)))
        scale = mult.astype(dtype)
        bias = (offset - mean * mult).astype(dtype)
    return Epilogue(scale, np.ascontiguousarray(bias), act, alpha)


_CLIPS = {None: (-np.inf, np.inf), _relu: (0.0, np.inf), _relu6: (0.0, 6.0)}
_JIT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def compile_for(ctx, fusion) -> None:
    """Start the compiled epilogue's compile when the kernel being built will use it (its
    type float32/float64, its chain a bias or batch norm and no activation, Relu or
    Relu6): at build, so that a graph loaded ahead of serving (a model server's load)
    has it compiled before its first run, which would otherwise start it."""
    if fusion[1] in _CLIPS and epilogue_jit.available() and \
            np.dtype(ctx.get_attr("T").as_numpy_dtype) in _JIT_TYPES:
        epilogue_jit.compile_in_background()


class Epilogue:
    """The chain as fn(block), in place on a block (..., channels) of output: through the
    compiled one-pass loop (aioflow/kernels/nn/epilogue_jit.py) for a bias or batch norm with no
    activation, Relu or Relu6 on a contiguous float32/float64 block once it is compiled
    (a background thread compiles it on the first such call), else NumPy passes."""

    def __init__(self, scale, bias, act, alpha):
        self.scale, self.bias, self.act, self.alpha = scale, bias, act, alpha
        self._clip = _CLIPS.get(act) if epilogue_jit.available() and \
            bias.dtype in _JIT_TYPES else None

    def __call__(self, block):
        if self._clip is not None and block.flags.c_contiguous and block.size and \
                block.dtype == self.bias.dtype:
            if epilogue_jit.ready():
                if epilogue_jit.scale_bias_clip(block.reshape(-1, block.shape[-1]),
                                                self.scale, self.bias, *self._clip):
                    return
                self._clip = None  # no compiled signature for these arrays: NumPy's
                # passes from now on (asking again would cost numba's failed dispatch)
            else:
                epilogue_jit.compile_in_background()
        if self.scale is not None:
            block *= self.scale
        block += self.bias
        if self.act is not None:
            self.act(block, self.alpha)


def add_residual(y: np.ndarray, addend: np.ndarray, act, alpha: float) -> np.ndarray:
    """y + addend (broadcast as Add does), then the activation, in place when the shapes
    are the same; TF's Add error when they do not broadcast."""
    if addend.shape == y.shape:
        y += addend
    else:
        try:
            y = np.add(y, addend, dtype=y.dtype)
        except ValueError:
            raise errors.InvalidArgumentError(
                None, None, f"Incompatible shapes: {list(y.shape)} vs. "
                f"{list(addend.shape)}") from None
    if act is not None:
        act(y, alpha)
    return y


@register_kernel("_FusedConv2D", "CPU", T=_FLOAT_TYPES)
class FusedConv2DOp(Conv2DOp):
    """Conv2D and its bias or batch norm and activation, one call (TF's _FusedConv2D);
    or its bias, a residual addend and activation (fused_ops BiasAdd, Add [, act]): the
    addend added after the convolution and its bias, then the activation."""

    #: Whether building the kernel starts the compiled epilogue's compile (a backend's
    #: kernel that fuses the chain itself sets False).
    compiles_epilogue = True

    def __init__(self, ctx):
        super().__init__(ctx)
        fmt = ctx.get_attr("filter_format", "HWIO")
        if attr_text(fmt) != "HWIO":
            raise errors.InvalidArgumentError(None, None, "Invalid filter format")
        self._residual = has_residual_add(ctx)
        self._fusion = parse_fused_ops(ctx, "Conv2D", CONV_ACTIVATIONS, self._residual)
        if self.compiles_epilogue:
            compile_for(ctx, self._fusion)

    def convolve(self, inputs, x, w, pads, out_sizes):
        y = super().convolve(inputs, x, w, pads, out_sizes)
        if self._residual:
            _, act, _, alpha = self._fusion
            y = add_residual(y, inputs[3], act, alpha)
        return y

    def is_expensive(self, inputs: list) -> bool:
        x, w = inputs[0], inputs[1]
        return np.size(x) * (
            np.size(w) // max(1, np.shape(w)[-1] if np.ndim(w) else 1)) > POOL_FLOPS

    def epilogue(self, inputs, channels: int):
        base, act, epsilon, alpha = self._fusion
        if self._residual:  # the bias only: the addend and activation come after
            return make_epilogue(base, None, epsilon, alpha, inputs[2:3], channels,
                                 self._compute_type)
        return make_epilogue(base, act, epsilon, alpha,
                             inputs[2:2 + (1 if base == "BiasAdd" else 4)], channels,
                             self._compute_type)


@register_kernel("_FusedDepthwiseConv2dNative", "CPU", T=_FLOAT_TYPES)
class FusedDepthwiseConv2dNativeOp(DepthwiseConv2dNativeOp):
    """DepthwiseConv2dNative and its bias or batch norm and activation, one call (with
    the remapper's folded Pad as its padding: FOLDED_PADDINGS)."""

    compiles_epilogue = True
    reads_folded_paddings = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._fusion = parse_fused_ops(ctx, "DepthwiseConv2d", CONV_ACTIVATIONS)
        if self.compiles_epilogue:
            compile_for(ctx, self._fusion)

    def epilogue(self, inputs, channels: int):
        return make_epilogue(*self._fusion, inputs[2:], channels, self._compute_type)


@register_kernel("_FusedMatMul", "CPU", T=[dtypes.bfloat16, dtypes.float16, dtypes.float32])
class FusedMatMulOp(MatMulOp):
    """MatMul and its bias and activation, one call (TF's _FusedMatMul)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._fusion = parse_fused_ops(ctx, "MatMul", MATMUL_ACTIVATIONS)
        compile_for(ctx, self._fusion)
        self._epilogue = None  # the last call's, kept while its bias is the same array

    def is_expensive(self, inputs: list) -> bool:
        return super().is_expensive(inputs[:2])

    def _matmul(self, a, b):
        """The product, in float32 for half/bfloat16 (rounded once, after the chain)."""
        if self._half is not None:
            return np.matmul(a.astype(np.float32), b.astype(np.float32))
        return np.matmul(a, b)

    def compute(self, ctx, inputs):
        (y,) = super().compute(ctx, inputs[:2])
        return (self.finish(y, inputs),)

    def finish(self, y, inputs):
        """The bias and activation applied to the product `y` (in place where it can)."""
        ep = self._epilogue
        bias = inputs[2] if len(inputs) == 3 else None
        # A constant bias is the same array every run: its epilogue is made once (made
        # again when the array, its size or the product's dtype differ; the epilogue
        # holds the array itself, not a copy, so its values are always the current ones).
        if ep is None or bias is not ep.bias or y.dtype != bias.dtype or \
                y.shape[-1] != bias.shape[0]:
            ep = make_epilogue(*self._fusion, inputs[2:], y.shape[-1], y.dtype)
            self._epilogue = ep if ep.bias is bias else None
        ep(y)
        return y.astype(self._half) if self._half is not None else y
