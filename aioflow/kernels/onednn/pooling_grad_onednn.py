"""MaxPoolGrad, MaxPoolGradV2, AvgPoolGrad and AvgPool3DGrad on oneDNN's pooling backward
primitive, float32.

The NumPy kernels (aioflow/kernels/nn/pooling_grad_kernels.py) check the shapes and window
and hand channels-last tensors to `max_grad` / `avg_grad`; these kernels override them.
Max pooling's backward needs the forward's workspace (which tap won each window): the
forward runs again for training on the original input (oneDNN, as TF's, takes the first
maximum in window order: TF's MaxPoolGrad recomputes the argmax from the input too),
then the backward scatters the gradient to it; unless the forward MaxPool kept its
workspace beside this very orig_output (pool_workspace: the first gradient of a
geometry asks for it, later steps' forwards keep it), which the backward then reads.
Average pooling's backward spreads each gradient over the taps inside the input
(exclude padding, TF's). Primitives are made with the forward's hint and cached by
geometry and threads, and take an OpenMP team only from conv_grad_onednn.TEAM_WORK
(window taps times gradient elements), as the convolutions' gradients do.
Other types run the NumPy code.

Where they run: as the forward pooling (backend.LoopOrThread), inline on the event loop
up to backend.INLINE_WORK, larger calls on the executor's pool: a pooling gradient
sits on a training step's one chain of dependent kernels (a convolution's input
gradient, the pooling's, the activation's, ...), where a hand-off to the executor's
pool and back only adds to the step.
"""

from __future__ import annotations

import contextvars

import numpy as np

from aioflow.framework import dtypes
from aioflow.kernels.nn.pooling_grad_kernels import (
    AvgPool3DGradOp,
    AvgPoolGradOp,
    MaxPoolGradOp,
    MaxPoolGradV2Op,
)
from aioflow.kernels.onednn import backend, pool_workspace
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import LoopOrThread, onednn_kernel
from aioflow.kernels.onednn.conv_grad_onednn import grad_team
from aioflow.kernels.onednn.conv_onednn import channels_last_order
from aioflow.kernels.onednn.primitives import (
    Primitive,
    PrimitiveCache,
    array_desc,
    engine,
    set_threads,
    user_scratchpad,
)

_CACHE = PrimitiveCache()
# MaxPoolGrad's (orig_input, orig_output) while its compute() runs: max_grad() sees x only
_ORIGINALS: contextvars.ContextVar = contextvars.ContextVar("max_pool_grad_originals",
                                                            default=None)
RECOMPUTES = [0]  # forwards run again for a workspace (tests count them)


class PoolBackwardPlan:
    """The forward (training) and backward pooling primitives of one geometry."""

    def __init__(self, dx: np.ndarray, dy: np.ndarray, alg: int, ksizes, strides, pads):
        order = channels_last_order(dx.ndim)
        self.src_md = array_desc(dx, order)
        self.dst_md = array_desc(dy, order)
        geometry = (api.dims(strides), api.dims(ksizes), api.dims([0] * len(ksizes)),
                    api.dims([b for b, _ in pads]), api.dims([a for _, a in pads]))
        eng = engine()
        lib = api._lib
        attr = user_scratchpad()
        self.forward = Primitive(lambda pd: lib.dnnl_pooling_forward_primitive_desc_create(
            pd, eng, api.FORWARD_TRAINING, alg, self.src_md.handle, self.dst_md.handle,
            *geometry, attr), "dnnl_pooling_forward_primitive_desc_create")
        self.backward = Primitive(lambda pd: lib.dnnl_pooling_backward_primitive_desc_create(
            pd, eng, alg, self.src_md.handle, self.dst_md.handle, *geometry,
            self.forward.pd, attr), "dnnl_pooling_backward_primitive_desc_create")
        self.ws_md = self.forward.md(api.QUERY_WORKSPACE_MD) if alg == api.POOLING_MAX \
            else None


def _gradient(dx_shape, dy, alg, ksizes, strides, pads, run):
    """dx of dx_shape from run(plan, dx) on the geometry's primitives; None when oneDNN
    refuses the window."""
    dx = np.empty(dx_shape, np.float32)
    with grad_team(dy.size * int(np.prod(ksizes))) as threads:
        set_threads(threads)  # before a primitive is made: it keeps the count
        key = (dx.shape, dy.shape, alg, tuple(ksizes), tuple(strides), tuple(pads), threads)
        try:
            plan = _CACHE.get(key, lambda: PoolBackwardPlan(dx, dy, alg, ksizes, strides,
                                                            pads))
        except api.DnnlError:
            return None
        run(plan, dx)
    return dx


def _max_backward(x, g, originals, ws_key):
    def run(plan, dx):
        ws = None
        if originals is not None and originals[0] is x:
            ws = pool_workspace.take(originals[1], x, ws_key, plan.ws_md)
        if ws is None:
            RECOMPUTES[0] += 1
            pool_workspace.want(ws_key)  # the next forward of this geometry keeps one
            y = np.empty(g.shape, np.float32)
            ws = np.empty(max(1, plan.ws_md.size), np.uint8)
            plan.forward.execute([(api.ARG_SRC, plan.src_md, x),
                                  (api.ARG_DST, plan.dst_md, y),
                                  (api.ARG_WORKSPACE, plan.ws_md, ws)])
        plan.backward.execute([(api.ARG_DIFF_DST, plan.dst_md, g),
                               (api.ARG_WORKSPACE, plan.ws_md, ws),
                               (api.ARG_DIFF_SRC, plan.src_md, dx)])
    return run


def _avg_backward(g):
    def run(plan, dx):
        plan.backward.execute([(api.ARG_DIFF_DST, plan.dst_md, g),
                               (api.ARG_DIFF_SRC, plan.src_md, dx)])
    return run


class _OnednnPoolGrad(LoopOrThread):
    """Each call on the event loop or the executor's pool by its work."""

    uses_blas = False  # one thread below TEAM_WORK: as conv_grad_onednn's kernels

    def work(self, inputs: list) -> int:
        """The largest tensor's elements times the window's taps (9 for a window given
        as an input, MaxPoolGradV2's)."""
        taps = int(np.prod(self._window[0])) if self._window is not None else 9
        return max(np.size(t) for t in inputs) * taps


class _OnednnMaxPoolGrad(_OnednnPoolGrad):
    def compute(self, ctx, inputs):
        token = _ORIGINALS.set((inputs[0], inputs[1]))  # for max_grad's workspace
        try:
            return super().compute(ctx, inputs)
        finally:
            _ORIGINALS.reset(token)

    def max_grad(self, x, g, ksizes, strides, pads, out_sizes):
        if not backend.ACTIVE or x.dtype != np.float32 or g.dtype != np.float32 or \
                x.size == 0 or g.size == 0:
            return super().max_grad(x, g, ksizes, strides, pads, out_sizes)
        x, g = np.ascontiguousarray(x), np.ascontiguousarray(g)
        ws_key = pool_workspace.geometry_key(x.shape, ksizes, strides, pads)
        dx = _gradient(x.shape, g, api.POOLING_MAX, ksizes, strides, pads,
                       _max_backward(x, g, _ORIGINALS.get(), ws_key))
        if dx is None:  # a window oneDNN does not take: the NumPy code
            return super().max_grad(x, g, ksizes, strides, pads, out_sizes)
        return dx


class _OnednnAvgPoolGrad(_OnednnPoolGrad):
    def avg_grad(self, g, in_sizes, ksizes, strides, pads):
        if not backend.ACTIVE or g.dtype != np.float32 or g.size == 0 or 0 in in_sizes:
            return super().avg_grad(g, in_sizes, ksizes, strides, pads)
        g = np.ascontiguousarray(g)
        shape = (g.shape[0], *in_sizes, g.shape[-1])
        dx = _gradient(shape, g, api.POOLING_AVG_EXCLUDE_PADDING, ksizes, strides, pads,
                       _avg_backward(g))
        if dx is None:
            return super().avg_grad(g, in_sizes, ksizes, strides, pads)
        return dx


@onednn_kernel("MaxPoolGrad", T=dtypes.float32)
class OnednnMaxPoolGradOp(_OnednnMaxPoolGrad, MaxPoolGradOp):
    """MaxPoolGrad on oneDNN."""


@onednn_kernel("MaxPoolGradV2", host_memory=("ksize", "strides"), T=dtypes.float32)
class OnednnMaxPoolGradV2Op(_OnednnMaxPoolGrad, MaxPoolGradV2Op):
    """MaxPoolGradV2 on oneDNN."""


@onednn_kernel("AvgPoolGrad", host_memory=("orig_input_shape",), T=dtypes.float32)
class OnednnAvgPoolGradOp(_OnednnAvgPoolGrad, AvgPoolGradOp):
    """AvgPoolGrad on oneDNN."""


@onednn_kernel("AvgPool3DGrad", host_memory=("orig_input_shape",), T=dtypes.float32)
class OnednnAvgPool3DGradOp(_OnednnAvgPoolGrad, AvgPool3DGradOp):
    """AvgPool3DGrad on oneDNN."""
