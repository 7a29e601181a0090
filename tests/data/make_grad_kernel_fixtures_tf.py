"""Make tests/data/grad_kernel_cases.{json,npz} and grad_kernel_op_defs.pb: what TF 2.21
computes, or the error it raises, for the convolution, pooling, normalisation and resizing
gradient kernels (tests/test_kernels_grad_nn.py replays them), and TF's OpDefs of those ops.

Run from the project root with TensorFlow's Python (never an aioflow dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/tfvenv/bin/python tests/data/make_grad_kernel_fixtures_tf.py

Cases run as make_nn_conv_fixtures.py's do (its runner is reused): each op in a
``tf.compat.v1.Session`` on placeholders of unknown shape, eagerly where graph
construction refuses the attrs; TF's plain (Eigen) CPU kernels first, and the cases those
refuse for their layout or dilations (NCHW, dilated depthwise, ...) again with oneDNN on,
as a default TF install runs them (marked ``"onednn": true``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_nn_conv_fixtures import _ONEDNN_RUNS, _run_case  # noqa: E402

f32, f64, f16 = np.float32, np.float64, np.float16
i32 = np.int32

OPS = ["Conv2DBackpropFilter", "Conv2DBackpropInput", "DepthwiseConv2dNativeBackpropInput",
       "DepthwiseConv2dNativeBackpropFilter", "Conv3DBackpropInput", "Conv3DBackpropFilter",
       "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2", "MaxPoolGrad", "MaxPoolGradV2",
       "MaxPoolGradGrad", "MaxPoolGradGradV2", "AvgPoolGrad", "MaxPool3DGrad",
       "AvgPool3DGrad", "MaxPool3DGradGrad", "MaxPoolWithArgmax", "MaxPoolGradWithArgmax",
       "MaxPoolGradGradWithArgmax", "FusedBatchNormGrad", "FusedBatchNormGradV2",
       "FusedBatchNormGradV3", "LRNGrad", "ResizeBilinearGrad", "ResizeNearestNeighborGrad",
       "ResizeBicubicGrad"]


def _x(shape, seed=0, dtype=f32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _pos(shape, seed=0):
    return (np.abs(np.random.default_rng(seed).standard_normal(shape)) + 0.5).astype(f32)


def _sizes(*v):
    return np.array(v, i32)


def _nchw(a):
    return np.ascontiguousarray(np.moveaxis(a, -1, 1))


def _out(size, k, s, pad, d=1, before=0, after=0):
    eff = (k - 1) * d + 1
    if pad == "SAME":
        return -(-size // s)
    if pad == "VALID":
        return (size - eff + s) // s
    return (size + before + after - eff + s) // s


def _conv_cases(add):
    x = _x((2, 9, 10, 3), 1)
    w = _x((3, 2, 3, 4), 2)
    in_sizes = _sizes(2, 9, 10, 3)
    f_sizes = _sizes(3, 2, 3, 4)

    def dy(pad, s=(1, 1), d=(1, 1), seed=7, explicit=(0, 0, 0, 0), kh=3, kw=2, o=4, n=2):
        oh = _out(9, kh, s[0], pad, d[0], explicit[0], explicit[1])
        ow = _out(10, kw, s[1], pad, d[1], explicit[2], explicit[3])
        return _x((n, oh, ow, o), seed)

    for pad in ("SAME", "VALID"):
        for s in (1, 2, 3):
            g = dy(pad, (s, s))
            add(f"bpf_{pad}_s{s}", "Conv2DBackpropFilter",
                [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
                strides=[1, s, s, 1], padding=pad)
        g = dy(pad, d=(2, 2))
        add(f"bpf_{pad}_d2", "Conv2DBackpropFilter",
            [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
            strides=[1, 1, 1, 1], padding=pad, dilations=[1, 2, 2, 1])
        add(f"bpi_{pad}_d2", "Conv2DBackpropInput",
            [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)],
            strides=[1, 1, 1, 1], padding=pad, dilations=[1, 2, 2, 1])
        g = dy(pad, (2, 1), d=(1, 2))
        add(f"bpf_{pad}_s2_d2", "Conv2DBackpropFilter",
            [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
            strides=[1, 2, 1, 1], padding=pad, dilations=[1, 1, 2, 1])
        add(f"bpi_{pad}_s2_d2", "Conv2DBackpropInput",
            [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)],
            strides=[1, 2, 1, 1], padding=pad, dilations=[1, 1, 2, 1])
    ex = [0, 0, 1, 2, 3, 0, 0, 0]
    g = dy("EXPLICIT", (2, 1), explicit=(1, 2, 3, 0))
    add("bpf_explicit", "Conv2DBackpropFilter",
        [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
        strides=[1, 2, 1, 1], padding="EXPLICIT", explicit_paddings=ex)
    add("bpf_nchw_explicit", "Conv2DBackpropFilter",
        [("input", _nchw(x)), ("filter_sizes", f_sizes), ("out_backprop", _nchw(g))],
        strides=[1, 1, 2, 1], padding="EXPLICIT", data_format="NCHW",
        explicit_paddings=[0, 0, 0, 0, 1, 2, 3, 0])
    add("bpi_nchw_explicit", "Conv2DBackpropInput",
        [("input_sizes", _sizes(2, 3, 9, 10)), ("filter", w), ("out_backprop", _nchw(g))],
        strides=[1, 1, 2, 1], padding="EXPLICIT", data_format="NCHW",
        explicit_paddings=[0, 0, 0, 0, 1, 2, 3, 0])
    g = dy("EXPLICIT", (1, 1), d=(2, 1), explicit=(2, 2, 1, 1))
    add("bpf_explicit_d2", "Conv2DBackpropFilter",
        [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 2, 2, 1, 1, 0, 0],
        dilations=[1, 2, 1, 1])
    add("bpi_explicit_d2", "Conv2DBackpropInput",
        [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 2, 2, 1, 1, 0, 0],
        dilations=[1, 2, 1, 1])
    g = dy("SAME", (2, 2))
    add("bpf_nchw", "Conv2DBackpropFilter",
        [("input", _nchw(x)), ("filter_sizes", f_sizes), ("out_backprop", _nchw(g))],
        strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    add("bpf_nchw_d2", "Conv2DBackpropFilter",
        [("input", _nchw(x)), ("filter_sizes", f_sizes), ("out_backprop", _nchw(dy(
            "SAME", d=(2, 2))))],
        strides=[1, 1, 1, 1], padding="SAME", data_format="NCHW", dilations=[1, 1, 2, 2])
    add("bpi_nchw_d2", "Conv2DBackpropInput",
        [("input_sizes", _sizes(2, 3, 9, 10)), ("filter", w),
         ("out_backprop", _nchw(dy("SAME", d=(2, 2))))],
        strides=[1, 1, 1, 1], padding="SAME", data_format="NCHW", dilations=[1, 1, 2, 2])
    w1 = _x((1, 1, 3, 4), 3)
    g1 = _x((2, 5, 5, 4), 10)
    add("bpf_1x1_s2", "Conv2DBackpropFilter",
        [("input", x), ("filter_sizes", _sizes(1, 1, 3, 4)), ("out_backprop", g1)],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpf_1x1_valid", "Conv2DBackpropFilter",
        [("input", x), ("filter_sizes", _sizes(1, 1, 3, 4)), ("out_backprop",
                                                              _x((2, 9, 10, 4), 11))],
        strides=[1, 1, 1, 1], padding="VALID")
    add("bpi_1x1_d2", "Conv2DBackpropInput",
        [("input_sizes", in_sizes), ("filter", w1), ("out_backprop", _x((2, 9, 10, 4), 11))],
        strides=[1, 1, 1, 1], padding="VALID", dilations=[1, 2, 2, 1])
    for name, t in (("f64", f64), ("f16", f16)):
        g = dy("SAME", (2, 2))
        add(f"bpf_{name}", "Conv2DBackpropFilter",
            [("input", x.astype(t)), ("filter_sizes", f_sizes), ("out_backprop", g.astype(t))],
            strides=[1, 2, 2, 1], padding="SAME")
        add(f"bpi_{name}", "Conv2DBackpropInput",
            [("input_sizes", in_sizes), ("filter", w.astype(t)), ("out_backprop",
                                                                   g.astype(t))],
            strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_int32", "Conv2DBackpropInput",
        [("input_sizes", in_sizes), ("filter", (w * 3).astype(i32)),
         ("out_backprop", (dy("VALID") * 3).astype(i32))],
        strides=[1, 1, 1, 1], padding="VALID")
    add("bpf_empty_batch", "Conv2DBackpropFilter",
        [("input", x[:0]), ("filter_sizes", f_sizes), ("out_backprop", dy("SAME", n=0))],
        strides=[1, 1, 1, 1], padding="SAME")
    add("bpf_empty_out", "Conv2DBackpropFilter",
        [("input", x[:, :2]), ("filter_sizes", f_sizes), ("out_backprop",
                                                          _x((2, 0, 9, 4), 3))],
        strides=[1, 1, 1, 1], padding="VALID")
    # errors
    g = dy("SAME", (2, 2))
    bad = [
        ("sizes_len", dict(fs=_sizes(3, 2, 3))),
        ("sizes_rank", dict(fs=np.array([[3, 2, 3, 4]], i32))),
        ("input_rank", dict(x=x[0])),
        ("dy_rank", dict(g=g[0])),
        ("mismatch", dict(g=_x((2, 4, 5, 4), 7))),
        ("depth", dict(fs=_sizes(3, 2, 2, 4))),
        ("out_depth", dict(fs=_sizes(3, 2, 3, 5))),
        ("batch", dict(g=g[:1])),
        ("negative", dict(fs=_sizes(3, -2, 3, 4))),
    ]
    for cid, over in bad:
        add(f"bpf_err_{cid}", "Conv2DBackpropFilter",
            [("input", over.get("x", x)), ("filter_sizes", over.get("fs", f_sizes)),
             ("out_backprop", over.get("g", g))], strides=[1, 2, 2, 1], padding="SAME")
    for cid, attrs in (("strides_len", dict(strides=[1, 2, 2])),
                       ("batch_stride", dict(strides=[2, 2, 2, 1])),
                       ("depth_stride", dict(strides=[1, 2, 2, 2])),
                       ("dilations_len", dict(strides=[1, 2, 2, 1], dilations=[1, 1, 1])),
                       ("batch_dilation", dict(strides=[1, 2, 2, 1], dilations=[2, 1, 1, 1])),
                       ("zero_dilation", dict(strides=[1, 2, 2, 1], dilations=[1, 0, 1, 1])),
                       ("explicit_len", dict(strides=[1, 2, 2, 1], padding="EXPLICIT",
                                             explicit_paddings=[0, 0, 1, 1])),
                       ("explicit_negative", dict(strides=[1, 2, 2, 1], padding="EXPLICIT",
                                                  explicit_paddings=[0, 0, -1, 1, 1, 1, 0, 0])),
                       ("explicit_batch", dict(strides=[1, 2, 2, 1], padding="EXPLICIT",
                                               explicit_paddings=[1, 0, 1, 1, 1, 1, 0, 0])),
                       ("explicit_not", dict(strides=[1, 2, 2, 1], padding="SAME",
                                             explicit_paddings=[0, 0, 1, 1, 1, 1, 0, 0])),
                       ):
        attrs = dict(attrs)
        attrs.setdefault("padding", "SAME")
        add(f"bpf_err_{cid}", "Conv2DBackpropFilter",
            [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)], **attrs)
        if cid in ("zero_dilation", "batch_dilation", "depth_stride", "explicit_negative"):
            add(f"bpi_err_{cid}", "Conv2DBackpropInput",
                [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)], **attrs)


def _depthwise_cases(add):
    x = _x((2, 9, 10, 3), 1)
    wd = _x((3, 3, 3, 2), 6)
    in_sizes = _sizes(2, 9, 10, 3)
    f_sizes = _sizes(3, 3, 3, 2)
    ops = (("dwbi", "DepthwiseConv2dNativeBackpropInput"),
           ("dwbf", "DepthwiseConv2dNativeBackpropFilter"))

    def args(op, g, xx=x, w=wd, sizes=in_sizes, fs=f_sizes):
        if op.endswith("Input"):
            return [("input_sizes", sizes), ("filter", w), ("out_backprop", g)]
        return [("input", xx), ("filter_sizes", fs), ("out_backprop", g)]

    for short, op in ops:
        for pad in ("SAME", "VALID"):
            for s in (1, 2, 3):
                g = _x((2, _out(9, 3, s, pad), _out(10, 3, s, pad), 6), 7 + s)
                add(f"{short}_{pad}_s{s}", op, args(op, g), strides=[1, s, s, 1],
                    padding=pad)
        g = _x((2, 9 + 2 - 2, 10 + 1 - 2, 6), 9)
        add(f"{short}_explicit", op, args(op, g), strides=[1, 1, 1, 1], padding="EXPLICIT",
            explicit_paddings=[0, 0, 2, 0, 1, 0, 0, 0])
        g = _x((2, 5, 5, 6), 10)
        add(f"{short}_nchw", op, args(op, _nchw(g), xx=_nchw(x), sizes=_sizes(2, 3, 9, 10)),
            strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
        g = _x((2, 9, 10, 3), 11)
        add(f"{short}_m1_d2", op, args(op, g, w=wd[..., :1], fs=_sizes(3, 3, 3, 1)),
            strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 2, 2, 1])
        for name, t in (("f64", f64), ("f16", f16)):
            g = _x((2, 5, 5, 6), 12).astype(t)
            add(f"{short}_{name}", op, args(op, g, xx=x.astype(t), w=wd.astype(t)),
                strides=[1, 2, 2, 1], padding="SAME")
        g = _x((2, 5, 5, 6), 12)
        add(f"{short}_err_strides_len", op, args(op, g), strides=[1, 2, 2], padding="SAME")
        add(f"{short}_err_batch_stride", op, args(op, g), strides=[2, 2, 2, 1],
            padding="SAME")
        add(f"{short}_err_unequal", op, args(op, g), strides=[1, 2, 1, 1], padding="SAME")
        add(f"{short}_err_mismatch", op, args(op, g[:, :4]), strides=[1, 2, 2, 1],
            padding="SAME")
        add(f"{short}_err_batch", op, args(op, g[:1]), strides=[1, 2, 2, 1], padding="SAME")
        add(f"{short}_err_out_depth", op, args(op, g[..., :5]), strides=[1, 2, 2, 1],
            padding="SAME")
        add(f"{short}_err_dy_rank", op, args(op, g[0]), strides=[1, 2, 2, 1], padding="SAME")
        add(f"{short}_err_explicit_len", op, args(op, g), strides=[1, 2, 2, 1],
            padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1])
    g = _x((2, 5, 5, 6), 12)
    add("dwbi_err_sizes_len", ops[0][1], args(ops[0][1], g, sizes=_sizes(2, 9, 10)),
        strides=[1, 2, 2, 1], padding="SAME")
    add("dwbi_err_depth", ops[0][1], args(ops[0][1], g, sizes=_sizes(2, 9, 10, 4)),
        strides=[1, 2, 2, 1], padding="SAME")
    add("dwbi_err_filter_rank", ops[0][1], args(ops[0][1], g, w=wd[0]),
        strides=[1, 2, 2, 1], padding="SAME")
    add("dwbf_err_sizes_len", ops[1][1], args(ops[1][1], g, fs=_sizes(3, 3, 3)),
        strides=[1, 2, 2, 1], padding="SAME")
    add("dwbf_err_depth", ops[1][1], args(ops[1][1], g, fs=_sizes(3, 3, 4, 2)),
        strides=[1, 2, 2, 1], padding="SAME")
    add("dwbf_err_input_rank", ops[1][1], args(ops[1][1], g, xx=x[0]),
        strides=[1, 2, 2, 1], padding="SAME")


def _conv3d_cases(add):
    x = _x((2, 5, 6, 7, 2), 13)
    w = _x((2, 3, 2, 2, 3), 14)
    in_sizes = _sizes(2, 5, 6, 7, 2)
    f_sizes = _sizes(2, 3, 2, 2, 3)

    def g_for(pad, s, d=(1, 1, 1), seed=15):
        return _x((2, _out(5, 2, s[0], pad, d[0]), _out(6, 3, s[1], pad, d[1]),
                   _out(7, 2, s[2], pad, d[2]), 3), seed)

    for pad in ("SAME", "VALID"):
        for s in ((1, 1, 1), (1, 2, 1), (2, 2, 3)):
            g = g_for(pad, s)
            st = [1, *s, 1]
            tag = "".join(map(str, s))
            add(f"c3bi_{pad}_s{tag}", "Conv3DBackpropInputV2",
                [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)],
                strides=st, padding=pad)
            add(f"c3bf_{pad}_s{tag}", "Conv3DBackpropFilterV2",
                [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
                strides=st, padding=pad)
        g = g_for(pad, (1, 1, 1), (2, 1, 2))
        add(f"c3bi_{pad}_d2", "Conv3DBackpropInputV2",
            [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)],
            strides=[1, 1, 1, 1, 1], padding=pad, dilations=[1, 2, 1, 2, 1])
        add(f"c3bf_{pad}_d2", "Conv3DBackpropFilterV2",
            [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g)],
            strides=[1, 1, 1, 1, 1], padding=pad, dilations=[1, 2, 1, 2, 1])
    g = g_for("SAME", (1, 2, 1))
    add("c3bi_ncdhw", "Conv3DBackpropInputV2",
        [("input_sizes", _sizes(2, 2, 5, 6, 7)), ("filter", w), ("out_backprop", _nchw(g))],
        strides=[1, 1, 1, 2, 1], padding="SAME", data_format="NCDHW")
    add("c3bf_ncdhw", "Conv3DBackpropFilterV2",
        [("input", _nchw(x)), ("filter_sizes", f_sizes), ("out_backprop", _nchw(g))],
        strides=[1, 1, 1, 2, 1], padding="SAME", data_format="NCDHW")
    add("c3bi_int64_sizes", "Conv3DBackpropInputV2",
        [("input_sizes", in_sizes.astype(np.int64)), ("filter", w), ("out_backprop", g)],
        strides=[1, 1, 2, 1, 1], padding="SAME")
    for name, t in (("f64", f64), ("f16", f16)):
        add(f"c3bi_{name}", "Conv3DBackpropInputV2",
            [("input_sizes", in_sizes), ("filter", w.astype(t)), ("out_backprop",
                                                                   g.astype(t))],
            strides=[1, 1, 2, 1, 1], padding="SAME")
        add(f"c3bf_{name}", "Conv3DBackpropFilterV2",
            [("input", x.astype(t)), ("filter_sizes", f_sizes), ("out_backprop",
                                                                  g.astype(t))],
            strides=[1, 1, 2, 1, 1], padding="SAME")
    st = dict(strides=[1, 1, 2, 1, 1], padding="SAME")
    add("c3bi_err_mismatch", "Conv3DBackpropInputV2",
        [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g[:, :3])], **st)
    add("c3bf_err_mismatch", "Conv3DBackpropFilterV2",
        [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g[:, :3])], **st)
    add("c3bi_err_sizes_len", "Conv3DBackpropInputV2",
        [("input_sizes", in_sizes[:4]), ("filter", w), ("out_backprop", g)], **st)
    add("c3bf_err_sizes_len", "Conv3DBackpropFilterV2",
        [("input", x), ("filter_sizes", f_sizes[:4]), ("out_backprop", g)], **st)
    add("c3bi_err_depth", "Conv3DBackpropInputV2",
        [("input_sizes", _sizes(2, 5, 6, 7, 3)), ("filter", w), ("out_backprop", g)], **st)
    add("c3bf_err_depth", "Conv3DBackpropFilterV2",
        [("input", x), ("filter_sizes", _sizes(2, 3, 2, 3, 3)), ("out_backprop", g)], **st)
    add("c3bi_err_out_depth", "Conv3DBackpropInputV2",
        [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g[..., :2])], **st)
    add("c3bf_err_batch", "Conv3DBackpropFilterV2",
        [("input", x), ("filter_sizes", f_sizes), ("out_backprop", g[:1])], **st)
    add("c3bi_err_dy_rank", "Conv3DBackpropInputV2",
        [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g[0])], **st)
    add("c3bf_err_input_rank", "Conv3DBackpropFilterV2",
        [("input", x[0]), ("filter_sizes", f_sizes), ("out_backprop", g)], **st)
    add("c3bi_err_batch_stride", "Conv3DBackpropInputV2",
        [("input_sizes", in_sizes), ("filter", w), ("out_backprop", g)],
        strides=[2, 1, 2, 1, 1], padding="SAME")


def _maxpool_out(x, ksize, strides, padding, fmt="NHWC", explicit=None):
    import tensorflow as tf

    kw = {} if explicit is None else dict(explicit_paddings=explicit)
    if fmt == "NCHW":  # TF's Eigen CPU kernel pools NHWC only
        y = _maxpool_out(np.moveaxis(x, 1, -1), [ksize[0], ksize[2], ksize[3], ksize[1]],
                         [strides[0], strides[2], strides[3], strides[1]], padding)
        return _nchw(y)
    return tf.raw_ops.MaxPool(input=tf.constant(x), ksize=ksize, strides=strides,
                              padding=padding, **kw).numpy()


def _pool_cases(add):
    import tensorflow as tf

    x = _x((2, 9, 10, 3), 15)
    windows = [((2, 2), (2, 2)), ((3, 3), (2, 2)), ((3, 3), (1, 1)), ((1, 1), (3, 3)),
               ((2, 4), (3, 1))]
    for pad in ("SAME", "VALID"):
        for (kh, kw), (sh, sw) in windows:
            ks, st = [1, kh, kw, 1], [1, sh, sw, 1]
            tag = f"{pad}_k{kh}{kw}s{sh}{sw}"
            y = _maxpool_out(x, ks, st, pad)
            g = _x(y.shape, 16)
            add(f"mpg_{tag}", "MaxPoolGrad", [("orig_input", x), ("orig_output", y),
                                              ("grad", g)], ksize=ks, strides=st, padding=pad)
            gg = _x(x.shape, 17)
            add(f"mpgg_{tag}", "MaxPoolGradGrad",
                [("orig_input", x), ("orig_output", y), ("grad", gg)], ksize=ks, strides=st,
                padding=pad)
            add(f"apg_{tag}", "AvgPoolGrad", [("orig_input_shape", _sizes(*x.shape)),
                                              ("grad", g)], ksize=ks, strides=st, padding=pad)
            yv, am = (v.numpy() for v in tf.raw_ops.MaxPoolWithArgmax(
                input=tf.constant(x), ksize=ks, strides=st, padding=pad))
            add(f"mpwa_{tag}", "MaxPoolWithArgmax", [("input", x)], ksize=ks, strides=st,
                padding=pad)
            add(f"mpgwa_{tag}", "MaxPoolGradWithArgmax",
                [("input", x), ("grad", g), ("argmax", am)], ksize=ks, strides=st,
                padding=pad)
        y = _maxpool_out(x, [1, 3, 3, 1], [1, 2, 2, 1], pad)
        g = _x(y.shape, 16)
        add(f"mpgv2_{pad}", "MaxPoolGradV2",
            [("orig_input", x), ("orig_output", y), ("grad", g),
             ("ksize", _sizes(1, 3, 3, 1)), ("strides", _sizes(1, 2, 2, 1))], padding=pad)
        add(f"mpggv2_{pad}", "MaxPoolGradGradV2",
            [("orig_input", x), ("orig_output", y), ("grad", _x(x.shape, 17)),
             ("ksize", _sizes(1, 3, 3, 1)), ("strides", _sizes(1, 2, 2, 1))], padding=pad)
    # explicit padding
    ex = [0, 0, 1, 2, 2, 0, 0, 0]
    y = _maxpool_out(x, [1, 3, 3, 1], [1, 2, 2, 1], "EXPLICIT", explicit=ex)
    add("mpg_explicit", "MaxPoolGrad", [("orig_input", x), ("orig_output", y),
                                        ("grad", _x(y.shape, 18))],
        ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="EXPLICIT", explicit_paddings=ex)
    # ties: integer-valued inputs (first max in row-major order; 3-D: all within 1e-5)
    xt = np.round(_x((1, 6, 6, 2), 19)).astype(f32)
    y = _maxpool_out(xt, [1, 3, 3, 1], [1, 1, 1, 1], "SAME")
    add("mpg_ties", "MaxPoolGrad", [("orig_input", xt), ("orig_output", y),
                                    ("grad", _x(y.shape, 20))],
        ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")
    add("mpgg_ties", "MaxPoolGradGrad", [("orig_input", xt), ("orig_output", y),
                                         ("grad", _x(xt.shape, 21))],
        ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME")
    add("mpwa_ties_batch_index", "MaxPoolWithArgmax", [("input", np.concatenate([xt, xt]))],
        ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="SAME", include_batch_in_index=True,
        Targmax=tf.int32)
    # NCHW, dtypes
    xn = _nchw(x)
    y = _maxpool_out(xn, [1, 1, 3, 3], [1, 1, 2, 2], "SAME", fmt="NCHW")
    add("mpg_nchw", "MaxPoolGrad", [("orig_input", xn), ("orig_output", y),
                                    ("grad", _x(y.shape, 22))],
        ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    add("mpgg_nchw", "MaxPoolGradGrad", [("orig_input", xn), ("orig_output", y),
                                         ("grad", _x(xn.shape, 23))],
        ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    add("apg_nchw", "AvgPoolGrad", [("orig_input_shape", _sizes(*xn.shape)),
                                    ("grad", _x(y.shape, 22))],
        ksize=[1, 1, 3, 3], strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    for name, t in (("f64", f64), ("f16", f16), ("int32", i32)):
        xt = (x * 4).astype(t) if t == i32 else x.astype(t)
        y = _maxpool_out(xt, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        g = (_x(y.shape, 24) * 4).astype(t)
        add(f"mpg_{name}", "MaxPoolGrad", [("orig_input", xt), ("orig_output", y),
                                           ("grad", g)],
            ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
        add(f"mpgg_{name}", "MaxPoolGradGrad",
            [("orig_input", xt), ("orig_output", y), ("grad", (_x(x.shape, 25) * 4).astype(t))],
            ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
        if t != i32:
            add(f"apg_{name}", "AvgPoolGrad", [("orig_input_shape", _sizes(*x.shape)),
                                               ("grad", g)],
                ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
        add(f"mpwa_{name}", "MaxPoolWithArgmax", [("input", xt)], ksize=[1, 3, 3, 1],
            strides=[1, 2, 2, 1], padding="SAME")
    # errors
    y = _maxpool_out(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
    g = _x(y.shape, 16)
    gg = _x(x.shape, 17)
    mp = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    for cid, xi, yo, gr, attrs in (
            ("in_rank", x[0], y, g, mp), ("out_rank", x, y[0], g, mp),
            ("grad_rank", x, y, g[0], mp), ("grad_shape", x, y, g[:, :3], mp),
            ("out_shape", x, y[:, :3], g, mp),
            ("batch", x, y, g, dict(mp, ksize=[2, 3, 3, 1])),
            ("depth", x, y, g, dict(mp, ksize=[1, 3, 3, 3])),
            ("zero_ksize", x, y, g, dict(mp, ksize=[1, 0, 3, 1])),
            ("negative", x, y, g, dict(mp, ksize=[1, 10, 3, 1], padding="VALID")),
            ("explicit_big", x, y, g, dict(mp, padding="EXPLICIT",
                                           explicit_paddings=[0, 0, 3, 0, 0, 0, 0, 0]))):
        add(f"mpg_err_{cid}", "MaxPoolGrad", [("orig_input", xi), ("orig_output", yo),
                                              ("grad", gr)], **attrs)
        if cid != "explicit_big":
            add(f"mpgg_err_{cid}", "MaxPoolGradGrad",
                [("orig_input", xi), ("orig_output", yo),
                 ("grad", gg[0] if cid == "grad_rank" else gg[:, :3] if cid == "grad_shape"
                  else gg)], **attrs)
    add("mpgv2_err_ksize_len", "MaxPoolGradV2",
        [("orig_input", x), ("orig_output", y), ("grad", g), ("ksize", _sizes(1, 3, 3)),
         ("strides", _sizes(1, 2, 2, 1))], padding="SAME")
    add("mpggv2_err_batch", "MaxPoolGradGradV2",
        [("orig_input", x), ("orig_output", y), ("grad", gg), ("ksize", _sizes(2, 3, 3, 1)),
         ("strides", _sizes(1, 2, 2, 1))], padding="SAME")
    ap = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    for cid, shape, gr, attrs in (
            ("shape_len", _sizes(2, 9, 10), g, ap), ("grad_rank", _sizes(*x.shape), g[0], ap),
            ("batch", _sizes(3, 9, 10, 3), g, ap), ("depth", _sizes(2, 9, 10, 4), g, ap),
            ("grad_shape", _sizes(*x.shape), g[:, :3], ap),
            ("batch_window", _sizes(*x.shape), g, dict(ap, ksize=[2, 3, 3, 1])),
            ("zero_ksize", _sizes(*x.shape), g, dict(ap, ksize=[1, 0, 3, 1])),
            ("negative_shape", _sizes(2, -9, 10, 3), g, ap)):
        add(f"apg_err_{cid}", "AvgPoolGrad", [("orig_input_shape", shape), ("grad", gr)],
            **attrs)
    yv, am = (v.numpy() for v in tf.raw_ops.MaxPoolWithArgmax(input=tf.constant(x), **mp))
    add("mpgwa_err_grad_shape", "MaxPoolGradWithArgmax",
        [("input", x), ("grad", g[:, :3]), ("argmax", am)], **mp)
    add("mpgwa_err_argmax_shape", "MaxPoolGradWithArgmax",
        [("input", x), ("grad", g), ("argmax", am[:, :3])], **mp)
    add("mpgwa_err_argmax_range", "MaxPoolGradWithArgmax",
        [("input", x), ("grad", g), ("argmax", am + 10000)], **mp)
    add("mpwa_err_rank", "MaxPoolWithArgmax", [("input", x[0])], **mp)
    add("mpwa_err_depth", "MaxPoolWithArgmax", [("input", x)], ksize=[1, 1, 1, 3],
        strides=[1, 1, 1, 3], padding="SAME")


def _pool3d_cases(add):
    import tensorflow as tf

    x = _x((2, 5, 6, 7, 3), 30)
    for pad in ("SAME", "VALID"):
        for ks, st in (((2, 3, 2), (2, 2, 1)), ((3, 3, 3), (1, 1, 1)), ((1, 2, 3), (2, 1, 3))):
            k5, s5 = [1, *ks, 1], [1, *st, 1]
            tag = f"{pad}_k{''.join(map(str, ks))}s{''.join(map(str, st))}"
            y = tf.raw_ops.MaxPool3D(input=tf.constant(x), ksize=k5, strides=s5,
                                     padding=pad).numpy()
            g = _x(y.shape, 31)
            add(f"mp3g_{tag}", "MaxPool3DGrad", [("orig_input", x), ("orig_output", y),
                                                 ("grad", g)], ksize=k5, strides=s5,
                padding=pad)
            add(f"ap3g_{tag}", "AvgPool3DGrad", [("orig_input_shape", _sizes(*x.shape)),
                                                 ("grad", g)], ksize=k5, strides=s5,
                padding=pad)
            add(f"mp3gg_{tag}", "MaxPool3DGradGrad",
                [("orig_input", x), ("orig_output", y), ("grad", _x(x.shape, 32))],
                ksize=k5, strides=s5, padding=pad)
    xt = np.round(_x((1, 4, 4, 4, 2), 33)).astype(f32)
    y = tf.raw_ops.MaxPool3D(input=tf.constant(xt), ksize=[1, 2, 2, 2, 1],
                             strides=[1, 1, 1, 1, 1],
                             padding="SAME").numpy()
    add("mp3g_ties", "MaxPool3DGrad", [("orig_input", xt), ("orig_output", y),
                                       ("grad", _x(y.shape, 34))],
        ksize=[1, 2, 2, 2, 1], strides=[1, 1, 1, 1, 1], padding="SAME")
    add("mp3gg_ties", "MaxPool3DGradGrad", [("orig_input", xt), ("orig_output", y),
                                            ("grad", _x(xt.shape, 35))],
        ksize=[1, 2, 2, 2, 1], strides=[1, 1, 1, 1, 1], padding="SAME")
    k5, s5 = [1, 2, 2, 2, 1], [1, 2, 2, 2, 1]
    y = tf.raw_ops.MaxPool3D(input=tf.constant(x), ksize=k5, strides=s5, padding="SAME").numpy()
    g = _x(y.shape, 36)
    xn, yn, gn = _nchw(x), _nchw(y), _nchw(g)
    nc = dict(ksize=[1, 1, 2, 2, 2], strides=[1, 1, 2, 2, 2], padding="SAME",
              data_format="NCDHW")
    add("mp3g_ncdhw", "MaxPool3DGrad", [("orig_input", xn), ("orig_output", yn),
                                        ("grad", gn)], **nc)
    add("ap3g_ncdhw", "AvgPool3DGrad", [("orig_input_shape", _sizes(*xn.shape)),
                                        ("grad", gn)], **nc)
    add("mp3gg_ncdhw", "MaxPool3DGradGrad", [("orig_input", xn), ("orig_output", yn),
                                             ("grad", _x(xn.shape, 37))], **nc)
    st = dict(ksize=k5, strides=s5, padding="SAME")
    add("mp3g_err_rank", "MaxPool3DGrad", [("orig_input", x[0]), ("orig_output", y),
                                           ("grad", g)], **st)
    add("mp3g_err_grad_rank", "MaxPool3DGrad", [("orig_input", x), ("orig_output", y),
                                                ("grad", g[0])], **st)
    add("mp3g_err_depth", "MaxPool3DGrad", [("orig_input", x), ("orig_output", y),
                                            ("grad", g)], ksize=[1, 2, 2, 2, 2], strides=s5,
        padding="SAME")
    add("ap3g_err_shape_len", "AvgPool3DGrad", [("orig_input_shape", _sizes(2, 5, 6, 7)),
                                                ("grad", g)], **st)
    add("ap3g_err_batch", "AvgPool3DGrad", [("orig_input_shape", _sizes(3, 5, 6, 7, 3)),
                                            ("grad", g)], **st)
    add("ap3g_err_depth", "AvgPool3DGrad", [("orig_input_shape", _sizes(2, 5, 6, 7, 4)),
                                            ("grad", g)], **st)
    add("mp3gg_err_grad_size", "MaxPool3DGradGrad", [("orig_input", x), ("orig_output", y),
                                                     ("grad", g)], **st)
    add("mp3gg_err_batch", "MaxPool3DGradGrad", [("orig_input", x), ("orig_output", y),
                                                 ("grad", x)], ksize=[2, 2, 2, 2, 1],
        strides=s5, padding="SAME")


def _norm_cases(add):
    import tensorflow as tf

    x = _x((2, 4, 5, 3), 40)
    dy = _x((2, 4, 5, 3), 41)
    scale = _pos((3,), 42)
    offset = _x((3,), 43)
    rmean, rvar = _x((3,), 44), _pos((3,), 45)
    outs = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=rmean,
                                       variance=rvar, epsilon=0.001, is_training=True)
    bmean, bvar, r3 = outs[3].numpy(), outs[4].numpy(), outs[5].numpy()
    for op in ("FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"):
        extra = [("reserve_space_3", r3)] if op.endswith("V3") else []

        def args(xx=x, g=dy, s=scale, m=bmean, v=bvar, extra=extra):
            return [("y_backprop", g), ("x", xx), ("scale", s), ("reserve_space_1", m),
                    ("reserve_space_2", v)] + extra

        short = op.replace("FusedBatchNorm", "fbn")
        for eps in (0.001, 1e-5):
            add(f"{short}_train_eps{eps}", op, args(), epsilon=eps, is_training=True)
        add(f"{short}_infer", op, args(m=rmean, v=rvar), epsilon=0.001, is_training=False)
        add(f"{short}_train_nchw", op, args(_nchw(x), _nchw(dy)), epsilon=0.001,
            is_training=True, data_format="NCHW")
        add(f"{short}_infer_nchw", op, args(_nchw(x), _nchw(dy), m=rmean, v=rvar),
            epsilon=0.001, is_training=False, data_format="NCHW")
        add(f"{short}_empty", op, args(x[:0], dy[:0]), is_training=True)
        if op != "FusedBatchNormGrad":
            add(f"{short}_f16_train", op, args(x.astype(f16), dy.astype(f16)),
                epsilon=0.001, is_training=True)
            add(f"{short}_f16_infer", op, args(x.astype(f16), dy.astype(f16), m=rmean, v=rvar),
                epsilon=0.001, is_training=False)
        add(f"{short}_err_rank", op, args(x[0], dy[0]), is_training=True)
        add(f"{short}_err_dy_rank", op, args(g=dy[0]), is_training=True)
        add(f"{short}_err_shape", op, args(g=dy[:, :3]), is_training=True)
        add(f"{short}_err_scale_rank", op, args(s=scale[None]), is_training=True)
        add(f"{short}_err_scale_len", op, args(s=scale[:2]), is_training=True)
        add(f"{short}_err_mean_len", op, args(m=bmean[:2]), is_training=True)
        add(f"{short}_err_var_len", op, args(v=bvar[:2]), is_training=False)
        add(f"{short}_err_mean_rank", op, args(m=bmean[None]), is_training=True)
    x5, dy5 = _x((2, 3, 4, 5, 3), 46), _x((2, 3, 4, 5, 3), 47)
    outs = tf.raw_ops.FusedBatchNormV3(x=x5, scale=scale, offset=offset, mean=rmean,
                                       variance=rvar, epsilon=0.001, is_training=True,
                                       data_format="NDHWC")
    for fmt in ("NDHWC", "NCDHW"):
        xx, gg = (x5, dy5) if fmt == "NDHWC" else (_nchw(x5), _nchw(dy5))
        for training in (True, False):
            m, v = (outs[3].numpy(), outs[4].numpy()) if training else (rmean, rvar)
            add(f"fbnGradV3_{fmt}_{'train' if training else 'infer'}", "FusedBatchNormGradV3",
                [("y_backprop", gg), ("x", xx), ("scale", scale), ("reserve_space_1", m),
                 ("reserve_space_2", v), ("reserve_space_3", outs[5].numpy())],
                epsilon=0.001, is_training=training, data_format=fmt)
    # LRN
    xl = _x((2, 3, 4, 7), 50)
    for i, (r, bias, alpha, beta) in enumerate(((5, 1.0, 1.0, 0.5), (2, 2.0, 0.1, 0.75),
                                                (1, 1.0, 0.5, 1.0), (0, 1.5, 0.2, 0.3),
                                                (10, 1.0, 1e-3, 0.75))):
        y = tf.raw_ops.LRN(input=tf.constant(xl), depth_radius=r, bias=bias, alpha=alpha,
                           beta=beta).numpy()
        add(f"lrng_{i}", "LRNGrad", [("input_grads", _x(xl.shape, 51 + i)),
                                     ("input_image", xl), ("output_image", y)],
            depth_radius=r, bias=bias, alpha=alpha, beta=beta)
    y = tf.raw_ops.LRN(input=tf.constant(xl.astype(f16)), depth_radius=2).numpy()
    add("lrng_f16", "LRNGrad", [("input_grads", _x(xl.shape, 56).astype(f16)),
                                ("input_image", xl.astype(f16)), ("output_image", y)],
        depth_radius=2)
    y = tf.raw_ops.LRN(input=tf.constant(xl), depth_radius=2).numpy()
    g = _x(xl.shape, 57)
    add("lrng_err_rank", "LRNGrad", [("input_grads", g[0]), ("input_image", xl[0]),
                                     ("output_image", y[0])], depth_radius=2)
    add("lrng_err_shape", "LRNGrad", [("input_grads", g[:, :2]), ("input_image", xl),
                                      ("output_image", y)], depth_radius=2)
    add("lrng_err_out_shape", "LRNGrad", [("input_grads", g), ("input_image", xl),
                                          ("output_image", y[:, :2])], depth_radius=2)


def _resize_cases(add):
    img = _x((2, 5, 7, 3), 60)
    for op, short in (("ResizeBilinearGrad", "rbg"), ("ResizeBicubicGrad", "rcg"),
                      ("ResizeNearestNeighborGrad", "rng")):
        for (oh, ow) in ((9, 13), (3, 4), (5, 7), (1, 1), (10, 3)):
            g = _x((2, oh, ow, 3), 61 + oh)
            for ac, hp in ((False, False), (True, False), (False, True)):
                tag = f"{short}_{oh}x{ow}_{'ac' if ac else ''}{'hp' if hp else ''}"
                second = (("original_image", img) if op != "ResizeNearestNeighborGrad"
                          else ("size", _sizes(5, 7)))
                add(tag, op, [("grads", g), second], align_corners=ac, half_pixel_centers=hp)
    g = _x((2, 9, 13, 3), 70)
    add("rbg_f64", "ResizeBilinearGrad", [("grads", g), ("original_image", img.astype(f64))])
    add("rbg_f16", "ResizeBilinearGrad", [("grads", g), ("original_image", img.astype(f16))],
        half_pixel_centers=True)
    add("rcg_f64", "ResizeBicubicGrad", [("grads", g), ("original_image", img.astype(f64))],
        half_pixel_centers=True)
    add("rng_f64", "ResizeNearestNeighborGrad", [("grads", g.astype(f64)),
                                                 ("size", _sizes(5, 7))])
    add("rng_int32", "ResizeNearestNeighborGrad", [("grads", (g * 4).astype(i32)),
                                                   ("size", _sizes(5, 7))],
        half_pixel_centers=True)
    add("rng_f16", "ResizeNearestNeighborGrad", [("grads", g.astype(f16)),
                                                 ("size", _sizes(4, 6))], align_corners=True)
    for op, short in (("ResizeBilinearGrad", "rbg"), ("ResizeBicubicGrad", "rcg")):
        add(f"{short}_err_rank", op, [("grads", g[0]), ("original_image", img)])
        add(f"{short}_err_orig_rank", op, [("grads", g), ("original_image", img[0])])
        add(f"{short}_err_batch", op, [("grads", g[:1]), ("original_image", img)])
        add(f"{short}_err_channels", op, [("grads", g[..., :2]), ("original_image", img)])
        add(f"{short}_err_ac_hp", op, [("grads", g), ("original_image", img)],
            align_corners=True, half_pixel_centers=True)
    add("rng_err_rank", "ResizeNearestNeighborGrad", [("grads", g[0]), ("size", _sizes(5, 7))])
    add("rng_err_size_len", "ResizeNearestNeighborGrad", [("grads", g),
                                                          ("size", _sizes(5, 7, 1))])
    add("rng_err_size_negative", "ResizeNearestNeighborGrad", [("grads", g),
                                                               ("size", _sizes(-5, 7))])
    add("rng_err_ac_hp", "ResizeNearestNeighborGrad", [("grads", g), ("size", _sizes(5, 7))],
        align_corners=True, half_pixel_centers=True)


# Cases TF 2.21's CPU kernels abort the process on (a CHECK failure, SIGFPE or heap
# corruption), or answer with memory they never wrote (an empty out_backprop's filter
# gradient, an average pool gradient whose grad does not fit the shape, a depthwise
# argmax pool): not recorded; aioflow's kernels raise InvalidArgumentError or compute.
UNRECORDED = {"bpf_empty_out", "apg_err_batch", "apg_err_depth", "apg_err_grad_shape",
             "apg_err_zero_ksize", "mpwa_err_depth",
             "mpg_err_zero_ksize", "mpgg_err_zero_ksize", "mpgv2_err_ksize_len",
             "mpgwa_err_argmax_range", "mpgg_err_negative"}


def _cases():
    """(id, op, [(arg name, value)], attrs)."""
    cases = []

    def add(cid, op, inputs, **attrs):
        if cid not in UNRECORDED:
            cases.append((cid, op, inputs, attrs))

    for family in (_conv_cases, _depthwise_cases, _conv3d_cases, _pool_cases, _pool3d_cases,
                   _norm_cases, _resize_cases):
        family(add)
    ids = [c[0] for c in cases]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    return cases


def run_pass(only: set | None) -> dict:
    import tensorflow as tf

    results = {}
    for cid, op, inputs, attrs in _cases():
        if only is not None and cid not in only:
            continue
        print(cid, file=sys.stderr, flush=True)  # the last line names a case that crashes TF
        outcome = _run_case(tf, op, inputs, attrs)
        if outcome[0] == "ok":
            results[cid] = {"outcome": "ok", "outputs": [np.asarray(v) for v in outcome[1]]}
        else:
            results[cid] = {"outcome": "error", "error": outcome[1], "message": outcome[2],
                            "where": outcome[3]}
    return results


def _attrs_json(attrs: dict) -> dict:
    """Attrs as JSON: a DType by its name."""
    return {k: (v.name if hasattr(v, "as_datatype_enum") else v) for k, v in attrs.items()}


def main() -> None:
    import pickle

    if len(sys.argv) > 1 and sys.argv[1] == "--pass":
        only = set(sys.argv[2].split(",")) if len(sys.argv) > 2 else None
        sys.stdout.buffer.write(pickle.dumps(run_pass(only)))
        return
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", TF_ENABLE_ONEDNN_OPTS="0")
    eigen = pickle.loads(subprocess.run([sys.executable, __file__, "--pass"], env=env,
                                        check=True, capture_output=True).stdout)
    redo = [cid for cid, r in eigen.items()
            if r["outcome"] == "error" and _ONEDNN_RUNS.search(r["message"])]
    env["TF_ENABLE_ONEDNN_OPTS"] = "1"
    onednn = {}
    if redo:
        onednn = pickle.loads(subprocess.run([sys.executable, __file__, "--pass",
                                              ",".join(redo)], env=env, check=True,
                                             capture_output=True).stdout)
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    op_list = tf.compat.v1.OpList() if hasattr(tf.compat.v1, "OpList") else None
    if op_list is None:
        from tensorflow.core.framework import op_def_pb2

        op_list = op_def_pb2.OpList()
    for name in OPS:
        op_list.op.add().CopyFrom(op_def_registry.get(name))
    (HERE / "grad_kernel_op_defs.pb").write_bytes(op_list.SerializeToString(deterministic=True))

    arrays = {}
    stored = {}
    manifest = []
    for cid, op, inputs, attrs in _cases():
        entry = {"id": cid, "op": op, "inputs": [], "attrs": _attrs_json(attrs)}
        for i, (name, value) in enumerate(inputs):
            value = np.asarray(value)
            digest = (value.dtype.str, value.shape, hashlib.sha1(value.tobytes()).hexdigest())
            key = stored.setdefault(digest, f"{cid}:in{i}")  # an identical input: stored once
            arrays[key] = value
            entry["inputs"].append([name, key])
        result = eigen[cid]
        if cid in onednn and onednn[cid]["outcome"] == "ok":
            result = onednn[cid]
            entry["onednn"] = True
            entry["eigen_message"] = eigen[cid]["message"]
        entry["outcome"] = result["outcome"]
        if result["outcome"] == "ok":
            entry["outputs"] = []
            for i, v in enumerate(result["outputs"]):
                key = f"{cid}:out{i}"
                arrays[key] = v
                entry["outputs"].append(key)
        else:
            entry.update(error=result["error"], message=result["message"],
                         where=result["where"])
        manifest.append(entry)
        print(cid, entry["outcome"], "onednn" if entry.get("onednn") else "",
              entry.get("error", ""), entry.get("message", "")[:300], file=sys.stderr)
    np.savez_compressed(HERE / "grad_kernel_cases.npz", **arrays)
    (HERE / "grad_kernel_cases.json").write_text(json.dumps(
        {"tf_version": tf.__version__, "cases": manifest}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
