"""CPU kernels (NumPy) for non-max suppression: NonMaxSuppressionV3, V4
(pad_to_max_output_size, valid_outputs) and V5 (soft_nms_sigma, selected_scores), to
TF 2.21's values, order and ties.

TF's algorithm (DoNonMaxSuppressionOp): the boxes whose score is > score_threshold are
candidates, taken best score first and, among equal scores, lower box index first. A
candidate is compared (IoU, in float32, corners in either order, IoU 0 when either box
has no area) with the boxes selected so far; in hard NMS it is dropped when an IoU is
> iou_threshold (compared in the boxes' type), else selected. In soft NMS (sigma > 0)
its score is multiplied by exp(-0.5 / sigma * iou^2) for each selected box (in the
boxes' type, the score itself in float32, in TF's order: the most recently selected
box first); when the score has changed it goes back into the queue (if still above
score_threshold) and later meets only the boxes selected since.

Hard NMS is vectorised: when a box is selected, the IoU of it with every later candidate
still alive is computed at once and those above the threshold are struck out (the same
decisions: IoU is symmetric). Soft NMS and boxes with NaN (where TF's arithmetic re-queues
candidates) follow TF's priority queue literally, each comparison step vectorised over the
selected boxes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import heapq

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str

#: NMS calls with more boxes than this go to the thread pool.
POOL_ABOVE = 1024
_F32 = np.float32
_EXPF = None  # libm's expf through ctypes (False: none), loaded at first use


def _libm_expf():
    global _EXPF
    if _EXPF is None:
        try:
            lib = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
            fn = lib.expf
            fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
            _EXPF = fn
        except (OSError, AttributeError):  # no C math library: correctly rounded instead
            _EXPF = False
    return _EXPF


def expf(x: np.ndarray) -> np.ndarray:
    """exp of float32 values as C's expf (TF's weight), vectorised: exp in double,
    rounded to float32, which is expf's result except where the exact value lies within
    1/100 ULP of a rounding midpoint; those few are asked of the C library itself."""
    x = np.asarray(x, _F32)
    wide = np.exp(x.astype(np.float64))
    out = wide.astype(_F32)
    with np.errstate(invalid="ignore"):
        frac = (wide - out.astype(np.float64)) / np.spacing(out).astype(np.float64)
        near = np.abs(np.abs(frac) - 0.5) < 0.01
    if near.any() and _libm_expf():
        fn = _libm_expf()
        out = out.copy()
        for i in np.flatnonzero(near.ravel()):
            out.flat[i] = fn(float(x.flat[i]))
    return out


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _scalar(value, what: str, rank_note: bool) -> None:
    shape = np.shape(value)
    if len(shape) != 0:
        note = f" (Shape must be rank 0 but is rank {len(shape)})" if rank_note else ""
        raise _invalid(f"{what} must be 0-D, got shape {shape_str(shape)}{note}")


def check_boxes_and_scores(boxes, scores) -> int:
    """TF's ParseAndCheckBoxSizes and CheckScoreSizes; the number of boxes."""
    bshape = np.shape(boxes)
    if len(bshape) != 2:
        raise _invalid(f"boxes must be 2-D{shape_str(bshape)} (Shape must be rank 2 but is "
                       f"rank {len(bshape)})")
    num_boxes = bshape[0]
    if bshape[1] != 4:
        raise _invalid(f"boxes must have 4 columns (Dimension must be 4 but is {bshape[1]})")
    sshape = np.shape(scores)
    if len(sshape) != 1:
        raise _invalid(f"scores must be 1-D{shape_str(sshape)} (Shape must be rank 1 but is "
                       f"rank {len(sshape)})")
    if sshape[0] != num_boxes:
        raise _invalid(f"scores has incompatible shape (Dimensions must be equal, but are "
                       f"{num_boxes} and {sshape[0]})")
    return num_boxes


def _corners(boxes: np.ndarray):
    """(ymin, xmin, ymax, xmax, area) in float32, as TF's IOU normalises each box
    (Eigen's mini/maxi: b < a ? b : a)."""
    b = boxes.astype(_F32, copy=False)
    y1, x1, y2, x2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    ymin = np.where(y2 < y1, y2, y1)
    xmin = np.where(x2 < x1, x2, x1)
    ymax = np.where(y1 < y2, y2, y1)
    xmax = np.where(x1 < x2, x2, x1)
    return ymin, xmin, ymax, xmax, (ymax - ymin) * (xmax - xmin)


def iou_with(c, i: int, js) -> np.ndarray:
    """IoU (float32) of box i with boxes js (TF's IOU(boxes, i, j)); `c` from _corners."""
    ymin, xmin, ymax, xmax, area = c
    ai, aj = area[i], area[js]
    iy0 = np.maximum(ymin[i], ymin[js])
    ix0 = np.maximum(xmin[i], xmin[js])
    iy1 = np.minimum(ymax[i], ymax[js])
    ix1 = np.minimum(xmax[i], xmax[js])
    inter = np.maximum(iy1 - iy0, _F32(0)) * np.maximum(ix1 - ix0, _F32(0))
    with np.errstate(invalid="ignore", divide="ignore"):
        iou = inter / (ai + aj - inter)
    return np.where((ai <= 0) | (aj <= 0), _F32(0), iou)


def _candidates(scores: np.ndarray, score_threshold) -> np.ndarray:
    """Box indices with score > score_threshold, best first, lower index first on ties."""
    idx = np.flatnonzero(scores > score_threshold)
    return idx[np.argsort(-scores[idx], kind="stable")]


def _hard_nms(c, order, max_out: int, iou_threshold, dtype) -> list[int]:
    """Greedy hard NMS over candidates `order`: the selected box indices. The candidates
    still alive shrink as boxes are struck out, so each selection costs one vectorised
    IoU against the survivors only."""
    alive = np.asarray(order)
    selected: list[int] = []
    while len(alive) and len(selected) < max_out:
        box = int(alive[0])
        selected.append(box)
        alive = alive[1:]
        if not len(alive) or len(selected) == max_out:
            break
        iou = iou_with(c, box, alive)
        if dtype != _F32:
            iou = iou.astype(dtype)
        alive = alive[~(iou > iou_threshold)]
    return selected


def _queued_nms(c, scores, order, max_out: int, iou_threshold, score_threshold,
                sigma, dtype):
    """TF's DoNonMaxSuppressionOp literally (soft NMS; boxes with NaN): the selected box
    indices and their (float32) scores."""
    soft = sigma > 0
    scale = (dtype.type(-0.5) / sigma) if soft else dtype.type(0)
    heap = [(-float(scores[i]), int(i), 0) for i in order]
    heapq.heapify(heap)
    selected: list[int] = []
    selected_scores: list[float] = []
    score_thr = dtype.type(score_threshold)
    while len(selected) < max_out and heap:
        neg, box, begin = heapq.heappop(heap)
        original = dtype.type(-neg)
        score = original
        hard = False
        if begin < len(selected):
            js = np.asarray(selected[begin:][::-1])
            sim = iou_with(c, box, js).astype(dtype)
            with np.errstate(invalid="ignore", over="ignore"):
                weight = expf(scale * sim * sim).astype(dtype)
                keep = sim <= iou_threshold
            if not soft:
                weight = np.where(keep, weight, dtype.type(0))
            with np.errstate(invalid="ignore", over="ignore"):
                running = np.multiply.accumulate(
                    np.concatenate([[original], weight]).astype(dtype))[1:]
            stop = len(js)
            if not soft:
                over = np.flatnonzero(sim > iou_threshold)
                if len(over):
                    stop = int(over[0]) + 1
                    hard = True
            low = np.flatnonzero(running[:stop] <= score_thr)
            if len(low):
                if hard and int(low[0]) >= stop - 1:
                    pass  # the hard suppression is decided first at that step
                else:
                    hard = False
                    stop = int(low[0]) + 1
            score = running[stop - 1]
        begin = len(selected)
        if hard:
            continue
        if score == original:
            selected.append(box)
            selected_scores.append(float(score))
        elif score > score_thr:
            heapq.heappush(heap, (-float(score), box, begin))
    return selected, selected_scores


def non_max_suppression(boxes, scores, max_out: int, iou_threshold, score_threshold,
                        sigma, dtype):
    """(selected indices, selected scores as float32) for checked inputs."""
    dtype = np.dtype(dtype)
    boxes = np.asarray(boxes)
    scores32 = np.asarray(scores).astype(_F32, copy=False)
    with np.errstate(invalid="ignore"):
        order = _candidates(scores32, _F32(score_threshold))
    if max_out == 0 or len(order) == 0:
        return [], []
    c = _corners(boxes)
    if sigma > 0 or np.isnan(boxes).any():
        return _queued_nms(c, scores32, order, max_out, iou_threshold, score_threshold,
                           sigma, dtype)
    selected = _hard_nms(c, order, max_out, iou_threshold, dtype)
    return selected, [float(scores32[i]) for i in selected]


class _NmsKernel(OpKernel):
    """Checks in TF's order, then non_max_suppression."""

    expensive = None
    compilable = True
    version = 3

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("T", None)
        self.np_dtype = np.dtype(self.dtype.as_numpy_dtype) if self.dtype else np.dtype(_F32)
        self.pad = bool(ctx.get_attr("pad_to_max_output_size", False))

    def is_expensive(self, inputs: list) -> bool:
        return np.shape(inputs[0])[:1] > (POOL_ABOVE,)

    def run(self, inputs):
        boxes, scores, max_output_size, iou_threshold, score_threshold = inputs[:5]
        _scalar(max_output_size, "max_output_size", self.version == 3)
        _scalar(iou_threshold, "iou_threshold", self.version == 3)
        iou = np.asarray(iou_threshold)
        if not (iou >= 0 and iou <= 1):
            raise _invalid("iou_threshold must be in [0, 1]")
        _scalar(score_threshold, "score_threshold", False)
        sigma = self.np_dtype.type(0)
        if self.version == 5:
            _scalar(inputs[5], "soft_nms_sigma", False)
            sigma = np.asarray(inputs[5]).astype(self.np_dtype)[()]
            if not sigma >= 0:
                raise _invalid("soft_nms_sigma_val must be >= 0")
        check_boxes_and_scores(boxes, scores)
        max_out = int(max_output_size)
        if max_out < 0:
            raise _invalid("output size must be non-negative")
        t = self.np_dtype.type
        selected, selected_scores = non_max_suppression(
            boxes, scores, max_out, t(iou), t(np.asarray(score_threshold)), sigma,
            self.np_dtype)
        valid = len(selected)
        indices = np.asarray(selected, np.int32)
        out_scores = np.asarray(selected_scores, _F32).astype(self.np_dtype)
        if self.pad and valid < max_out:
            indices = np.concatenate([indices, np.zeros(max_out - valid, np.int32)])
            out_scores = np.concatenate([out_scores, np.zeros(max_out - valid, self.np_dtype)])
        return indices, out_scores, np.int32(valid)


@register_kernel("NonMaxSuppression", "CPU")
class NonMaxSuppressionV1Op(_NmsKernel):
    """TF 1's NMS: float boxes, iou_threshold an attr, no score threshold."""

    version = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        self.iou = np.float32(ctx.get_attr("iou_threshold", 0.5))

    def compute(self, ctx, inputs):
        return (self.run([*inputs[:3], self.iou, np.float32(-np.inf)])[0],)


@register_kernel("NonMaxSuppressionV2", "CPU")
class NonMaxSuppressionV2Op(_NmsKernel):
    """NMS with iou_threshold an input, no score threshold."""

    version = 2

    def compute(self, ctx, inputs):
        return (self.run([*inputs[:4], self.np_dtype.type(-np.inf)])[0],)


@register_kernel("NonMaxSuppressionV3", "CPU")
class NonMaxSuppressionV3Op(_NmsKernel):
    """selected_indices of greedy NMS (unpadded)."""

    def compute(self, ctx, inputs):
        return (self.run(inputs)[0],)


@register_kernel("NonMaxSuppressionV4", "CPU")
class NonMaxSuppressionV4Op(_NmsKernel):
    """selected_indices (padded with 0 to max_output_size when asked) and valid_outputs."""

    version = 4

    def compute(self, ctx, inputs):
        indices, _, valid = self.run(inputs)
        return indices, valid


@register_kernel("NonMaxSuppressionV5", "CPU")
class NonMaxSuppressionV5Op(_NmsKernel):
    """selected_indices, selected_scores (soft NMS when soft_nms_sigma > 0), valid_outputs."""

    version = 5

    def compute(self, ctx, inputs):
        return self.run(inputs)

