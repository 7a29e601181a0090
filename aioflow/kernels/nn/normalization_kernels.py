"""CPU kernels (NumPy) for normalisation ops: FusedBatchNorm/V2/V3 (inference and training),
LRN, L2Loss, and BiasAddV1 (BiasAdd over the last dimension), with TF 2.21's checks.

FusedBatchNorm at inference folds scale/mean/variance into one multiplier and one offset
per channel (two passes over x; one compiled pass with numba,
aioflow/kernels/nn/normalization_jit.py,
as is LRN, once the loops have compiled in the background); training computes the batch
statistics over every axis but the channel one, normalises with the biased variance and
reports the unbiased one, blended into the running statistics by `exponential_avg_factor`
as TF's CPU kernel does (channels last: three compiled passes, the NumPy path's
operations).
half/bfloat16 compute in float32 and round once.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str
from aioflow.kernels.nn import conv_kernels, normalization_jit
from aioflow.kernels.nn.activation_kernels import _NON_QUANTIZED_NUMBERS, BiasAddOp
from aioflow.kernels.nn.conv_kernels import (
    attr_str,
    intra_op_threads,
    invalid,
    parallel_blocks,
)

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
_COMPILED = normalization_jit.available()
#: Bytes of x per block handed to a compiled loop (blocks are shared among threads).
_BLOCK_BYTES = 1 << 18
#: Elements of x from which training runs the compiled loops (NumPy's below: three numba
#: calls' dispatch cost more than a small tensor's passes).
_COMPILED_TRAINING_FROM = 1 << 12
#: Elements of x above which the training statistics are summed by several threads.
_SPLIT_WORK = 1 << 16


def _compiled_ready() -> bool:
    """Whether the compiled loops run now (else NumPy; their compile is started in the
    background, never waited for)."""
    if not _COMPILED:
        return False
    if normalization_jit.ready():
        return True
    normalization_jit.compile_in_background()
    return False


def _blocks(count: int, per_item_bytes: int) -> list[tuple[int, int]]:
    """(start, stop) ranges of count items, about _BLOCK_BYTES each."""
    step = max(1, _BLOCK_BYTES // max(1, per_item_bytes))
    return [(i, min(i + step, count)) for i in range(0, count, step)]


def scale_shift(x: np.ndarray, scale: np.ndarray, shift: np.ndarray, axis: int) -> np.ndarray:
    """x * scale + shift along axis (1 or the last), float32, by the compiled loop: one pass,
    blocks shared among threads."""
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    if x.size == 0:
        return y
    channels_last = axis == x.ndim - 1
    view = x.reshape(-1, x.shape[-1]) if channels_last else x.reshape(
        x.shape[0] * x.shape[1], -1)
    out = y.reshape(view.shape)
    scale = np.ascontiguousarray(scale, np.float32)
    shift = np.ascontiguousarray(shift, np.float32)

    def block(item):
        normalization_jit.scale_shift(view, out, scale, shift, item[0], item[1],
                                      channels_last)

    parallel_blocks(_blocks(view.shape[0], view[0].nbytes), block, x.size)
    return y


def _channel_totals(blocks: list, fn, channels: int, work: int) -> np.ndarray:
    """The float64 per-channel totals of fn(start, stop, acc) over row blocks, each thread
    adding into an accumulator of its own."""
    parts = min(len(blocks), intra_op_threads()) if work > _SPLIT_WORK else 1
    accs = [np.zeros(channels) for _ in range(parts)]

    def run(i):
        for start, stop in blocks[i::parts]:
            fn(start, stop, accs[i])

    parallel_blocks(list(range(parts)), run, work if parts > 1 else 0, parts)
    return accs[0] if parts == 1 else sum(accs)


def _training_channels_last(x: np.ndarray, scale, offset, epsilon: float):
    """FusedBatchNorm training of C-contiguous float32 channels-last x by the compiled
    loops: (y, batch mean, biased batch variance), the NumPy path's operations."""
    channels = x.shape[-1]
    view = x.reshape(-1, channels)
    rows = view.shape[0]
    # one call per pass unless the blocks are shared (a numba call costs ~5 µs)
    blocks = _blocks(rows, view[0].nbytes) if x.size > conv_kernels.PARALLEL_WORK else \
        [(0, rows)]
    sums = _channel_totals(blocks, lambda a, b, acc: normalization_jit.channel_sum(
        view, a, b, acc), channels, x.size)
    bmean = (sums / rows).astype(np.float32)
    squares = _channel_totals(blocks, lambda a, b, acc: normalization_jit.centered_squares(
        view, bmean, a, b, acc), channels, x.size)
    bvar = (squares / rows).astype(np.float32)
    inv = scale.astype(np.float32) / np.sqrt(bvar + np.float32(epsilon))
    off = np.ascontiguousarray(offset, np.float32)
    y = np.empty_like(view)
    parallel_blocks(blocks, lambda blk: normalization_jit.normalize(
        view, y, bmean, inv, off, *blk), x.size)
    return y.reshape(x.shape), bmean, bvar


def _debug(shape) -> str:
    return shape_str(shape)


class _FusedBatchNormBase(OpKernel):
    expensive = None
    pool_above = BIG
    compilable = True
    version = 1
    #: Whether y is passed through Relu (_FusedBatchNormEx without a side input): the
    #: normalize_* hooks apply it, so a backend can fuse it.
    _relu = False

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._np_type = dtype.as_numpy_dtype
        self._u_type = (ctx.get_attr("U").as_numpy_dtype if ctx.has_attr("U")
                        else self._np_type)
        self._epsilon = float(ctx.get_attr("epsilon", 0.0001))
        self._factor = float(ctx.get_attr("exponential_avg_factor", 1.0))
        self._training = bool(ctx.get_attr("is_training", True))
        fmt = attr_str(ctx, "data_format", "NHWC")
        formats = ("NHWC", "NCHW", "NDHWC", "NCDHW") if self.version == 3 else ("NHWC",
                                                                                "NCHW")
        if fmt not in formats:
            raise invalid("Invalid data format")
        self._channels_first = fmt.startswith("NC")

    def compute(self, ctx, inputs):
        x, scale, offset, mean, var = inputs
        if x.ndim not in (4, 5):
            raise invalid(f"input must be 4 or 5-dimensional{_debug(x.shape)}")
        rank = x.ndim
        for name, t in (("scale", scale), ("offset", offset), ("mean", mean),
                        ("variance", var)):
            if t.ndim != 1:
                raise invalid(f"{name} must be 1-dimensional{_debug(t.shape)}")
        axis = 1 if self._channels_first else rank - 1
        channels = x.shape[axis]
        for name, t in (("scale", scale), ("offset", offset)):
            if t.shape[0] != channels:
                raise invalid(f"{name} must have the same number of elements as the channels "
                              f"of x, got {t.shape[0]} and {channels}")
        if not self._training or self._factor != 1.0:
            prefix = ("When is_training=false, " if not self._training else
                      "When exponential_avg_factor != 1, ")
            for name, t in (("mean", mean), ("variance", var)):
                if t.shape[0] != channels:
                    raise invalid(f"{prefix}{name} must have the same number of elements as "
                                  f"the channels of x, got {t.shape[0]} and {channels}")
        xf = x.astype(np.float32) if x.dtype != np.float32 else x
        u = self._u_type
        if not self._training:
            y = self.normalize_inference(xf, scale, offset, mean, var, axis)
            if self._relu:
                np.maximum(y, 0, out=y)
            # reserve_space_1/2 are not read after inference: TF leaves them unset.
            zeros = np.zeros(channels, u)
            outs = [y.astype(self._np_type, copy=False), mean, var, zeros, zeros]
        else:
            count = x.size // max(1, channels)
            if x.size == 0:
                bmean = np.full(channels, np.nan, np.float32)
                bvar = np.full(channels, np.nan, np.float32)
                y = xf.copy()
            else:
                y, bmean, bvar = self.normalize_training(xf, scale, offset, axis,
                                                         self._relu)
            corrected = bvar * np.float32(count / max(count - 1, 1))
            f = np.float32(self._factor)
            if self._factor != 1.0:
                out_mean = (np.float32(1) - f) * mean.astype(np.float32) + f * bmean
                out_var = (np.float32(1) - f) * var.astype(np.float32) + f * corrected
            else:
                out_mean, out_var = bmean, corrected
            outs = [y.astype(self._np_type, copy=False), out_mean.astype(u),
                    out_var.astype(u), bmean.astype(u), bvar.astype(u)]
        if self.version == 3:
            outs.append(np.zeros((), u))
        return outs

    def normalize_inference(self, x, scale, offset, mean, var, axis: int) -> np.ndarray:
        """y of float32 x normalised by the given statistics along `axis` (a backend's
        kernel overrides this: aioflow/kernels/onednn/)."""
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        scale_f = scale.astype(np.float32) / np.sqrt(var.astype(np.float32)
                                                     + np.float32(self._epsilon))
        shift = offset.astype(np.float32) - mean.astype(np.float32) * scale_f
        if _compiled_ready():
            return scale_shift(x, scale_f, shift, axis)
        y = x * scale_f.reshape(shape)
        y += shift.reshape(shape)
        return y

    def normalize_training(self, x, scale, offset, axis: int, relu: bool = False):
        """(y, batch mean, biased batch variance) of non-empty float32 x along `axis`, y
        through Relu when `relu` (a backend's kernel overrides this:
        aioflow/kernels/onednn/)."""
        y, bmean, bvar = self._normalize_training(x, scale, offset, axis)
        if relu:
            np.maximum(y, 0, out=y)
        return y, bmean, bvar

    def _normalize_training(self, x, scale, offset, axis: int):
        if axis == x.ndim - 1 and x.size >= _COMPILED_TRAINING_FROM and _compiled_ready():
            return _training_channels_last(np.ascontiguousarray(x), scale, offset,
                                           self._epsilon)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        axes = tuple(i for i in range(x.ndim) if i != axis)
        bmean = x.mean(axis=axes, dtype=np.float64).astype(np.float32)
        centered = x - bmean.reshape(shape)
        bvar = np.mean(np.square(centered), axis=axes, dtype=np.float64).astype(np.float32)
        inv = scale.astype(np.float32) / np.sqrt(bvar + np.float32(self._epsilon))
        y = centered
        y *= inv.reshape(shape)
        y += offset.astype(np.float32).reshape(shape)
        return y, bmean, bvar


@register_kernel("FusedBatchNorm", "CPU", T=dtypes.float32)
class FusedBatchNormOp(_FusedBatchNormBase):
    """Batch normalisation of NHWC/NCHW x by per-channel statistics."""


@register_kernel("FusedBatchNormV2", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32],
                 U=dtypes.float32)
class FusedBatchNormV2Op(_FusedBatchNormBase):
    """FusedBatchNorm with float statistics for half/bfloat16 x."""

    version = 2


@register_kernel("FusedBatchNormV3", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32],
                 U=dtypes.float32)
class FusedBatchNormV3Op(_FusedBatchNormBase):
    """FusedBatchNormV2 with a reserve_space_3 output and 5-D formats."""

    version = 3


@register_kernel("_FusedBatchNormEx", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32],
                 U=dtypes.float32)
class FusedBatchNormExOp(_FusedBatchNormBase):
    """FusedBatchNormV3 (NHWC/NCHW), then side_input added and the activation (Identity
    or Relu) applied: the op TF's remapper writes for a batch norm and its Relu."""

    version = 3

    def __init__(self, ctx):
        super().__init__(ctx)
        mode = attr_str(ctx, "activation_mode", "Identity")
        if mode not in ("Identity", "Relu"):
            raise invalid("FusedBatchNorm only supports Identity and Relu for now.")
        self._sides = int(ctx.get_attr("num_side_inputs", 0))
        if self._sides > 1:
            raise invalid("FusedBatchNorm accepts at most one side input.")
        if self._sides and self._training and mode == "Identity":
            raise invalid("Identity activation is not supported with non-empty side input")
        self._activation = mode == "Relu"
        self._relu = self._activation and not self._sides

    def compute(self, ctx, inputs):
        x = inputs[0]
        if self._sides and inputs[5].shape != x.shape:
            raise invalid(f"side_input shape must be equal to input shape: "
                          f"{shape_str(inputs[5].shape)} != {shape_str(x.shape)}")
        outs = super().compute(ctx, inputs[:5])
        if self._sides:
            y = outs[0].astype(np.float32) + inputs[5].astype(np.float32)
            if self._activation:
                np.maximum(y, 0, out=y)
            outs[0] = y.astype(self._np_type, copy=False)
        return outs


@register_kernel("LRN", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32])
class LRNOp(OpKernel):
    """input / (bias + alpha * sum of squares over 2*depth_radius+1 channels) ** beta."""

    expensive = None
    pool_above = BIG
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        radius = int(ctx.get_attr("depth_radius", 5))
        if radius > 2**31 - 1 or radius < -(2**31):
            raise invalid(f"depth_radius = {radius} larger than int max")
        self._radius = radius
        self._bias = float(ctx.get_attr("bias", 1.0))
        self._alpha = float(ctx.get_attr("alpha", 1.0))
        self._beta = float(ctx.get_attr("beta", 0.5))
        self._np_type = ctx.get_attr("T").as_numpy_dtype

    def compute(self, ctx, inputs):
        x = inputs[0]
        if x.ndim != 4:
            raise invalid("in must be 4-dimensional")
        if x.size > 2**31 - 1:
            raise invalid("argument to LRN too large")
        xf = x.astype(np.float32) if x.dtype != np.float32 else x
        if _compiled_ready():
            return (self._compiled(xf).astype(self._np_type, copy=False),)
        depth = x.shape[-1]
        r = max(0, self._radius)
        sq = np.square(xf)
        csum = np.zeros(x.shape[:-1] + (depth + 1,), np.float32)
        np.cumsum(sq, axis=-1, out=csum[..., 1:])
        hi = np.minimum(np.arange(depth) + r + 1, depth)
        lo = np.maximum(np.arange(depth) - r, 0)
        window = csum[..., hi] - csum[..., lo]
        if self._radius < 0:
            window = np.zeros_like(sq)
        base = np.float32(self._bias) + np.float32(self._alpha) * window
        if self._beta == 0.5:
            y = xf / np.sqrt(base)
        elif self._beta == 1.0:
            y = xf / base
        else:
            y = xf * np.power(base, np.float32(-self._beta))
        return (y.astype(self._np_type, copy=False),)

    def _compiled(self, xf: np.ndarray) -> np.ndarray:
        """LRN of float32 xf by the compiled loop, a block of pixels at a time."""
        xf = np.ascontiguousarray(xf)
        y = np.empty_like(xf)
        if xf.size == 0:
            return y
        view = xf.reshape(-1, xf.shape[-1])
        out = y.reshape(view.shape)

        def block(item):
            normalization_jit.lrn_rows(view, out, item[0], item[1], self._radius,
                                       self._bias, self._alpha, self._beta)

        parallel_blocks(_blocks(view.shape[0], view[0].nbytes), block, xf.size * 8)
        return y


@register_kernel("L2Loss", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32,
                                     dtypes.float64])
class L2LossOp(OpKernel):
    """sum(t ** 2) / 2, a scalar."""

    expensive = None
    pool_above = 1 << 20
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self._np_type = ctx.get_attr("T").as_numpy_dtype

    def compute(self, ctx, inputs):
        t = inputs[0]
        tf = t.astype(np.float32) if t.dtype.itemsize < 4 else t
        flat = tf.reshape(-1)
        value = np.dot(flat, flat) / 2
        return (np.asarray(value, self._np_type)[()],)


@register_kernel("BiasAddV1", "CPU", T=_NON_QUANTIZED_NUMBERS)
class BiasAddV1Op(BiasAddOp):
    """BiasAdd without data_format: bias added along the last dimension."""
