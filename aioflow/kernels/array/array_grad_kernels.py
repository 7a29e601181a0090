"""CPU kernels of the array gradient ops: ConcatOffset (where each input of a concat
starts), StridedSliceGrad (dy scattered into zeros of the input's shape), MirrorPadGrad
(the padded gradient folded back onto the input)."""

from __future__ import annotations

import numpy as np

from aioflow.framework import errors
from aioflow.framework.common_shapes import strided_slice_spec
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG, shape_str


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


@register_kernel("ConcatOffset", "CPU")
class ConcatOffsetOp(OpKernel):
    """offset[i]: zeros but along concat_dim, the sum of the earlier shapes' dims there."""

    compilable = True  # pure

    def compute(self, ctx, inputs):
        concat_dim, shapes = inputs[0], [np.asarray(s) for s in inputs[1:]]
        if np.ndim(concat_dim) != 0:
            raise _invalid(f"Concat dim tensor should be a scalar integer, but got shape "
                           f"{shape_str(np.shape(concat_dim))}")
        first = shapes[0]
        if first.ndim != 1:
            raise _invalid(f"input 0 should be a 1-D tensor, but got shape "
                           f"{shape_str(first.shape)}")
        rank = first.size
        axis = int(concat_dim)
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise _invalid(f"Concat dim is out of range: {int(concat_dim)} vs. {rank}")
        offset = 0
        out = []
        for i, s in enumerate(shapes):
            if s.ndim != 1 or s.size != rank:
                raise _invalid(f"input {i} should contain {rank} elements, but got "
                               f"{s.size}")
            for j in range(rank):
                if j != axis and s[j] != first[j]:
                    raise _invalid(f"input[{i},{j}] mismatch: {int(s[j])} vs. "
                                   f"{int(first[j])}")
            o = np.zeros(rank, s.dtype)
            o[axis] = offset
            offset += int(s[axis])
            out.append(o)
        return tuple(out)


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


@register_kernel("StridedSliceGrad", "CPU")
class StridedSliceGradOp(OpKernel):
    """zeros(shape) with dy written where StridedSlice(shape, spec) would read."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._masks = {k: ctx.get_attr(k, 0) for k in _MASKS}

    def compute(self, ctx, inputs):
        shape, begin, end, strides, dy = inputs
        if np.ndim(shape) != 1:  # TF's StridedSliceGradOp
            raise _invalid(f"shape must be 1-D, got shape.shape = {shape_str(np.shape(shape))}")
        begin, end, strides = np.asarray(begin), np.asarray(end), np.asarray(strides)
        if not begin.ndim == end.ndim == strides.ndim == 1:  # TF's ValidateStridedSliceOp
            raise _invalid(
                "Expected begin, end, and strides to be 1D equal size tensors, but got shapes "
                f"{shape_str(begin.shape)}, {shape_str(end.shape)}, and "
                f"{shape_str(strides.shape)} instead.")
        shape = [int(d) for d in np.ravel(shape)]
        try:
            index, final = strided_slice_spec(shape, begin.tolist(), end.tolist(),
                                              strides.tolist(), **self._masks)
        except ValueError as e:
            raise _invalid(str(e)) from None
        dy = np.asarray(dy)
        if list(dy.shape) != [d for d in final]:
            raise _invalid(f"shape of dy was {shape_str(dy.shape)} instead of "
                           f"{shape_str(final)}")
        out = np.zeros(shape, dy.dtype)
        target = out[index]
        out[index] = dy.reshape(np.shape(target))
        return (out,)

    def is_expensive(self, inputs: list) -> bool:
        return int(np.prod(inputs[0])) > BIG


@register_kernel("MirrorPadGrad", "CPU")
class MirrorPadGradOp(OpKernel):
    """The gradient of MirrorPad: each mirrored cell's gradient added to its source."""

    def __init__(self, ctx):
        super().__init__(ctx)
        mode = ctx.get_attr("mode")
        self._offset = 0 if (mode.decode() if isinstance(mode, bytes) else mode) \
            == "SYMMETRIC" else 1

    def compute(self, ctx, inputs):
        g, paddings = np.asarray(inputs[0]), np.asarray(inputs[1])
        if paddings.ndim != 2 or paddings.shape != (g.ndim, 2):
            raise _invalid("paddings must be a matrix with 2 columns: "
                           f"{shape_str(paddings.shape)}")
        off = self._offset
        for axis, (before, after) in enumerate(paddings.tolist()):
            if before < 0 or after < 0:
                raise _invalid(f"Paddings must be non-negative: {before}, {after}")
            n = g.shape[axis] - before - after
            if n < 0 or before + off > n or after + off > n:  # TF's MirrorPadGradOp
                raise _invalid(f"paddings must be no greater than the output dimension "
                               f"size: {before}, {after} greater than {n - off}")
            moved = np.moveaxis(g, axis, 0)
            center = moved[before:before + n].copy()
            if before:
                center[off:off + before] += moved[:before][::-1]
            if after:
                center[n - off - after:n - off] += moved[before + n:][::-1]
            g = np.moveaxis(center, 0, axis)
        return (np.ascontiguousarray(g),)
