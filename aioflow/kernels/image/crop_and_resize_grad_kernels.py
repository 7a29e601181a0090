"""CPU kernels of CropAndResize's gradients (TF's crop_and_resize_op.cc): the crop's
gradient scattered back onto the image (bilinear weights, or the nearest pixel) and the
boxes' gradient from the image's slopes; sampling points outside the image (extrapolated
in the forward) get no gradient."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _method(ctx) -> str:
    return attr_text(ctx.get_attr("method", b"bilinear"))


def _axis_points(lo, hi, size: int, crop: int, ratio_first: bool = False):
    """(sample coordinates in pixels, inside-image mask) along one axis, in float32 with
    TF's kernels' order of operations: a sample on a pixel boundary falls on the side
    their rounding gives (the image gradient scales (hi - lo) * (size - 1) / (crop - 1),
    the boxes gradient (hi - lo) * ((size - 1) / (crop - 1)))."""
    f = np.float32
    lo, hi = f(lo), f(hi)
    if crop > 1:
        if ratio_first:
            scale = f((hi - lo) * f(f(size - 1) / f(crop - 1)))
        else:
            scale = f(f((hi - lo) * f(size - 1)) / f(crop - 1))
        coords = (lo * f(size - 1) + np.arange(crop, dtype=f) * scale).astype(f)
    else:
        coords = np.full(crop, f(f(0.5) * (lo + hi) * f(size - 1)), dtype=f)
    inside = (coords >= 0) & (coords <= size - 1)
    return coords, inside


def _check(grads, boxes, box_ind, batch):
    if grads.ndim != 4:
        raise _invalid("grads image must be 4-D")
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise _invalid("boxes must be 2-D [num_boxes, 4]")
    if box_ind.shape != (boxes.shape[0],) or grads.shape[0] != boxes.shape[0]:
        raise _invalid("boxes and box_ind have incompatible shapes")
    bad = (box_ind < 0) | (box_ind >= batch)
    if np.any(bad):
        raise _invalid(f"box_ind has values outside [0, {batch})")


@register_kernel("CropAndResizeGradImage", "CPU")
class CropAndResizeGradImageOp(OpKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.method = _method(ctx)
        self.dtype = ctx.get_attr("T")

    def compute(self, ctx, inputs):
        grads, boxes, box_ind, image_size = (np.asarray(v) for v in inputs)
        if image_size.shape != (4,):
            raise _invalid(f"image_size must be 1-D with 4 elements, got {image_size.shape}")
        batch, height, width, depth = (int(v) for v in image_size)
        if batch <= 0 or height <= 0 or width <= 0:
            raise _invalid("image dimensions must be positive")
        if grads.ndim == 4 and grads.shape[3] != depth:
            raise _invalid("image_size and grads are incompatible")
        _check(grads, boxes, box_ind, batch)
        out = np.zeros((batch, height, width, depth), np.float64)
        crop_h, crop_w = grads.shape[1], grads.shape[2]
        for b in range(boxes.shape[0]):
            y1, x1, y2, x2 = (np.float32(v) for v in boxes[b])
            img = out[int(box_ind[b])]
            ys, yin = _axis_points(y1, y2, height, crop_h)
            xs, xin = _axis_points(x1, x2, width, crop_w)
            g = grads[b].astype(np.float64)
            for iy in np.nonzero(yin)[0]:
                in_y = ys[iy]
                if self.method == "nearest":  # roundf: half away from zero (coords >= 0)
                    cy = int(np.floor(in_y + 0.5))
                    for ix in np.nonzero(xin)[0]:
                        img[cy, int(np.floor(xs[ix] + 0.5))] += g[iy, ix]
                    continue
                top, bottom = int(np.floor(in_y)), int(np.ceil(in_y))
                y_lerp = in_y - top
                for ix in np.nonzero(xin)[0]:
                    in_x = xs[ix]
                    left, right = int(np.floor(in_x)), int(np.ceil(in_x))
                    x_lerp = in_x - left
                    gv = g[iy, ix]
                    img[top, left] += (1 - x_lerp) * (1 - y_lerp) * gv
                    img[top, right] += x_lerp * (1 - y_lerp) * gv
                    img[bottom, left] += (1 - x_lerp) * y_lerp * gv
                    img[bottom, right] += x_lerp * y_lerp * gv
        return (out.astype(self.dtype.as_numpy_dtype),)


@register_kernel("CropAndResizeGradBoxes", "CPU")
class CropAndResizeGradBoxesOp(OpKernel):
    def compute(self, ctx, inputs):
        grads, image, boxes, box_ind = (np.asarray(v) for v in inputs)
        if image.ndim != 4:
            raise _invalid("input image must be 4-D")
        batch, height, width, depth = image.shape
        if grads.ndim == 4 and grads.shape[3] != depth:
            raise _invalid("image, grads depth differ")
        _check(grads, boxes, box_ind, batch)
        out = np.zeros((boxes.shape[0], 4), np.float64)
        crop_h, crop_w = grads.shape[1], grads.shape[2]
        for b in range(boxes.shape[0]):
            y1, x1, y2, x2 = (np.float32(v) for v in boxes[b])
            img = image[int(box_ind[b])].astype(np.float64)
            ys, yin = _axis_points(y1, y2, height, crop_h, ratio_first=True)
            xs, xin = _axis_points(x1, x2, width, crop_w, ratio_first=True)
            h_ratio = (height - 1) / (crop_h - 1) if crop_h > 1 else 0.0
            w_ratio = (width - 1) / (crop_w - 1) if crop_w > 1 else 0.0
            dy1 = dx1 = dy2 = dx2 = 0.0
            for iy in np.nonzero(yin)[0]:
                in_y = ys[iy]
                top, bottom = int(np.floor(in_y)), int(np.ceil(in_y))
                y_lerp = in_y - top
                for ix in np.nonzero(xin)[0]:
                    in_x = xs[ix]
                    left, right = int(np.floor(in_x)), int(np.ceil(in_x))
                    x_lerp = in_x - left
                    tl, tr = img[top, left], img[top, right]
                    bl, br = img[bottom, left], img[bottom, right]
                    g = grads[b, iy, ix].astype(np.float64)
                    ygrad = float(np.sum(g * ((1 - x_lerp) * (bl - tl) + x_lerp * (br - tr))))
                    xgrad = float(np.sum(g * ((1 - y_lerp) * (tr - tl) + y_lerp * (br - bl))))
                    if crop_h > 1:
                        dy1 += ygrad * (height - 1 - iy * h_ratio)
                        dy2 += ygrad * (iy * h_ratio)
                    else:
                        dy1 += ygrad * 0.5 * (height - 1)
                        dy2 += ygrad * 0.5 * (height - 1)
                    if crop_w > 1:
                        dx1 += xgrad * (width - 1 - ix * w_ratio)
                        dx2 += xgrad * (ix * w_ratio)
                    else:
                        dx1 += xgrad * 0.5 * (width - 1)
                        dx2 += xgrad * 0.5 * (width - 1)
            out[b] = (dy1, dx1, dy2, dx2)
        return (out.astype(np.float32),)
