"""CPU kernels (NumPy) for area and filtered resizing, ResizeArea and ScaleAndTranslate (and
ScaleAndTranslateGrad, its transpose), to TF 2.21's values bit for bit.

Both resizes are separable. Each axis gets a table of taps built once per call: for every
output index, the input indices it reads (`idx`, [taps, out]) and their float32 weights
(`w`), padded to the longest span with a `use` mask: the nonzero band of that axis's
weight matrix. The image is reduced along one axis, then the other, one tap at a time,
each tap one NumPy pass over the whole batch. That adds TF's float32 terms in TF's order
(a matmul would sum in BLAS's order and round differently), and its work is the band's
(a dense weight matrix would multiply every zero too).

- ResizeArea (resize_area_op.cc): output i covers input cells [i * s, (i + 1) * s) for
  the scale s (TF's CalculateResizeScale: in / out, or (in - 1) / (out - 1) with
  align_corners for an input axis of more than one pixel); each cell weighs the part of
  it covered. Columns first, per input row: the first cell times its part, the cells
  between as they are, the last cell times its part (indices clamped into the image);
  then per output row the sum from 0 of those row sums times their parts; the result
  times float(1.0 / (s_h * s_w)).
- ScaleAndTranslate (scale_and_translate_op.cc, sampling_kernels.h): output i samples the
  input at (i + 0.5) / scale - translation / scale; the kernel (lanczos1/3/5, gaussian,
  box, triangle, keyscubic, mitchellcubic) is widened by 1 / scale when antialias and
  downscaling; its weights over the span [ceil(x - r - 0.5), floor(x + r - 0.5)] (clamped
  into the image) are normalised to sum 1 (left 0 when the sum is about 0); samples
  outside the image get no taps. Rows first into a float32 buffer, then columns; every
  tap of the padded span that lies in the image is added, zero weights included (so an
  infinite pixel nearby gives NaN, as in TF). Lanczos uses the C library's sinf, as TF.

Inputs of any real type are converted to float32 first; the output is float32.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.image import resize_area_jit
from aioflow.kernels.image.resize_kernels import POOL_ABOVE, resize_scale, validate_resize
from aioflow.kernels.math.cwise_kernels import shape_str

_F32 = np.float32
_ZERO, _HALF, _ONE = _F32(0.0), _F32(0.5), _F32(1.0)
_INT32_MAX = 2**31 - 1


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _resize_is_expensive(inputs) -> bool:
    """Whether the input or the output has more than POOL_ABOVE elements (a resize passes
    over both once per tap)."""
    images, size = inputs[0], inputs[1]
    shape = np.shape(images)
    if len(shape) != 4 or np.shape(size) != (2,):
        return False
    h, w = int(size[0]), int(size[1])
    out = shape[0] * shape[3] * h * w if h > 0 and w > 0 else 0
    return max(out, int(np.prod(shape))) > POOL_ABOVE


class _Taps:
    """One axis's taps: input indices `idx`, weights `w` and mask `use`, each [taps, out]."""

    __slots__ = ("idx", "w", "use")

    def __init__(self, idx: np.ndarray, w: np.ndarray, use: np.ndarray):
        self.idx, self.w, self.use = idx, w, use


def _reduce(values: np.ndarray, axis: int, taps: _Taps) -> np.ndarray:
    """Per output index, the sum from 0 over its used taps k of values[idx[k]] * w[k] along
    `axis` (1 or 2 of NHWC), added in tap order as TF adds them.

    When `values` are all finite an unused tap may be added with weight 0 instead (it adds
    +-0, which leaves a sum that started from +0 unchanged), so every tap is one in-place
    multiply-add over the whole output; otherwise unused taps are masked out (0 * inf
    would be NaN)."""
    shape = [1, 1, 1, 1]
    shape[axis] = -1
    out_shape = list(values.shape)
    out_shape[axis] = taps.idx.shape[1]
    out = np.zeros(out_shape, _F32)
    term = np.empty(out_shape, _F32)
    finite = None  # whether `values` are all finite: asked at the first partly used tap
    for k in range(taps.idx.shape[0]):
        use, w = taps.use[k], taps.w[k]
        every = bool(use.all())
        if not every:
            if not use.any():
                continue
            if finite is None:
                finite = bool(np.isfinite(values).all())
            if finite:
                w = np.where(use, w, _ZERO)
        np.take(values, taps.idx[k], axis=axis, out=term)
        if not (w == _ONE).all():  # (ResizeArea's inner cells weigh exactly 1)
            term *= w.reshape(shape)
        if every or finite:
            out += term
        else:
            out = np.where(use.reshape(shape), out + term, out)
    return out


# -- ResizeArea -------------------------------------------------------------------------------

def _covered(cell: np.ndarray, lo: np.ndarray, hi: np.ndarray, scale) -> np.ndarray:
    """The part of input cell [cell, cell + 1) inside [lo, hi), as TF computes it in float32
    (the whole scale when the cell holds the interval)."""
    c0 = cell.astype(_F32)
    c1 = (cell + 1).astype(_F32)
    return np.where(c0 < lo, np.where(c1 > hi, scale, c1 - lo),
                    np.where(c1 > hi, hi - c0, _ONE)).astype(_F32)


def _area_bounds(out_size: int, scale):
    i = np.arange(out_size, dtype=np.int64)
    lo = i.astype(_F32) * scale
    hi = (i + 1).astype(_F32) * scale
    return lo, hi, np.floor(lo).astype(np.int64), np.ceil(hi).astype(np.int64)


def area_column_taps(in_size: int, out_size: int, scale) -> _Taps:
    """TF's CachedInterpolation per output column: the start cell times its part, the
    cells between as they are, the cell end - 1 times its part (only the start cell when
    end == start + 1); indices clamped into the image."""
    lo, hi, start, end = _area_bounds(out_size, scale)
    n = end - start
    count = np.where(n == 1, 1, np.maximum(n, 2))
    k = np.arange(int(count.max()))[:, None]
    last = k == count - 1
    idx = np.where(last, end - 1, start + k)
    w = np.where(k == 0, _covered(start, lo, hi, scale),
                 np.where(last, _covered(end - 1, lo, hi, scale), _ONE)).astype(_F32)
    return _Taps(np.clip(idx, 0, in_size - 1), w, k < count)


def area_row_taps(in_size: int, out_size: int, scale) -> _Taps:
    """The input rows [floor(y * s), ceil((y + 1) * s)) of each output row, each times its
    covered part (none when the range is empty); indices clamped into the image."""
    lo, hi, start, end = _area_bounds(out_size, scale)
    count = np.maximum(end - start, 0)
    k = np.arange(max(int(count.max()), 1))[:, None]
    cell = start + k
    return _Taps(np.clip(cell, 0, in_size - 1), _covered(cell, lo, hi, scale), k < count)


def _counted(taps: _Taps) -> tuple:
    """(idx int64, w float32, count int64): the taps for the compiled loops, each
    output index's used taps being its first `count` (as the area tables give them)."""
    return (np.ascontiguousarray(taps.idx, np.int64), np.ascontiguousarray(taps.w, _F32),
            taps.use.sum(axis=0, dtype=np.int64))


@register_kernel("ResizeArea", "CPU")
class ResizeAreaOp(OpKernel):
    """Area resize of NHWC images to `size`: each output pixel is the mean of the input
    area it covers, partial pixels weighted by their part; float32 output."""

    expensive = None
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.align_corners = bool(ctx.get_attr("align_corners", False))

    def is_expensive(self, inputs: list) -> bool:
        return _resize_is_expensive(inputs)

    def compute(self, ctx, inputs):
        images, size = inputs
        st = validate_resize(images, size, self.align_corners, False)
        if st.batch == 0:
            return (np.zeros((0, st.out_h, st.out_w, st.channels), _F32),)
        img = np.asarray(images).astype(_F32, copy=False)
        # TF 2.21's CalculateResizeScale aligns corners only for an input axis of more
        # than one pixel (a 1-pixel axis takes in / out).
        h_scale = resize_scale(st.in_h, st.out_h, self.align_corners and st.in_h > 1)
        w_scale = resize_scale(st.in_w, st.out_w, self.align_corners and st.in_w > 1)
        cols = area_column_taps(st.in_w, st.out_w, w_scale)
        rows = area_row_taps(st.in_h, st.out_h, h_scale)
        scale = _F32(1.0 / float(h_scale * w_scale))
        if resize_area_jit.ready():
            return (resize_area_jit.resize_area(
                np.ascontiguousarray(img), *_counted(cols), *_counted(rows), scale),)
        with np.errstate(invalid="ignore", over="ignore"):
            summed = _reduce(img, 2, cols)
            out = _reduce(summed, 1, rows)
            return ((out * scale).astype(_F32, copy=False),)


# -- sampling kernels (sampling_kernels.h), on float32 |x| ------------------------------------

_PI = _F32(3.14159265359)
_PI2 = _PI * _PI


@functools.cache
def _c_sinf():
    """The C library's sinf, or None where it cannot be loaded."""
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m"))
        fn = libm.sinf
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


def _sinf(x: np.ndarray) -> np.ndarray:
    """sinf as TF's Lanczos kernel calls it (the C library's). glibc's is not correctly
    rounded, but it is the double sine rounded to float except near a rounding tie: on
    400,000 random floats in [0, 16] (Lanczos's arguments lie in [0, 5 pi]) it differed
    only where the double lay over 0.44 ulp from that float. So: the double sine rounded,
    and the C library's own value where the double lies over 0.4 ulp from it (about a
    fifth of the values, one call each)."""
    exact = np.sin(x.astype(np.float64))
    out = exact.astype(_F32)
    c_sinf = _c_sinf()
    if c_sinf is None:
        return out
    near_tie = np.abs(exact - out) > 0.4 * np.spacing(np.abs(out)).astype(np.float64)
    for i in np.flatnonzero(near_tie):
        out.flat[i] = c_sinf(float(x.flat[i]))
    return out


def _lanczos(radius: float):
    r = _F32(radius)

    def fn(x):
        px = _PI * x
        s1, s2 = _sinf(px), _sinf(px / r)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = r * s1 * s2 / (_PI2 * x * x)
        value = np.where(x.astype(np.float64) <= 1e-3, _ONE, value)
        return np.where(x > r, _ZERO, value)

    return fn, r


def _gaussian(x):
    sigma = _F32(1.5) / _F32(3.0)
    arg = (-x * x).astype(np.float64) / (2.0 * float(sigma) * float(sigma))
    return np.where(x >= _F32(1.5), _ZERO, np.exp(arg).astype(_F32))


def _box(x):
    return np.where(x < _HALF, _ONE, np.where(x == _HALF, _HALF, _ZERO))


def _triangle(x):
    return np.where(x < _ONE, _ONE - x, _ZERO)


def _keys_cubic(x):
    far = ((_F32(-0.5) * x + _F32(2.5)) * x - _F32(4.0)) * x + _F32(2.0)
    near = ((_F32(1.5) * x - _F32(2.5)) * x) * x + _ONE
    return np.where(x >= _F32(2.0), _ZERO, np.where(x >= _ONE, far, near))


def _mitchell_cubic(x):
    far = (((_F32(-7.0) / _F32(18.0)) * x + _F32(2.0)) * x - _F32(10.0) / _F32(3.0)) * x \
        + _F32(16.0) / _F32(9.0)
    near = (((_F32(7.0) / _F32(6.0)) * x - _F32(2.0)) * x) * x + _F32(8.0) / _F32(9.0)
    return np.where(x >= _F32(2.0), _ZERO, np.where(x >= _ONE, far, near))


#: kernel_type (lower case) -> (function of float32 |x|, radius).
SAMPLING_KERNELS = {
    "lanczos1": _lanczos(1.0), "lanczos3": _lanczos(3.0), "lanczos5": _lanczos(5.0),
    "gaussian": (_gaussian, _F32(1.5)), "box": (_box, _ONE), "triangle": (_triangle, _ONE),
    "keyscubic": (_keys_cubic, _F32(2.0)), "mitchellcubic": (_mitchell_cubic, _F32(2.0)),
}


def sampling_kernel(kernel_type) -> tuple:
    """(function, radius) of `kernel_type`, any case (TF's SamplingKernelTypeFromString)."""
    name = attr_text(kernel_type)
    found = SAMPLING_KERNELS.get(name.lower())
    if found is None:
        raise _invalid(f"Unrecognized kernel type: {name}")
    return found


def scale_translate_spans(kernel: tuple, out_size: int, in_size: int, scale, translate,
                          antialias: bool):
    """TF's ComputeSpansCore for one axis: (starts [out] int64, weights [span, out] float32,
    span_size). Samples outside the image start at 0 with all weights 0."""
    fn, radius = kernel
    inv_scale = _F32(np.float64(1.0) / np.float64(scale))
    inv_translate = -inv_scale * _F32(translate)
    kernel_scale = max(inv_scale, _ONE) if antialias else _ONE
    reach = radius * kernel_scale
    # (an infinite reach, from a subnormal scale, spans the whole input)
    span_size = min(2 * int(np.ceil(reach)) + 1, in_size) if np.isfinite(reach) else in_size
    one_over_kernel_scale = _ONE / kernel_scale
    sample = (np.arange(out_size).astype(_F32) + _HALF) * inv_scale + inv_translate
    inside = ~((sample < 0) | (sample > _F32(in_size)))
    start = np.ceil(sample - reach - _HALF)
    end = np.floor(sample + reach - _HALF)
    start = np.clip(np.nan_to_num(start, nan=-1.0), 0, in_size - 1).astype(np.int64)
    end = np.clip(np.nan_to_num(end, nan=-1.0), 0, in_size - 1).astype(np.int64) + 1
    count = np.where(inside, end - start, 0)
    if count.max(initial=0) > span_size:
        raise errors.InternalError(
            None, None, f"Span is too large: {int(count.max())} vs {span_size}.")
    k = np.arange(span_size)[:, None]
    use = k < count
    pos = (start + k).astype(_F32) + _HALF - sample
    weights = np.where(use, fn(np.abs(pos * one_over_kernel_scale)), _ZERO).astype(_F32)
    total = np.zeros(out_size, _F32)
    for row in weights:
        total = total + row
    ok = np.abs(total) >= _F32(1000.0) * np.finfo(_F32).tiny
    inv_total = _ONE / np.where(ok, total, _ONE)
    weights = np.where(ok & inside, weights * inv_total, _ZERO).astype(_F32)
    return np.where(inside, start, 0), weights, span_size


def _gather_taps(starts, weights, span_size: int, in_size: int) -> _Taps:
    """TF's GatherRows/GatherColumns read `span_size` inputs from each start, those in the
    image, whatever their weight."""
    k = np.arange(span_size)[:, None]
    idx = starts + k
    return _Taps(np.minimum(idx, in_size - 1), weights, idx < in_size)


def _vector(t, what: str = "t") -> tuple:
    """TF's GetValues: the two floats of a 1-D, 2-element tensor, subnormals read as 0 (TF's
    CPU kernels run with denormals-are-zero: a scale of 1e-45 is not greater than 0)."""
    t = np.asarray(t)
    if t.ndim != 1:
        raise _invalid(f"{what} must be 1-dimensional{shape_str(t.shape)}")
    if t.size != 2:
        raise _invalid(f"{what} must have two elements{shape_str(t.shape)}")
    values = t.astype(_F32)
    values = np.where(np.abs(values) < np.finfo(_F32).tiny, _ZERO, values)
    return values[0], values[1]


def _scale_translation(scale, translation) -> tuple:
    """((row_scale, col_scale), (row_translation, col_translation)), checked in TF's order."""
    row_scale, col_scale = _vector(scale)
    if not (row_scale > 0 and col_scale > 0):
        raise _invalid("Scale must be greater than zero.")
    return (row_scale, col_scale), _vector(translation)


class _ScaleTranslateBase(OpKernel):
    expensive = None
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.antialias = bool(ctx.get_attr("antialias", True))
        self.kernel = sampling_kernel(ctx.get_attr("kernel_type", "lanczos3"))

    def spans(self, out_size: int, in_size: int, scale, translate) -> tuple:
        return scale_translate_spans(self.kernel, out_size, in_size, scale, translate,
                                     self.antialias)

    def taps(self, out_size: int, in_size: int, scale, translate) -> _Taps:
        return _gather_taps(*self.spans(out_size, in_size, scale, translate), in_size)


@register_kernel("ScaleAndTranslate", "CPU")
class ScaleAndTranslateOp(_ScaleTranslateBase):
    """NHWC images resampled to `size` by a sampling kernel at output = input * scale +
    translation (per axis), antialiased when downscaling; float32 output."""

    def is_expensive(self, inputs: list) -> bool:
        return _resize_is_expensive(inputs)

    def compute(self, ctx, inputs):
        images, size, scale, translation = (np.asarray(v) for v in inputs)
        if images.ndim != 4:
            raise _invalid(f"input must be 4-dimensional{shape_str(images.shape)}")
        if size.ndim != 1:
            raise _invalid(f"output_shape_t must be 1-dimensional{shape_str(size.shape)}")
        if size.size != 2:
            raise _invalid(f"output_shape_t must have two elements{shape_str(size.shape)}")
        out_h, out_w = int(size[0]), int(size[1])
        batch, in_h, in_w, channels = images.shape
        if in_h > _INT32_MAX or in_w > _INT32_MAX:
            raise _invalid("input sizes must be between 0 and max int32")
        if out_h <= 0 or out_w <= 0:
            raise _invalid("output dimensions must be positive")
        if channels <= 0:
            raise _invalid("image must have at least one channel")
        if in_h <= 0 or in_w <= 0:
            raise _invalid("input image must be of non-zero size")
        (row_scale, col_scale), (row_shift, col_shift) = _scale_translation(scale,
                                                                             translation)
        if batch == 0:
            return (np.zeros((0, out_h, out_w, channels), _F32),)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            cols = self.taps(out_w, in_w, col_scale, col_shift)
            rows = self.taps(out_h, in_h, row_scale, row_shift)
            img = images.astype(_F32, copy=False)
            inter = _reduce(img, 1, rows)
            return (_reduce(inter, 2, cols),)


def grad_taps(starts, weights, span_size: int, fwd_out: int, fwd_in: int) -> _Taps:
    """TF's ComputeGradSpansCore: the forward spans transposed. Input index i reads the
    forward outputs from the first one that weighed it (0 if none), over the longest such
    range of any input; its weights are the forward nonzero weights, 0 elsewhere."""
    k = np.arange(span_size)[:, None]
    src = starts + k  # [span, fwd_out]: the forward input each tap read
    outs = np.broadcast_to(np.arange(fwd_out), src.shape)
    hit = (weights != 0) & (src < fwd_in)
    src, outs, w = src[hit], outs[hit], weights[hit]
    first = np.full(fwd_in, fwd_out, np.int64)
    last = np.full(fwd_in, -1, np.int64)
    np.minimum.at(first, src, outs)
    np.maximum.at(last, src, outs)
    seen = last >= 0
    grad_span = int((last - first + 1)[seen].max(initial=0))
    first = np.where(seen, first, 0)
    grad_w = np.zeros((grad_span, fwd_in), _F32)
    grad_w[outs - first[src], src] = w
    return _gather_taps(first, grad_w, grad_span, fwd_out)


@register_kernel("ScaleAndTranslateGrad", "CPU")
class ScaleAndTranslateGradOp(_ScaleTranslateBase):
    """The gradient of ScaleAndTranslate with respect to its images: `grads` (of the
    resized images' shape) spread back over original_image's height and width by the
    forward weights, rows first then columns; float32."""

    def is_expensive(self, inputs: list) -> bool:
        grads, original = np.shape(inputs[0]), np.shape(inputs[1])
        if len(grads) != 4 or len(original) != 4:
            return False
        out = grads[0] * grads[3] * original[1] * original[2]
        return max(out, int(np.prod(grads))) > POOL_ABOVE

    def compute(self, ctx, inputs):
        grads, original, scale, translation = (np.asarray(v) for v in inputs)
        if grads.ndim != 4:
            raise _invalid(f"input_grad must be 4-dimensional{shape_str(grads.shape)}")
        if original.ndim != 4:
            raise _invalid(f"original_image must be 4-dimensional{shape_str(original.shape)}")
        batch, out_h, out_w, channels = grads.shape
        in_h, in_w = original.shape[1:3]
        if in_h > _INT32_MAX or in_w > _INT32_MAX:
            raise _invalid("original sizes must be between 0 and max int32")
        (row_scale, col_scale), (row_shift, col_shift) = _scale_translation(scale,
                                                                             translation)
        if batch * in_h * in_w * channels == 0 or out_h * out_w == 0:
            return (np.zeros((batch, in_h, in_w, channels), _F32),)
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            rows = grad_taps(*self.spans(out_h, in_h, row_scale, row_shift), out_h, in_h)
            cols = grad_taps(*self.spans(out_w, in_w, col_scale, col_shift), out_w, in_w)
            inter = _reduce(grads, 1, rows)
            return (_reduce(inter, 2, cols),)
