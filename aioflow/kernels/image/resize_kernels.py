"""CPU kernels (NumPy) for image resizing: ResizeBilinear, ResizeNearestNeighbor,
ResizeBicubic and CropAndResize, to TF 2.21's values.

Every kernel works as TF's does, in the same float32 arithmetic, but vectorised: the
source coordinate, indices and weights of each output row and column are computed once per
axis (as TF's `compute_interpolation_weights` / `GetWeightsAndIndices` do, in float32),
then whole rows and columns are gathered and blended with NumPy, in TF's order of
operations, so results are bit for bit TF's:

- scale = (in - 1) / (out - 1) with align_corners (and out > 1), else in / out (float32).
- the source coordinate of output i: i * scale (legacy), (i + 0.5) * scale - 0.5
  (half_pixel_centers), and for nearest neighbour with half_pixel_centers (i + 0.5) *
  scale; nearest rounds half away from zero with align_corners (roundf), else floors.
- bilinear: top = tl + (tr - tl) * x_lerp, bottom likewise, out = top + (bottom - top) *
  y_lerp, in float32 (inputs of any type converted to float first).
- bicubic: TF's 1025-entry table of cubic coefficients (Keys a = -0.5 with
  half_pixel_centers, -0.75 without), the offset into it lrintf(delta * 1024); with
  half_pixel_centers, taps outside the image get weight 0 and the others are
  renormalised (TF's "keys cubic"), without it they repeat the edge pixel. Columns of
  each output row are interpolated first, then the four columns of each output pixel
  (float32 throughout, double images too).

Each kernel checks its inputs in TF's order with TF's error classes and texts (the
executor adds the node's name). A kernel runs inline for small outputs and goes to the
thread pool when its output has more than POOL_ABOVE elements.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str

#: Kernels whose output has more elements than this go to the thread pool (a resize does
#: ~10 NumPy passes over its output: 32k float32 elements take about a pool round trip).
POOL_ABOVE = 1 << 15

_F32 = np.float32
_HALF = _F32(0.5)
_INT32_MAX = 2**31 - 1
_INT64_MAX_F = float(np.float32(2**63 - 1))
_TABLE_SIZE = 1024
_tables: dict[bool, np.ndarray] = {}


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _flag(ctx, name: str) -> bool:
    return bool(ctx.get_attr(name, False))


def _str(value) -> str:
    return attr_text(value)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """C's roundf, exactly (floor(x + 0.5) is not: 0.49999997f + 0.5f rounds to 1)."""
    t = np.trunc(x)
    return t + np.where(np.abs(x - t) >= _HALF, np.sign(x), 0).astype(x.dtype)


def resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """TF's CalculateResizeScale, in float32."""
    if align_corners and out_size > 1:
        return _F32(in_size - 1) / _F32(out_size - 1)
    return _F32(in_size) / _F32(out_size)


def _coords(out_size: int, scale: np.float32, half_pixel: bool, nn: bool = False):
    """The float32 source coordinate of each output index (TF's scalers)."""
    i = np.arange(out_size, dtype=_F32)
    if not half_pixel:
        return i * scale
    if nn:
        return (i + _HALF) * scale
    return (i + _HALF) * scale - _HALF


class _ResizeState:
    """TF's ImageResizerState: the checked sizes and scales of one call."""

    __slots__ = ("batch", "in_h", "in_w", "channels", "out_h", "out_w", "h_scale",
                 "w_scale")


def validate_resize(images, size, align_corners: bool, half_pixel: bool) -> _ResizeState:
    """TF's ImageResizerState::ValidateAndCalculateOutputSize, in its order and words."""
    if half_pixel and align_corners:
        raise _invalid("If half_pixel_centers is True, align_corners must be False.")
    shape = np.shape(images)
    if len(shape) != 4:
        raise _invalid(f"input must be 4-dimensional{shape_str(shape)}")
    st = _ResizeState()
    st.batch, in_h, in_w, st.channels = shape
    if st.channels <= 0:
        raise _invalid("image must have at least one channel")
    if in_h <= 0 or in_w <= 0:
        raise _invalid("input image must be of non-zero size")
    if in_h >= _INT32_MAX or in_w >= _INT32_MAX:
        raise _invalid("input sizes must be between 0 and max int32")
    st.in_h, st.in_w = in_h, in_w
    size_shape = np.shape(size)
    if len(size_shape) != 1:
        raise _invalid(f"shape_t must be 1-dimensional{shape_str(size_shape)}")
    if size_shape[0] != 2:
        raise _invalid(f"shape_t must have two elements{shape_str(size_shape)}")
    st.out_h, st.out_w = int(size[0]), int(size[1])
    if st.out_h <= 0 or st.out_w <= 0:
        raise _invalid("output dimensions must be positive")
    st.h_scale = resize_scale(in_h, st.out_h, align_corners)
    st.w_scale = resize_scale(in_w, st.out_w, align_corners)
    if float(np.ceil(_F32(st.out_h - 1) * st.h_scale)) > _INT64_MAX_F:
        raise _invalid("input image height scale would cause an overflow")
    if float(np.ceil(_F32(st.out_w - 1) * st.w_scale)) > _INT64_MAX_F:
        raise _invalid("input image width scale would cause an overflow")
    return st


def _resize_output_elements(inputs) -> int:
    images, size = inputs[0], inputs[1]
    shape = np.shape(images)
    if len(shape) != 4 or np.shape(size) != (2,):
        return 0
    h, w = int(size[0]), int(size[1])
    if h <= 0 or w <= 0:
        return 0
    return shape[0] * shape[3] * h * w


class _ResizeKernel(OpKernel):
    """Common attrs, checks and inline-or-pool decision of the resize kernels."""

    expensive = None
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.align_corners = _flag(ctx, "align_corners")
        self.half_pixel = _flag(ctx, "half_pixel_centers")

    def is_expensive(self, inputs: list) -> bool:
        return _resize_output_elements(inputs) > POOL_ABOVE

    def compute(self, ctx, inputs):
        images, size = inputs
        st = validate_resize(images, size, self.align_corners, self.half_pixel)
        with np.errstate(invalid="ignore", over="ignore"):  # inf and NaN pixels, as TF
            return (self.resize(np.asarray(images), st),)

    def resize(self, images: np.ndarray, st: _ResizeState) -> np.ndarray:
        raise NotImplementedError


# -- bilinear ---------------------------------------------------------------------------------

def bilinear_weights(in_size: int, out_size: int, scale, half_pixel: bool):
    """(lower, upper, lerp) per output index: TF's compute_interpolation_weights."""
    x = _coords(out_size, scale, half_pixel)
    x_floor = np.floor(x)
    lower = np.maximum(x_floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(x), in_size - 1).astype(np.int64)
    return lower, upper, x - x_floor


def bilinear_resize(images: np.ndarray, st: _ResizeState, half_pixel: bool) -> np.ndarray:
    """ResizeBilinear's float32 result for checked sizes."""
    if st.out_h == st.in_h and st.out_w == st.in_w:
        return images.astype(_F32)  # TF's no-op resize: a cast
    y0, y1, y_lerp = bilinear_weights(st.in_h, st.out_h, st.h_scale, half_pixel)
    x0, x1, x_lerp = bilinear_weights(st.in_w, st.out_w, st.w_scale, half_pixel)
    img = images.astype(_F32, copy=False)
    top_rows = img[:, y0]
    bottom_rows = img[:, y1]
    x_lerp = x_lerp[:, None]
    top_left = top_rows[:, :, x0]
    top = top_left + (top_rows[:, :, x1] - top_left) * x_lerp
    bottom_left = bottom_rows[:, :, x0]
    bottom = bottom_left + (bottom_rows[:, :, x1] - bottom_left) * x_lerp
    return top + (bottom - top) * y_lerp[:, None, None]


@register_kernel("ResizeBilinear", "CPU")
class ResizeBilinearOp(_ResizeKernel):
    """Bilinear resize of NHWC images to `size`; float32 output."""

    def resize(self, images, st):
        return bilinear_resize(images, st, self.half_pixel)


# -- nearest neighbour ------------------------------------------------------------------------

def nearest_indices(in_size: int, out_size: int, scale, align_corners: bool,
                    half_pixel: bool) -> np.ndarray:
    """The source index of each output index (TF's ResizeNearestNeighbor)."""
    x = _coords(out_size, scale, half_pixel, nn=True)
    x = _round_half_away(x) if align_corners else np.floor(x)
    idx = np.minimum(x.astype(np.int64), in_size - 1)
    if half_pixel:
        idx = np.maximum(idx, 0)
    return idx


@register_kernel("ResizeNearestNeighbor", "CPU")
class ResizeNearestNeighborOp(_ResizeKernel):
    """Nearest-neighbour resize of NHWC images to `size`; output of the input's type."""

    def resize(self, images, st):
        if st.out_h == st.in_h and st.out_w == st.in_w:
            return images
        ys = nearest_indices(st.in_h, st.out_h, st.h_scale, self.align_corners,
                             self.half_pixel)
        xs = nearest_indices(st.in_w, st.out_w, st.w_scale, self.align_corners,
                             self.half_pixel)
        return images[:, ys[:, None], xs[None, :]]


# -- bicubic ----------------------------------------------------------------------------------

def cubic_table(keys: bool) -> np.ndarray:
    """TF's coefficient table, shape [1025, 2] float32: [i, 0] is the weight of a tap at
    distance i/1024, [i, 1] at distance 1 + i/1024 (computed in double, stored float)."""
    table = _tables.get(keys)
    if table is None:
        a = -0.5 if keys else -0.75
        x = (np.arange(_TABLE_SIZE + 1, dtype=np.float64) / _TABLE_SIZE).astype(_F32)
        xd = x.astype(np.float64)
        near = ((a + 2) * xd - (a + 3)) * xd * xd + 1
        xd = (x + _F32(1.0)).astype(np.float64)
        far = ((a * xd - 5 * a) * xd + 8 * a) * xd - 4 * a
        table = np.stack([near, far], axis=1).astype(_F32)
        table.flags.writeable = False
        _tables[keys] = table
    return table


def bicubic_weights(in_size: int, out_size: int, scale, half_pixel: bool):
    """(indices [4, out], weights [4, out]) per output index: TF's GetWeightsAndIndices."""
    x = _coords(out_size, scale, half_pixel)
    base = np.floor(x)
    delta = x - base
    base = base.astype(np.int64)
    offset = np.rint(delta * _F32(_TABLE_SIZE)).astype(np.int64)
    table = cubic_table(half_pixel)
    weights = np.stack([table[offset, 1], table[offset, 0],
                        table[_TABLE_SIZE - offset, 0], table[_TABLE_SIZE - offset, 1]])
    wanted = base[None, :] + np.arange(-1, 3)[:, None]
    indices = np.clip(wanted, 0, in_size - 1)
    if half_pixel:
        weights = np.where(indices == wanted, weights, _F32(0))
        total = ((weights[0] + weights[1]) + weights[2]) + weights[3]
        ok = np.abs(total) >= _F32(1000.0) * np.finfo(_F32).tiny
        inv = _F32(1.0) / np.where(ok, total, _F32(1.0))
        weights = np.where(ok, weights * inv, weights)
    return indices, weights


def _blend4(parts, weights, axis_shape) -> np.ndarray:
    """((w0*v0 + w1*v1) + w2*v2) + w3*v3, weights broadcast along `axis_shape`."""
    out = parts[0] * weights[0].reshape(axis_shape)
    for k in range(1, 4):
        out = out + parts[k] * weights[k].reshape(axis_shape)
    return out


@register_kernel("ResizeBicubic", "CPU")
class ResizeBicubicOp(_ResizeKernel):
    """Bicubic resize of NHWC images to `size` with TF's coefficient table; float32."""

    def resize(self, images, st):
        # TF measured: with align_corners an axis of one pixel takes the in / out scale
        # (its taps all clamp to that pixel, but the weights, hence the rounding, differ).
        h_scale = resize_scale(1, st.out_h, False) if st.in_h == 1 else st.h_scale
        w_scale = resize_scale(1, st.out_w, False) if st.in_w == 1 else st.w_scale
        yi, yw = bicubic_weights(st.in_h, st.out_h, h_scale, self.half_pixel)
        xi, xw = bicubic_weights(st.in_w, st.out_w, w_scale, self.half_pixel)
        img = images.astype(_F32, copy=False)
        rows = _blend4([img[:, yi[k]] for k in range(4)], yw, (1, -1, 1, 1))
        return _blend4([rows[:, :, xi[k]] for k in range(4)], xw, (1, 1, -1, 1))


# -- CropAndResize ----------------------------------------------------------------------------

def _crop_coords(lo, hi, crop: int, size: int):
    """[num_boxes, crop] float32 source coordinates of each box's crop along one axis."""
    if crop > 1:
        scale = (hi - lo) * _F32(size - 1) / _F32(crop - 1)
        steps = np.arange(crop, dtype=_F32)
        return lo[:, None] * _F32(size - 1) + steps[None, :] * scale[:, None]
    # 0.5 * (y1 + y2) * (size - 1) is computed in double in TF.
    centre = (0.5 * (lo + hi).astype(np.float64) * (size - 1)).astype(_F32)
    return centre[:, None]


@register_kernel("CropAndResize", "CPU")
class CropAndResizeOp(OpKernel):
    """Crops of `image` at `boxes` (normalised [y1, x1, y2, x2]) resized to crop_size,
    bilinear or nearest; points outside the image take extrapolation_value."""

    expensive = None
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.method = _str(ctx.get_attr("method", b"bilinear"))
        if self.method not in ("bilinear", "nearest"):
            raise _invalid(f"method must be 'bilinear' or 'nearest'{self.method}")
        self.extrapolation_value = _F32(ctx.get_attr("extrapolation_value", 0.0))

    def is_expensive(self, inputs: list) -> bool:
        image, boxes, _, crop_size = inputs
        if np.ndim(image) != 4 or np.ndim(boxes) != 2 or np.shape(crop_size) != (2,):
            return False
        h, w = int(crop_size[0]), int(crop_size[1])
        return h > 0 and w > 0 and boxes.shape[0] * h * w * image.shape[3] > POOL_ABOVE

    def compute(self, ctx, inputs):
        image, boxes, box_ind, crop_size = (np.asarray(v) for v in inputs)
        if image.ndim != 4:
            raise _invalid(f"input image must be 4-D{shape_str(image.shape)}")
        batch, height, width, depth = image.shape
        if height <= 0 or width <= 0:
            raise _invalid("image dimensions must be positive")
        if boxes.ndim != 2:
            raise _invalid(f"boxes must be 2-D, got: {shape_str(boxes.shape)}")
        if box_ind.ndim != 1:
            raise _invalid(f"box_indices must be rank 1 but is shape "
                           f"{shape_str(box_ind.shape)}")
        if boxes.size == 0 and box_ind.size == 0:
            num_boxes = 0
        else:
            num_boxes = boxes.shape[0]
            if boxes.shape[1] != 4:
                raise _invalid("boxes must have 4 columns")
            if box_ind.shape[0] != num_boxes:
                raise _invalid("box_index has incompatible shape")
        if crop_size.ndim != 1:
            raise _invalid(f"crop_size must be 1-D{shape_str(crop_size.shape)}")
        if crop_size.shape[0] != 2:
            raise _invalid(f"crop_size must have two elements{shape_str(crop_size.shape)}")
        crop_h, crop_w = int(crop_size[0]), int(crop_size[1])
        if crop_h <= 0 or crop_w <= 0:
            raise _invalid("crop dimensions must be positive")
        if num_boxes and ((box_ind < 0) | (box_ind >= batch)).any():
            raise errors.OutOfRangeError(
                None, None, "box_index has values outside [0, batch_size)")
        if num_boxes == 0 or depth == 0:
            return (np.zeros((num_boxes, crop_h, crop_w, depth), _F32),)
        boxes = boxes.astype(_F32, copy=False)
        in_y = _crop_coords(boxes[:, 0], boxes[:, 2], crop_h, height)
        in_x = _crop_coords(boxes[:, 1], boxes[:, 3], crop_w, width)
        in_y = np.broadcast_to(in_y, (num_boxes, crop_h))
        in_x = np.broadcast_to(in_x, (num_boxes, crop_w))
        with np.errstate(invalid="ignore"):
            ok_y = (in_y >= 0) & (in_y <= _F32(height - 1))
            ok_x = (in_x >= 0) & (in_x <= _F32(width - 1))
        in_y = np.where(ok_y, in_y, _F32(0))
        in_x = np.where(ok_x, in_x, _F32(0))
        b = box_ind.astype(np.intp)[:, None, None]
        if self.method == "bilinear":
            top = np.floor(in_y)
            left = np.floor(in_x)
            y_lerp = (in_y - top)[:, :, None, None]
            x_lerp = (in_x - left)[:, None, :, None]
            top, bottom = top.astype(np.intp), np.ceil(in_y).astype(np.intp)
            left, right = left.astype(np.intp), np.ceil(in_x).astype(np.intp)
            ty, by = top[:, :, None], bottom[:, :, None]
            lx, rx = left[:, None, :], right[:, None, :]

            def at(ys, xs):
                return image[b, ys, xs].astype(_F32, copy=False)

            tl = at(ty, lx)
            top_v = tl + (at(ty, rx) - tl) * x_lerp
            bl = at(by, lx)
            bottom_v = bl + (at(by, rx) - bl) * x_lerp
            crops = top_v + (bottom_v - top_v) * y_lerp
        else:
            ys = _round_half_away(in_y).astype(np.intp)[:, :, None]
            xs = _round_half_away(in_x).astype(np.intp)[:, None, :]
            crops = image[b, ys, xs].astype(_F32)
        ok = (ok_y[:, :, None] & ok_x[:, None, :])[..., None]
        return (np.where(ok, crops, self.extrapolation_value),)
