"""Conv2D, Conv3D, DepthwiseConv2dNative and the remapper's fused convolutions (_FusedConv2D,
_FusedDepthwiseConv2dNative) on oneDNN's convolution primitive, float32.

The NumPy kernels (aioflow/kernels/nn/conv_kernels.py, fused_kernels.py) check the attrs
and inputs with TF's messages and hand the checked channels-last input to `convolve`;
these kernels override it:

* the input and output are described as they lie (NHWC, no copy); the filter as
  oneDNN's format `any`, so the primitive picks its blocked layout, and the HWIO filter
  is reordered into it, once for a read-only filter (a Const or a variable's value:
  primitives.WeightsCache), per call otherwise;
* a grouped Conv2D (filter depth dividing the input depth) and a depthwise one
  (groups = channels, channel_multiplier outputs each) are oneDNN grouped convolutions;
* the fused chain becomes the primitive's bias and post-ops: BiasAdd as its bias, an
  inference batch norm as a per-channel multiply and add (binary post-ops, with
  fused_kernels' scale and offset, computed as TF does), a residual addend of the
  output's shape (below), then Relu (eltwise_relu), Relu6 (clip_v2 0..6), Elu
  (eltwise_elu, alpha 1), LeakyRelu (eltwise_relu with alpha) or _MklSwish
  (eltwise_swish, alpha 1);
* a residual addend that only the call's argument list holds (the executor's pool jobs
  and chains hand over their inputs so: `consumable`) becomes the output: the primitive
  writes into it with a sum post-op, as TF's oneDNN fused convolution forwards its
  addend's buffer (forward_input) and sums into it. That reads the addend where the
  output is written, no second stream: on ResNet50's residual shapes at batch 8 the
  addend costs 0.2-1.6 ms of CPU a call less than a binary add post-op reading it from
  another buffer (docs/performance.md). An addend something else holds is read in
  place by a binary add post-op, and the output is a new array;
* primitives are cached by shapes, strides, window and chain (PrimitiveCache), as TF's
  MklPrimitiveFactory does.

Other types (float16, bfloat16, float64, int32) and empty tensors run the NumPy code.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from aioflow.framework import dtypes
from aioflow.kernels.nn.conv_kernels import (
    Conv2DOp,
    Conv3DOp,
    DepthwiseConv2dNativeOp,
)
from aioflow.kernels.nn.fused_kernels import (
    FusedConv2DOp,
    FusedDepthwiseConv2dNativeOp,
    _elu,
    _leaky_relu,
    _relu,
    _relu6,
    _swish,
    add_residual,
    make_epilogue,
)
from aioflow.kernels.onednn import backend
from aioflow.kernels.onednn import dnnl_api as api
from aioflow.kernels.onednn.backend import LoopOrThread, onednn_kernel, team
from aioflow.kernels.onednn.primitives import (
    MemoryDesc,
    PostOps,
    Primitive,
    PrimitiveCache,
    WeightsCache,
    address,
    array_desc,
    engine,
    never_written,
    reorder,
    set_threads,
)


def channels_last_order(ndim: int) -> tuple:
    """A channels-last array's axes in oneDNN's logical order N C spatial (NHWC: 0 3 1 2)."""
    return (0, ndim - 1) + tuple(range(1, ndim - 1))

_CACHE = PrimitiveCache()


def _eltwise(act, alpha: float):
    """The post-op of a fused activation (fused_kernels' function)."""
    if act is _relu:
        return ("eltwise", api.ELTWISE_RELU, 0.0, 0.0)
    if act is _relu6:
        return ("eltwise", api.ELTWISE_CLIP_V2, 0.0, 6.0)
    if act is _elu:
        return ("eltwise", api.ELTWISE_ELU, 1.0, 0.0)
    if act is _leaky_relu:
        return ("eltwise", api.ELTWISE_RELU, float(alpha), 0.0)
    if act is _swish:  # x / (1 + exp(-alpha x)), alpha 1
        return ("eltwise", api.ELTWISE_SWISH, 1.0, 0.0)
    raise ValueError(f"no oneDNN post-op for {act}")


class ConvPlan:
    """A convolution primitive for one geometry and chain, with the descriptors of its
    arguments and the reorder of the user's filter into the layout it chose."""

    def __init__(self, x: np.ndarray, w_dims, w_strides, out: np.ndarray, strides,
                 dilations, pads, bias: bool, scaled: bool, residual, eltwise):
        o = out.shape[-1]
        order = channels_last_order(x.ndim)
        self.src_md = array_desc(x, order)
        self.dst_md = array_desc(out, order)
        self.user_w_md = MemoryDesc.strided(w_dims, np.float32, w_strides)
        any_w = MemoryDesc.tagged(w_dims, np.float32, api.FORMAT_ANY)
        self.bias_md = MemoryDesc.tagged([o], np.float32, api.TAG_X) if bias else None
        ones = [1] * (x.ndim - 2)
        channel_md = MemoryDesc.strided([1, o, *ones], np.float32, [o, 1, *ones])
        spec = []
        if scaled:  # y * scale + offset: an inference batch norm
            spec += [("binary", api.BINARY_MUL, channel_md), ("binary", api.BINARY_ADD,
                                                               channel_md)]
        # residual: BINARY (+ the addend, read where it lies: a binary post-op on the whole
        # tensor), SUM (+ the output's own values: the addend is the output buffer), None
        self.residual_md = array_desc(out, order) if residual == BINARY else None
        self.residual_index = len(spec)
        if residual == BINARY:
            spec.append(("binary", api.BINARY_ADD, self.residual_md))
        elif residual == SUM:
            spec.append(("sum", 1.0))
        if eltwise is not None:
            spec.append(eltwise)
        self.channel_md = channel_md
        self.attr = PostOps(spec)
        eng = engine()
        lib = api._lib
        self.prim = Primitive(lambda pd: lib.dnnl_convolution_forward_primitive_desc_create(
            pd, eng, api.FORWARD_INFERENCE, api.CONVOLUTION_DIRECT, self.src_md.handle,
            any_w.handle, self.bias_md.handle if bias else None, self.dst_md.handle,
            api.dims(strides), api.dims([d - 1 for d in dilations]),
            api.dims([b for b, _ in pads]), api.dims([a for _, a in pads]), self.attr.attr),
            "dnnl_convolution_forward_primitive_desc_create")
        self.w_md = self.prim.md(api.QUERY_WEIGHTS_MD)
        self.w_reorder = None if self.w_md == self.user_w_md else reorder(self.user_w_md,
                                                                          self.w_md)


class _Replay:
    """A kernel's last oneDNN call, run again while the same inputs come back: the same
    input shape and strides, the same filter and fusion arrays (a frozen graph's Consts,
    read-only: `never_written`), an addend of the output's shape. Everything the full
    path checks and builds (TF's checks, the geometry, the fusion's bias, the cache key,
    the argument descriptors) depends on nothing else, so a repeat costs a team, an
    output buffer and the primitive's execution (~10 µs of Python instead of ~35: a
    MobileNetV2 run has 52 convolutions, and with many runs in flight the Python that
    runs under the GIL is what bounds the throughput). One bound call per team size
    (a primitive's thread count is fixed when it is made) and way of adding the addend
    (BINARY or SUM: whether this call's addend is `consumable`)."""

    __slots__ = ("x_shape", "x_strides", "consts", "addend", "out_shape", "work", "calls")

    def matches(self, x, consts, addend, out_shape) -> bool:
        """Whether a call with these arguments is the one replayed."""
        return (x.shape == self.x_shape and x.strides == self.x_strides
                and addend == self.addend and out_shape == self.out_shape
                and len(consts) == len(self.consts)
                and all(a is b for (_, a), (_, b) in zip(consts, self.consts, strict=True)))

    def run(self, inputs: list):
        """(output,) of this call, or None when it is not a repeat (the full path runs)."""
        x = inputs[0]
        if x.shape != self.x_shape or x.strides != self.x_strides or x.dtype != _F32:
            return None
        for i, a in self.consts:
            if inputs[i] is not a:
                return None
        addend = mode = None
        if self.addend is not None:
            mode = SUM if consumable(inputs, self.addend) else BINARY
            addend = inputs[self.addend]
            if addend.shape != self.out_shape or addend.dtype != _F32 or \
                    not addend.flags.c_contiguous:
                return None
        with team(self.work) as threads:
            bound = self.calls.get((threads, mode))
            if bound is None:  # not made for this team (or addend) yet: the full path
                return None
            prim, key, src_md, dst_md, w_arg, extra, residual_md, _ = bound
            set_threads(threads)
            out = addend if mode == SUM else np.empty(self.out_shape, _F32)
            call = [(api.ARG_SRC, src_md, x), w_arg, (api.ARG_DST, dst_md, out), *extra]
            if mode == BINARY:
                call.append((*residual_md, addend))
            prim.execute(call, key)
        return (out,)


_F32 = np.dtype(np.float32)

#: How a residual addend joins the primitive: a binary add post-op reading it, or a sum
#: post-op adding the output buffer's values (the addend is that buffer: `consumable`).
BINARY, SUM = "binary", "sum"


def consumable(inputs: list, i: int) -> bool:
    """Whether inputs[i] may become the output, written over: a float32 C-contiguous
    writable array owning its data (no view of another buffer) that nothing but the
    argument list refers to (TF's forward_input: a buffer whose reference count is one).
    The executor's pool jobs and chains hold a node's inputs in that list alone (their
    input slots cleared) and clear it after the call; a value still held elsewhere -- a
    slot of the inline path, another consumer, a fetch, a feed, a variable, a view of it
    -- has more references. The count is taken before anything here refers to it: the
    list's and sys.getrefcount's own argument."""
    if sys.getrefcount(inputs[i]) != 2:
        return False
    a = inputs[i]
    return (a.__class__ is np.ndarray and a.base is None and a.dtype == _F32
            and a.flags.writeable and a.flags.c_contiguous and a.flags.aligned)


class _OnednnConv(LoopOrThread):
    """convolve() on oneDNN for float32 (mixed into the NumPy kernels' classes, before
    them: super().convolve is the NumPy code); each call on the event loop or the
    executor's pool by its work (backend.LoopOrThread). A call repeating the last one's
    inputs replays it (`_Replay`)."""

    uses_blas = True  # an OpenMP team: the device's BLAS gate bounds how many run at once

    _residual = False  # (FusedConv2DOp's, when its chain adds a residual addend)

    def _onednn_init(self):
        self._weights = WeightsCache()
        self._chain_cache = None  # (args, channels, (bias, bn)): _chain's last
        self._replay: _Replay | None = None  # the last call, to run again (channels-last)
        self._work_memo = None  # ((x shape, w shape), work): `work`'s last

    def compute(self, ctx, inputs):
        replay = self._replay
        if replay is not None and backend.ACTIVE:
            outs = replay.run(inputs)
            if outs is not None:
                return outs
        return super().compute(ctx, inputs)

    def work(self, inputs: list) -> int:
        """Input positions x filter size / strides: the multiply-adds of a convolution,
        a grouped one and a depthwise one alike (asked on every call: kept for the last
        shapes)."""
        x, w = inputs[0], inputs[1]
        try:
            key = (x.shape, w.shape)
        except AttributeError:  # (not arrays: the kernel's checks will say so)
            return 0
        memo = self._work_memo
        if memo is not None and memo[0] == key:
            return memo[1]
        n = 0
        if len(key[0]) >= 3:
            positions = x.size // max(1, key[0][1 if self._channels_first else -1])
            n = positions * w.size // max(1, math.prod(self._strides))
        self._work_memo = (key, n)
        return n

    def training(self, inputs: list) -> bool:
        """Whether a convolution gradient has run for this call's geometry (a training
        step's forward convolution: inline up to backend.TRAINING_INLINE_WORK)."""
        if not backend.any_trained():
            return False
        try:
            geometry = (inputs[0].shape, inputs[1].shape, self._strides, self._dilations)
        except AttributeError:  # (not arrays: the kernel's checks will say so)
            return False
        return backend.trained(geometry)

    def filter_desc(self, w: np.ndarray, channels: int):
        """(logical dims, strides in elements) of the filter, oneDNN's O I H W or, grouped,
        G O/G I/G H W."""
        raise NotImplementedError

    def fusion(self, inputs, channels: int):
        """(bias or None, (scale, offset) or None, activation post-op or None, residual
        addend or None)."""
        return None, None, None, None

    def convolve(self, inputs, x, w, pads, out_sizes):
        if not backend.ACTIVE or x.dtype != np.float32 or w.dtype != np.float32 or \
                x.size == 0 or w.size == 0:
            return super().convolve(inputs, x, w, pads, out_sizes)
        w_dims, w_strides = self.filter_desc(w, x.shape[-1])
        grouped = len(w_dims) == x.ndim + 1
        channels = w_dims[0] * w_dims[1] if grouped else w_dims[0]
        if 0 in out_sizes:
            return super().convolve(inputs, x, w, pads, out_sizes)
        # (asked before anything here refers to the addend: `consumable` counts references)
        sole = self._residual and not self._channels_first and consumable(inputs, 3)
        bias, bn, eltwise, addend = self.fusion(inputs, channels)
        x = np.ascontiguousarray(x)
        out_shape = (x.shape[0], *out_sizes, channels)
        residual = mode = None
        if addend is not None and addend.shape == out_shape:
            if sole and addend is inputs[3]:  # the output, summed into
                residual, mode = addend, SUM
            else:  # read in place by a binary post-op
                residual, mode = np.ascontiguousarray(addend), BINARY
        out = residual if mode == SUM else np.empty(out_shape, np.float32)
        # Replayed next time when nothing was converted on the way (the input as it came,
        # channels-last, contiguous; the filter as it came; the addend in place).
        replay = not self._channels_first and x is inputs[0] and w is inputs[1] and (
            addend is None or residual is inputs[3])
        try:
            if addend is not None and residual is None:  # an addend that broadcasts: added
                y = self._convolve(x, w, w_dims, w_strides, out, pads, bias, bn, None, None,
                                   None)
                return add_residual(y, addend, self._fusion[1], self._fusion[3])  # after
            return self._convolve(x, w, w_dims, w_strides, out, pads, bias, bn, eltwise,
                                  residual, mode, inputs if replay else None)
        except api.DnnlError:  # a geometry oneDNN does not take (refused when the primitive
            # is made, before anything is written): the NumPy code
            return super().convolve(inputs, x, w, pads, out_sizes)

    def _convolve(self, x, w, w_dims, w_strides, out, pads, bias, bn, eltwise, residual,
                  mode, inputs=None):
        """The primitive's call: `out` is written (with mode SUM, `out` is the addend)."""
        grouped = len(w_dims) == x.ndim + 1
        work = out.size * math.prod(w_dims[2 if grouped else 1:])
        # oneDNN fixes a primitive's thread count when it is created: it is part of the key.
        with team(work) as threads:
            set_threads(threads)  # before a primitive is made: it keeps the count
            key = (x.shape, tuple(w_dims), tuple(w_strides), self._strides, self._dilations,
                   tuple(pads), bias is not None, bn is not None, mode, eltwise, threads)
            plan = _CACHE.get(key, lambda: ConvPlan(x, w_dims, w_strides, out, self._strides,
                                                    self._dilations, pads, bias is not None,
                                                    bn is not None, mode, eltwise))
            if plan.w_reorder is None:
                w_arg = (api.ARG_WEIGHTS, plan.user_w_md, w)
            else:
                w_arg = (api.ARG_WEIGHTS, plan.w_md, self._weights.get(w, plan))
            args = [(api.ARG_SRC, plan.src_md, x), w_arg, (api.ARG_DST, plan.dst_md, out)]
            if bias is not None:
                args.append((api.ARG_BIAS, plan.bias_md, bias))
            if bn is not None:
                args += [(api.post_op_arg(0, api.ARG_SRC_1), plan.channel_md, bn[0]),
                         (api.post_op_arg(1, api.ARG_SRC_1), plan.channel_md, bn[1])]
            if mode == BINARY:
                args.append((api.post_op_arg(plan.residual_index, api.ARG_SRC_1),
                             plan.residual_md, residual))
            plan.prim.execute(args)
        if inputs is not None:
            self._keep_replay(inputs, x, w, out, work, threads, plan, args, mode)
        return out

    def _keep_replay(self, inputs, x, w, out, work, threads, plan, args, mode):
        """Keep this call to replay (`_Replay`) when its filter and fusion arrays are ones
        nothing can write (their derived arrays, the reordered filter and the bias or
        folded batch norm, were kept for them too); else forget the last one."""
        addend = 3 if mode is not None else None
        consts = tuple((i, a) for i, a in enumerate(inputs) if i and i != addend)
        kept_w = plan.w_reorder is None or self._weights.holds(w, plan)
        fused = type(self).fusion is not _OnednnConv.fusion
        if not kept_w or (fused and self._chain_cache is None) or not all(
                never_written(a) for _, a in consts if isinstance(a, np.ndarray)):
            self._replay = None
            return
        r = self._replay
        if r is None or not r.matches(x, consts, addend, out.shape):
            r = _Replay()
            r.x_shape, r.x_strides = x.shape, x.strides
            r.consts, r.addend = consts, addend
            r.out_shape, r.work, r.calls = out.shape, work, {}
        # The filter and fusion arrays by address (held here: `keep`), the key of the
        # descriptors made once: a replay only points the input, output and addend.
        binary = mode == BINARY
        fixed = [args[1], *args[3:len(args) - 1 if binary else len(args)]]
        keep = tuple(a for _, _, a in fixed)
        fixed = [(arg, md, address(a)) for arg, md, a in fixed]
        r.calls[threads, mode] = (plan.prim, plan.prim.memories_key(args), plan.src_md,
                                  plan.dst_md, fixed[0], tuple(fixed[1:]),
                                  args[-1][:2] if binary else None, keep)
        self._replay = r


def hwio_filter_desc(w: np.ndarray, channels: int):
    """A Conv2D filter (kh, kw, C/groups, O): O I H W, or grouped G O/G I/G H W."""
    kh, kw, fc, o = w.shape
    s = [st // w.itemsize for st in w.strides]
    groups = channels // fc
    if groups == 1:
        return [o, fc, kh, kw], [s[3], s[2], s[0], s[1]]
    og = o // groups
    return [groups, og, fc, kh, kw], [og * s[3], s[3], s[2], s[0], s[1]]


def _dhwio_desc(w: np.ndarray, channels: int):
    """A Conv3D filter (kd, kh, kw, C, O): O I D H W."""
    s = [st // w.itemsize for st in w.strides]
    return [w.shape[4], w.shape[3], *w.shape[:3]], [s[4], s[3], s[0], s[1], s[2]]


def depthwise_filter_desc(w: np.ndarray, channels: int):
    """A depthwise filter (kh, kw, C, M): C groups of M outputs from 1 input each."""
    kh, kw, c, m = w.shape
    s = [st // w.itemsize for st in w.strides]
    return [c, m, 1, kh, kw], [s[2], s[3], s[2], s[0], s[1]]


def _chain(kernel, inputs, channels: int):
    """fusion() of a fused kernel: its chain's arguments, checked by fused_kernels. The
    bias (or folded batch norm) is made once while the same never-written argument
    arrays come back (a frozen graph's Consts), as _FusedMatMul keeps its epilogue."""
    base, act, epsilon, alpha = kernel._fusion
    args = inputs[2:2 + (1 if base == "BiasAdd" else 4)]
    last = kernel._chain_cache
    if last is not None and len(last[0]) == len(args) and all(
            a is b for a, b in zip(last[0], args, strict=True)) and last[1] == channels:
        bias, bn = last[2]
    else:
        ep = make_epilogue(base, act, epsilon, alpha, args, channels, np.float32)
        bias, bn = (ep.bias, None) if ep.scale is None else (
            None, (np.ascontiguousarray(ep.scale), ep.bias))
        kernel._chain_cache = (tuple(args), channels, (bias, bn)) if all(
            never_written(a) for a in args) else None
    eltwise = _eltwise(act, alpha) if act is not None else None
    addend = inputs[3] if kernel._residual else None
    if addend is not None and addend.dtype != np.float32:
        addend = addend.astype(np.float32)
    return bias, bn, eltwise, addend


@onednn_kernel("Conv2D", T=dtypes.float32)
class OnednnConv2DOp(_OnednnConv, Conv2DOp):
    """Conv2D (and grouped Conv2D) on oneDNN."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()

    filter_desc = staticmethod(hwio_filter_desc)


@onednn_kernel("Conv3D", T=dtypes.float32)
class OnednnConv3DOp(_OnednnConv, Conv3DOp):
    """Conv3D on oneDNN."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()

    filter_desc = staticmethod(_dhwio_desc)


@onednn_kernel("DepthwiseConv2dNative", T=dtypes.float32)
class OnednnDepthwiseConv2dNativeOp(_OnednnConv, DepthwiseConv2dNativeOp):
    """DepthwiseConv2dNative on oneDNN (a grouped convolution)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()

    filter_desc = staticmethod(depthwise_filter_desc)

@onednn_kernel("_FusedConv2D", T=dtypes.float32)
class OnednnFusedConv2DOp(_OnednnConv, FusedConv2DOp):
    """_FusedConv2D on oneDNN: the chain as the primitive's bias and post-ops."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()

    filter_desc = staticmethod(hwio_filter_desc)
    fusion = _chain
    compiles_epilogue = False  # the chain is the primitive's post-ops


@onednn_kernel("_FusedDepthwiseConv2dNative", T=dtypes.float32)
class OnednnFusedDepthwiseConv2dNativeOp(_OnednnConv, FusedDepthwiseConv2dNativeOp):
    """_FusedDepthwiseConv2dNative on oneDNN."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._onednn_init()

    filter_desc = staticmethod(depthwise_filter_desc)
    fusion = _chain
    compiles_epilogue = False  # the chain is the primitive's post-ops
