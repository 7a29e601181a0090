"""MaxPool, MaxPoolV2, AvgPool, MaxPool3D and AvgPool3D on oneDNN's pooling primitive,
float32, spatial windows.

The NumPy kernels (aioflow/kernels/nn/pooling_kernels.py) check the window and hand the
channels-last input to `_spatial`; these kernels override it: the input and output are
described as they lie (NHWC / NDHWC, no copy), max pooling is pooling_max and average
pooling pooling_avg_exclude_padding (TF's SAME padding does not count the padding), for
inference (no workspace; for training where a MaxPoolGrad of the geometry ran, the
workspace kept beside the output for it: pool_workspace.py). Depthwise max pooling
(a window over channels), other types and empty tensors run the NumPy code.
Primitives are cached by shapes and window.
Stride-1 average poolings that measure faster on the separable box filter run it
instead (aioflow/kernels/onednn/box_pool.py says which).
"""

from __future__ import annotations

import math

import numpy as np

from aioflow.framework import dtypes
from aioflow.kernels.nn.pooling_kernels import (
    AvgPool3DOp,
    AvgPoolOp,
    MaxPool3DOp,
    MaxPoolOp,
    MaxPoolV2Op,
)
from aioflow.kernels.onednn import backend, box_pool, pool_workspace
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import LoopOrThread, onednn_kernel, team
from aioflow.kernels.onednn.conv_grad_onednn import grad_team
from aioflow.kernels.onednn.primitives import (
    Primitive,
    PrimitiveCache,
    array_desc,
    engine,
    set_threads,
    user_scratchpad,
)

_CACHE = PrimitiveCache()


class PoolPlan:
    """A pooling primitive for one geometry, with its argument descriptors."""

    def __init__(self, x: np.ndarray, out: np.ndarray, alg: int, ksizes, strides, pads,
                 kind: int = api.FORWARD_INFERENCE):
        nd = x.ndim
        order = (0, nd - 1) + tuple(range(1, nd - 1))  # channels-last -> N C spatial
        self.src_md = array_desc(x, order)
        self.dst_md = array_desc(out, order)
        eng = engine()
        lib = api._lib
        attr = user_scratchpad()
        self.prim = Primitive(lambda pd: lib.dnnl_pooling_forward_primitive_desc_create(
            pd, eng, kind, alg, self.src_md.handle, self.dst_md.handle,
            api.dims(strides), api.dims(ksizes), api.dims([0] * len(ksizes)),
            api.dims([b for b, _ in pads]), api.dims([a for _, a in pads]), attr),
            "dnnl_pooling_forward_primitive_desc_create")
        self.ws_md = self.prim.md(api.QUERY_WORKSPACE_MD) \
            if kind == api.FORWARD_TRAINING else None


class _OnednnPool(LoopOrThread):
    """_spatial() on oneDNN for float32 (mixed in before the NumPy kernels' classes); each
    call on the event loop or the executor's pool by its work (backend.LoopOrThread)."""

    uses_blas = True  # an OpenMP team: the device's BLAS gate bounds how many run at once

    def work(self, inputs: list) -> int:
        """Input elements x window taps / strides (about the output elements x taps)."""
        window = self._window
        if window is None:  # MaxPoolV2: the window is an input
            return np.size(inputs[0]) * 9
        taps = math.prod(window[0])  # math.prod: np.prod costs ~5 µs a call
        return np.size(inputs[0]) * taps // max(1, math.prod(window[1]))

    def is_expensive(self, inputs: list) -> bool:
        """Off the event loop above backend.INLINE_WORK output elements x taps."""
        if not backend.ACTIVE or self._window is None:
            return super().is_expensive(inputs)
        return self.work(inputs) > backend.INLINE_WORK

    def _spatial(self, x, ksizes, strides):
        if not backend.ACTIVE or x.dtype != np.float32 or x.size == 0:
            return super()._spatial(x, ksizes, strides)
        outs, pads = self._geometry(x, ksizes, strides)
        if 0 in outs:
            return super()._spatial(x, ksizes, strides)
        x = np.ascontiguousarray(x)
        if self.op == "avg" and box_pool.suits(x, ksizes, strides):
            return box_pool.average(x, ksizes, pads, outs)
        out = np.empty((x.shape[0], *outs, x.shape[-1]), np.float32)
        alg = api.POOLING_MAX if self.op == "max" else api.POOLING_AVG_EXCLUDE_PADDING
        # a MaxPoolGrad's geometry: for training, the workspace kept (pool_workspace)
        ws_key = pool_workspace.geometry_key(x.shape, ksizes, strides, pads) \
            if self.op == "max" and pool_workspace.any_wanted() else None
        training = ws_key is not None and pool_workspace.wanted(ws_key)
        kind = api.FORWARD_TRAINING if training or self._training_kind(x) \
            else api.FORWARD_INFERENCE
        # For training on the calling thread alone below conv_grad_onednn.TEAM_WORK, as
        # its gradient (grad_team): a memory-bound pass gains little from a second
        # thread, and an OpenMP team wakes its sleeping worker each call (the conv step's
        # 1M-tap MaxPool: -2% a step, 2 fewer context switches; docs/performance.md).
        work = out.size * math.prod(ksizes)
        with (grad_team(work) if training else team(work)) as threads:
            set_threads(threads)  # before a primitive is made: it keeps the count
            key = (x.shape, alg, tuple(ksizes), tuple(strides), tuple(pads), threads, kind)
            try:
                plan = _CACHE.get(key, lambda: PoolPlan(x, out, alg, ksizes, strides, pads,
                                                        kind))
            except api.DnnlError:  # a window oneDNN does not take: the NumPy code
                return super()._spatial(x, ksizes, strides)
            args = [(api.ARG_SRC, plan.src_md, x), (api.ARG_DST, plan.dst_md, out)]
            if plan.ws_md is None:
                plan.prim.execute(args)
                return out
            ws = np.empty(max(1, plan.ws_md.size), np.uint8)
            plan.prim.execute(args + [(api.ARG_WORKSPACE, plan.ws_md, ws)])
            if training:
                pool_workspace.keep(out, x, ws_key, ws, plan.ws_md)
            return out

    def _training_kind(self, x: np.ndarray) -> bool:
        """Whether an inference call runs oneDNN's forward_training primitive (its
        workspace then dropped): for 3-D max pooling, which oneDNN 3.2 runs faster so,
        as TF's oneDNN MaxPool3D always does (8 x 16 x 56 x 56 x 64, 3x3x3/2: 5.0 against
        5.55 ms, 4.5 against 5.35 with a 64-byte aligned input; batch 1 and 2x2x2/2 the
        same). 2-D max pooling is not (2x2/2 on 8 x 56 x 56 x 256: 0.72 against 0.45 ms;
        docs/performance.md)."""
        return self.op == "max" and x.ndim == 5


@onednn_kernel("MaxPool", T=dtypes.float32)
class OnednnMaxPoolOp(_OnednnPool, MaxPoolOp):
    """MaxPool on oneDNN."""


@onednn_kernel("MaxPoolV2", host_memory=("ksize", "strides"), T=dtypes.float32)
class OnednnMaxPoolV2Op(_OnednnPool, MaxPoolV2Op):
    """MaxPoolV2 on oneDNN."""


@onednn_kernel("AvgPool", T=dtypes.float32)
class OnednnAvgPoolOp(_OnednnPool, AvgPoolOp):
    """AvgPool on oneDNN."""


@onednn_kernel("MaxPool3D", T=dtypes.float32)
class OnednnMaxPool3DOp(_OnednnPool, MaxPool3DOp):
    """MaxPool3D on oneDNN."""


@onednn_kernel("AvgPool3D", T=dtypes.float32)
class OnednnAvgPool3DOp(_OnednnPool, AvgPool3DOp):
    """AvgPool3D on oneDNN."""
