"""CPU kernels (NumPy) for the convolutions' gradients: Conv2DBackpropFilter,
DepthwiseConv2dNativeBackpropInput/Filter, Conv3DBackpropInputV2/FilterV2 and the
deprecated Conv3DBackpropInput/Filter, and Conv2DBackpropInput (the transposed
convolution), with TF 2.21's checks and messages.

Algorithms:

* The filter gradient is the patch matrix transposed times out_backprop: the input's
  im2col patches (conv_kernels' window views of the padded input), a block of output
  rows at a time (the copy stays in cache), each block's ``cols.T @ dy`` added into a
  per-thread (K, O) accumulator; the blocks are shared among the kernel's own threads
  (BLAS single-threaded, intra_op_threads.own_threads) and the accumulators summed. 1x1
  windows use the (strided, cropped) input itself as the patch matrix. Patch rows of a
  few elements (kw*C <= 12: the RGB input layer) are copied K-major instead. In 3-D,
  each input depth plane's 2-D patches are copied once and multiplied by the
  out_backprop planes of every depth tap that reads the plane, in one wider GEMM.
* The depthwise gradients, with numba (kernels/jit.py): the stride-1 input gradient of
  channel multiplier 1 is the forward depthwise convolution of out_backprop with the
  filter flipped (conv_kernels.depthwise_channels_last); the others are one compiled
  pass over each block of rows (kernels/nn/depthwise_grad_jit.py), the column-stride-1
  filter gradient of channel multiplier 1 keeping each output pixel's tap products
  apart and summing the pixels at the end. Without numba: kh*kw multiply-adds of
  shifted (strided) views, one per tap.
* The input gradient (the transposed convolution) is itself a forward convolution
  (conv_kernels.conv_channels_last: blocked im2col + GEMM, threaded): with stride 1, of
  out_backprop padded by (k-1)*d - pad before, with the filter flipped in space and its
  in/out channels swapped; with a stride s > 1, one such stride-1 convolution per stride
  phase of the input (the rows r, r+s, r+2s, ... receive only the taps congruent to
  r + pad mod s), written into the phase's strided view. Strides and dilations both
  above 1 (which TF's CPU only runs through oneDNN) scatter the GEMM's columns instead.

NCHW/NCDHW run channels-last, as TF's CPU graphs do (oneDNN or its layout pass):
transposed in, computed, transposed back. half/bfloat16 compute in float32 and round
once. Which attribute combinations TF's CPU refuses (EXPLICIT padding with NCHW or with
dilations) it refuses here too, with its messages.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.intra_op_threads import own_threads
from aioflow.framework.op_kernel import register_kernel
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.nn import depthwise_grad_jit
from aioflow.kernels.nn.conv_kernels import (
    _K_MAJOR_RUN,
    PARALLEL_WORK,
    POOL_FLOPS,
    _ConvBase,
    _window_view,
    _window_view_k_major,
    conv_channels_last,
    crop_spatial,
    depthwise_channels_last,
    intra_op_threads,
    invalid,
    pad_spatial,
    parallel_blocks,
    to_channels_first,
    to_channels_last,
    unimplemented,
    windowed_output_size,
)

_FLOATS = [dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64]
_CONV_TYPES = _FLOATS + [dtypes.int32]
_CONV3D_V1_TYPES = [dtypes.float16, dtypes.float32, dtypes.float64]
#: Bytes of im2col patches copied per block of the filter gradient.
_BLOCK_BYTES = 1 << 21
#: Bytes of depthwise output rows handled per block.
_DW_BLOCK_BYTES = 1 << 18
#: Multiply-adds above which a gradient's blocks are shared among threads.
_SPLIT_MACS = 1 << 22
#: Patch rows (the GEMM's inner dimension) per block of the filter gradient, at least:
#: fewer make each block's (K, O) product mostly writes (7x7 images, one at a time: 8x).
_MIN_BLOCK_ROWS = 512


# -- the filter gradient ------------------------------------------------------------------------

def conv_backprop_filter(x: np.ndarray, dy: np.ndarray, ksizes, strides, dilations,
                         pads) -> np.ndarray:
    """The gradient of a channels-last convolution with respect to its filter: x
    (N, *in, C) and dy (N, *out, O) give (*ksizes, C, O)."""
    n, c, o = x.shape[0], x.shape[-1], dy.shape[-1]
    out_sizes = dy.shape[1:-1]
    k = int(np.prod(ksizes, dtype=np.int64)) * c
    dtype = np.result_type(x, dy)
    if dy.size == 0 or x.size == 0 or k == 0:
        return np.zeros(tuple(ksizes) + (c, o), dtype)
    if all(kk == 1 for kk in ksizes):
        used = [(sz - 1) * st + 1 for sz, st in zip(out_sizes, strides, strict=True)]
        if any(b > 0 or a > 0 for b, a in pads):  # explicit padding: zeros around x
            x, pads = pad_spatial(x, pads), [(0, 0)] * len(pads)
        xs = crop_spatial(x, pads, used)
        if any(st != 1 for st in strides):
            xs = xs[(slice(None),) + tuple(slice(None, None, st) for st in strides)]
        cols = np.ascontiguousarray(xs).reshape(-1, c)
        return _sum_blocks(cols, dy.reshape(-1, o), dtype).reshape(tuple(ksizes) + (c, o))
    xp = np.ascontiguousarray(pad_spatial(x, pads))
    if len(ksizes) == 3 and ksizes[-1] * c > _K_MAJOR_RUN:
        return _filter_grad_by_planes(xp, dy, ksizes, strides, dilations, dtype)
    oh = out_sizes[0]
    per_row = int(np.prod(out_sizes[1:], dtype=np.int64))  # patch rows per output row
    k_major = ksizes[-1] * c <= _K_MAJOR_RUN
    dy_rows = dy.reshape(n, oh, per_row, o)
    if oh * per_row < _MIN_BLOCK_ROWS and not k_major:
        # Small images: whole images a block (the patch view spans several).
        step = -(-_MIN_BLOCK_ROWS // (oh * per_row))
        blocks = [(b, 0, oh, min(n, b + step)) for b in range(0, n, step)]
    else:
        rows_per_block = max(1, _BLOCK_BYTES // max(1, per_row * k * xp.itemsize),
                             -(-_MIN_BLOCK_ROWS // max(1, per_row)))
        blocks = [(b, r0, min(oh, r0 + rows_per_block), b + 1) for b in range(n)
                  for r0 in range(0, oh, rows_per_block)]

    def patches(item):
        b, r0, r1, b1 = item
        if k_major:
            view = _window_view_k_major(xp, out_sizes, ksizes, strides, dilations, r0,
                                        r1 - r0, b)
            cols_t = np.empty(view.shape, xp.dtype)
            np.copyto(cols_t, view)
            return cols_t.reshape(k, -1), True
        view = _window_view(xp, out_sizes, ksizes, strides, dilations, r0, r1 - r0, b,
                            b1 - b)
        return view.reshape(-1, k), False

    def dy_block(item):
        b, r0, r1, b1 = item
        return dy_rows[b:b1, r0:r1].reshape(-1, o)

    dw = _accumulate(blocks, patches, dy_block, k, o, dtype, dy.size * k)
    return dw.reshape(tuple(ksizes) + (c, o))


def _filter_grad_by_planes(xp, dy, ksizes, strides, dilations, dtype) -> np.ndarray:
    """conv_backprop_filter in 3-D by input depth planes: plane z's 2-D patches P (copied
    once) serve every depth tap i whose output plane d = (z - i * dd) / sd exists, in one
    GEMM, P.T @ [dy[d] for those taps] (N = taps * O: a wider GEMM than one tap's, and a
    third of a 3-D patch matrix's copying). Images, or ranges of their planes, are shared
    among the kernel's threads, each adding into an accumulator of its own."""
    n, c, o = xp.shape[0], xp.shape[-1], dy.shape[-1]
    kd, sd, dd = ksizes[0], strides[0], dilations[0]
    od, oh, ow = dy.shape[1:4]
    k2 = int(np.prod(ksizes[1:])) * c
    planes = []  # (z, [(tap, output plane)]) for the planes some tap reads
    for z in range(xp.shape[1]):
        taps = [(i, (z - i * dd) // sd) for i in range(kd)
                if (z - i * dd) % sd == 0 and 0 <= (z - i * dd) // sd < od]
        if taps:
            planes.append((z, taps))
    with own_threads() as threads:
        split = threads > 1 and dy.size * k2 * kd > _SPLIT_MACS
        parts = min(len(planes), -(-2 * threads // n)) if split and n < 2 * threads else 1
        step = -(-len(planes) // parts)
        jobs = [(b, planes[p0:p0 + step]) for b in range(n)
                for p0 in range(0, len(planes), step)]
        workers = min(len(jobs), threads) if split else 1
        accs = [np.zeros((kd, k2, o), dtype) for _ in range(workers)]

        def run(index):
            acc = accs[index]
            for b, group in jobs[index::workers]:
                for z, taps in group:
                    view = _window_view(xp[b, z][None], (oh, ow), ksizes[1:], strides[1:],
                                        dilations[1:])
                    cols = view.reshape(-1, k2)
                    g = (dy[b, taps[0][1]].reshape(-1, o) if len(taps) == 1 else
                         np.concatenate([dy[b, d].reshape(-1, o) for _, d in taps], axis=1))
                    part = np.matmul(cols.T, g)
                    for t, (i, _) in enumerate(taps):
                        acc[i] += part[:, t * o:(t + 1) * o]

        parallel_blocks(list(range(workers)), run, PARALLEL_WORK + 1 if workers > 1 else 0,
                        workers)
    total = accs[0]
    for acc in accs[1:]:
        total += acc
    return total.reshape(tuple(ksizes) + (c, o))


def _sum_blocks(cols: np.ndarray, dy_mat: np.ndarray, dtype) -> np.ndarray:
    """cols.T @ dy_mat by blocks of rows of a patch matrix given whole (the 1x1 case)."""
    rows, k = cols.shape
    o = dy_mat.shape[1]
    step = max(_MIN_BLOCK_ROWS, _BLOCK_BYTES // max(1, k * np.dtype(dtype).itemsize))
    blocks = [(r0, min(rows, r0 + step)) for r0 in range(0, rows, step)]
    return _accumulate(blocks, lambda item: (cols[item[0]:item[1]], False),
                       lambda item: dy_mat[item[0]:item[1]], k, o, dtype, rows * k * o)


def _accumulate(blocks, patches, dy_block, k, o, dtype, macs) -> np.ndarray:
    """The sum over blocks of patches(block).T @ dy_block(block): (k, o). The blocks are
    shared among the kernel's threads, each adding into an accumulator of its own."""
    with own_threads() as threads:
        parts = min(len(blocks), threads) if threads > 1 and macs > _SPLIT_MACS else 1
        accs = [np.zeros((k, o), dtype) for _ in range(parts)]
        groups = [blocks[i::parts] for i in range(parts)]

        def run(index):
            acc = accs[index]
            tmp = np.empty((k, o), dtype)
            for item in groups[index]:
                cols, transposed = patches(item)
                a = cols if transposed else cols.T
                np.matmul(a, dy_block(item), out=tmp)
                acc += tmp

        parallel_blocks(list(range(parts)), run, PARALLEL_WORK + 1 if parts > 1 else 0,
                        parts)
    total = accs[0]
    for acc in accs[1:]:
        total += acc
    return total


# -- the input gradient (the transposed convolution) -------------------------------------------

def conv_backprop_input(dy: np.ndarray, w: np.ndarray, in_sizes, strides, dilations,
                        pads) -> np.ndarray:
    """The gradient of a channels-last convolution with respect to its input: dy
    (N, *out, O) and w (*k, C, O) give (N, *in_sizes, C)."""
    nd = len(in_sizes)
    n = dy.shape[0]
    ksizes = w.shape[:nd]
    c = w.shape[-2]
    dtype = np.result_type(dy, w)
    shape = (n,) + tuple(in_sizes) + (c,)
    if int(np.prod(shape)) == 0 or dy.size == 0 or w.size == 0:
        return np.zeros(shape, dtype)
    if all(s == 1 for s in strides):
        return _transposed_phase(dy, _flipped(w, [0] * nd, [1] * nd), tuple(in_sizes),
                                 [b for b, _ in pads], list(dilations))
    if any(d != 1 for d in dilations):
        return _transposed_scatter(dy, w, shape, strides, dilations, pads)
    dx = np.empty(shape, dtype)
    for phase in np.ndindex(*strides):
        # Input index p + s*q receives the taps t = f, f + s, ... (f = (p + pad) mod s)
        # from dy[q + c - u] for tap f + s*u, c = (p + pad - f) / s.
        index = (slice(None),) + tuple(slice(p, None, s) for p, s in
                                       zip(phase, strides, strict=True))
        target = dx[index]
        if target.size == 0:
            continue
        first = [(p + b) % s for p, (b, _), s in zip(phase, pads, strides, strict=True)]
        if any(f >= k for f, k in zip(first, ksizes, strict=True)):
            target.fill(0)  # no tap reaches this phase
            continue
        offset = [(p + b - f) // s for p, (b, _), f, s in
                  zip(phase, pads, first, strides, strict=True)]
        dx[index] = _transposed_phase(dy, _flipped(w, first, strides), target.shape[1:-1],
                                      offset, [1] * nd)
    return dx


def _flipped(w: np.ndarray, first, steps) -> np.ndarray:
    """The taps first, first + step, ... of w (*k, C, O), flipped in space, channels
    swapped: (*k', O, C), contiguous."""
    nd = len(first)
    sub = w[tuple(slice(f, None, st) for f, st in zip(first, steps, strict=True))]
    return np.ascontiguousarray(np.swapaxes(sub[(slice(None, None, -1),) * nd], -1, -2))


def _transposed_phase(dy, wf, sizes, offset, dilations) -> np.ndarray:
    """The stride-1 correlation of dy with the flipped filter wf (*k, O, C), of spatial
    `sizes`: output q reads dy[q + offset - (k - 1) * d + v * d] for flipped tap v."""
    nd = len(sizes)
    ksizes = wf.shape[:nd]
    pads = []
    for size, k, d, off, o in zip(sizes, ksizes, dilations, offset, dy.shape[1:-1],
                                  strict=True):
        before = (k - 1) * d - off
        pads.append((before, size + (k - 1) * d - o - before))
    src = dy
    if any(b < 0 or a < 0 for b, a in pads):  # dy reaches past what dx uses: crop it
        src = dy[(slice(None),) + tuple(slice(max(0, -b), o + min(0, a)) for (b, a), o in
                                        zip(pads, dy.shape[1:-1], strict=True))]
        pads = [(max(0, b), max(0, a)) for b, a in pads]
    return conv_channels_last(src, wf, [1] * nd, dilations, pads, sizes)


def _transposed_scatter(dy, w, shape, strides, dilations, pads) -> np.ndarray:
    """The transposed convolution (of output `shape`) by one GEMM (dy @ filter^T) and a
    strided add of each tap's columns into the padded result (strides and dilations
    both above 1)."""
    nd = len(shape) - 2
    ksizes = w.shape[:nd]
    c, o = w.shape[-2], w.shape[-1]
    out_sizes = dy.shape[1:-1]
    padded = [max(s + b + a, (os - 1) * st + (k - 1) * d + 1)
              for s, (b, a), os, st, k, d in zip(shape[1:-1], pads, out_sizes, strides,
                                                 ksizes, dilations, strict=True)]
    dxp = np.zeros((shape[0],) + tuple(padded) + (c,), np.result_type(dy, w))
    wmat = w.reshape(-1, c, o).transpose(2, 0, 1).reshape(o, -1)
    cols = np.matmul(dy.reshape(-1, o), wmat).reshape(dy.shape[:-1] + tuple(ksizes) + (c,))
    for tap in np.ndindex(*ksizes):
        idx = (slice(None),) + tuple(
            slice(t * d, t * d + (os - 1) * st + 1, st)
            for t, d, os, st in zip(tap, dilations, out_sizes, strides, strict=True))
        dxp[idx] += cols[(slice(None),) * (nd + 1) + tap]
    return crop_spatial(dxp, pads, shape[1:-1])


# -- depthwise gradients ------------------------------------------------------------------------

def depthwise_backprop_input(dy: np.ndarray, w: np.ndarray, in_hw, strides, pads
                             ) -> np.ndarray:
    """dx (N, H, W, C) of a depthwise convolution: dy (N, oh, ow, C*M), w (kh, kw, C, M)."""
    n, oh, ow, _ = dy.shape
    kh, kw, c, m = w.shape
    h, wd = in_hw
    dtype = np.result_type(dy, w)
    if n == 0 or c == 0 or h == 0 or wd == 0 or dy.size == 0 or w.size == 0:
        return np.zeros((n, h, wd, c), dtype)
    dy = np.ascontiguousarray(dy)
    if m == 1 and dy.dtype == w.dtype and tuple(strides) == (1, 1):
        # The forward depthwise convolution of dy with the filter flipped (compiled).
        return depthwise_channels_last(dy, np.ascontiguousarray(w[::-1, ::-1]), (1, 1),
                                       (1, 1), [(kh - 1 - pads[0][0], 0),
                                                (kw - 1 - pads[1][0], 0)], (h, wd))
    if depthwise_grad_jit.usable(dtype) and dy.dtype == w.dtype:
        out = np.empty((n, h, wd, c), dtype)
        w = np.ascontiguousarray(w).reshape(kh, kw, c * m)
        rows = max(1, _DW_BLOCK_BYTES // max(1, wd * c * out.itemsize))

        def block(item):
            b, r0, r1 = item
            depthwise_grad_jit.input_rows(dy, w, out, b, r0, r1, strides[0], strides[1],
                                          pads[0][0], pads[1][0])

        parallel_blocks([(b, r0, min(h, r0 + rows)) for b in range(n)
                         for r0 in range(0, h, rows)], block,
                        0 if n == 1 else dy.size * kh * kw, intra_op_threads())
        return out
    sh, sw = strides
    (top, _), (left, _) = pads
    ph = max(h + top, (oh - 1) * sh + kh)
    pw = max(wd + left, (ow - 1) * sw + kw)
    dxp = np.zeros((n, ph, pw, c), dtype)
    g = dy.reshape(n, oh, ow, c, m)
    tmp = np.empty((n, oh, ow, c), dtype)
    for i in range(kh):
        for j in range(kw):
            if m == 1:
                np.multiply(g[..., 0], w[i, j, :, 0], out=tmp)
            else:
                np.einsum("nhwcm,cm->nhwc", g, w[i, j], out=tmp)
            dxp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw] += tmp
    return np.ascontiguousarray(dxp[:, top:top + h, left:left + wd])


def depthwise_backprop_filter(x: np.ndarray, dy: np.ndarray, ksize, strides, pads
                              ) -> np.ndarray:
    """dw (kh, kw, C, M) of a depthwise convolution: x (N, H, W, C), dy (N, oh, ow, C*M)."""
    n, oh, ow, cm = dy.shape
    kh, kw = ksize
    c = x.shape[-1]
    m = cm // c if c else 0
    dtype = np.result_type(x, dy)
    if dy.size == 0 or x.size == 0 or m == 0:
        return np.zeros((kh, kw, c, m), dtype)
    sh, sw = strides
    (top, bottom), (left, right) = pads
    if depthwise_grad_jit.usable(dtype) and x.dtype == dy.dtype:
        x, dy = np.ascontiguousarray(x), np.ascontiguousarray(dy)
        rows = max(1, _DW_BLOCK_BYTES // max(1, ow * cm * dy.itemsize))
        blocks = [(b, r0, min(oh, r0 + rows)) for b in range(n) for r0 in range(0, oh, rows)]
        # Column stride 1: per-pixel products along whole rows, summed at the end.
        by_rows = m == 1 and sw == 1
        with own_threads() as threads:
            parts = (min(len(blocks), max(1, threads), intra_op_threads())
                     if dy.size * kh * kw > _SPLIT_MACS else 1)
            accs = [np.zeros((kh, kw, ow * c if by_rows else c * m), dtype)
                    for _ in range(parts)]

            def run(index):
                for b, r0, r1 in blocks[index::parts]:
                    if by_rows:
                        depthwise_grad_jit.filter_rows_by_pixel(x, dy, accs[index], b, r0, r1,
                                                                sh, sw, top, left)
                    else:
                        depthwise_grad_jit.filter_rows(x, dy, accs[index], b, r0, r1, sh,
                                                       sw, top, left)

            parallel_blocks(list(range(parts)), run, PARALLEL_WORK + 1 if parts > 1 else 0,
                            parts)
        total = accs[0]
        for acc in accs[1:]:
            total += acc
        if by_rows:
            total = total.reshape(kh, kw, ow, c).sum(axis=2)
        return total.reshape(kh, kw, c, m)
    ph = max(x.shape[1] + top + bottom, (oh - 1) * sh + kh)
    pw = max(x.shape[2] + left + right, (ow - 1) * sw + kw)
    xp = np.zeros((n, ph, pw, c), dtype)
    xp[:, top:top + x.shape[1], left:left + x.shape[2]] = x
    g = dy.reshape(n * oh * ow, c, m)
    dw = np.empty((kh, kw, c, m), dtype)
    for i in range(kh):
        for j in range(kw):
            view = xp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw]
            dw[i, j] = np.einsum("pc,pcm->cm", view.reshape(-1, c), g)
    return dw


# -- kernels ------------------------------------------------------------------------------------

def _sizes_vector(sizes, label: str, name: str) -> list[int]:
    """A 1-D int sizes input as a list, with TF's checks."""
    sizes = np.asarray(sizes)
    if sizes.ndim != 1:
        raise invalid(f"{label}: {name} input must be 1-dim, not {sizes.ndim}")
    values = [int(v) for v in sizes]
    for v in values:
        if v < 0:
            raise invalid(f"Dimension {v} must be >= 0")
    return values


class _BackpropBase(_ConvBase):
    """Attrs of the gradient kernels, read as _ConvBase reads them; `check_dims` runs TF's
    ConvBackpropComputeDimensions on the shapes in the op's data format."""

    label = ""

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) * 9 + np.size(inputs[2]) * 9 > POOL_FLOPS // 8

    def check_dims(self, in_shape, f_shape, dy_shape):
        """TF's ConvBackpropComputeDimensionsV2: (padding pairs, channels-last in_shape)."""
        nd = self.num_spatial
        rank = nd + 2
        label = self.label
        for name, shape in (("input", in_shape), ("filter", f_shape),
                            ("out_backprop", dy_shape)):
            if len(shape) != rank:
                raise invalid(f"{label}: {name} must be {rank}-dimensional")
        if self._channels_first:
            in_shape = [in_shape[0]] + list(in_shape[2:]) + [in_shape[1]]
            dy_shape = [dy_shape[0]] + list(dy_shape[2:]) + [dy_shape[1]]
        if in_shape[0] != dy_shape[0]:
            raise invalid(f"{label}: input and out_backprop must have the same batch size. "
                          f"Input batch: {in_shape[0]}, outbackprop batch: {dy_shape[0]}, "
                          f"batch_dim: 0")
        if f_shape[-2] <= 0:
            raise invalid(f"{label}: filter depth must be strictly greated than zero")
        if in_shape[-1] % f_shape[-2]:
            raise invalid(f"{label}: input depth must be evenly divisible by filter depth")
        if f_shape[-1] != dy_shape[-1]:
            raise invalid(f"{label}: filter and out_backprop must have the same out_depth")
        pads = []
        for i in range(nd):
            size, k, got = in_shape[1 + i], f_shape[i], dy_shape[1 + i]
            st, d = self._strides[i], self._dilations[i]
            b, a = self._explicit_pairs[i]
            want, before, after = windowed_output_size(size, k, d, st, self._padding, b, a)
            if want != got:
                dim = i + (2 if self._channels_first else 1)
                raise invalid(f"{label}: Size of out_backprop doesn't match computed: "
                              f"actual = {got}, computed = {want} spatial_dim: {dim} input: "
                              f"{size} filter: {k} output: {got} stride: {st} dilation: {d}")
            pads.append((before, after))
        return pads, list(in_shape)


def check_conv2d_grad_attrs(kernel, strides, dilations, stride_error) -> None:
    """Conv2DBackpropInput/Filter's attr checks as TF's default CPU build makes them: the
    Eigen kernel's, except that NCHW and dilations run (oneDNN) unless the padding is
    EXPLICIT; a dilation below 1 is refused as a dilation above 1 is."""
    c = 1 if kernel._channels_first else 3
    h = 2 if kernel._channels_first else 1
    explicit = kernel._padding == "EXPLICIT"
    if kernel._channels_first and explicit:
        raise invalid(f"{kernel.label}Op only supports NHWC.")
    if len(strides) != 4:
        raise invalid("Sliding window strides field must specify 4 dimensions")
    if strides[0] != 1 or strides[c] != 1:
        raise stride_error("Current implementation does not yet support strides in the "
                           "batch and depth dimensions.")
    kernel.check_explicit_paddings()
    if len(dilations) != 4:
        raise invalid("Sliding window dilations field must specify 4 dimensions")
    if dilations[0] != 1 or dilations[c] != 1:
        raise stride_error("Current implementation does not yet support dilations in the "
                           "batch and depth dimensions.")
    spatial = (dilations[h], dilations[h + 1])
    if any(d < 1 for d in spatial) or (explicit and any(d != 1 for d in spatial)):
        raise invalid("Current CPU implementations do not yet support dilation rates larger "
                      "than 1.")
    if strides[h] <= 0 or strides[h + 1] <= 0:
        raise invalid("Row and column strides should be larger than 0.")


@register_kernel("Conv2DBackpropFilter", "CPU", T=_FLOATS, host_memory=("filter_sizes",))
class Conv2DBackpropFilterOp(_BackpropBase):
    """The gradient of Conv2D with respect to its filter."""

    label = "Conv2DCustomBackpropFilter"

    def check_attrs(self, strides, dilations):
        check_conv2d_grad_attrs(self, strides, dilations, invalid)

    def compute(self, ctx, inputs):
        x, sizes, dy = inputs
        f_shape = _sizes_vector(sizes, self.label, "filter_sizes")
        pads, in_shape = self.check_dims(x.shape, f_shape, dy.shape)
        if in_shape[-1] != f_shape[2]:
            raise unimplemented("Grouped convolutions are not supported on CPU.")
        if self._channels_first:
            x, dy = to_channels_last(x), to_channels_last(dy)
        xc, dyc = self._cast_in(x, dy)
        return (self._cast_out(self.filter_grad(xc, dyc, f_shape, pads)),)

    def filter_grad(self, x, dy, f_shape, pads):
        """The filter's gradient (f_shape, HWIO) from checked channels-last x and dy in
        the compute type (a backend's kernel overrides this: aioflow/kernels/onednn/)."""
        return conv_backprop_filter(x, dy, f_shape[:2], self._strides, self._dilations, pads)


@register_kernel("Conv2DBackpropInput", "CPU", T=_CONV_TYPES, host_memory=("input_sizes",))
class Conv2DBackpropInputOp(_BackpropBase):
    """The gradient of Conv2D with respect to its input (a transposed convolution)."""

    label = "Conv2DCustomBackpropInput"

    def check_attrs(self, strides, dilations):
        check_conv2d_grad_attrs(self, strides, dilations, unimplemented)

    def compute(self, ctx, inputs):
        sizes, w, dy = inputs
        sizes = [int(v) for v in np.ravel(sizes)]
        if len(sizes) == 2:  # [height, width]: batch and depth come from the other inputs
            n = dy.shape[0] if dy.ndim else 0
            c = w.shape[2] if w.ndim > 2 else 0
            sizes = [n, c] + sizes if self._channels_first else [n] + sizes + [c]
        elif len(sizes) != 4:
            raise invalid(f"Conv2DBackpropInput requires input_sizes to contain 4 values or 2 "
                          f"values, but got: {len(sizes)}")
        for s in sizes:
            if s < 0:
                raise invalid(f"Dimension {s} must be >= 0")
        pads, in_shape = self.check_dims(sizes, w.shape, dy.shape)
        if in_shape[-1] != w.shape[2]:
            raise unimplemented("Grouped convolutions are not supported on CPU.")
        if self._channels_first:
            dy = to_channels_last(dy)
        dyc, wc = self._cast_in(dy, w)
        dx = self._cast_out(self.input_grad(dyc, wc, in_shape, pads))
        return (to_channels_first(dx) if self._channels_first else np.ascontiguousarray(dx),)

    def input_grad(self, dy, w, in_shape, pads):
        """The input's gradient (in_shape, channels-last) from checked channels-last dy and
        w in the compute type (a backend's kernel overrides this)."""
        return conv_backprop_input(dy, w, in_shape[1:3], self._strides, self._dilations, pads)


class _DepthwiseBackpropBase(_BackpropBase):
    """DepthwiseConv2dNativeBackpropInput/Filter's checks (TF's depthwise_conv_grad_op)."""

    uses_blas = False

    def check_attrs(self, strides, dilations):
        if len(strides) != 4:
            raise invalid("Sliding window strides field must specify 4 dimensions")
        c = 1 if self._channels_first else 3
        h = 2 if self._channels_first else 1
        if strides[0] != 1 or strides[c] != 1:
            raise invalid("Current implementation does not yet support strides in the batch "
                          "and depth dimensions.")
        if strides[h] != strides[h + 1]:
            raise invalid("Current implementation only supports equal length strides in the "
                          "row and column dimensions.")
        self.check_explicit_paddings()

    def depthwise_dims(self, in_shape, f_shape, dy_shape):
        """TF's depthwise shape checks: (padding pairs, channels-last input shape)."""
        label = self.label
        for name, shape in (("input", in_shape), ("filter", f_shape),
                            ("out_backprop", dy_shape)):
            if len(shape) != 4:
                raise invalid(f"{label}: {name} must be 4-dimensional")
        if in_shape[0] != dy_shape[0]:
            raise invalid(f"{label}: input and out_backprop must have the same batch size")
        if self._channels_first:
            in_shape = [in_shape[0], in_shape[2], in_shape[3], in_shape[1]]
            dy_shape = [dy_shape[0], dy_shape[2], dy_shape[3], dy_shape[1]]
        c = in_shape[3]
        if c != f_shape[2]:
            raise invalid(f"{label}: input and filter must have the same in_depth")
        if f_shape[3] * c != dy_shape[3]:
            raise invalid(f"{label}: depth_multiplier * in_depth not equal to out_depth")
        pads = []
        for i, what in enumerate(("rows", "cols")):
            b, a = self._explicit_pairs[i]
            want, before, after = windowed_output_size(in_shape[1 + i], f_shape[i], 1,
                                                       self._strides[i], self._padding, b, a)
            if want != dy_shape[1 + i]:
                raise invalid(f"{label}: Number of {what} of out_backprop doesn't match "
                              f"computed: actual = {dy_shape[1 + i]}, computed = {want}")
            pads.append((before, after))
        return pads, in_shape


@register_kernel("DepthwiseConv2dNativeBackpropInput", "CPU", T=_FLOATS,
                 host_memory=("input_sizes",))
class DepthwiseConv2dNativeBackpropInputOp(_DepthwiseBackpropBase):
    """The gradient of DepthwiseConv2dNative with respect to its input."""

    label = "DepthwiseConv2DBackpropInput"

    def compute(self, ctx, inputs):
        sizes, w, dy = inputs
        in_shape = _sizes_vector(sizes, self.label, "input_sizes")
        pads, in_shape = self.depthwise_dims(in_shape, w.shape, dy.shape)
        if self._channels_first:
            dy = to_channels_last(dy)
        dyc, wc = self._cast_in(dy, w)
        dx = self._cast_out(self.input_grad(dyc, wc, in_shape, pads))
        return (to_channels_first(dx) if self._channels_first else dx,)

    def input_grad(self, dy, w, in_shape, pads):
        """The input's gradient (in_shape, channels-last) from checked channels-last dy and
        w in the compute type (a backend's kernel overrides this)."""
        return depthwise_backprop_input(dy, w, in_shape[1:3], self._strides, pads)


@register_kernel("DepthwiseConv2dNativeBackpropFilter", "CPU", T=_FLOATS,
                 host_memory=("filter_sizes",))
class DepthwiseConv2dNativeBackpropFilterOp(_DepthwiseBackpropBase):
    """The gradient of DepthwiseConv2dNative with respect to its filter."""

    label = "DepthwiseConv2DBackpropFilter"

    def compute(self, ctx, inputs):
        x, sizes, dy = inputs
        f_shape = _sizes_vector(sizes, self.label, "filter_sizes")
        pads, _ = self.depthwise_dims(x.shape, f_shape, dy.shape)
        if self._channels_first:
            x, dy = to_channels_last(x), to_channels_last(dy)
        xc, dyc = self._cast_in(x, dy)
        return (self._cast_out(self.filter_grad(xc, dyc, f_shape, pads)),)

    def filter_grad(self, x, dy, f_shape, pads):
        """The filter's gradient (f_shape) from checked channels-last x and dy in the
        compute type (a backend's kernel overrides this)."""
        return depthwise_backprop_filter(x, dy, f_shape[:2], self._strides, pads)


class _Conv3DBackpropBase(_BackpropBase):
    """The Conv3D gradients' checks (TF's conv_grad_ops_3d; NCDHW and dilations run as
    TF's default build runs them, through oneDNN)."""

    num_spatial = 3
    formats = ("NDHWC", "NCDHW")
    v1 = False

    def check_attrs(self, strides, dilations):
        c = 1 if self._channels_first else 4
        if len(dilations) != 5:
            raise invalid("Dilation rates field must specify 5 dimensions")
        if dilations[0] != 1 or dilations[c] != 1:
            raise invalid("Current implementation does not yet support dilation rates in "
                          "the batch and depth dimensions.")
        if len(strides) != 5:
            raise invalid("Sliding window strides field must specify 5 dimensions")
        if strides[0] != 1 or strides[c] != 1:
            raise invalid("Current implementation does not yet support strides in the batch "
                          "and depth dimensions.")
        if any(s <= 0 for i, s in enumerate(strides) if i not in (0, c)):
            raise invalid("Spatial strides should be larger than 0.")

    def channel_checks(self, in_shape, f_shape, dy_shape):
        for name, shape in (("input", in_shape), ("filter_sizes", f_shape),
                            ("out_backprop", dy_shape)):
            if len(shape) != 5:
                raise invalid(f"{name} tensor must have 5 dimensions")
        ci = 1 if self._channels_first else 4
        if in_shape[ci] != f_shape[3]:
            raise invalid(f"input and filter_sizes must have the same number of channels. "
                          f"Got {in_shape[ci]} for input and {f_shape[3]} for filter_sizes")
        if dy_shape[ci] != f_shape[4]:
            raise invalid(f"out_backprop and filter_sizes must have the same number of "
                          f"channels. Got {dy_shape[ci]} for out_backprop and {f_shape[4]} "
                          f"for filter_sizes")


def _shape_of(sizes) -> list[int]:
    """A shape from a 1-D int32/int64 tensor (TF's tensor::MakeShape)."""
    sizes = np.asarray(sizes)
    if sizes.ndim != 1:
        raise invalid(f"shape must be a vector of {{int32,int64}}, got shape "
                      f"{shape_str(sizes.shape)}")
    values = [int(v) for v in sizes]
    for v in values:
        if v < 0:
            raise invalid(f"Dimension {v} must be >= 0")
    return values


@register_kernel("Conv3DBackpropInputV2", "CPU", T=_FLOATS, host_memory=("input_sizes",))
class Conv3DBackpropInputV2Op(_Conv3DBackpropBase):
    """The gradient of Conv3D with respect to its input, given the input's shape."""

    label = "Conv3DBackpropInputOp"

    def input_shape(self, first) -> list[int]:
        return _shape_of(first)

    def compute(self, ctx, inputs):
        first, w, dy = inputs
        in_shape = self.input_shape(first)
        self.channel_checks(in_shape, w.shape, dy.shape)
        pads, in_shape = self.check_dims(in_shape, w.shape, dy.shape)
        if self._channels_first:
            dy = to_channels_last(dy)
        dyc, wc = self._cast_in(dy, w)
        dx = self._cast_out(self.input_grad(dyc, wc, in_shape, pads))
        return (to_channels_first(dx) if self._channels_first else np.ascontiguousarray(dx),)

    def input_grad(self, dy, w, in_shape, pads):
        """The input's gradient (in_shape, channels-last) from checked channels-last dy and
        w in the compute type (a backend's kernel overrides this)."""
        return conv_backprop_input(dy, w, in_shape[1:4], self._strides, self._dilations,
                                   pads)


@register_kernel("Conv3DBackpropFilterV2", "CPU", T=_FLOATS, host_memory=("filter_sizes",))
class Conv3DBackpropFilterV2Op(_Conv3DBackpropBase):
    """The gradient of Conv3D with respect to its filter, given the filter's shape."""

    label = "Conv3DBackpropFilterOp"

    def filter_shape(self, second) -> list[int]:
        return _shape_of(second)

    def compute(self, ctx, inputs):
        x, second, dy = inputs
        f_shape = self.filter_shape(second)
        self.channel_checks(x.shape, f_shape, dy.shape)
        pads, _ = self.check_dims(x.shape, f_shape, dy.shape)
        if self._channels_first:
            x, dy = to_channels_last(x), to_channels_last(dy)
        xc, dyc = self._cast_in(x, dy)
        return (self._cast_out(self.filter_grad(xc, dyc, f_shape, pads)),)

    def filter_grad(self, x, dy, f_shape, pads):
        """The filter's gradient (f_shape, DHWIO) from checked channels-last x and dy in
        the compute type (a backend's kernel overrides this)."""
        return conv_backprop_filter(x, dy, f_shape[:3], self._strides, self._dilations, pads)


@register_kernel("Conv3DBackpropInput", "CPU", T=_CONV3D_V1_TYPES)
class Conv3DBackpropInputOp(Conv3DBackpropInputV2Op):
    """The deprecated Conv3DBackpropInput: the input itself instead of its shape."""

    def input_shape(self, first) -> list[int]:
        return list(first.shape)


@register_kernel("Conv3DBackpropFilter", "CPU", T=_CONV3D_V1_TYPES)
class Conv3DBackpropFilterOp(Conv3DBackpropFilterV2Op):
    """The deprecated Conv3DBackpropFilter: the filter itself instead of its shape."""

    def filter_shape(self, second) -> list[int]:
        return list(second.shape)
