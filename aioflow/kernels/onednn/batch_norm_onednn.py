"""FusedBatchNorm, FusedBatchNormV2 and FusedBatchNormV3 on oneDNN's batch normalization
primitive, and their gradients (FusedBatchNormGrad/V2/V3) on its backward, float32 x.

The NumPy kernels (aioflow/kernels/nn/normalization_kernels.py) check the inputs and
compute the outputs TF reports from the normalisation, which these kernels run on
oneDNN: inference (is_training=False) with the given statistics (use_global_stats,
scale and shift), training with the batch's (forward_training: the mean and the biased
variance come back; the NumPy code reports the unbiased one and blends the running
statistics as TF does). x is described as it lies (NHWC, NCHW, NDHWC, NCDHW: no copy).
The gradients: the NumPy kernels (aioflow/kernels/nn/normalization_grad_kernels.py)
check the inputs and hand float32 x and dy to `gradients`; oneDNN's backward (with the
forward's hint) gives dx, dscale (sum(dy * (x - mean)) / sqrt(var + eps)) and doffset
(sum(dy)) from the saved statistics, with global statistics when is_training is False
(dx = dy * scale / sqrt(var + eps), TF's). Empty x and half/bfloat16 x run the NumPy
code.
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
    FusedBatchNormOp,
    FusedBatchNormV2Op,
    FusedBatchNormV3Op,
)
from aioflow.kernels.onednn import backend
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import onednn_kernel, team
from aioflow.kernels.onednn.primitives import (
    MemoryDesc,
    Primitive,
    PrimitiveCache,
    array_desc,
    engine,
    set_threads,
)

_CACHE = PrimitiveCache()


def _order(ndim: int, axis: int):
    """x's axes in oneDNN's logical order N C spatial."""
    return (0, axis) + tuple(i for i in range(1, ndim) if i != axis)


class BatchNormPlan:
    """A batch normalization primitive for one shape, epsilon and mode."""

    def __init__(self, x: np.ndarray, axis: int, epsilon: float, training: bool):
        self.md = array_desc(x, _order(x.ndim, axis))
        self.stat_md = MemoryDesc.tagged([x.shape[axis]], np.float32, api.TAG_X)
        flags = api.USE_SCALE | api.USE_SHIFT | (0 if training else api.USE_GLOBAL_STATS)
        prop = api.FORWARD_TRAINING if training else api.FORWARD_INFERENCE
        eng = engine()
        lib = api._lib
        self.prim = Primitive(
            lambda pd: lib.dnnl_batch_normalization_forward_primitive_desc_create(
                pd, eng, prop, self.md.handle, self.md.handle, epsilon, flags, None),
            "dnnl_batch_normalization_forward_primitive_desc_create")


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, np.float32)


class _OnednnBatchNorm:
    """normalize_inference/normalize_training on oneDNN (mixed in before the NumPy
    kernels' classes)."""

    uses_blas = True  # an OpenMP team: the device's BLAS gate bounds how many run at once

    def _run(self, x, axis: int, training: bool, args) -> bool:
        """Run the primitive of x's shape with args(plan); False when oneDNN refuses it."""
        with team(x.size) as threads:
            set_threads(threads)  # before a primitive is made: it keeps the count
            key = (x.shape, x.strides, axis, self._epsilon, training, threads)
            try:
                plan = _CACHE.get(key, lambda: BatchNormPlan(x, axis, self._epsilon,
                                                             training))
            except api.DnnlError:  # a shape oneDNN does not take: the NumPy code
                return False
            plan.prim.execute(args(plan.md, plan.stat_md))
        return True

    def normalize_inference(self, x, scale, offset, mean, var, axis: int) -> np.ndarray:
        if not backend.ACTIVE or x.size == 0:
            return super().normalize_inference(x, scale, offset, mean, var, axis)
        x = np.ascontiguousarray(x)
        y = np.empty_like(x)
        if not self._run(x, axis, False, lambda md, smd: [
                (api.ARG_SRC, md, x), (api.ARG_DST, md, y),
                (api.ARG_MEAN, smd, _f32(mean)), (api.ARG_VARIANCE, smd, _f32(var)),
                (api.ARG_SCALE, smd, _f32(scale)), (api.ARG_SHIFT, smd, _f32(offset))]):
            return super().normalize_inference(x, scale, offset, mean, var, axis)
        return y

    def normalize_training(self, x, scale, offset, axis: int):
        if not backend.ACTIVE:
            return super().normalize_training(x, scale, offset, axis)
        x = np.ascontiguousarray(x)
        y = np.empty_like(x)
        channels = x.shape[axis]
        mean = np.empty(channels, np.float32)
        var = np.empty(channels, np.float32)
        if not self._run(x, axis, True, lambda md, smd: [
                (api.ARG_SRC, md, x), (api.ARG_DST, md, y),
                (api.ARG_MEAN, smd, mean), (api.ARG_VARIANCE, smd, var),
                (api.ARG_SCALE, smd, _f32(scale)), (api.ARG_SHIFT, smd, _f32(offset))]):
            return super().normalize_training(x, scale, offset, axis)
        return y, mean, var


@onednn_kernel("FusedBatchNorm", T=dtypes.float32)
class OnednnFusedBatchNormOp(_OnednnBatchNorm, FusedBatchNormOp):
    """FusedBatchNorm on oneDNN."""


@onednn_kernel("FusedBatchNormV2", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormV2Op(_OnednnBatchNorm, FusedBatchNormV2Op):
    """FusedBatchNormV2 on oneDNN."""


@onednn_kernel("FusedBatchNormV3", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormV3Op(_OnednnBatchNorm, FusedBatchNormV3Op):
    """FusedBatchNormV3 on oneDNN."""


class BatchNormBackwardPlan:
    """The backward batch normalization primitive (diff scale and shift) for one shape."""

    def __init__(self, x: np.ndarray, axis: int, epsilon: float, training: bool):
        self.md = array_desc(x, _order(x.ndim, axis))
        self.stat_md = MemoryDesc.tagged([x.shape[axis]], np.float32, api.TAG_X)
        flags = api.USE_SCALE | api.USE_SHIFT | (0 if training else api.USE_GLOBAL_STATS)
        eng = engine()
        lib = api._lib
        self.hint = Primitive(
            lambda pd: lib.dnnl_batch_normalization_forward_primitive_desc_create(
                pd, eng, api.FORWARD_TRAINING, self.md.handle, self.md.handle, epsilon,
                flags, None), "dnnl_batch_normalization_forward_primitive_desc_create")
        self.prim = Primitive(
            lambda pd: lib.dnnl_batch_normalization_backward_primitive_desc_create(
                pd, eng, api.BACKWARD, self.md.handle, self.md.handle, self.md.handle,
                epsilon, flags, self.hint.pd, None),
            "dnnl_batch_normalization_backward_primitive_desc_create")


class _OnednnBatchNormGrad:
    """gradients() on oneDNN (mixed in before the NumPy kernels' classes)."""

    uses_blas = True  # an OpenMP team: the device's BLAS gate bounds how many run at once

    def gradients(self, x, dy, scale, mean, var, axis: int):
        if not backend.ACTIVE or x.size == 0:
            return super().gradients(x, dy, scale, mean, var, axis)
        x, dy = np.ascontiguousarray(x), np.ascontiguousarray(dy)
        channels = x.shape[axis]
        with team(x.size) as threads:
            set_threads(threads)  # before a primitive is made: it keeps the count
            key = ("backward", x.shape, axis, self._epsilon, self._training, threads)
            try:
                plan = _CACHE.get(key, lambda: BatchNormBackwardPlan(x, axis, self._epsilon,
                                                                     self._training))
            except api.DnnlError:  # a shape oneDNN does not take: the NumPy code
                return super().gradients(x, dy, scale, mean, var, axis)
            dx = np.empty_like(x)
            dscale = np.empty(channels, np.float32)
            doffset = np.empty(channels, np.float32)
            md, smd = plan.md, plan.stat_md
            plan.prim.execute([(api.ARG_SRC, md, x), (api.ARG_DIFF_DST, md, dy),
                               (api.ARG_MEAN, smd, _f32(mean)), (api.ARG_VARIANCE, smd, _f32(var)),
                               (api.ARG_SCALE, smd, _f32(scale)), (api.ARG_DIFF_SRC, md, dx),
                               (api.ARG_DIFF_SCALE, smd, dscale),
                               (api.ARG_DIFF_SHIFT, smd, doffset)])
            return dx, dscale, doffset


@onednn_kernel("FusedBatchNormGrad", T=dtypes.float32)
class OnednnFusedBatchNormGradOp(_OnednnBatchNormGrad, FusedBatchNormGradOp):
    """FusedBatchNormGrad on oneDNN."""


@onednn_kernel("FusedBatchNormGradV2", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormGradV2Op(_OnednnBatchNormGrad, FusedBatchNormGradV2Op):
    """FusedBatchNormGradV2 on oneDNN."""


@onednn_kernel("FusedBatchNormGradV3", T=dtypes.float32, U=dtypes.float32)
class OnednnFusedBatchNormGradV3Op(_OnednnBatchNormGrad, FusedBatchNormGradV3Op):
    """FusedBatchNormGradV3 on oneDNN."""
