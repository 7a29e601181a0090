"""Convolutions, pooling, batch normalization, bias and softmax on the GPU, in
array-module form: Conv2D as im2col + one GEMM (cuBLAS through CuPy), depthwise as
per-tap products, pooling over the window's taps (SAME padding excluded from an
average, as TF's), FusedBatchNorm with TF's formulas. NHWC and NCHW (NCHW through a
transpose)."""

from __future__ import annotations

from aioflow.framework import errors
from aioflow.framework.op_kernel import attr_text
from aioflow.kernels.nn.conv_kernels import windowed_output_size

from .base import FLOATS, GpuKernel, register_gpu


def _taps(start: int, count: int, step: int) -> slice:
    """The `count` strided positions from `start` (none when the output is empty)."""
    return slice(start, start + (count - 1) * step + 1, step) if count else slice(0, 0)


class _Windowed(GpuKernel):
    """Reads data_format, strides, dilations, padding; works in NHWC. Output sizes and
    padding come from the CPU kernels' windowed_output_size, with TF's checks and
    messages (a zero-size output is empty, a negative one an InvalidArgumentError)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.nchw = attr_text(ctx.get_attr("data_format", "NHWC")) == "NCHW"
        self.padding = attr_text(ctx.get_attr("padding"))
        strides = list(ctx.get_attr("strides"))
        dilations = list(ctx.get_attr("dilations", [1, 1, 1, 1]))
        for name, values in (("strides", strides), ("dilations", dilations)):
            if len(values) != 4:
                raise errors.InvalidArgumentError(
                    None, None, f"Sliding window {name} field must specify 4 dimensions")
        self.strides = self._hw(strides)
        self.dilations = self._hw(dilations)
        explicit = list(ctx.get_attr("explicit_paddings", []))
        if explicit and len(explicit) != 8:
            raise errors.InvalidArgumentError(
                None, None, f"explicit_paddings attribute must contain 8 values, but got: "
                            f"{len(explicit)}")
        if explicit:
            pairs = [explicit[i:i + 2] for i in range(0, 8, 2)]
            self.explicit = self._hw(pairs)
        else:
            self.explicit = ((0, 0), (0, 0))

    def _hw(self, values) -> tuple:
        values = list(values)
        return (values[2], values[3]) if self.nchw else (values[1], values[2])

    def to_nhwc(self, xp, x):
        return xp.transpose(x, (0, 2, 3, 1)) if self.nchw else x

    def from_nhwc(self, xp, y):
        return xp.ascontiguousarray(xp.transpose(y, (0, 3, 1, 2))) if self.nchw else y

    def taps(self, xp, x, kh: int, kw: int, fill=0):
        """The padded input and, per (i, j) tap, the strided view it reads."""
        _, h, w, _ = x.shape
        oh, top, bottom = windowed_output_size(h, kh, self.dilations[0], self.strides[0],
                                               self.padding, *self.explicit[0])
        ow, left, right = windowed_output_size(w, kw, self.dilations[1], self.strides[1],
                                               self.padding, *self.explicit[1])
        if top or bottom or left or right:
            x = xp.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)),
                       constant_values=fill)
        sh, sw = self.strides
        dh, dw = self.dilations
        views = {}
        for i in range(kh):
            for j in range(kw):
                views[i, j] = x[:, _taps(i * dh, oh, sh), _taps(j * dw, ow, sw), :]
        return views, oh, ow


class Conv2DOp(_Windowed):
    def work(self, xp, x, w):
        x = self.to_nhwc(xp, x)
        kh, kw, cin, cout = w.shape
        if x.shape[3] != cin:
            raise errors.InvalidArgumentError(
                None, None, f"input depth must be evenly divisible by filter depth: "
                            f"{x.shape[3]} vs {cin}")
        views, oh, ow = self.taps(xp, x, kh, kw)
        cols = xp.concatenate([views[i, j] for i in range(kh) for j in range(kw)], axis=3)
        n = x.shape[0]
        y = xp.matmul(cols.reshape(n * oh * ow, kh * kw * cin), w.reshape(kh * kw * cin, cout))
        return (self.from_nhwc(xp, y.reshape(n, oh, ow, cout)),)


class DepthwiseConv2dOp(_Windowed):
    def work(self, xp, x, w):
        x = self.to_nhwc(xp, x)
        kh, kw, c, m = w.shape
        views, oh, ow = self.taps(xp, x, kh, kw)
        y = None
        for (i, j), view in views.items():
            term = view[..., None] * w[i, j]
            y = term if y is None else y + term
        return (self.from_nhwc(xp, y.reshape(x.shape[0], oh, ow, c * m)),)


class _Pool(_Windowed):
    def __init__(self, ctx):
        super().__init__(ctx)
        ksize = list(ctx.get_attr("ksize"))
        if len(ksize) != 4:
            raise errors.InvalidArgumentError(
                None, None, "Sliding window ksize field must specify 4 dimensions")
        self.ksize = self._hw(ksize)
        self.dilations = (1, 1)


class MaxPoolOp(_Pool):
    def work(self, xp, x):
        x = self.to_nhwc(xp, x)
        views, _, _ = self.taps(xp, x, *self.ksize, fill=-xp.inf)
        y = None
        for view in views.values():
            y = view if y is None else xp.maximum(y, view)
        return (self.from_nhwc(xp, xp.asarray(y, dtype=x.dtype)),)


class AvgPoolOp(_Pool):
    def work(self, xp, x):
        x = self.to_nhwc(xp, x)
        views, _, _ = self.taps(xp, x, *self.ksize)
        ones, _, _ = self.taps(xp, xp.ones((1,) + x.shape[1:3] + (1,), dtype=x.dtype),
                               *self.ksize)
        total = count = None
        for key, view in views.items():
            total = view if total is None else total + view
            count = ones[key] if count is None else count + ones[key]
        return (self.from_nhwc(xp, total / count),)


class BiasAddOp(GpuKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.nchw = attr_text(ctx.get_attr("data_format", "NHWC")) == "NCHW"

    def work(self, xp, x, bias):
        if self.nchw and x.ndim >= 3:
            bias = bias.reshape((1, -1) + (1,) * (x.ndim - 2))
        return (x + bias,)


class FusedBatchNormOp(GpuKernel):
    """y = (x - mean) / sqrt(var + epsilon) * scale + offset; in training the batch's
    moments (the variance output with Bessel's correction, as TF's)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.epsilon = ctx.get_attr("epsilon", 1e-4)
        self.training = ctx.get_attr("is_training", True)
        self.factor = ctx.get_attr("exponential_avg_factor", 1.0)
        self.nchw = attr_text(ctx.get_attr("data_format", "NHWC")) == "NCHW"
        self.num_outputs = len(ctx.output_dtypes)

    def work(self, xp, x, scale, offset, mean, variance):
        if self.nchw:
            x = xp.transpose(x, (0, 2, 3, 1))
        dtype = scale.dtype
        xf = x.astype(dtype)
        if self.training:
            axes = tuple(range(x.ndim - 1))
            batch_mean = xp.mean(xf, axis=axes)
            batch_var = xp.mean(xp.square(xf - batch_mean), axis=axes)
            n = xf.size // xf.shape[-1]
            corrected = batch_var * dtype.type(n / max(n - 1, 1))
            use_mean, use_var = batch_mean, batch_var
            if self.factor != 1.0 and mean.size:
                f = dtype.type(self.factor)
                out_mean = (1 - f) * mean + f * batch_mean
                out_var = (1 - f) * variance + f * corrected
            else:
                out_mean, out_var = batch_mean, corrected
        else:
            use_mean, use_var = mean, variance
            out_mean, out_var = mean, variance
        inv = scale / xp.sqrt(use_var + dtype.type(self.epsilon))
        y = ((xf - use_mean) * inv + offset).astype(x.dtype)
        if self.nchw:
            y = xp.ascontiguousarray(xp.transpose(y, (0, 3, 1, 2)))
        outs = (y, out_mean, out_var, use_mean, use_var)
        if self.num_outputs > 5:
            outs += (xp.zeros((0,), dtype=dtype),)
        return outs


class SoftmaxOp(GpuKernel):
    log = False

    def work(self, xp, logits):
        if logits.size == 0 and logits.ndim:  # nothing to normalise (xp.max would raise)
            return (xp.empty_like(logits),)
        shifted = logits - xp.max(logits, axis=-1, keepdims=True)
        if self.log:
            return (shifted - xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True)),)
        e = xp.exp(shifted)
        return (e / xp.sum(e, axis=-1, keepdims=True),)


class LogSoftmaxOp(SoftmaxOp):
    log = True


def _register_all() -> None:
    floats = list(FLOATS)
    register_gpu("Conv2D", T=floats)(Conv2DOp)
    register_gpu("DepthwiseConv2dNative", T=floats)(DepthwiseConv2dOp)
    register_gpu("MaxPool", T=floats)(MaxPoolOp)
    register_gpu("AvgPool", T=floats)(AvgPoolOp)
    register_gpu("BiasAdd", T=floats)(BiasAddOp)
    for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        register_gpu(op, T=floats)(FusedBatchNormOp)
    register_gpu("Softmax", T=floats)(SoftmaxOp)
    register_gpu("LogSoftmax", T=floats)(LogSoftmaxOp)


_register_all()
