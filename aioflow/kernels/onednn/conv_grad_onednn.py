"""Conv2DBackpropInput, Conv2DBackpropFilter, the depthwise ones
(DepthwiseConv2dNativeBackpropInput/Filter, as grouped convolutions) and the 3-D ones
(Conv3DBackpropInput/Filter and their V2) on oneDNN's convolution backward primitives
(backward data, backward weights), float32.

The NumPy kernels (aioflow/kernels/nn/conv_grad_kernels.py) check the sizes and attrs with
TF's messages and hand checked channels-last tensors to `input_grad` / `filter_grad`;
these kernels override them. Each backward primitive is made with the hint of the
forward one of the same geometry (oneDNN asks for it); tensors are described as they lie
(NHWC, HWIO), the filter of backward data in the layout oneDNN chooses (reordered once
for a read-only filter, as conv_onednn's), the filter gradient computed in the layout
oneDNN chooses and reordered into HWIO (DHWIO). The input gradient of fewer than
PLANAR_BELOW input channels is computed channels first (oneDNN's GEMM route, which does
not pad the channels to 16): out_backprop reordered in, the gradient reordered out.
Primitives are cached by geometry and threads. Other types, empty tensors and grouped
convolutions run the NumPy code.

Threads: from batch_split.SPLIT_WORK multiply-adds (about 0.6 ms of one thread's work)
a call's batch is cut into chunks of single-threaded primitives, run by the calling
thread and helper threads as they get to them (batch_split.py), when backend.team's
budget gives it more than one thread: the filter gradient sums the chunks' partial
filters. An OpenMP team (a batch of one, from TEAM_WORK) meets at barriers, so it runs
only as fast as its slower thread's share of a core: on two cores shared with the
step's other kernels, the event loop or another process, one of them waits for a core
(a small CNN's backward-weights primitives took 1-8 ms on a team of two against
0.07-0.25 ms on one thread at load 6). A chunk nobody has started is the caller's, so a
helper that gets no core costs the call little; on a quiet machine the call runs on
both cores, as TF runs its gradients on its two intra-op threads.

Where they run: as the forward convolutions (backend.LoopOrThread), by their
multiply-adds (`work`), with the training limit: up to backend.TRAINING_INLINE_WORK
inline on the event loop (each gradient notes its geometry, `backend.note_trained`, so
the step's forward convolution of it stays inline too), above it on the executor's pool.
A call that splits its batch (`split_call`) keeps both cores busy itself, its chunks
shared with the warm helper, so it is not worth a pool thread: a layer's input and
filter gradients run one after the other on the loop, each on both cores; smaller ones
go side by side, one to a pool thread and the last on the loop (the executor's branch
rule). Every hand-off to a pool thread and back wakes a sleeping thread, 50-300 µs on an
idle vCPU (docs/performance.md): on benchmarks/gradients_peer.py's conv step (302 M
multiply-add forward convolution and gradients) the step's voluntary context switches
fell from 26-34 to 9-15 (real-time the step 0-4% faster; against TF 1.55x -> 1.20x,
medians of five runs at load 1.5-3.3; helper convstep). The old rule before that (the NumPy
kernels' input sizes, then the learned cost) sent every gradient to the pool.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.kernels.nn.conv_grad_kernels import (
    Conv2DBackpropFilterOp,
    Conv2DBackpropInputOp,
    Conv3DBackpropFilterOp,
    Conv3DBackpropFilterV2Op,
    Conv3DBackpropInputOp,
    Conv3DBackpropInputV2Op,
    DepthwiseConv2dNativeBackpropFilterOp,
    DepthwiseConv2dNativeBackpropInputOp,
)
from aioflow.kernels.onednn import backend
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import LoopOrThread, onednn_kernel, team
from aioflow.kernels.onednn.batch_split import run_chunks, split_team, splits
from aioflow.kernels.onednn.conv_onednn import (
    _dhwio_desc,
    channels_last_order,
    depthwise_filter_desc,
    hwio_filter_desc,
)
from aioflow.kernels.onednn.primitives import (
    MemoryDesc,
    Primitive,
    PrimitiveCache,
    PrimitiveDesc,
    WeightsCache,
    array_desc,
    engine,
    reorder,
    set_threads,
    user_scratchpad,
)

_CACHE = PrimitiveCache()
#: Input channels below which Conv2D/Conv3D's input gradient is computed channels first:
#: oneDNN's channels-last backward data pads the channels to a vector of 16 (0.55 ms for
#: one channel of a 32x28x28x16 out_backprop, as much as for 16), its channels-first
#: GEMM route does not (0.17 ms, plus 0.04 ms to reorder out_backprop; the kernel's
#: fastest calls 0.23-0.31 against 0.57-0.69 ms; 3 channels of 16x32x32x32 0.60-0.65
#: against 0.83-0.84 ms; a 4x8x28x28x1 Conv3D 0.55-0.61 against 1.6-1.8 ms).
PLANAR_BELOW = 4
#: Output positions (batch x output spatial) from which a filter gradient is split: each
#: chunk computes a whole partial filter and the partials are summed, which costs as
#: much as the chunk's own work where a large filter has few positions (ResNet50's
#: 3x3x512x512 at 7x7, batch 8: 392 positions, 25% more CPU split into 4 chunks).
FILTER_SPLIT_POSITIONS = 4096
#: Multiply-adds from which a backward primitive of a batch of one (not split) runs on
#: an OpenMP team (below: on the calling thread; about 1.5 ms of one thread's work).
TEAM_WORK = 1 << 27


def grad_team(work: int) -> team:
    """backend.team for a backward primitive of `work` multiply-adds: one thread below
    TEAM_WORK."""
    return team(work if work >= TEAM_WORK else 0)


def _forward_hint(src_md, w_md, dst_md, geometry) -> PrimitiveDesc:
    eng = engine()
    strides, dilates, pad_l, pad_r = geometry
    return PrimitiveDesc(lambda pd: api._lib.dnnl_convolution_forward_primitive_desc_create(
        pd, eng, api.FORWARD_TRAINING, api.CONVOLUTION_DIRECT, src_md.handle, w_md.handle,
        None, dst_md.handle, strides, dilates, pad_l, pad_r, None),
        "dnnl_convolution_forward_primitive_desc_create")


def _geometry(strides, dilations, pads):
    return (api.dims(strides), api.dims([d - 1 for d in dilations]),
            api.dims([b for b, _ in pads]), api.dims([a for _, a in pads]))


def _planar_desc(shape) -> MemoryDesc:
    """A C-contiguous channels-first (N C spatial) descriptor of a channels-last shape."""
    dims = [shape[0], shape[-1], *shape[1:-1]]
    strides = [int(np.prod(dims[i + 1:])) for i in range(len(dims))]
    return MemoryDesc.strided(dims, np.float32, strides)


class BackwardDataPlan:
    """dx = conv_backward_data(dy, w) for one geometry. `planar`: computed channels
    first (the input gradient of few input channels), dy reordered in, dx out unless one
    channel (then both layouts are the same bytes)."""

    def __init__(self, dx: np.ndarray, w_desc, dy: np.ndarray, strides, dilations, pads,
                 planar: bool = False):
        order = channels_last_order(dx.ndim)
        self.dx_md = array_desc(dx, order)
        self.dy_md = array_desc(dy, order)
        w_dims, w_strides = w_desc
        self.user_w_md = MemoryDesc.strided(w_dims, np.float32, w_strides)
        any_w = MemoryDesc.tagged(w_dims, np.float32, api.FORMAT_ANY)
        self.dy_reorder = self.dx_reorder = None
        if planar:
            self.prim_dx_md, self.prim_dy_md = _planar_desc(dx.shape), _planar_desc(dy.shape)
            self.dy_reorder = reorder(self.dy_md, self.prim_dy_md)
            if dx.shape[-1] != 1:
                self.dx_reorder = reorder(self.prim_dx_md, self.dx_md)
        else:
            self.prim_dx_md, self.prim_dy_md = self.dx_md, self.dy_md
        geometry = _geometry(strides, dilations, pads)
        hint = _forward_hint(self.prim_dx_md, any_w, self.prim_dy_md, geometry)
        eng = engine()
        attr = user_scratchpad()
        self.prim = Primitive(
            lambda pd: api._lib.dnnl_convolution_backward_data_primitive_desc_create(
                pd, eng, api.CONVOLUTION_DIRECT, self.prim_dx_md.handle, any_w.handle,
                self.prim_dy_md.handle, *geometry, hint.pd, attr),
            "dnnl_convolution_backward_data_primitive_desc_create")
        self.w_md = self.prim.md(api.QUERY_WEIGHTS_MD)
        self.w_reorder = None if self.w_md == self.user_w_md else reorder(self.user_w_md,
                                                                          self.w_md)

    def run(self, dy: np.ndarray, w_arg, dx: np.ndarray) -> None:
        if self.dy_reorder is None:
            self.prim.execute([(api.ARG_DIFF_DST, self.dy_md, dy), w_arg,
                               (api.ARG_DIFF_SRC, self.dx_md, dx)])
            return
        dy_planar = np.empty(dy.size, np.float32)
        self.dy_reorder.execute([(api.ARG_FROM, self.dy_md, dy),
                                 (api.ARG_TO, self.prim_dy_md, dy_planar)])
        out = dx if self.dx_reorder is None else np.empty(dx.size, np.float32)
        self.prim.execute([(api.ARG_DIFF_DST, self.prim_dy_md, dy_planar), w_arg,
                           (api.ARG_DIFF_SRC, self.prim_dx_md, out)])
        if self.dx_reorder is not None:
            self.dx_reorder.execute([(api.ARG_FROM, self.prim_dx_md, out),
                                     (api.ARG_TO, self.dx_md, dx)])


class BackwardWeightsPlan:
    """dw = conv_backward_weights(x, dy) for one geometry, reordered into HWIO."""

    def __init__(self, x: np.ndarray, dw_desc, dy: np.ndarray, strides, dilations, pads):
        order = channels_last_order(x.ndim)
        self.x_md = array_desc(x, order)
        self.dy_md = array_desc(dy, order)
        dw_dims, dw_strides = dw_desc
        self.user_dw_md = MemoryDesc.strided(dw_dims, np.float32, dw_strides)
        any_w = MemoryDesc.tagged(dw_dims, np.float32, api.FORMAT_ANY)
        geometry = _geometry(strides, dilations, pads)
        hint = _forward_hint(self.x_md, any_w, self.dy_md, geometry)
        eng = engine()
        attr = user_scratchpad()
        self.prim = Primitive(
            lambda pd: api._lib.dnnl_convolution_backward_weights_primitive_desc_create(
                pd, eng, api.CONVOLUTION_DIRECT, self.x_md.handle, any_w.handle, None,
                self.dy_md.handle, *geometry, hint.pd, attr),
            "dnnl_convolution_backward_weights_primitive_desc_create")
        self.dw_md = self.prim.md(api.QUERY_DIFF_WEIGHTS_MD)
        self.dw_reorder = None if self.dw_md == self.user_dw_md else reorder(self.dw_md,
                                                                             self.user_dw_md)


def _runs_here(*arrays) -> bool:
    return backend.ACTIVE and all(a.dtype == np.float32 and a.size for a in arrays)


class _GradPlacement(LoopOrThread):
    """Where a convolution gradient runs: as a forward kernel (backend.LoopOrThread), a
    training step's call (inline up to backend.TRAINING_INLINE_WORK), and never worth a
    pool thread of its own when it splits its batch (`split_call`): it keeps both cores
    busy itself from the event loop, its chunks shared with the warm helper, with no
    round trip through a pool thread (a layer's two gradients then run one after the
    other, each on both cores)."""

    def training(self, inputs: list) -> bool:
        return True

    def worth_a_thread(self, inputs: list) -> bool:
        return super().worth_a_thread(inputs) and not self.split_call(inputs)

    def split_call(self, inputs: list) -> bool:
        """Whether this call's batch is cut into chunks."""
        raise NotImplementedError


class _OnednnInputGrad(_GradPlacement):
    """input_grad() on oneDNN's backward data (mixed in before the NumPy kernels); each
    call on the event loop or the executor's pool by its work (backend.LoopOrThread)."""

    #: Not through the device's BLAS gate (one BLAS-threaded kernel at a time on two
    #: cores): below TEAM_WORK a primitive runs on its calling thread alone, so the input
    #: and filter gradients of one layer run side by side on the pool's threads (they
    #: ran one after the other behind the gate), and a team comes from backend.team's
    #: budget, which never gives one where other primitives' threads hold the cores.
    uses_blas = False
    filter_desc = staticmethod(hwio_filter_desc)
    dilated = True  # TF's depthwise gradients ignore the dilations attr: False there
    #: Input channels below which the gradient is computed channels first (PLANAR_BELOW;
    #: 0 for the depthwise ones).
    planar_below = 0
    #: The filter's dimensions whose product, times out_backprop's elements, is the
    #: call's multiply-adds (the window and the input channels; a depthwise filter's
    #: window only).
    work_dims = slice(None, -1)

    def work(self, inputs: list) -> int:
        """out_backprop's elements x the filter's window and input channels."""
        try:
            return np.size(inputs[2]) * int(np.prod(np.shape(inputs[1])[self.work_dims]))
        except (TypeError, ValueError, IndexError):  # (the kernel's checks will say so)
            return 0

    def split_call(self, inputs: list) -> bool:
        """Whether this call's batch is cut into chunks (batch_split.splits)."""
        try:
            return splits(np.shape(inputs[2])[0], self.work(inputs))
        except IndexError:  # (the kernel's checks will say so)
            return False

    def _grad_dilations(self):
        return self._dilations if self.dilated else (1,) * len(self._dilations)

    def _onednn_init(self):
        self._weights = WeightsCache()

    def input_grad(self, dy, w, in_shape, pads):
        if not _runs_here(dy, w) or 0 in in_shape:
            return super().input_grad(dy, w, in_shape, pads)
        try:
            return self._input_grad(dy, w, in_shape, pads)
        except api.DnnlError:  # a geometry oneDNN does not take: the NumPy code
            return super().input_grad(dy, w, in_shape, pads)

    def _input_grad(self, dy, w, in_shape, pads):
        dilations = self._grad_dilations()
        backend.note_trained((tuple(in_shape), w.shape, self._strides, self._dilations))
        dy = np.ascontiguousarray(dy)
        dx = np.empty(in_shape, np.float32)
        w_desc = self.filter_desc(w, in_shape[-1])
        planar = self.planar_below > in_shape[-1]
        work = dy.size * int(np.prod(w.shape[:-1]))
        with split_team(in_shape[0], work, TEAM_WORK) as split:
            threads = split.primitive_threads
            set_threads(threads)  # before a primitive is made: it keeps the count
            calls = {}  # chunk size -> (plan, filter argument), made here, run anywhere
            for lo, hi in split.ranges:
                if hi - lo not in calls:
                    calls[hi - lo] = self._data_call(dx[:hi - lo], w, w_desc, dy[:hi - lo],
                                                     dilations, pads, threads, planar)

            def run(lo: int, hi: int) -> None:
                set_threads(threads)
                plan, w_arg = calls[hi - lo]
                plan.run(dy[lo:hi], w_arg, dx[lo:hi])

            run_chunks(split.ranges, run, split.threads)
            return dx

    def _data_call(self, dx, w, w_desc, dy, dilations, pads, threads, planar):
        """(plan, filter argument) of backward data for dx's batch."""
        key = ("data", dx.shape, tuple(map(tuple, w_desc)), dy.shape, self._strides,
               dilations, tuple(pads), threads, planar)
        plan = _CACHE.get(key, lambda: BackwardDataPlan(dx, w_desc, dy, self._strides,
                                                        dilations, pads, planar))
        if plan.w_reorder is None:
            return plan, (api.ARG_WEIGHTS, plan.user_w_md, w)
        return plan, (api.ARG_WEIGHTS, plan.w_md, self._weights.get(w, plan))


class _OnednnFilterGrad(_GradPlacement):
    """filter_grad() on oneDNN's backward weights (mixed in before the NumPy kernels);
    each call on the event loop or the executor's pool by its work."""

    uses_blas = False  # as _OnednnInputGrad's
    filter_desc = staticmethod(hwio_filter_desc)
    dilated = True
    _grad_dilations = _OnednnInputGrad._grad_dilations
    work_dims = _OnednnInputGrad.work_dims

    def work(self, inputs: list) -> int:
        """out_backprop's elements x filter_sizes' window and input channels."""
        try:
            sizes = np.ravel(inputs[1])[self.work_dims]
            return np.size(inputs[2]) * int(np.prod(sizes))
        except (TypeError, ValueError, IndexError):
            return 0

    def split_call(self, inputs: list) -> bool:
        """Whether this call's batch is cut into chunks: the input gradient's rule, and
        enough output positions (FILTER_SPLIT_POSITIONS)."""
        dy_shape = np.shape(inputs[2])
        positions = int(np.prod(dy_shape[:-1]))
        return positions >= FILTER_SPLIT_POSITIONS and splits(dy_shape[0], self.work(inputs))

    def filter_grad(self, x, dy, f_shape, pads):
        if not _runs_here(x, dy) or 0 in f_shape:
            return super().filter_grad(x, dy, f_shape, pads)
        try:
            return self._filter_grad(x, dy, f_shape, pads)
        except api.DnnlError:  # a geometry oneDNN does not take: the NumPy code
            return super().filter_grad(x, dy, f_shape, pads)

    def _filter_grad(self, x, dy, f_shape, pads):
        dilations = self._grad_dilations()
        backend.note_trained((x.shape, tuple(f_shape), self._strides, self._dilations))
        x, dy = np.ascontiguousarray(x), np.ascontiguousarray(dy)
        dw = np.empty(f_shape, np.float32)
        dw_desc = self.filter_desc(dw, x.shape[-1])
        work = dy.size * int(np.prod(f_shape[:-1]))
        positions = dy.size // max(1, dy.shape[-1])
        with split_team(x.shape[0], work, TEAM_WORK,
                        splittable=positions >= FILTER_SPLIT_POSITIONS) as split:
            threads = split.primitive_threads
            set_threads(threads)  # before a primitive is made: it keeps the count
            plans = {}  # chunk size -> plan, made here, run anywhere
            for lo, hi in split.ranges:
                n = hi - lo
                if n not in plans:
                    key = ("weights", (n, *x.shape[1:]), tuple(map(tuple, dw_desc)),
                           (n, *dy.shape[1:]), self._strides, dilations, tuple(pads), threads)
                    plans[n] = _CACHE.get(key, lambda n=n: BackwardWeightsPlan(
                        x[:n], dw_desc, dy[:n], self._strides, dilations, pads))
            # each chunk's filter gradient in its primitive's layout (the whole call's
            # straight into dw when it needs no reorder)
            parts = {lo: dw if len(split.ranges) == 1 and plans[hi - lo].dw_reorder is None
                     else np.empty(plans[hi - lo].dw_md.size // 4, np.float32)
                     for lo, hi in split.ranges}

            def run(lo: int, hi: int) -> None:
                set_threads(threads)
                plan = plans[hi - lo]
                out_md = plan.dw_md if plan.dw_reorder is not None else plan.user_dw_md
                plan.prim.execute([(api.ARG_SRC, plan.x_md, x[lo:hi]),
                                   (api.ARG_DIFF_DST, plan.dy_md, dy[lo:hi]),
                                   (api.ARG_DIFF_WEIGHTS, out_md, parts[lo])])

            run_chunks(split.ranges, run, split.threads)
            return _sum_parts(parts, plans, split.ranges, dw)


def _sum_parts(parts: dict, plans: dict, ranges, dw: np.ndarray) -> np.ndarray:
    """dw: the sum of the chunks' filter gradients, in HWIO. Chunks of one size (one
    primitive: one layout) are summed as they lie and reordered once; of two sizes, each
    is reordered first."""
    if len(plans) > 1:
        for lo, hi in ranges:
            parts[lo] = _to_user(plans[hi - lo], parts[lo], np.empty_like(dw))
    total = parts[ranges[0][0]]
    for lo, _ in ranges[1:]:
        total += parts[lo]
    if len(plans) > 1:
        return total
    plan = next(iter(plans.values()))
    if total is dw:
        return dw
    return _to_user(plan, total, dw)


def _to_user(plan, part: np.ndarray, dw: np.ndarray) -> np.ndarray:
    """A filter gradient in plan's layout, written into dw's (HWIO)."""
    if plan.dw_reorder is None:
        return part.reshape(dw.shape)
    plan.dw_reorder.execute([(api.ARG_FROM, plan.dw_md, part),
                             (api.ARG_TO, plan.user_dw_md, dw)])
    return dw


@onednn_kernel("Conv2DBackpropInput", host_memory=("input_sizes",), T=dtypes.float32)
class OnednnConv2DBackpropInputOp(_OnednnInputGrad, Conv2DBackpropInputOp):
    """Conv2DBackpropInput (a transposed convolution) on oneDNN's backward data."""

    planar_below = PLANAR_BELOW

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()


@onednn_kernel("Conv2DBackpropFilter", host_memory=("filter_sizes",), T=dtypes.float32)
class OnednnConv2DBackpropFilterOp(_OnednnFilterGrad, Conv2DBackpropFilterOp):
    """Conv2DBackpropFilter on oneDNN's backward weights."""


@onednn_kernel("DepthwiseConv2dNativeBackpropInput", host_memory=("input_sizes",),
               T=dtypes.float32)
class OnednnDepthwiseConv2dNativeBackpropInputOp(_OnednnInputGrad,
                                                 DepthwiseConv2dNativeBackpropInputOp):
    """DepthwiseConv2dNativeBackpropInput on oneDNN (grouped backward data)."""

    filter_desc = staticmethod(depthwise_filter_desc)
    dilated = False
    work_dims = slice(None, -2)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()


@onednn_kernel("DepthwiseConv2dNativeBackpropFilter", host_memory=("filter_sizes",),
               T=dtypes.float32)
class OnednnDepthwiseConv2dNativeBackpropFilterOp(_OnednnFilterGrad,
                                                  DepthwiseConv2dNativeBackpropFilterOp):
    """DepthwiseConv2dNativeBackpropFilter on oneDNN (grouped backward weights)."""

    filter_desc = staticmethod(depthwise_filter_desc)
    dilated = False
    work_dims = slice(None, -2)


@onednn_kernel("Conv3DBackpropInputV2", host_memory=("input_sizes",), T=dtypes.float32)
class OnednnConv3DBackpropInputV2Op(_OnednnInputGrad, Conv3DBackpropInputV2Op):
    """Conv3DBackpropInputV2 on oneDNN's backward data."""

    planar_below = PLANAR_BELOW

    filter_desc = staticmethod(_dhwio_desc)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()


@onednn_kernel("Conv3DBackpropInput", T=dtypes.float32)
class OnednnConv3DBackpropInputOp(_OnednnInputGrad, Conv3DBackpropInputOp):
    """The deprecated Conv3DBackpropInput on oneDNN's backward data."""

    planar_below = PLANAR_BELOW

    filter_desc = staticmethod(_dhwio_desc)

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()


@onednn_kernel("Conv3DBackpropFilterV2", host_memory=("filter_sizes",), T=dtypes.float32)
class OnednnConv3DBackpropFilterV2Op(_OnednnFilterGrad, Conv3DBackpropFilterV2Op):
    """Conv3DBackpropFilterV2 on oneDNN's backward weights."""

    filter_desc = staticmethod(_dhwio_desc)


@onednn_kernel("Conv3DBackpropFilter", T=dtypes.float32)
class OnednnConv3DBackpropFilterOp(_OnednnFilterGrad, Conv3DBackpropFilterOp):
    """The deprecated Conv3DBackpropFilter on oneDNN's backward weights."""

    filter_desc = staticmethod(_dhwio_desc)
