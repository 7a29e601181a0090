"""FusedBatchNorm/V2/V3 and _FusedBatchNormEx in training and FusedBatchNormGrad/V2/V3 of
training on oneDNN's batch normalization primitives (forward_training, backward),
float32, as TF's oneDNN CPU kernels (_MklFusedBatchNormV3, _MklFusedBatchNormEx,
_MklFusedBatchNormGradV3) run them; _FusedBatchNormEx's Relu (without a side input) is
the primitive's fuse_norm_relu.

The NumPy kernels (aioflow/kernels/nn/normalization_kernels.py,
normalization_grad_kernels.py) check the inputs with TF's messages, convert half types
to float32 and blend the running statistics; these kernels override their
`normalize_training` (y, batch mean, biased batch variance) and `gradients` (dx, dscale,
doffset from the saved batch mean and biased variance). Tensors are described as they
lie (NHWC / NDHWC, or NCHW / NCDHW), with the scale and offset as the primitive's
(use_scale | use_shift). oneDNN's single-pass kernels take 0.10 / 0.11 ms (forward /
backward) for a 32x28x28x16 tensor on one thread against 0.23 / 0.22 ms for the compiled
passes (numba), and 0.04 / 0.05 against 0.09 / 0.10 for 32x14x14x32 (load 7). Their sums
are float32 (the compiled passes': float64), well within TF's tolerance between its own
oneDNN and Eigen kernels. Inference (is_training false) keeps the NumPy kernels' one
compiled pass (and the remapper folds it into a convolution where it can); other types
and empty tensors run the NumPy code.

Primitives are cached by shape, layout, epsilon and threads; a primitive takes an
OpenMP team only from conv_grad_onednn.TEAM_WORK elements, as the gradients do.

Where they run: as the forward convolutions (backend.LoopOrThread), inline on the event
loop up to backend.INLINE_WORK (an element counted as WORK_PER_ELEMENT multiply-adds),
larger calls on the executor's pool. A training step's batch norms sit on its one
chain of dependent kernels (convolution, batch norm, activation, pooling, ... and back),
where nothing else can run meanwhile: inline, a 0.1 ms batch norm saves the two thread
hand-offs the executor's pool costs (~0.07 ms of the loop's CPU, and on a busy machine a
wake-up each).
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes
from aioflow.kernels.nn.normalization_grad_kernels import (
    FusedBatchNormGradOp,
    FusedBatchNormGradV2Op,
    FusedBatchNormGradV3Op,
)
from aioflow.kernels.nn.normalization_kernels import (
    FusedBatchNormExOp,
    FusedBatchNormOp,
    FusedBatchNormV2Op,
    FusedBatchNormV3Op,
)
from aioflow.kernels.onednn import backend
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import LoopOrThread, onednn_kernel
from aioflow.kernels.onednn.conv_grad_onednn import grad_team
from aioflow.kernels.onednn.conv_onednn import channels_last_order
from aioflow.kernels.onednn.primitives import (
    MemoryDesc,
    Primitive,
    PrimitiveCache,
    PrimitiveDesc,
    array_desc,
    engine,
    set_threads,
    user_scratchpad,
)

_CACHE = PrimitiveCache()
_FLAGS = api.USE_SCALE | api.USE_SHIFT
#: Multiply-adds one element of batch norm counts as (backend.LoopOrThread's thresholds):
#: ~0.25 ns an element forward or backward on one AVX-512 core against ~0.015 ns a
#: convolution's multiply-add.
WORK_PER_ELEMENT = 16


def _forward_desc(create_pd, x_md, epsilon: float, flags: int = _FLAGS):
    """(a primitive or descriptor made by create_pd) of forward training on x_md."""
    eng = engine()
    attr = user_scratchpad()
    return create_pd(lambda pd: api._lib.dnnl_batch_normalization_forward_primitive_desc_create(
        pd, eng, api.FORWARD_TRAINING, x_md.handle, x_md.handle, epsilon, flags, attr),
        "dnnl_batch_normalization_forward_primitive_desc_create")


class ForwardPlan:
    """Forward training of one shape and layout: y, the batch mean and biased variance;
    `relu`: y through Relu (fuse_norm_relu, which writes a workspace: which elements
    were kept, for a backward this kernel does not run)."""

    def __init__(self, x: np.ndarray, order, epsilon: float, relu: bool):
        self.x_md = array_desc(x, order)
        self.channel_md = MemoryDesc.tagged([x.shape[order[1]]], np.float32, api.TAG_X)
        flags = _FLAGS | (api.FUSE_NORM_RELU if relu else 0)
        self.prim = _forward_desc(Primitive, self.x_md, epsilon, flags)
        self.ws_md = self.prim.md(api.QUERY_WORKSPACE_MD) if relu else None


class BackwardPlan:
    """Backward (dx, dscale, doffset) of one shape and layout."""

    def __init__(self, x: np.ndarray, order, epsilon: float):
        self.x_md = array_desc(x, order)
        self.channel_md = MemoryDesc.tagged([x.shape[order[1]]], np.float32, api.TAG_X)
        hint = _forward_desc(PrimitiveDesc, self.x_md, epsilon)
        eng = engine()
        attr = user_scratchpad()
        md = self.x_md.handle
        self.prim = Primitive(
            lambda pd: api._lib.dnnl_batch_normalization_backward_primitive_desc_create(
                pd, eng, api.BACKWARD, md, md, md, epsilon, _FLAGS, hint.pd, attr),
            "dnnl_batch_normalization_backward_primitive_desc_create")


def _order(x: np.ndarray, channels_first: bool):
    return tuple(range(x.ndim)) if channels_first else channels_last_order(x.ndim)


def _vector(v) -> np.ndarray:
    return np.ascontiguousarray(v, np.float32)


def _plan(kind, plan_class, x: np.ndarray, channels_first: bool, epsilon: float, *more):
    order = _order(x, channels_first)
    key = (kind, x.shape, x.strides, channels_first, epsilon, *more)
    return _CACHE.get(key, lambda: plan_class(x, order, epsilon, *more))


class _OnednnBatchNorm(LoopOrThread):
    """normalize_training() on oneDNN's forward training (mixed in before the NumPy
    kernels); each call on the event loop or the executor's pool by its work."""

    def work(self, inputs: list) -> int:
        return np.size(inputs[0]) * WORK_PER_ELEMENT

    def normalize_training(self, x, scale, offset, axis: int, relu: bool = False):
        if not backend.ACTIVE or x.dtype != np.float32:
            return super().normalize_training(x, scale, offset, axis, relu)
        x = np.ascontiguousarray(x)
        channels = x.shape[axis]
        y = np.empty_like(x)
        mean = np.empty(channels, np.float32)
        var = np.empty(channels, np.float32)
        with grad_team(x.size) as threads:
            set_threads(threads)  # before a primitive is made: it keeps the count
            plan = _plan(("forward", threads), ForwardPlan, x, self._channels_first,
                         self._epsilon, relu)
            c = plan.channel_md
            args = [(api.ARG_SRC, plan.x_md, x), (api.ARG_DST, plan.x_md, y),
                    (api.ARG_SCALE, c, _vector(scale)), (api.ARG_SHIFT, c, _vector(offset)),
                    (api.ARG_MEAN, c, mean), (api.ARG_VARIANCE, c, var)]
            if relu:
                args.append((api.ARG_WORKSPACE, plan.ws_md,
                             np.empty(max(1, plan.ws_md.size), np.uint8)))
            plan.prim.execute(args)
        return y, mean, var


class _OnednnBatchNormGrad(LoopOrThread):
    """gradients() of training on oneDNN's backward (mixed in before the NumPy kernels);
    inference's gradient (dy scaled per channel) stays the NumPy kernel's. Each call on
    the event loop or the executor's pool by its work."""

    work = _OnednnBatchNorm.work

    def gradients(self, x, dy, scale, mean, var, axis: int):
        if not (backend.ACTIVE and self._training and x.size):
            return super().gradients(x, dy, scale, mean, var, axis)
        x, dy = np.ascontiguousarray(x), np.ascontiguousarray(dy)
        channels = x.shape[axis]
        dx = np.empty_like(x)
        dscale = np.empty(channels, np.float32)
        doffset = np.empty(channels, np.float32)
        with grad_team(x.size) as threads:
            set_threads(threads)
            plan = _plan(("backward", threads), BackwardPlan, x, self._channels_first,
                         self._epsilon)
            c, md = plan.channel_md, plan.x_md
            plan.prim.execute([(api.ARG_SRC, md, x), (api.ARG_DIFF_DST, md, dy),
                               (api.ARG_MEAN, c, _vector(mean)),
                               (api.ARG_VARIANCE, c, _vector(var)),
                               (api.ARG_SCALE, c, _vector(scale)),
                               (api.ARG_DIFF_SRC, md, dx), (api.ARG_DIFF_SCALE, c, dscale),
                               (api.ARG_DIFF_SHIFT, c, doffset)])
        return dx, dscale, doffset


@onednn_kernel("FusedBatchNorm", T=dtypes.float32)
class OnednnFusedBatchNormOp(_OnednnBatchNorm, FusedBatchNormOp):
    """FusedBatchNorm, training on oneDNN."""


@onednn_kernel("FusedBatchNormV2", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormV2Op(_OnednnBatchNorm, FusedBatchNormV2Op):
    """FusedBatchNormV2, training on oneDNN."""


@onednn_kernel("FusedBatchNormV3", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormV3Op(_OnednnBatchNorm, FusedBatchNormV3Op):
    """FusedBatchNormV3, training on oneDNN."""


@onednn_kernel("_FusedBatchNormEx", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormExOp(_OnednnBatchNorm, FusedBatchNormExOp):
    """_FusedBatchNormEx, training on oneDNN (a Relu without side input fused:
    fuse_norm_relu)."""


@onednn_kernel("FusedBatchNormGrad", T=dtypes.float32)
class OnednnFusedBatchNormGradOp(_OnednnBatchNormGrad, FusedBatchNormGradOp):
    """FusedBatchNormGrad of training on oneDNN."""


@onednn_kernel("FusedBatchNormGradV2", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormGradV2Op(_OnednnBatchNormGrad, FusedBatchNormGradV2Op):
    """FusedBatchNormGradV2 of training on oneDNN."""


@onednn_kernel("FusedBatchNormGradV3", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormGradV3Op(_OnednnBatchNormGrad, FusedBatchNormGradV3Op):
    """FusedBatchNormGradV3 of training on oneDNN."""
