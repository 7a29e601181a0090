"""CPU kernels (NumPy) for convolutions: Conv2D, Conv3D and DepthwiseConv2dNative, with TF
2.21's checks and messages (their gradients, the transposed convolution included, are in
conv_grad_kernels.py).

Algorithms, chosen by measurement at MobileNetV2/ResNet50 shapes (benchmarks/conv_ops.py):

* 1x1 convolutions (any stride) are one GEMM on the (strided) input viewed as a matrix.
* Other convolutions are im2col + GEMM: a strided view of the padded input is copied,
  a block of output rows at a time (about 2 MiB of patches, so the copy stays in cache
  and no batch-8 patch matrix is ever whole), and multiplied by the filter matrix with
  np.matmul (OpenBLAS) straight into the output. Patch rows of a few elements (kw*C <= 12,
  a 3x3 convolution of an RGB image) are copied K-major, tap by tap, instead.
* Depthwise convolutions, with numba installed (the `jit` extra, aioflow/kernels/jit.py): one
  compiled pass over each block of output rows (aioflow/kernels/nn/depthwise_jit.py). Without it,
  kh*kw multiply-adds of shifted views over a block of output rows, each tap a fused
  ``out += view * w`` through a small scratch buffer.

Each GEMM runs BLAS single-threaded (intra_op_threads.own_threads), its blocks of rows (or, for a
few rows, its columns) shared among the kernel's own threads, at most
intra_op_parallelism_threads of them, as TF splits a convolution over its own pool.
3-D convolutions of short patch rows copy each input depth slice's patches once.

NCHW/NCDHW inputs run as TF's CPU graphs do (its layout pass runs them in NHWC): transposed
to channels-last, computed, transposed back. half/bfloat16 compute in float32 and round
once. Kernels go to the thread pool when their multiply-adds exceed POOL_FLOPS.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.lib.stride_tricks import as_strided

from aioflow.framework import dtypes, errors
from aioflow.framework.intra_op_threads import blas_threads_outside, own_threads
from aioflow.framework.op_defs.fused_ops import FOLDED_PADDINGS
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.framework.padding import explicit_paddings_error
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.nn import depthwise_jit

_HALF_TYPES = (dtypes.float16, dtypes.bfloat16)
_CONV_TYPES = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64, dtypes.int32]
_CONV3D_TYPES = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]

#: Multiply-adds above which a convolution goes to the thread pool (as MatMul's).
POOL_FLOPS = 1 << 21
#: Bytes of im2col patches copied per GEMM block.
_BLOCK_BYTES = 1 << 21
#: Patch rows of at most this many contiguous elements (kw * C) are copied K-major (3x3 on
#: 3 channels: 0.075 -> 0.045 ms a block; 7x7 on 3, 21 elements, was slower K-major).
_K_MAJOR_RUN = 12
#: A convolution's GEMM is shared among threads above this many multiply-adds (about
#: 0.2 ms on one core), BLAS single-threaded either way. MobileNetV2 batch 1, one process
#: taking turns: 13.1 ms at 2**22, 12.1 at 2**24 (its small 1x1s not worth a hand-off),
#: 12.1 at 2**26; ResNet50 batch 1 and MobileNetV2 batch 8 slower from 2**26.
_CONV_SPLIT_MACS = 1 << 24
#: A convolution's GEMM of fewer rows than this per thread is split by columns.
_COLUMN_SPLIT_ROWS = 256
_MIN_COLUMNS = 32
_MIN_ROWS = 64
#: Bytes of GEMM output finished by a fused epilogue per block of rows (kept in cache).
_EPILOGUE_BLOCK_BYTES = 1 << 19
#: Bytes of depthwise output accumulated per block of rows (kept in cache).
_DW_BLOCK_BYTES = 1 << 18
#: Output elements times taps above which depthwise/pooling loops over a batch of several
#: images are shared with helper threads (measured on 16 cores: batch 8 1.4x faster; one
#: image's few row blocks are not worth it, so a batch of 1 stays on one thread).
PARALLEL_WORK = 1 << 21
_CORES = max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else (os.cpu_count() or 1))
_helpers: ThreadPoolExecutor | None = None
_helpers_lock = threading.Lock()


def parallel_blocks(blocks: list, fn, work: int, threads: int | None = None) -> None:
    """fn(block) for every block; shared with helper threads (NumPy releases the GIL in
    its loops) when the work is worth a hand-off, else all in this thread. Blocks are
    handed out one at a time, so a helper that gets no core costs at most one block.
    `threads` bounds the threads used (intra_op_parallelism_threads); None: the cores."""
    global _helpers
    parts = min(_CORES, len(blocks), threads or _CORES) if work > PARALLEL_WORK else 1
    if parts <= 1:
        for block in blocks:
            fn(block)
        return
    if _helpers is None:
        with _helpers_lock:
            if _helpers is None:
                _helpers = ThreadPoolExecutor(max_workers=_CORES - 1,
                                              thread_name_prefix="aioflow-conv")

    counter = itertools.count()  # next() is atomic: blocks are taken as threads get to them
    total = len(blocks)

    def run():
        while (i := next(counter)) < total:
            fn(blocks[i])

    futures = [_helpers.submit(run) for _ in range(parts - 1)]
    run()
    for f in futures:
        f.result()


def invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def unimplemented(message: str) -> errors.UnimplementedError:
    return errors.UnimplementedError(None, None, message)


def attr_str(ctx, name: str, default: str) -> str:
    return attr_text(ctx.get_attr(name, default))


def compute_type(dtype: dtypes.DType):
    """The NumPy type a kernel computes in (float32 for half/bfloat16)."""
    return np.float32 if dtype in _HALF_TYPES else dtype.as_numpy_dtype


# -- window arithmetic (TF's GetWindowedOutputSizeVerbose) -------------------------------------

def windowed_output_size(size: int, ksize: int, dilation: int, stride: int, padding: str,
                         before: int = 0, after: int = 0) -> tuple[int, int, int]:
    """(output size, padding before, padding after) of one spatial dimension, with TF's
    checks and messages."""
    if stride <= 0:
        raise invalid(f"Stride must be > 0, but got {stride}")
    if dilation < 1:
        raise invalid(f"Dilation rate must be >= 1, but got {dilation}")
    eff = (ksize - 1) * dilation + 1
    if padding == "VALID":
        out = (size - eff + stride) // stride
        before = after = 0
    elif padding == "SAME":
        out = (size + stride - 1) // stride
        needed = max(0, (out - 1) * stride + eff - size)
        before = needed // 2
        after = needed - before
    else:
        out = (size + before + after - eff + stride) // stride
    if out < 0:
        raise invalid(f"Computed output size would be negative: {out} [input_size: {size}, "
                      f"effective_filter_size: {eff}, stride: {stride}]")
    return out, before, after


def pad_spatial(x: np.ndarray, pads, value=0) -> np.ndarray:
    """x (N, *spatial, C) padded by [(before, after), ...] per spatial dimension; x itself
    when there is nothing to pad. A preallocated copy (faster than np.pad)."""
    if not any(b or a for b, a in pads):
        return x
    spatial = x.shape[1:-1]
    shape = ((x.shape[0],) + tuple(d + b + a for d, (b, a) in zip(spatial, pads, strict=True))
             + (x.shape[-1],))
    out = np.full(shape, value, x.dtype) if value != 0 else np.zeros(shape, x.dtype)
    inner = (slice(None),) + tuple(slice(b, b + d)
                                   for d, (b, _) in zip(spatial, pads, strict=True))
    out[inner] = x
    return out


def crop_spatial(x: np.ndarray, pads, sizes) -> np.ndarray:
    """x (N, *spatial, C) without the padding `pads` (spatial sizes become `sizes`)."""
    if any(b < 0 for b, _ in pads):  # negative "padding": the result lies past x's edge
        grow = [(max(0, -b), 0) for b, _ in pads]
        x = pad_spatial(x, grow)
        pads = [(max(0, b), a) for b, a in pads]
    return x[(slice(None),) + tuple(slice(b, b + s) for (b, _), s in zip(pads, sizes, strict=True))]


def to_channels_last(x: np.ndarray) -> np.ndarray:
    return np.moveaxis(x, 1, -1)


def to_channels_first(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(x, -1, 1))


# -- the convolution itself ----------------------------------------------------------------------

def _window_view(xp: np.ndarray, out_sizes, ksizes, strides, dilations, row0: int = 0,
                 rows: int | None = None, batch0: int = 0, batches: int | None = None):
    """The (N, *out, *k, C) patch view of a padded channels-last input, restricted to
    output rows [row0, row0 + rows) of the first spatial dimension and a batch range."""
    nd = len(out_sizes)
    s = xp.strides
    rows = out_sizes[0] if rows is None else rows
    batches = xp.shape[0] if batches is None else batches
    offset = batch0 * s[0] + row0 * strides[0] * s[1]
    shape = (batches, rows) + tuple(out_sizes[1:]) + tuple(ksizes) + (xp.shape[-1],)
    st = ((s[0],) + tuple(s[1 + i] * strides[i] for i in range(nd))
          + tuple(s[1 + i] * dilations[i] for i in range(nd)) + (s[-1],))
    if dilations[-1] == 1:
        # The last window dimension's taps and the channels are one contiguous run of
        # kw*C elements: one longer inner loop for the copy.
        shape = shape[:-2] + (ksizes[-1] * xp.shape[-1],)
        st = st[:-2] + (s[-1],)
    base = xp.reshape(-1)
    return as_strided(base[offset // xp.itemsize:], shape=shape, strides=st, writeable=False)


def _window_view_k_major(xp: np.ndarray, out_sizes, ksizes, strides, dilations, row0: int,
                         rows: int, b: int):
    """The (*k, C, rows, *out[1:]) patch view of image b of a padded (N, *spatial, C)
    input for output rows [row0, row0 + rows) of the first spatial dimension: the patch
    matrix transposed (K-major)."""
    nd = len(out_sizes)
    s = xp.strides
    offset = b * s[0] + row0 * strides[0] * s[1]
    shape = tuple(ksizes) + (xp.shape[-1], rows) + tuple(out_sizes[1:])
    st = (tuple(s[1 + i] * dilations[i] for i in range(nd)) + (s[-1],)
          + tuple(s[1 + i] * strides[i] for i in range(nd)))
    base = xp.reshape(-1)
    return as_strided(base[offset // xp.itemsize:], shape=shape, strides=st, writeable=False)


def conv_channels_last(x: np.ndarray, w: np.ndarray, strides, dilations, pads,
                       out_sizes, epilogue=None) -> np.ndarray:
    """Convolution of x (N, *spatial, C) with w (*k, C, O): output (N, *out_sizes, O).
    `epilogue(block)`, when given, finishes each block of output rows in place (a fused
    bias and activation) while the block is still in cache."""
    nd = len(out_sizes)
    n = x.shape[0]
    ksizes = w.shape[:nd]
    c, o = w.shape[-2], w.shape[-1]
    out = np.empty((n,) + tuple(out_sizes) + (o,), np.result_type(x, w))
    if out.size == 0:
        return out
    if x.size == 0 or w.size == 0:
        out.fill(0)
        if epilogue is not None:
            epilogue(out)
        return out
    wmat = w.reshape(-1, o)
    if all(k == 1 for k in ksizes):
        # A 1x1 window: the (strided, cropped) input is the patch matrix itself.
        used = [(sz - 1) * st + 1 for sz, st in zip(out_sizes, strides, strict=True)]
        if any(b > 0 or a > 0 for b, a in pads):  # explicit padding: zeros around x
            x, pads = pad_spatial(x, pads), [(0, 0)] * nd
        xs = crop_spatial(x, pads, used)
        if any(st != 1 for st in strides):
            xs = xs[(slice(None),) + tuple(slice(None, None, st) for st in strides)]
        with own_threads() as threads:
            conv_gemm(xs.reshape(-1, c), wmat, out.reshape(-1, o), epilogue, threads)
        return out
    xp = pad_spatial(x, pads)
    # The patch view needs the padded input contiguous (a view in x's own strides).
    xp = np.ascontiguousarray(xp)
    row_elems = int(np.prod(out_sizes[1:], dtype=np.int64)) * wmat.shape[0]
    rows_per_block = max(1, _BLOCK_BYTES // max(1, row_elems * xp.itemsize))
    oh = out_sizes[0]
    flat_out = out.reshape(n, oh, -1, o)

    # A short run of kw*C contiguous input elements per patch row (the first convolution
    # of an RGB image: 3x3 on 3 channels, 9 elements) makes the patch copy slow, one tiny
    # run at a time; the patches are then copied tap by tap instead (K-major, one run of
    # ow strided elements each) and multiplied transposed.
    k_major = ksizes[-1] * c <= _K_MAJOR_RUN
    if k_major and nd == 3 and dilations[0] == 1:
        _conv3d_by_depth_slices(xp, wmat, out, ksizes, strides, dilations, epilogue)
        return out

    def gemm_block(item):
        b, r0 = item
        r = min(rows_per_block, oh - r0)
        block = flat_out[b, r0:r0 + r].reshape(-1, o)
        if k_major:
            view = _window_view_k_major(xp, out_sizes, ksizes, strides, dilations, r0, r, b)
            cols_t = np.empty(view.shape, xp.dtype)
            np.copyto(cols_t, view)
            np.matmul(cols_t.reshape(wmat.shape[0], -1).T, wmat, out=block)
        else:
            view = _window_view(xp, out_sizes, ksizes, strides, dilations, r0, r, b, 1)
            np.matmul(view.reshape(-1, wmat.shape[0]), wmat, out=block)
        if epilogue is not None:
            epilogue(block)

    with own_threads() as threads:
        macs = out.size * wmat.shape[0]
        split = threads > 1 and macs > _CONV_SPLIT_MACS
        if split and out.size // o < _COLUMN_SPLIT_ROWS * threads:
            # A few output rows (7x7, 14x14): the patches whole, the GEMM split by columns.
            cols = _window_view(xp, out_sizes, ksizes, strides, dilations).reshape(
                -1, wmat.shape[0])
            conv_gemm(np.ascontiguousarray(cols), wmat, out.reshape(-1, o), epilogue,
                      threads)
            return out
        if split:  # at least two blocks per thread
            rows_per_block = min(rows_per_block, max(1, -(-n * oh // (2 * threads))))
        blocks = [(b, r0) for b in range(n) for r0 in range(0, oh, rows_per_block)]
        # BLAS runs each call on one thread: the blocks (patch copy, GEMM, epilogue) are
        # shared among this kernel's own threads instead (0: a BLAS that cannot be made
        # single-threaded threads each GEMM itself).
        parallel_blocks(blocks, gemm_block, PARALLEL_WORK + 1 if split else 0, threads)
    return out


def _conv3d_by_depth_slices(xp, wmat, out, ksizes, strides, dilations, epilogue) -> None:
    """A 3-D convolution of short patch rows (kw*C <= _K_MAJOR_RUN) and depth dilation 1,
    image by image: each input depth slice's 2-D patches copied once, K-major, into
    slices (z, kh*kw*C, oh*ow); output depth d's patch matrix is then the contiguous run
    of slices [d*sd, d*sd + kd), multiplied transposed with no further copy (the
    3-D K-major copy made each slice's patches kd times: 3x the copying)."""
    n, od, oh, ow, o = out.shape
    kd = ksizes[0]
    sd = strides[0]
    k2 = wmat.shape[0] // kd
    flat_out = out.reshape(n, od, oh * ow, o)

    def depths(item):
        b, d0, d1 = item
        z0, z1 = d0 * sd, (d1 - 1) * sd + kd  # the input depth slices these outputs read
        slices = np.empty((z1 - z0,) + (ksizes[1], ksizes[2], xp.shape[-1], oh, ow), xp.dtype)
        for z in range(z0, z1):
            np.copyto(slices[z - z0], _window_view_k_major(
                xp[b], (oh, ow), ksizes[1:], strides[1:], dilations[1:], 0, oh, z))
        slices = slices.reshape(-1, oh * ow)
        for d in range(d0, d1):
            block = flat_out[b, d]
            z = (d * sd - z0) * k2
            np.matmul(slices[z:z + kd * k2].T, wmat, out=block)
            if epilogue is not None:
                epilogue(block)

    with own_threads() as threads:
        split = threads > 1 and out.size * wmat.shape[0] > _CONV_SPLIT_MACS
        # A whole image a job, or parts of its output depths when there are fewer images
        # than two a thread (each part copies the kd - 1 slices it shares again).
        parts = min(od, -(-2 * threads // n)) if split and n < 2 * threads else 1
        step = -(-od // parts)
        jobs = [(b, d0, min(od, d0 + step)) for b in range(n) for d0 in range(0, od, step)]
        parallel_blocks(jobs, depths, PARALLEL_WORK + 1 if split else 0, threads)


def conv_gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray, epilogue, threads: int) -> None:
    """out = a @ b for a convolution inside own_threads (BLAS single-threaded): blocks of
    rows (each finished by `epilogue` while in cache) shared among `threads` threads
    when the work pays; a few rows (a 7x7 or 14x14 image) split by columns instead, so
    that each thread packs only its part of b. `threads` 0: one GEMM, BLAS's own threads."""
    m, k = a.shape
    split = threads > 1 and m * k * b.shape[1] > _CONV_SPLIT_MACS
    if not split and epilogue is None:
        np.matmul(a, b, out=out)
        return
    if split and m < _COLUMN_SPLIT_ROWS * threads:
        n_cols = b.shape[1]
        step = max(_MIN_COLUMNS, -(-n_cols // threads))
        parallel_blocks(list(range(0, n_cols, step)),
                        lambda c0: np.matmul(a, b[:, c0:c0 + step], out=out[:, c0:c0 + step]),
                        PARALLEL_WORK + 1, threads)
        if epilogue is not None:
            epilogue(out)
        return
    rows = max(1, _EPILOGUE_BLOCK_BYTES // max(1, out.shape[1] * out.itemsize))
    if split:  # at least two blocks per thread
        rows = min(rows, max(_MIN_ROWS, -(-m // (2 * threads))))

    def block(r0):
        part = out[r0:r0 + rows]
        np.matmul(a[r0:r0 + rows], b, out=part)
        if epilogue is not None:
            epilogue(part)

    parallel_blocks(list(range(0, m, rows)), block, PARALLEL_WORK + 1 if split else 0, threads)


def intra_op_threads() -> int:
    """The threads a kernel that splits its own work may use: BLAS's count outside the
    convolutions' sections (intra_op_parallelism_threads when the session set it), else
    the cores."""
    return min(_CORES, blas_threads_outside() or _CORES)


def grouped_conv(x, w, strides, dilations, pads, out_sizes, epilogue=None) -> np.ndarray:
    """A convolution whose filter depth divides the input depth (groups of channels)."""
    c, fc, o = x.shape[-1], w.shape[-2], w.shape[-1]
    groups = c // fc
    if groups == 1:
        return conv_channels_last(x, w, strides, dilations, pads, out_sizes, epilogue)
    og = o // groups
    parts = [conv_channels_last(x[..., g * fc:(g + 1) * fc], w[..., g * og:(g + 1) * og],
                                strides, dilations, pads, out_sizes) for g in range(groups)]
    out = np.concatenate(parts, axis=-1)
    if epilogue is not None:
        epilogue(out)
    return out


class TapViews:
    """Views of a padded channels-last input (N, *spatial, C) for each window tap.

    With strides above 1 the input is first split into its stride phases (every s-th row
    and column, one contiguous array per phase, made when first needed), so that a tap's
    view of a row of outputs is one contiguous run of ow*C elements rather than ow runs
    of C: the per-tap multiply-adds and maxima then run at memory speed.
    """

    def __init__(self, xp: np.ndarray, strides):
        self.xp = xp
        self.strides = tuple(strides)
        self.split = any(s > 1 for s in strides)
        self._phases: dict = {}

    def prepare(self, offsets) -> None:
        """Make the phases these tap offsets read (before threads share the views)."""
        for offset in offsets:
            self.view(0, (0,) * len(offset), (0,) * len(offset), offset)

    def view(self, b: int, start, sizes, offset):
        """Input under outputs [start, start + sizes) of batch b, for the tap at spatial
        `offset` (dilation already applied)."""
        if not self.split:
            return self.xp[(b,) + tuple(slice(st + o, st + o + sz)
                                        for st, sz, o in zip(start, sizes, offset, strict=True))]
        phase = tuple(o % s for o, s in zip(offset, self.strides, strict=True))
        arr = self._phases.get(phase)
        if arr is None:
            arr = np.ascontiguousarray(self.xp[(slice(None),) + tuple(
                slice(p, None, s) for p, s in zip(phase, self.strides, strict=True))])
            self._phases[phase] = arr
        return arr[(b,) + tuple(slice(st + o // s, st + o // s + sz) for st, sz, o, s in
                                zip(start, sizes, offset, self.strides, strict=True))]


def padded_rows(x: np.ndarray, b: int, top: int, rows: int, left: int, width: int,
                fill=0) -> np.ndarray:
    """Rows [top, top + rows) and columns [left, left + width) of image b of x (N, H, W, C),
    as a new contiguous (rows, width, C) array; what lies outside x is `fill`. A block's
    own padded copy: small enough to stay in cache, unlike a padded copy of all of x."""
    h, w = x.shape[1], x.shape[2]
    y0, y1 = max(top, 0), min(top + rows, h)
    x0, x1 = max(left, 0), min(left + width, w)
    inside = y0 == top and y1 == top + rows and x0 == left and x1 == left + width
    buf = np.empty((rows, width, x.shape[3]), x.dtype)
    if not inside:
        buf.fill(fill)
    if y1 > y0 and x1 > x0:
        buf[y0 - top:y1 - top, x0 - left:x1 - left] = x[b, y0:y1, x0:x1]
    return buf


def depthwise_channels_last(x: np.ndarray, w: np.ndarray, strides, dilations, pads,
                            out_sizes, epilogue=None) -> np.ndarray:
    """Depthwise convolution of x (N, H, W, C) with w (kh, kw, C, M): (N, oh, ow, C*M);
    `epilogue(block)` finishes each block of output rows in place, as conv's.

    A block of output rows at a time: its input rows are copied (padded, and split into
    stride phases when strided) into a buffer that stays in cache, then each tap is one
    multiply of a contiguous view by the tap's weights tiled along the row, added up."""
    n, c = x.shape[0], x.shape[-1]
    kh, kw, _, m = w.shape
    oh, ow = out_sizes
    out = np.empty((n, oh, ow, c * m), np.result_type(x, w))
    if out.size == 0 or x.size == 0 or w.size == 0:
        out.fill(0)
        if epilogue is not None:
            epilogue(out)
        return out
    if _COMPILED_DEPTHWISE and x.dtype == w.dtype and x.dtype in _JIT_TYPES:
        return _depthwise_compiled(x, w, out, strides, dilations, pads, epilogue)
    sh, sw = strides
    dh, dw = dilations
    cm = c * m
    wk = w.reshape(kh, kw, cm)
    if m > 1:
        x = np.repeat(x, m, axis=-1)  # output channel c*M+m reads input channel c
    # Each tap's weights tiled along a whole output row, so that a row of the product is
    # one contiguous run.
    wrow = np.ascontiguousarray(np.broadcast_to(wk[:, :, None, :], (kh, kw, ow, cm)))
    row_bytes = ow * cm * out.itemsize
    rows_per_block = max(1, _DW_BLOCK_BYTES // max(1, row_bytes))
    width = (ow - 1) * sw + (kw - 1) * dw + 1
    (top, _), (left, _) = pads
    offsets = [(i * dh, j * dw) for i in range(kh) for j in range(kw)]

    def block(item):
        b, r0 = item
        r = min(rows_per_block, oh - r0)
        rows = (r - 1) * sh + (kh - 1) * dh + 1
        src = padded_rows(x, b, r0 * sh - top, rows, -left, width)
        taps = TapViews(src[None], strides)
        acc = out[b, r0:r0 + r]
        tmp = np.empty_like(acc)
        for k, offset in enumerate(offsets):
            view = taps.view(0, (0, 0), (r, ow), offset)
            i, j = divmod(k, kw)
            if k == 0:
                np.multiply(view, wrow[i, j], out=acc)
            else:
                np.multiply(view, wrow[i, j], out=tmp)
                acc += tmp
        if epilogue is not None:
            epilogue(acc)

    parallel_blocks([(b, r0) for b in range(n) for r0 in range(0, oh, rows_per_block)], block,
                    0 if n == 1 else out.size * kh * kw, intra_op_threads())
    return out


_JIT_TYPES = (np.dtype(np.float32), np.dtype(np.float64))
_COMPILED_DEPTHWISE = depthwise_jit.available()


def _depthwise_compiled(x, w, out, strides, dilations, pads, epilogue) -> np.ndarray:
    """depthwise_channels_last through the compiled loop: blocks of output rows, shared
    with helper threads (the loop releases the GIL)."""
    n, oh, ow, cm = out.shape
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    (sh, sw), (dh, dw) = strides, dilations
    (top, _), (left, _) = pads
    rows_per_block = max(1, _DW_BLOCK_BYTES // max(1, ow * cm * out.itemsize))
    wrow = depthwise_jit.row_weights(w, ow) if sw == 1 else None

    def block(item):
        b, r0 = item
        r1 = min(r0 + rows_per_block, oh)
        depthwise_jit.depthwise_rows(x, w, out, b, r0, r1, sh, sw, dh, dw, top, left, wrow)
        if epilogue is not None:
            epilogue(out[b, r0:r1])

    # One image stays on this thread, as the NumPy path's: the compiled loop takes 0.1-0.4
    # ms an image, and a helper preempted mid-block on a busy machine would stall the call
    # by a scheduler time slice (measured: 0.26 ms alone, 0.28-0.33 shared, at load 5).
    parallel_blocks([(b, r0) for b in range(n) for r0 in range(0, oh, rows_per_block)], block,
                    0 if n == 1 else out.size * w.shape[0] * w.shape[1], intra_op_threads())
    return out


# -- attribute checks ----------------------------------------------------------------------------

class _ConvBase(OpKernel):
    """What Conv2D, Conv3D, DepthwiseConv2dNative and Conv2DBackpropInput share: attrs
    read and checked at construction, as TF's kernels do."""

    expensive = None
    uses_blas = True
    compilable = True
    num_spatial = 2
    formats = ("NHWC", "NCHW")
    #: Whether the op's padding may come from the private FOLDED_PADDINGS attr (the fused
    #: depthwise convolution's: TF's OpDef has no explicit_paddings).
    reads_folded_paddings = False

    def __init__(self, ctx):
        super().__init__(ctx)
        dtype = ctx.get_attr("T")
        self._np_type = dtype.as_numpy_dtype
        self._compute_type = compute_type(dtype)
        fmt = attr_str(ctx, "data_format", self.formats[0])
        if fmt not in self.formats:
            raise invalid("Invalid data format")
        self._channels_first = fmt == self.formats[1]
        self._padding = attr_str(ctx, "padding", "VALID")
        nd = self.num_spatial
        rank = nd + 2
        strides = list(ctx.get_attr("strides"))
        dilations = list(ctx.get_attr("dilations", [1] * rank))
        self._explicit = list(ctx.get_attr("explicit_paddings", []))
        folded = ctx.get_attr(FOLDED_PADDINGS, None) if self.reads_folded_paddings else None
        if folded is not None and self._padding == "VALID" and not self._explicit:
            self._padding, self._explicit = "EXPLICIT", list(folded)  # (a Pad folded in)
        self.check_attrs(strides, dilations)
        # Reorder to channels-last: (N, *spatial, C).
        if self._channels_first:
            strides = [strides[0]] + strides[2:] + [strides[1]]
            dilations = [dilations[0]] + dilations[2:] + [dilations[1]]
        self._strides = tuple(strides[1:-1])
        self._dilations = tuple(dilations[1:-1])
        if self._padding == "EXPLICIT":
            pairs = [self._explicit[2 * i:2 * i + 2] for i in range(rank)]
            if self._channels_first:
                pairs = [pairs[0]] + pairs[2:] + [pairs[1]]
            self._explicit_pairs = [tuple(p) for p in pairs[1:-1]]
        else:
            self._explicit_pairs = [(0, 0)] * nd

    def check_attrs(self, strides, dilations) -> None:
        raise NotImplementedError

    def check_explicit_paddings(self) -> None:
        """TF's CheckValidPadding (framework/padding.py)."""
        message = explicit_paddings_error(self._padding, self._explicit,
                                          self.num_spatial + 2, self._channels_first)
        if message is not None:
            raise invalid(message)

    def is_expensive(self, inputs: list) -> bool:
        x, w = inputs[-2], inputs[-1]
        return np.size(x) * (np.size(w) // max(1, np.shape(w)[-1] if np.ndim(w) else 1)) \
            > POOL_FLOPS

    def _out_geometry(self, in_sizes, ksizes):
        outs, pads = [], []
        for size, k, d, st, (b, a) in zip(in_sizes, ksizes, self._dilations, self._strides,
                                          self._explicit_pairs, strict=True):
            out, before, after = windowed_output_size(size, k, d, st, self._padding, b, a)
            outs.append(out)
            pads.append((before, after))
        return outs, pads

    def _cast_in(self, *arrays):
        ct = self._compute_type
        return [a if a.dtype == ct else a.astype(ct) for a in arrays]

    def _cast_out(self, y):
        return y if y.dtype == self._np_type else y.astype(self._np_type)


def _check_conv_strides_dilations(strides, dilations, fmt_first: bool, rank: int,
                                  kind: str = "") -> None:
    """Conv2D/Conv3D-style stride and dilation checks (TF's InitConv2DParameters)."""
    c = 1 if fmt_first else rank - 1
    if rank == 4:
        if len(strides) != 4:
            raise invalid("Sliding window strides field must specify 4 dimensions")
        if len(dilations) != 4:
            raise invalid("Sliding window dilations field must specify 4 dimensions")
        if strides[0] != 1 or strides[c] != 1:
            raise unimplemented("Current implementation does not yet support strides in the "
                                "batch and depth dimensions.")
        if dilations[0] != 1 or dilations[c] != 1:
            raise unimplemented("Current implementation does not yet support dilations in "
                                "the batch and depth dimensions.")
        sp = [d for i, d in enumerate(strides) if i not in (0, c)]
        dl = [d for i, d in enumerate(dilations) if i not in (0, c)]
        if any(s <= 0 for s in sp):
            raise invalid("Row and column strides should be larger than 0.")
        if any(d <= 0 for d in dl):
            raise invalid("Dilated rates should be larger than 0.")
    else:
        if len(strides) != 5:
            raise invalid("Sliding window strides field must specify 5 dimensions")
        if strides[0] != 1 or strides[c] != 1:
            raise invalid("Current implementation does not yet support strides in the batch "
                          "and depth dimensions.")
        if any(s <= 0 for i, s in enumerate(strides) if i not in (0, c)):
            raise invalid("Spatial strides should be larger than 0.")
        if len(dilations) != 5:
            raise invalid("Dilation rates field must specify 5 dimensions")
        if dilations[0] != 1 or dilations[c] != 1:
            raise invalid("Current implementation does not yet support dilation rates in "
                          "the batch and depth dimensions.")
        if any(d <= 0 for i, d in enumerate(dilations) if i not in (0, c)):
            raise invalid("Dilated rates should be larger than 0.")


@register_kernel("Conv2D", "CPU", T=_CONV_TYPES)
class Conv2DOp(_ConvBase):
    """output = conv(input, filter), filter (kh, kw, in/groups, out)."""

    def check_attrs(self, strides, dilations):
        _check_conv_strides_dilations(strides, dilations, self._channels_first, 4)
        self.check_explicit_paddings()

    def compute(self, ctx, inputs):
        x, w = inputs[0], inputs[1]
        if x.ndim != 4:
            raise invalid(f"convolution input must be 4-dimensional: {shape_str(x.shape)}")
        if w.ndim != 4:
            raise invalid(f"convolution filter must be 4-dimensional: {shape_str(w.shape)}")
        for i in range(3):
            if w.shape[i] > 2**31 - 1:
                raise invalid("filter too large")
        if self._channels_first:
            x = to_channels_last(x)
        c = x.shape[-1]
        fc = w.shape[2]
        if fc == 0 or c % fc:
            if fc == 0:
                raise invalid(f"filter depth must be stricly positive, got {fc}")
            raise invalid(f"input depth must be evenly divisible by filter depth: {c} vs {fc}")
        groups = c // fc
        if w.shape[3] % groups:
            raise invalid(f"output depth must be evenly divisible by number of groups: "
                          f"{w.shape[3]} vs {groups}")
        outs, pads = self._out_geometry(x.shape[1:3], w.shape[:2])
        xc, wc = self._cast_in(x, w)
        y = self._cast_out(self.convolve(inputs, xc, wc, pads, outs))
        return (to_channels_first(y) if self._channels_first else y,)

    def convolve(self, inputs, x, w, pads, out_sizes):
        """The (fused) convolution of checked channels-last x (N, H, W, C) and w in the
        compute type (a backend's kernel overrides this: aioflow/kernels/onednn/)."""
        return grouped_conv(x, w, self._strides, self._dilations, pads, out_sizes,
                            self.epilogue(inputs, w.shape[3]))

    def epilogue(self, inputs, channels: int):
        """What finishes each block of output in place (None: nothing; fused kernels)."""
        return None


@register_kernel("Conv3D", "CPU", T=_CONV3D_TYPES)
class Conv3DOp(_ConvBase):
    """output = conv3d(input, filter), filter (kd, kh, kw, in, out)."""

    num_spatial = 3
    formats = ("NDHWC", "NCDHW")

    def check_attrs(self, strides, dilations):
        _check_conv_strides_dilations(strides, dilations, self._channels_first, 5)

    def compute(self, ctx, inputs):
        x, w = inputs
        if x.ndim != 5:
            raise invalid("input must be 5-dimensional")
        if w.ndim != 5:
            raise invalid(f"filter must be 5-dimensional: {shape_str(w.shape)}")
        if self._channels_first:
            x = to_channels_last(x)
        c, fc = x.shape[-1], w.shape[3]
        if fc == 0:
            raise invalid(f"filter_depth must be non-zero, got {fc}")
        if c % fc:
            raise invalid(f"Input depth must be evenly divisible by filter depth: {c} vs {fc}")
        if c != fc:
            raise unimplemented("Grouped convolutions are not supported on CPU.")
        outs, pads = self._out_geometry(x.shape[1:4], w.shape[:3])
        xc, wc = self._cast_in(x, w)
        y = self._cast_out(self.convolve(inputs, xc, wc, pads, outs))
        return (to_channels_first(y) if self._channels_first else y,)

    def convolve(self, inputs, x, w, pads, out_sizes):
        """The convolution of checked channels-last x (N, D, H, W, C) and w in the compute
        type (a backend's kernel overrides this: aioflow/kernels/onednn/)."""
        return conv_channels_last(x, w, self._strides, self._dilations, pads, out_sizes)


@register_kernel("DepthwiseConv2dNative", "CPU", T=_CONV3D_TYPES)
class DepthwiseConv2dNativeOp(_ConvBase):
    """Each input channel convolved with its own channel_multiplier filters."""

    compilable = True
    uses_blas = False

    def check_attrs(self, strides, dilations):
        if len(strides) != 4:
            raise invalid("Sliding window strides field must specify 4 dimensions")
        c = 1 if self._channels_first else 3
        if strides[0] != 1 or strides[c] != 1:
            raise invalid("Current implementation does not yet support strides in the batch "
                          "and depth dimensions.")
        sp = [strides[i] for i in range(4) if i not in (0, c)]
        if sp[0] != sp[1]:
            raise invalid("Current implementation only supports equal length strides in the "
                          "row and column dimensions.")
        if len(dilations) != 4:
            raise invalid("Sliding window dilations field must specify 4 dimensions")
        if dilations[0] != 1 or dilations[c] != 1:
            raise invalid("Current implementation does not yet support dilations in the "
                          "batch and depth dimensions.")
        self.check_explicit_paddings()

    def is_expensive(self, inputs: list) -> bool:
        x, w = inputs[0], inputs[1]
        if _COMPILED_DEPTHWISE and np.ndim(w) == 4 and not depthwise_jit.ready(
                w.shape[3], self._strides[1]):
            return True  # a first call compiles: not on the event loop
        return np.size(x) * max(1, np.size(w) // max(1, np.shape(w)[2] if np.ndim(w) > 2
                                                      else 1)) > POOL_FLOPS

    def compute(self, ctx, inputs):
        x, w = inputs[0], inputs[1]
        if x.ndim != 4:
            raise invalid(f"input must be 4-dimensional{shape_str(x.shape)}")
        if w.ndim != 4:
            raise invalid(f"filter must be 4-dimensional: {shape_str(w.shape)}")
        if self._channels_first:
            x = to_channels_last(x)
        c = x.shape[-1]
        if c != w.shape[2]:
            raise invalid(f"input and filter must have the same depth: {c} vs {w.shape[2]}")
        outs, pads = self._out_geometry(x.shape[1:3], w.shape[:2])
        xc, wc = self._cast_in(x, w)
        y = self._cast_out(self.convolve(inputs, xc, wc, pads, outs))
        return (to_channels_first(y) if self._channels_first else y,)

    def convolve(self, inputs, x, w, pads, out_sizes):
        """The (fused) depthwise convolution of checked channels-last x and w (kh, kw, C,
        M) in the compute type (a backend's kernel overrides this)."""
        return depthwise_channels_last(x, w, self._strides, self._dilations, pads, out_sizes,
                                       self.epilogue(inputs, w.shape[2] * w.shape[3]))

    def epilogue(self, inputs, channels: int):
        """What finishes each block of output in place (None: nothing; fused kernels)."""
        return None
