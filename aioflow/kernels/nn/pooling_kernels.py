"""CPU kernels (NumPy) for pooling: MaxPool, MaxPoolV2, AvgPool, MaxPool3D, AvgPool3D, with
TF 2.21's checks and messages.

2-D: a pooled output is reduced over the window's taps as views of the block's own padded
input rows (conv_kernels.padded_rows, split into stride phases when strided, so each view
is contiguous: conv_kernels.TapViews), one ``np.maximum``/``np.add`` per tap into the
output, a block of output rows at a time so that the block stays in cache; never a copy of
the whole input. 3-D: separably, one spatial axis after the other (a box window's max or
sum is the max or sum along each axis in turn), a plane at a time. A window covering the
whole input (global pooling) is one reduction. Max pooling pads with -inf (the smallest
value for integers), so padding never wins; average pooling divides by the number of taps
inside the input (TF's SAME padding excludes the padding from the count). With numba (the
`jit` extra), float pooling, max and average, 2-D and 3-D, runs a compiled loop over the
unpadded input instead (aioflow/kernels/nn/pooling_jit.py; half/bfloat16 through float32), once the
loop has compiled in the background: NumPy's passes until then. MaxPool's depthwise
pooling (a window over channels only) is a reshape and a max. NCHW/NCDHW inputs run in
channels-last, as TF's CPU graphs do. half/bfloat16 average in float32.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.framework.padding import explicit_paddings_error
from aioflow.kernels.nn import pooling_jit
from aioflow.kernels.nn.conv_kernels import (
    TapViews,
    attr_str,
    invalid,
    padded_rows,
    parallel_blocks,
    to_channels_first,
    to_channels_last,
    unimplemented,
    windowed_output_size,
)

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
_MAX_POOL_TYPES = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                   dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.int16, dtypes.int8,
                   dtypes.uint16]
_FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
#: Window taps times output elements above which a pooling goes to the thread pool.
POOL_WORK = 1 << 20
_BLOCK_BYTES = 1 << 19


def _lowest(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return dtype.type(-np.inf)
    return np.iinfo(dtype).min


def pool_channels_last(x: np.ndarray, ksizes, strides, pads, out_sizes, op: str) -> np.ndarray:
    """Max ("max") or sum ("sum") of x (N, *spatial, C) over each window: (N, *out, C)."""
    n, c = x.shape[0], x.shape[-1]
    out = np.empty((n,) + tuple(out_sizes) + (c,), x.dtype)
    if out.size == 0:
        return out
    fill = _lowest(x.dtype) if op == "max" else 0
    if _is_global(x, ksizes, pads, out_sizes):
        # A global pooling (the window is the whole input): one reduction.
        axes = tuple(range(1, x.ndim - 1))
        (np.max if op == "max" else np.sum)(x, axis=axes, keepdims=True, out=out)
        return out
    reduce = np.maximum if op == "max" else np.add
    row_bytes = max(1, out[0, 0].nbytes)
    rows_per_block = max(1, _BLOCK_BYTES // row_bytes)
    oh = out_sizes[0]
    taps = list(np.ndindex(*ksizes))
    if len(out_sizes) == 2:
        block = _blocks_2d(x, out, ksizes, strides, pads, taps, rows_per_block, fill, reduce)
        blocks = [(b, r0) for b in range(n) for r0 in range(0, oh, rows_per_block)]
    else:
        block = _separable_planes(x, out, ksizes, strides, pads, fill, reduce)
        step = max(1, (2 * _BLOCK_BYTES) // max(1, x[0, 0].nbytes * ksizes[0]))
        blocks = [(b, z, min(z + step, oh)) for b in range(n) for z in range(0, oh, step)]
    parallel_blocks(blocks, block, 0 if n == 1 else out.size * len(taps))
    return out


def compiled_ready(dtype) -> bool:
    """Whether pool_compiled runs for x of this dtype now (else the caller pools by NumPy;
    the loops' compile is started in the background, never waited for)."""
    if not _COMPILED or np.dtype(dtype) not in pooling_jit.TYPES:
        return False
    if pooling_jit.ready():
        return True
    pooling_jit.compile_in_background()
    return False


def pool_compiled(x: np.ndarray, ksizes, strides, pads, out_sizes, op: str) -> np.ndarray:
    """The "max" or "avg" (sum over the taps inside, divided by their count) of x
    (N, *spatial, C), 2 or 3 spatial dimensions, float32/64, over each window, by the
    compiled loop (aioflow/kernels/nn/pooling_jit.py): it reads the unpadded input, no copy."""
    n, c = x.shape[0], x.shape[-1]
    out = np.empty((n,) + tuple(out_sizes) + (c,), x.dtype)
    if out.size == 0:
        return out
    lead = 5 - x.ndim  # a 2-D pooling is a 3-D one of depth 1
    x5 = np.ascontiguousarray(x).reshape((n,) + (1,) * lead + x.shape[1:])
    out5 = out.reshape((n,) + (1,) * lead + out.shape[1:])
    k3 = (1,) * lead + tuple(ksizes)
    s3 = (1,) * lead + tuple(strides)
    p3 = (0,) * lead + tuple(before for before, _ in pads)
    rows = out5.shape[1] * out5.shape[2]
    rows_per_block = max(1, _BLOCK_BYTES // max(1, out5[0, 0, 0].nbytes))
    taps = int(np.prod(ksizes))

    def block(item):
        b, r0 = item
        pooling_jit.pool_rows(op, x5, out5, b, r0, min(r0 + rows_per_block, rows), k3, s3, p3)

    parallel_blocks([(b, r0) for b in range(n) for r0 in range(0, rows, rows_per_block)],
                    block, 0 if n == 1 else out.size * taps)
    return out


def _blocks_2d(x, out, ksizes, strides, pads, taps, rows_per_block, fill, reduce):
    """fn((b, r0)) pooling a block of output rows of a 2-D pooling: the block's input rows
    padded (and stride-split) in a buffer of its own that stays in cache."""
    (kh, kw), (sh, sw) = ksizes, strides
    oh, ow = out.shape[1:3]
    (top, _), (left, _) = pads
    width = (ow - 1) * sw + kw

    def block(item):
        b, r0 = item
        r = min(rows_per_block, oh - r0)
        src = padded_rows(x, b, r0 * sh - top, (r - 1) * sh + kh, -left, width, fill)
        views = TapViews(src[None], strides)
        acc = out[b, r0:r0 + r]
        np.copyto(acc, views.view(0, (0, 0), (r, ow), taps[0]))
        for tap in taps[1:]:
            reduce(acc, views.view(0, (0, 0), (r, ow), tap), out=acc)

    return block


_COMPILED = pooling_jit.available()


def _separable_planes(x, out, ksizes, strides, pads, fill, reduce):
    """fn((b, z0, z1)) pooling output planes z0:z1 (of the first spatial axis) of batch item
    b one spatial axis at a time: a box window's max or sum is the max or sum along each axis in
    turn, each a few passes over strided views of the previous axis's (smaller) result, a
    few planes at a time so that they stay in cache; 3x3x3 taps cost 3 + 3 + 3 passes instead of
    27. The padding is never materialised: each tap reduces into the outputs whose input
    it reaches (the rest keep `fill`)."""
    out_sizes = out.shape[1:-1]
    last = len(out_sizes) - 1

    def block(item):
        b, z0, z1 = item
        y = x[b]
        for axis, (k, s, o, (before, _)) in enumerate(zip(ksizes, strides, out_sizes, pads,
                                                          strict=True)):
            if axis == 0:  # only output planes z0:z1: shift the geometry to start there
                o, before = z1 - z0, before - z0 * s
            size = y.shape[axis]
            shape = y.shape[:axis] + (o,) + y.shape[axis + 1:]
            acc = out[b, z0:z1] if axis == last else np.empty(shape, y.dtype)
            index = [slice(None)] * y.ndim
            covered = False  # a tap has been copied in (later ones reduce)
            for t in range(k):
                # Output j reads input j * s + t - before, inside when in [0, size).
                j0 = max(0, -(-(before - t) // s))
                j1 = min(o, (size - 1 - t + before) // s + 1)
                if j1 <= j0:
                    continue
                i0 = j0 * s + t - before
                index[axis] = slice(i0, i0 + (j1 - j0 - 1) * s + 1, s)
                src = y[tuple(index)]
                index[axis] = slice(j0, j1)
                dst = acc[tuple(index)]
                if not covered:
                    if j0 or j1 < o:
                        acc.fill(fill)
                    np.copyto(dst, src)
                    covered = True
                else:
                    reduce(dst, src, out=dst)
            if not covered:
                acc.fill(fill)
            y = acc

    return block


def _is_global(x, ksizes, pads, out_sizes) -> bool:
    """Whether the window is the whole input (pool_channels_last's one reduction)."""
    return all(o == 1 for o in out_sizes) and tuple(ksizes) == x.shape[1:-1] and \
        not any(b or a for b, a in pads)


def _valid_counts(in_sizes, ksizes, strides, pads, out_sizes) -> np.ndarray:
    """The number of window taps inside the input, per output position (*out, 1)."""
    counts = None
    for size, k, s, (before, _), o in zip(in_sizes, ksizes, strides, pads, out_sizes, strict=True):
        start = np.arange(o) * s - before
        c = np.minimum(start + k, size) - np.maximum(start, 0)
        counts = c if counts is None else np.multiply.outer(counts, c)
    return counts[..., None]


class _PoolBase(OpKernel):
    """Attrs (or, for MaxPoolV2, inputs) checked as TF's pooling kernels check them."""

    expensive = None
    compilable = True
    num_spatial = 2
    formats = ("NHWC", "NCHW")
    op = "max"

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._np_type = dtype.as_numpy_dtype
        self._half = dtype in _HALF_TYPES
        fmt = attr_str(ctx, "data_format", self.formats[0])
        if fmt not in self.formats:
            raise invalid("Invalid data format")
        self._channels_first = fmt == self.formats[1]
        self._padding = attr_str(ctx, "padding", "VALID")
        self._explicit = list(ctx.get_attr("explicit_paddings", []))
        self._window = None
        if ctx.has_attr("ksize"):
            self._window = self.check_window(list(ctx.get_attr("ksize")),
                                             list(ctx.get_attr("strides")))
        if self._padding == "EXPLICIT":
            self._check_explicit()

    def _check_explicit(self):
        message = explicit_paddings_error("EXPLICIT", self._explicit, 4, self._channels_first)
        if message is not None:
            raise invalid(message)

    def check_window(self, ksize, strides):
        rank = self.num_spatial + 2
        if len(ksize) != rank:
            raise invalid(f"Sliding window ksize field must specify {rank} dimensions")
        if len(strides) != rank:
            raise invalid(f"Sliding window stride field must specify {rank} dimensions")
        if ksize[0] != 1 or strides[0] != 1:
            raise unimplemented("Pooling is not yet supported on the batch dimension.")
        if any(k <= 0 for k in ksize):
            raise invalid(self.ksize_message(ksize))
        return self._reorder(ksize), self._reorder(strides)

    def ksize_message(self, ksize) -> str:
        bad = next(k for k in ksize if k <= 0)
        if self.op == "max":
            return ("Sliding window ksize must be positive. The specified or inferred ksize "
                    f"is: {','.join(str(k) for k in ksize)}")
        return f"ksize must be a positive int32 value, got:{bad}"

    def _reorder(self, values):
        """[N, *spatial, C] order of a per-dimension list in the op's data format."""
        if self._channels_first:
            return [values[0]] + list(values[2:]) + [values[1]]
        return list(values)

    def is_expensive(self, inputs: list) -> bool:
        x = inputs[0]
        window = self._window
        taps = int(np.prod(window[0])) if window is not None else 9
        return np.size(x) * taps > POOL_WORK * max(1, int(np.prod(
            window[1])) if window is not None else 1)

    def compute(self, ctx, inputs):
        x = inputs[0]
        rank = self.num_spatial + 2
        window = self._window if self._window is not None else self.window_inputs(inputs)
        if x.ndim != rank:
            if self.num_spatial == 2:
                raise invalid(f"tensor_in_shape must have 2 spatial dimensions. {x.ndim} 0")
            raise invalid(f"tensor_in must be {rank}-dimensional")
        ksize, strides = window
        if self._channels_first:
            x = to_channels_last(x)
        if ksize[-1] != 1 or strides[-1] != 1:
            y = self._depthwise(x, ksize, strides)
        else:
            y = self._spatial(x, ksize[1:-1], strides[1:-1])
        return (to_channels_first(y) if self._channels_first else y,)

    def window_inputs(self, inputs):
        raise NotImplementedError

    def _geometry(self, x, ksizes, strides):
        pairs = [(0, 0)] * self.num_spatial
        if self._padding == "EXPLICIT":
            p = self._reorder([self._explicit[2 * i:2 * i + 2] for i in range(4)])
            pairs = [tuple(v) for v in p[1:-1]]
        if self._padding == "EXPLICIT":
            for side, pad, k in (("Top", pairs[0][0], ksizes[0]),
                                 ("Bottom", pairs[0][1], ksizes[0]),
                                 ("Left", pairs[1][0], ksizes[1]),
                                 ("Right", pairs[1][1], ksizes[1])):
                if pad >= k:
                    raise invalid(f"{side} padding {pad} needs to be smaller than the window "
                                  f"size {k}")
        outs, pads = [], []
        for size, k, s, (b, a) in zip(x.shape[1:-1], ksizes, strides, pairs, strict=True):
            o, before, after = windowed_output_size(size, k, 1, s, self._padding, b, a)
            outs.append(o)
            pads.append((before, after))
        return outs, pads

    def _spatial(self, x, ksizes, strides):
        outs, pads = self._geometry(x, ksizes, strides)
        work_type = np.float32 if self._half else x.dtype
        if compiled_ready(work_type) and not _is_global(x, ksizes, pads, outs):
            # half/bfloat16 pool in float32 (a max exactly; a mean rounded once).
            xc = x.astype(np.float32) if self._half else x
            y = pool_compiled(xc, ksizes, strides, pads, outs, self.op)
            return y.astype(self._np_type) if self._half else y
        if self.op == "max":
            return pool_channels_last(x, ksizes, strides, pads, outs, "max")
        xc = x.astype(np.float32) if self._half else x
        total = pool_channels_last(xc, ksizes, strides, pads, outs, "sum")
        if self._padding == "VALID":
            total *= total.dtype.type(1.0 / int(np.prod(ksizes)))
        elif total.size:
            total /= _valid_counts(x.shape[1:-1], ksizes, strides, pads, outs).astype(
                total.dtype)
        return total.astype(self._np_type) if self._half else total

    def _depthwise(self, x, ksize, strides):
        """A window over channels only (TF's PoolParameters checks, then the op's)."""
        depth_window, depth_stride = ksize[-1], strides[-1]
        if any(k != 1 for k in ksize[1:-1]) or any(s != 1 for s in strides[1:-1]):
            raise unimplemented("MaxPooling supports exactly one of pooling across depth or "
                                "pooling across width/height.")
        if depth_window != depth_stride:
            raise unimplemented("Depthwise max pooling requires the depth window to equal "
                                "the depth stride")
        if x.shape[-1] % depth_window:
            raise unimplemented("Depthwise max pooling requires the depth window to evenly "
                                "divide the input depth")
        if self.op != "max":
            raise unimplemented("Non-spatial pooling is not yet supported. Volunteers? :)")
        return x.reshape(x.shape[:-1] + (x.shape[-1] // depth_window, depth_window)).max(-1)


class _MaxPool2D(_PoolBase):
    """MaxPool and MaxPoolV2."""


@register_kernel("MaxPool", "CPU", T=_MAX_POOL_TYPES)
class MaxPoolOp(_MaxPool2D):
    """The maximum of each ksize window, moved by strides."""


@register_kernel("MaxPoolV2", "CPU", T=_MAX_POOL_TYPES, host_memory=("ksize", "strides"))
class MaxPoolV2Op(_MaxPool2D):
    """MaxPool with ksize and strides given as inputs."""

    def window_inputs(self, inputs):
        ksize, strides = inputs[1], inputs[2]
        if np.size(ksize) != 4:
            raise invalid("Sliding window ksize field must specify 4 dimensions")
        if np.size(strides) != 4:
            raise invalid("Sliding window stride field must specify 4 dimensions")
        return self.check_window([int(v) for v in np.ravel(ksize)],
                                 [int(v) for v in np.ravel(strides)])


@register_kernel("AvgPool", "CPU", T=_FLOATS)
class AvgPoolOp(_PoolBase):
    """The mean of each ksize window (taps in the padding not counted)."""

    op = "avg"


class _Pool3DBase(_PoolBase):
    num_spatial = 3
    formats = ("NDHWC", "NCDHW")

    def check_window(self, ksize, strides):
        if len(ksize) != 5:
            raise invalid("Sliding window ksize field must specify 5 dimensions")
        if len(strides) != 5:
            raise invalid("Sliding window stride field must specify 5 dimensions")
        c = 1 if self._channels_first else 4
        if ksize[0] != 1 or strides[0] != 1:
            raise unimplemented("Pooling is not yet supported on the batch dimension.")
        if ksize[c] != 1 or strides[c] != 1:
            raise unimplemented("Pooling is not yet supported on the depth dimension.")
        if any(k <= 0 for k in ksize):
            raise invalid(self.ksize_message(ksize))
        return self._reorder(ksize), self._reorder(strides)


@register_kernel("MaxPool3D", "CPU", T=[dtypes.float16, dtypes.bfloat16, dtypes.float32])
class MaxPool3DOp(_Pool3DBase):
    """3-D max pooling."""


@register_kernel("AvgPool3D", "CPU", T=_FLOATS)
class AvgPool3DOp(_Pool3DBase):
    """3-D average pooling (taps in the padding not counted)."""

    op = "avg"
