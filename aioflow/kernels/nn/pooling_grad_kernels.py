"""CPU kernels (NumPy) for pooling's gradients: MaxPoolGrad(V2), MaxPoolGradGrad(V2),
AvgPoolGrad, MaxPool3DGrad, AvgPool3DGrad, MaxPool3DGradGrad, MaxPoolWithArgmax and
MaxPoolGradWithArgmax, with TF 2.21's semantics, checks and messages.

TF's CPU kernels differ in how they pick "the" maximum, and these kernels pick as each
does:

* MaxPoolGrad and MaxPoolWithArgmax recompute the argmax from the input (orig_output's
  values are not read): the first maximum in row-major window order wins (a later equal
  value does not replace it). With numba (kernels/jit.py) a compiled loop walks the input
  as TF's does (kernels/nn/pooling_grad_jit.py); the NumPy path compares the window's
  taps in row-major order. The gradient is added at each output's argmax.
* MaxPoolGradGrad and MaxPool3DGradGrad take the gradient at the first input position
  of the window equal to orig_output.
* MaxPool3DGrad gives each output's gradient to every input of its window within 1e-5 of
  orig_output (ties all receive it).
* The average pools' gradients spread each output's gradient evenly over the window's
  taps inside the input (padding is not counted, as in the forward op).

Padding is never a candidate. TF's CPU runs MaxPoolGrad, MaxPoolGradGrad, MaxPool3DGrad
and MaxPool3DGradGrad in NHWC/NDHWC only (its layout pass keeps graphs there) and refuses
NCHW with its messages; the average pools' gradients run NCHW as TF's default build does
(oneDNN), channels-last inside. half/bfloat16 average in float32.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.nn import pooling_grad_jit
from aioflow.kernels.nn.conv_kernels import (
    attr_str,
    intra_op_threads,
    invalid,
    parallel_blocks,
    to_channels_first,
    to_channels_last,
    unimplemented,
    windowed_output_size,
)
from aioflow.kernels.nn.pooling_kernels import _PoolBase

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
_FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
_REAL = [dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16,
         dtypes.int8, dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16,
         dtypes.uint32, dtypes.uint64]
#: Elements times taps above which a pooling gradient goes to the thread pool.
POOL_WORK = 1 << 20
#: TF's MaxPool3DGrad: inputs this close to the window's max receive its gradient.
_TIE_TOLERANCE = 1e-5


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return dtype.type(-np.inf)
    return np.iinfo(dtype).min


# -- window geometry ----------------------------------------------------------------------------

def _tap_slices(tap, strides, pads, in_sizes, out_sizes):
    """For window tap `tap`: (output slices, input slices) of the outputs whose tap lies
    inside the input, and the inputs they read; None when no output's does."""
    outs, ins = [], []
    for t, s, (before, _), size, o in zip(tap, strides, pads, in_sizes, out_sizes,
                                          strict=True):
        # Output j reads input j * s + t - before: inside for j in [j0, j1).
        j0 = max(0, -(-(before - t) // s))
        j1 = min(o, (size - 1 - t + before) // s + 1)
        if j1 <= j0:
            return None
        i0 = j0 * s + t - before
        outs.append(slice(j0, j1))
        ins.append(slice(i0, i0 + (j1 - j0 - 1) * s + 1, s))
    return outs, ins


def _taps(ksizes, strides, pads, in_sizes, out_sizes):
    """[(tap, output slices, input slices)] for the taps that reach the input, in
    row-major window order."""
    found = []
    for tap in np.ndindex(*ksizes):
        sl = _tap_slices(tap, strides, pads, in_sizes, out_sizes)
        if sl is not None:
            found.append((tap, *sl))
    return found


def _counts(in_sizes, ksizes, strides, pads, out_sizes) -> np.ndarray:
    """The number of window taps inside the input, per output position (*out, 1)."""
    counts = None
    for size, k, s, (before, _), o in zip(in_sizes, ksizes, strides, pads, out_sizes,
                                          strict=True):
        start = np.arange(o) * s - before
        c = np.minimum(start + k, size) - np.maximum(start, 0)
        counts = c if counts is None else np.multiply.outer(counts, c)
    return counts[..., None]


# -- NumPy algorithms (channels-last, 2-D or 3-D) ----------------------------------------------

def window_argmax(x: np.ndarray, ksizes, strides, pads, out_sizes):
    """(max, argmax) of each window of x (N, *in, C): argmax is the position in the image,
    ((h * W) + w) * C + c (3-D: ((d * H + h) * W + w) * C + c); the first maximum in
    row-major window order; -1 where no input is under the window."""
    n, c = x.shape[0], x.shape[-1]
    in_sizes = x.shape[1:-1]
    shape = (n,) + tuple(out_sizes) + (c,)
    best = np.full(shape, _lowest(x.dtype), x.dtype)
    arg = np.full(shape, -1, np.int64)
    if best.size == 0:
        return best, arg
    if x.dtype in pooling_grad_jit.TYPES and len(out_sizes) == 2 and \
            pooling_grad_jit.usable(x.dtype):
        xc = np.ascontiguousarray(x)
        parallel_blocks(list(range(n)), lambda b: pooling_grad_jit.argmax_image(
            xc, b, ksizes, strides, (pads[0][0], pads[1][0]), best, arg),
            best.size * int(np.prod(ksizes)), intra_op_threads())
        return best, arg
    place = np.arange(int(np.prod(in_sizes, dtype=np.int64)) * c, dtype=np.int64).reshape(
        in_sizes + (c,))
    for _, osl, isl in _taps(ksizes, strides, pads, in_sizes, out_sizes):
        o_idx = (slice(None),) + tuple(osl)
        cand = x[(slice(None),) + tuple(isl)]
        cur = best[o_idx]
        take = (cand > cur) | (arg[o_idx] < 0)
        np.copyto(cur, cand, where=take)
        np.copyto(arg[o_idx], np.broadcast_to(place[tuple(isl)], cand.shape), where=take)
    return best, arg


def scatter_add(arg: np.ndarray, grad: np.ndarray, in_shape, dtype) -> np.ndarray:
    """zeros(in_shape) with each grad element added at its image position arg (-1: none)."""
    n = in_shape[0]
    per_image = int(np.prod(in_shape[1:], dtype=np.int64))
    flat = (arg.reshape(n, -1) + (np.arange(n, dtype=np.int64) * per_image)[:, None]).ravel()
    g = grad.reshape(-1)
    keep = arg.reshape(-1) >= 0
    if not keep.all():
        flat, g = flat[keep], g[keep]
    if np.dtype(dtype).kind == "f" or np.dtype(dtype).name == "bfloat16":
        total = np.bincount(flat, weights=g.astype(np.float64), minlength=n * per_image)
        return total.astype(dtype).reshape(in_shape)
    out = np.zeros(n * per_image, dtype)
    np.add.at(out, flat, g)
    return out.reshape(in_shape)


def first_equal_gather(x, y, gg, ksizes, strides, pads) -> np.ndarray:
    """out (y's shape): for each window, gg at the first input (row-major window order)
    equal to y; 0 where none is."""
    if x.ndim == 4 and x.dtype in pooling_grad_jit.TYPES and y.dtype == gg.dtype == x.dtype \
            and y.size and pooling_grad_jit.usable(x.dtype):
        xc, yc, gc = (np.ascontiguousarray(t) for t in (x, y, gg))
        out = np.empty(y.shape, gg.dtype)
        parallel_blocks(list(range(x.shape[0])), lambda b: pooling_grad_jit.first_equal_image(
            xc, yc, gc, out, b, ksizes, strides, (pads[0][0], pads[1][0])),
            y.size * int(np.prod(ksizes)), intra_op_threads())
        return out
    out = np.zeros(y.shape, gg.dtype)
    taps = _taps(ksizes, strides, pads, x.shape[1:-1], y.shape[1:-1])
    for _, osl, isl in reversed(taps):  # the earliest match written last
        o_idx = (slice(None),) + tuple(osl)
        i_idx = (slice(None),) + tuple(isl)
        np.copyto(out[o_idx], gg[i_idx], where=x[i_idx] == y[o_idx])
    return out


def spread_average(grad, in_sizes, ksizes, strides, pads) -> np.ndarray:
    """The average pool's input gradient: each output's gradient divided by its window's
    taps inside the input, added to each of them. grad (N, *out, C) in its compute type."""
    out_sizes = grad.shape[1:-1]
    shape = (grad.shape[0],) + tuple(in_sizes) + (grad.shape[-1],)
    if tuple(ksizes) == tuple(strides) and not any(b for b, _ in pads) and all(
            o * k <= size for o, k, size in zip(out_sizes, ksizes, in_sizes, strict=True)):
        # Windows side by side (a 2x2 stride-2 pool): each input pixel gets its window's
        # share, written once; the rows no window reaches (VALID's remainder) are 0.
        dx = np.zeros(shape, grad.dtype) if any(
            o * k != size for o, k, size in zip(out_sizes, ksizes, in_sizes, strict=True)
        ) else np.empty(shape, grad.dtype)
        covered = dx[(slice(None),) + tuple(slice(0, o * k) for o, k in
                                            zip(out_sizes, ksizes, strict=True))]
        blocks = covered.reshape((grad.shape[0],) + tuple(
            d for o, k in zip(out_sizes, ksizes, strict=True) for d in (o, k))
            + (grad.shape[-1],))
        spread = grad.reshape((grad.shape[0],) + tuple(
            d for o in out_sizes for d in (o, 1)) + (grad.shape[-1],))
        np.multiply(spread, grad.dtype.type(1.0 / int(np.prod(ksizes))), out=blocks)
        return dx
    scaled = grad / _counts(in_sizes, ksizes, strides, pads, out_sizes).astype(grad.dtype)
    dx = np.zeros(shape, grad.dtype)
    for _, osl, isl in _taps(ksizes, strides, pads, in_sizes, out_sizes):
        dx[(slice(None),) + tuple(isl)] += scaled[(slice(None),) + tuple(osl)]
    return dx


def spread_near_max(x, y, grad, ksizes, strides, pads) -> np.ndarray:
    """MaxPool3DGrad's input gradient: each output's gradient added to every input of its
    window within _TIE_TOLERANCE of the output."""
    dx = np.zeros(x.shape, grad.dtype)
    tol = x.dtype.type(_TIE_TOLERANCE)
    for _, osl, isl in _taps(ksizes, strides, pads, x.shape[1:-1], y.shape[1:-1]):
        o_idx = (slice(None),) + tuple(osl)
        i_idx = (slice(None),) + tuple(isl)
        near = np.abs(x[i_idx] - y[o_idx]) < tol
        dx[i_idx] += np.where(near, grad[o_idx], grad.dtype.type(0))
    return dx


def max_pool_grad_2d(x, grad, ksizes, strides, pads, out_sizes) -> np.ndarray:
    """MaxPoolGrad of x (N, H, W, C): grad (N, oh, ow, C) added at each window's argmax."""
    if x.dtype in pooling_grad_jit.TYPES and grad.dtype == x.dtype and x.size and \
            grad.size and pooling_grad_jit.usable(x.dtype):
        xc, gc = np.ascontiguousarray(x), np.ascontiguousarray(grad)
        dx = np.empty(x.shape, x.dtype)

        vals = np.empty(grad.shape, x.dtype)
        args = np.empty(grad.shape, np.int64)

        def image(b):
            dx[b] = 0
            pooling_grad_jit.argmax_image(xc, b, ksizes, strides, (pads[0][0], pads[1][0]),
                                          vals, args)
            pooling_grad_jit.scatter_image(args, gc, dx, b)

        parallel_blocks(list(range(x.shape[0])), image,
                        grad.size * int(np.prod(ksizes)), intra_op_threads())
        return dx
    _, arg = window_argmax(x, ksizes, strides, pads, out_sizes)
    return scatter_add(arg, grad, x.shape, grad.dtype)


# -- kernels ------------------------------------------------------------------------------------

class _PoolGradBase(OpKernel):
    """Attrs checked as TF's pooling gradient kernels check them at construction."""

    expensive = None
    compilable = True
    num_spatial = 2
    formats = ("NHWC", "NCHW")
    channels_last_only = ""  # the message refusing NCHW, if the op does
    depth_message = "Pooling is not yet supported on the depth dimension."
    strides_word = "strides"

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._np_type = dtype.as_numpy_dtype
        self._half = dtype in _HALF_TYPES
        fmt = attr_str(ctx, "data_format", self.formats[0])
        if fmt not in self.formats:
            raise invalid("Invalid data format")
        self._channels_first = fmt == self.formats[1]
        if self._channels_first and self.channels_last_only:
            raise invalid(self.channels_last_only)
        self._padding = attr_str(ctx, "padding", "VALID")
        self._explicit = list(ctx.get_attr("explicit_paddings", []))
        self._window = None
        if ctx.has_attr("ksize"):
            self._window = self.check_window(list(ctx.get_attr("ksize")),
                                             list(ctx.get_attr("strides")))
        if self._padding == "EXPLICIT":
            self._check_explicit()

    # TF's explicit_paddings checks, as the forward pools make them (same attrs, same
    # messages): only self._explicit and self._channels_first are read.
    _check_explicit = _PoolBase._check_explicit

    def check_window(self, ksize, strides):
        rank = self.num_spatial + 2
        if len(ksize) != rank:
            raise invalid(f"Sliding window ksize field must specify {rank} dimensions")
        if len(strides) != rank:
            raise invalid(f"Sliding window {self.strides_word} field must specify {rank} "
                          f"dimensions")
        c = 1 if self._channels_first else rank - 1
        if ksize[0] != 1 or strides[0] != 1:
            raise unimplemented("Pooling is not yet supported on the batch dimension.")
        if ksize[c] != 1 or strides[c] != 1:
            raise unimplemented(self.depth_message)
        if any(k <= 0 for k in ksize):
            raise invalid("Sliding window ksize for dimension must be positive")
        if any(s <= 0 for s in strides):
            raise invalid("Sliding window stride for dimension must be positive")
        return self._spatial(ksize), self._spatial(strides)

    def _spatial(self, values):
        """The spatial entries of a per-dimension list in the op's data format."""
        return list(values[2:]) if self._channels_first else list(values[1:-1])

    def window_inputs(self, inputs):
        """(ksizes, strides) from MaxPoolGradV2's inputs."""
        ksize, strides = inputs[3], inputs[4]
        if np.size(ksize) != 4:
            raise invalid("Sliding window ksize field must specify 4 dimensions")
        if np.size(strides) != 4:
            raise invalid(f"Sliding window {self.strides_word} field must specify 4 "
                          f"dimensions")
        return self.check_window([int(v) for v in np.ravel(ksize)],
                                 [int(v) for v in np.ravel(strides)])

    def window(self, inputs):
        return self._window if self._window is not None else self.window_inputs(inputs)

    def is_expensive(self, inputs: list) -> bool:
        return max(np.size(t) for t in inputs) * 9 > POOL_WORK

    def geometry(self, in_sizes, ksizes, strides):
        """(output sizes, padding pairs) of channels-last spatial sizes, TF's checks."""
        pairs = [(0, 0)] * self.num_spatial
        if self._padding == "EXPLICIT":
            p = [self._explicit[2 * i:2 * i + 2] for i in range(4)]
            p = self._spatial(p)
            pairs = [tuple(v) for v in p]
            for side, pad, k in (("Top", pairs[0][0], ksizes[0]),
                                 ("Bottom", pairs[0][1], ksizes[0]),
                                 ("Left", pairs[1][0], ksizes[1]),
                                 ("Right", pairs[1][1], ksizes[1])):
                if pad >= k:
                    raise invalid(f"{side} padding {pad} needs to be smaller than the window "
                                  f"size {k}")
        outs, pads = [], []
        for size, k, s, (b, a) in zip(in_sizes, ksizes, strides, pairs, strict=True):
            o, before, after = windowed_output_size(size, k, 1, s, self._padding, b, a)
            outs.append(o)
            pads.append((before, after))
        return outs, pads

    def out_shape(self, in_shape, outs) -> list[int]:
        """The pooled shape in the op's data format."""
        if self._channels_first:
            return [in_shape[0], in_shape[1]] + list(outs)
        return [in_shape[0]] + list(outs) + [in_shape[-1]]

    def to_last(self, *arrays):
        return [to_channels_last(a) if self._channels_first else a for a in arrays]

    def to_format(self, y):
        return to_channels_first(y) if self._channels_first else y


def _expect(name: str, want, got) -> None:
    if list(want) != list(got):
        raise invalid(f"Expected {name} shape to be {shape_str(want)}, but got "
                      f"{shape_str(got)}")


def _ranks(rank: int, named) -> None:
    for name, t in named:
        if np.ndim(t) != rank:
            raise invalid(f"{name} must be {rank}-dimensional")


class _MaxPoolGrad(_PoolGradBase):
    channels_last_only = "Default MaxPoolingGradOp only supports NHWC on device type CPU"
    depth_message = "MaxPoolingGrad is not yet supported on the depth dimension."

    def compute(self, ctx, inputs):
        x, y, g = inputs[:3]
        _ranks(4, (("tensor_in", x), ("tensor_out", y), ("out_backprop", g)))
        ksizes, strides = self.window(inputs)
        outs, pads = self.geometry(x.shape[1:3], ksizes, strides)
        want = self.out_shape(x.shape, outs)
        _expect("orig_output", want, y.shape)
        _expect("grad", want, g.shape)
        return (self.max_grad(x, g, ksizes, strides, pads, outs),)

    def max_grad(self, x, g, ksizes, strides, pads, out_sizes):
        """grad added at each window's first maximum of x (NHWC, checked; a backend's
        kernel overrides this: aioflow/kernels/onednn/)."""
        return max_pool_grad_2d(x, g, ksizes, strides, pads, out_sizes)


@register_kernel("MaxPoolGrad", "CPU", T=_REAL)
class MaxPoolGradOp(_MaxPoolGrad):
    """The gradient of MaxPool: grad added at each window's (first) maximum."""


@register_kernel("MaxPoolGradV2", "CPU", T=_REAL, host_memory=("ksize", "strides"))
class MaxPoolGradV2Op(_MaxPoolGrad):
    """MaxPoolGrad with ksize and strides given as inputs."""


class _MaxPoolGradGrad(_PoolGradBase):
    channels_last_only = "Default MaxPoolingGradGradOp only supports NHWC on device type CPU"
    depth_message = "MaxPoolingGradGrad is not yet supported on the depth dimension."

    def compute(self, ctx, inputs):
        x, y, gg = inputs[:3]
        _ranks(4, (("tensor_in", x), ("tensor_out", y), ("out_grad_backprop", gg)))
        ksizes, strides = self.window(inputs)
        outs, pads = self.geometry(x.shape[1:3], ksizes, strides)
        _expect("orig_output", self.out_shape(x.shape, outs), y.shape)
        _expect("grad", x.shape, gg.shape)
        return (first_equal_gather(x, y, gg, ksizes, strides, pads),)


@register_kernel("MaxPoolGradGrad", "CPU", T=_REAL)
class MaxPoolGradGradOp(_MaxPoolGradGrad):
    """The gradient of MaxPoolGrad: grad taken at each window's maximum."""


@register_kernel("MaxPoolGradGradV2", "CPU", T=_REAL, host_memory=("ksize", "strides"))
class MaxPoolGradGradV2Op(_MaxPoolGradGrad):
    """MaxPoolGradGrad with ksize and strides given as inputs."""


def _shape_input(shape, rank: int, message: str) -> list[int]:
    if np.ndim(shape) != 1 or np.size(shape) != rank:
        raise invalid(message)
    values = [int(v) for v in np.ravel(shape)]
    for v in values:
        if v < 0:
            raise invalid(f"Expected a non-negative size, got {v}")
    return values


class _AvgPoolGradBase(_PoolGradBase):
    shape_message = "out_backprop must be 1-dimensional and 4 elements"

    def compute(self, ctx, inputs):
        shape, g = inputs
        rank = self.num_spatial + 2
        in_shape = _shape_input(shape, rank, self.shape_message)
        _ranks(rank, (("out_backprop", g),))
        self.check_grad(in_shape, g.shape)
        ksizes, strides = self.window(inputs)
        (gl,) = self.to_last(g)
        last = ([in_shape[0]] + in_shape[2:] + [in_shape[1]] if self._channels_first
                else in_shape)
        outs, pads = self.geometry(last[1:-1], ksizes, strides)
        _expect("grad", self.out_shape(in_shape, outs), g.shape)
        work = gl.astype(np.float32) if self._half else gl
        dx = self.avg_grad(work, last[1:-1], ksizes, strides, pads)
        return (self.to_format(dx.astype(self._np_type, copy=False)),)

    def avg_grad(self, g, in_sizes, ksizes, strides, pads):
        """g (channels-last, checked) spread over each window's taps inside the input (a
        backend's kernel overrides this)."""
        return spread_average(g, in_sizes, ksizes, strides, pads)

    def check_grad(self, in_shape, g_shape) -> None:
        """Checks TF makes before the window's (AvgPool3DGrad's batch and depth)."""


@register_kernel("AvgPoolGrad", "CPU", T=_FLOATS, host_memory=("orig_input_shape",))
class AvgPoolGradOp(_AvgPoolGradBase):
    """The gradient of AvgPool: each output's gradient spread over its window."""


@register_kernel("AvgPool3DGrad", "CPU", T=dtypes.float32, host_memory=("orig_input_shape",))
class AvgPool3DGradOp(_AvgPoolGradBase):
    """The gradient of AvgPool3D."""

    num_spatial = 3
    formats = ("NDHWC", "NCDHW")
    shape_message = "tensor_in must be 1-dimensional and 5 elements"

    def check_grad(self, in_shape, g_shape) -> None:
        c = 1 if self._channels_first else 4
        if in_shape[0] != g_shape[0]:
            raise invalid(f"Expected first dimension of tensor_in_shape and out_backprop to "
                          f"match, got {in_shape[0]} and {g_shape[0]}")
        if in_shape[c] != g_shape[c]:
            raise invalid(f"Expected last dimension of tensor_in_shape and out_backprop to "
                          f"match, got {in_shape[c]} and {g_shape[c]}")


@register_kernel("MaxPool3DGrad", "CPU", T=dtypes.float32, TInput=dtypes.float32)
class MaxPool3DGradOp(_PoolGradBase):
    """The gradient of MaxPool3D: grad given to every input within 1e-5 of the max."""

    num_spatial = 3
    formats = ("NDHWC", "NCDHW")
    channels_last_only = "Default MaxPooling3dGradOp only supports NDHWC on device type CPU"

    def compute(self, ctx, inputs):
        x, y, g = inputs
        _ranks(5, (("tensor_in", x), ("tensor_out", y), ("out_backprop", g)))
        ksizes, strides = self._window
        outs, pads = self.geometry(x.shape[1:4], ksizes, strides)
        want = self.out_shape(x.shape, outs)
        _expect("orig_output", want, y.shape)
        _expect("grad", want, g.shape)
        return (spread_near_max(x, y, g, ksizes, strides, pads),)


@register_kernel("MaxPool3DGradGrad", "CPU", T=dtypes.float32)
class MaxPool3DGradGradOp(_PoolGradBase):
    """The gradient of MaxPool3DGrad: grad taken at each window's maximum."""

    num_spatial = 3
    formats = ("NDHWC", "NCDHW")
    depth_message = "MaxPooling3dGradGrad is not yet supported on the depth dimension."

    def compute(self, ctx, inputs):
        x, y, gg = inputs
        _ranks(5, (("tensor_in", x), ("tensor_out", y), ("out_grad_backprop", gg)))
        ksizes, strides = self._window
        in_sizes = x.shape[2:] if self._channels_first else x.shape[1:4]
        outs, pads = self.geometry(in_sizes, ksizes, strides)
        _expect("orig_output", self.out_shape(x.shape, outs), y.shape)
        _expect("grad", x.shape, gg.shape)
        if self._channels_first:
            raise invalid("Default MaxPooling3dGradGradOp only supportsNDHWC on CPU device "
                          "type")
        return (first_equal_gather(x, y, gg, ksizes, strides, pads),)


class _ArgmaxBase(_PoolGradBase):
    strides_word = "stride"

    def __init__(self, ctx):
        super().__init__(ctx)
        self._with_batch = bool(ctx.get_attr("include_batch_in_index", False))


@register_kernel("MaxPoolWithArgmax", "CPU", T=_REAL)
class MaxPoolWithArgmaxOp(_ArgmaxBase):
    """MaxPool and each maximum's flat position ((b *) H * W * C indexing)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._arg_type = ctx.get_attr("Targmax").as_numpy_dtype

    def compute(self, ctx, inputs):
        x = inputs[0]
        if x.ndim != 4:
            raise invalid("tensor_in must be 4-dimensional (2)")
        ksizes, strides = self._window
        outs, pads = self.geometry(x.shape[1:3], ksizes, strides)
        y, arg = window_argmax(x, ksizes, strides, pads, outs)
        if self._with_batch and arg.size:
            arg += (np.arange(x.shape[0], dtype=np.int64) * (x.size // x.shape[0])).reshape(
                -1, 1, 1, 1)
        return y, arg.astype(self._arg_type, copy=False)


@register_kernel("MaxPoolGradWithArgmax", "CPU", T=_REAL)
class MaxPoolGradWithArgmaxOp(_ArgmaxBase):
    """MaxPool's gradient given MaxPoolWithArgmax's argmax: grad added at each position."""

    def compute(self, ctx, inputs):
        x, g, arg = inputs
        if x.ndim != 4:
            raise invalid("tensor_in must be 4-dimensional (2)")
        ksizes, strides = self._window
        outs, _ = self.geometry(x.shape[1:3], ksizes, strides)
        want = self.out_shape(x.shape, outs)
        _expect("grad", want, g.shape)
        _expect("argmax", want, arg.shape)
        n = x.shape[0]
        per_image = x.size // n if n else 0
        index = arg.astype(np.int64).reshape(n, -1)
        if not self._with_batch:
            index = index + (np.arange(n, dtype=np.int64) * per_image)[:, None]
        bad = (index < 0) | (index >= x.size)
        if bad.any():
            i = int(np.argmax(bad.ravel()))
            raise errors.InvalidArgumentError(
                None, None, f"Invalid output gradient index: {int(index.ravel()[i])}, 0, "
                f"{x.size}")
        dx = scatter_add(index.reshape(g.shape), g, (1, x.size), g.dtype)
        return (dx.reshape(x.shape),)
