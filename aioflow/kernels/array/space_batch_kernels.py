"""Kernels of the space <-> batch and space <-> depth rearrangements, as reshapes and
transposes of NumPy views (one copy each), with TF's checks and messages.

SpaceToBatchND pads the M spatial dims after the batch, then moves each block offset into
the batch (block offsets outermost, as TF orders them); BatchToSpaceND undoes it and crops.
SpaceToDepth / DepthToSpace move block_size x block_size patches to and from channels
(NHWC; TF's CPU kernels take no other layout)."""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework import errors
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _block_and_pads(x, block, pads, what: str):
    block = np.asarray(block)
    pads = np.asarray(pads)
    if block.ndim != 1:
        raise _invalid(f"block_shape must be one-dimensional, got shape "
                       f"[{','.join(map(str, block.shape))}]")
    m = block.shape[0]
    if pads.shape != (m, 2):
        raise _invalid(f"{what} should have shape [{m}, 2] instead of "
                       f"[{','.join(map(str, pads.shape))}]")
    if x.ndim < 1 + m:
        raise _invalid(f"input rank should be >= {1 + m} instead of {x.ndim}")
    for i, b in enumerate(block.tolist()):
        if b < 1:
            raise _invalid(f"All values in block_shape must be positive, got value, {b} at "
                           f"index {i}.")
    if np.any(pads < 0):
        raise _invalid(f"{what.capitalize()} must be non-negative")
    return [int(b) for b in block.tolist()], pads.astype(np.int64)


def space_to_batch(x: np.ndarray, block: list[int], pads: np.ndarray) -> np.ndarray:
    m = len(block)
    padded = np.pad(x, [(0, 0), *[tuple(p) for p in pads.tolist()]] +
                    [(0, 0)] * (x.ndim - 1 - m))
    shape = [x.shape[0]]
    for i, b in enumerate(block):
        size = padded.shape[1 + i]
        if size % b:
            raise _invalid(f"padded_shape[{i}]={size} is not divisible by "
                           f"block_shape[{i}]={b}")
        shape += [size // b, b]
    rest = list(x.shape[1 + m:])
    view = padded.reshape(shape + rest)
    order = ([2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
             + list(range(1 + 2 * m, view.ndim)))
    out_shape = ([x.shape[0] * math.prod(block)] + [shape[1 + 2 * i] for i in range(m)]
                 + rest)
    return np.ascontiguousarray(view.transpose(order)).reshape(out_shape)


def batch_to_space(x: np.ndarray, block: list[int], crops: np.ndarray) -> np.ndarray:
    m = len(block)
    product = math.prod(block)
    if x.shape[0] % product:
        raise _invalid(f"Input batch dimension ({x.shape[0]}) is not divisible by product "
                       f"of block sizes ({product})")
    batch = x.shape[0] // product
    spatial = list(x.shape[1:1 + m])
    rest = list(x.shape[1 + m:])
    for i, b in enumerate(block):
        cropped = spatial[i] * b - int(crops[i].sum())
        if cropped < 0:
            raise _invalid(f"cropped_shape[{i}]={cropped} must be non-negative")
    view = x.reshape(block + [batch] + spatial + rest)
    order = [m]
    for i in range(m):
        order += [m + 1 + i, i]
    order += list(range(2 * m + 1, view.ndim))
    full = view.transpose(order).reshape([batch] + [s * b for s, b in
                                                    zip(spatial, block, strict=True)] + rest)
    index = (slice(None),) + tuple(slice(int(c0), full.shape[1 + i] - int(c1))
                                   for i, (c0, c1) in enumerate(crops.tolist()))
    return np.ascontiguousarray(full[index])


class _Rearrange(OpKernel):
    """A copy of the input: to the pool when it is large."""

    expensive = None
    pool_above = BIG


@register_kernel("SpaceToBatchND", "CPU")
class SpaceToBatchNDOp(_Rearrange):
    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        block, pads = _block_and_pads(x, inputs[1], inputs[2], "paddings")
        return (space_to_batch(x, block, pads),)


@register_kernel("BatchToSpaceND", "CPU")
class BatchToSpaceNDOp(_Rearrange):
    def compute(self, ctx, inputs):
        x = np.asarray(inputs[0])
        block, crops = _block_and_pads(x, inputs[1], inputs[2], "crops")
        return (batch_to_space(x, block, crops),)


class _Legacy(_Rearrange):
    """The 4-D ops with a block_size attr (two spatial dims of one block size)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.block = int(ctx.get_attr("block_size"))
        if self.block <= 1:
            raise _invalid(f"Block size should be > 1: {self.block}")

    def _args(self, inputs, what: str):
        x = np.asarray(inputs[0])
        if x.ndim != 4:
            raise _invalid(f"input rank should be 4 instead of {x.ndim}")
        return x, _block_and_pads(x, [self.block, self.block], inputs[1], what)


@register_kernel("SpaceToBatch", "CPU")
class SpaceToBatchOp(_Legacy):
    def compute(self, ctx, inputs):
        x, (block, pads) = self._args(inputs, "paddings")
        return (space_to_batch(x, block, pads),)


@register_kernel("BatchToSpace", "CPU")
class BatchToSpaceOp(_Legacy):
    def compute(self, ctx, inputs):
        x, (block, crops) = self._args(inputs, "crops")
        return (batch_to_space(x, block, crops),)


class _Depth(_Rearrange):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.block = int(ctx.get_attr("block_size"))
        fmt = ctx.get_attr("data_format", b"NHWC")
        fmt = attr_text(fmt)
        if fmt != "NHWC":
            raise _invalid(f"Only NHWC data_format supported on CPU. Got {fmt}")

    def _input(self, inputs) -> np.ndarray:
        x = np.asarray(inputs[0])
        if x.ndim != 4:
            raise _invalid(f"Input rank should be 4 instead of {x.ndim}")
        return x


@register_kernel("SpaceToDepth", "CPU")
class SpaceToDepthOp(_Depth):
    def compute(self, ctx, inputs):
        x = self._input(inputs)
        n, h, w, c = x.shape
        bs = self.block
        if h % bs or w % bs:
            raise _invalid(f"Image width {w} and height {h} should be divisible by "
                           f"block_size: {bs}")
        view = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
        return (np.ascontiguousarray(view).reshape(n, h // bs, w // bs, c * bs * bs),)


@register_kernel("DepthToSpace", "CPU")
class DepthToSpaceOp(_Depth):
    def compute(self, ctx, inputs):
        x = self._input(inputs)
        n, h, w, c = x.shape
        bs = self.block
        if c % (bs * bs):
            raise _invalid(f"Input depth dimension {c} should be divisible by: {bs * bs}")
        view = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
        return (np.ascontiguousarray(view).reshape(n, h * bs, w * bs, c // (bs * bs)),)
