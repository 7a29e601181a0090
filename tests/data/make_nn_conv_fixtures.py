"""Make tests/data/nn_conv_cases.{json,npz}: what TF 2.21 computes, or the error it raises,
for convolution, pooling and normalisation kernels (tests/test_kernels_conv.py replays them).

Run from the project root with TensorFlow's Python (TensorFlow is never an aioflow
dependency)::

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_nn_conv_fixtures.py

Each case runs its op in a ``tf.compat.v1.Session`` on inputs fed through placeholders of
unknown shape (so graph construction cannot check them and the kernel does): the outcome
is the fetched outputs, or the kernel's error class and first message line. Where TF's
graph construction refuses the op's attrs before any kernel runs, the case runs eagerly
instead, which reaches the kernel's own check. Errors come from TF's plain CPU kernels
(a pass with TF_ENABLE_ONEDNN_OPTS=0: oneDNN's abort the process on some bad inputs);
cases those kernels refuse for their layout or dilations (NCHW, dilated depthwise, ...)
but a default TF install (oneDNN on) runs are recorded from a second pass with oneDNN on,
marked ``"onednn": true`` with the Eigen kernel's message kept as ``eigen_message``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
f32 = np.float32


def _rng(seed):
    return np.random.default_rng(seed)


def _x(shape, seed=0, dtype=f32):
    return _rng(seed).standard_normal(shape).astype(dtype)


def _pos(shape, seed=0):
    return (np.abs(_rng(seed).standard_normal(shape)) + 0.5).astype(f32)


def _cases():
    """(id, op, [(arg name, value)], attrs)."""
    cases = []

    def add(cid, op, inputs, **attrs):
        cases.append((cid, op, inputs, attrs))

    x = _x((2, 9, 10, 3), 1)
    w = _x((3, 2, 3, 4), 2)
    # -- Conv2D values
    for pad in ("SAME", "VALID"):
        for s in (1, 2, 3):
            add(f"conv2d_{pad}_s{s}", "Conv2D", [("input", x), ("filter", w)],
                strides=[1, s, s, 1], padding=pad)
        add(f"conv2d_{pad}_d2", "Conv2D", [("input", x), ("filter", w)],
            strides=[1, 1, 1, 1], padding=pad, dilations=[1, 2, 2, 1])
    add("conv2d_s12", "Conv2D", [("input", x), ("filter", w)], strides=[1, 1, 2, 1],
        padding="SAME")
    add("conv2d_explicit", "Conv2D", [("input", x), ("filter", w)], strides=[1, 2, 1, 1],
        padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 3, 0, 0, 0])
    add("conv2d_1x1", "Conv2D", [("input", x), ("filter", _x((1, 1, 3, 5), 3))],
        strides=[1, 1, 1, 1], padding="VALID")
    add("conv2d_1x1_s2_same", "Conv2D", [("input", x), ("filter", _x((1, 1, 3, 5), 3))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("conv2d_nchw", "Conv2D", [("input", x.transpose(0, 3, 1, 2).copy()), ("filter", w)],
        strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    add("conv2d_nchw_explicit", "Conv2D",
        [("input", x.transpose(0, 3, 1, 2).copy()), ("filter", w)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", data_format="NCHW",
        explicit_paddings=[0, 0, 0, 0, 1, 1, 2, 0])
    add("conv2d_grouped", "Conv2D", [("input", _x((1, 5, 5, 4), 4)), ("filter",
                                                                      _x((3, 3, 2, 6), 5))],
        strides=[1, 1, 1, 1], padding="SAME")
    add("conv2d_f64", "Conv2D", [("input", x.astype(np.float64)),
                                 ("filter", w.astype(np.float64))],
        strides=[1, 1, 1, 1], padding="SAME")
    add("conv2d_f16", "Conv2D", [("input", x.astype(np.float16)),
                                 ("filter", w.astype(np.float16))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("conv2d_empty_out", "Conv2D", [("input", x[:, :2]), ("filter", w)],
        strides=[1, 1, 1, 1], padding="VALID")
    add("conv2d_empty_batch", "Conv2D", [("input", x[:0]), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME")
    # -- Conv2D errors
    add("conv2d_err_rank", "Conv2D", [("input", x[0]), ("filter", w)], strides=[1, 1, 1, 1],
        padding="SAME")
    add("conv2d_err_filter_rank", "Conv2D", [("input", x), ("filter", w[0])],
        strides=[1, 1, 1, 1], padding="SAME")
    add("conv2d_err_depth", "Conv2D", [("input", x[..., :2]), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME")
    add("conv2d_err_groups_out", "Conv2D", [("input", _x((1, 5, 5, 4), 4)),
                                            ("filter", _x((3, 3, 2, 5), 5))],
        strides=[1, 1, 1, 1], padding="SAME")
    add("conv2d_err_negative", "Conv2D", [("input", x[:, :1]), ("filter", w)],
        strides=[1, 1, 1, 1], padding="VALID")
    add("conv2d_err_strides_len", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1], padding="SAME")
    add("conv2d_err_dilations_len", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 1, 1])
    add("conv2d_err_batch_stride", "Conv2D", [("input", x), ("filter", w)],
        strides=[2, 1, 1, 1], padding="SAME")
    add("conv2d_err_batch_dilation", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 1, 1, 2])
    add("conv2d_err_zero_stride", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 0, 1, 1], padding="SAME")
    add("conv2d_err_zero_dilation", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 0, 1, 1])
    add("conv2d_err_strides_dilations", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 2, 2, 1], padding="SAME", dilations=[1, 2, 2, 1])
    add("conv2d_err_explicit_len", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 1, 1, 1])
    add("conv2d_err_explicit_negative", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, -1, 1, 1, 1, 0, 0])
    add("conv2d_err_explicit_batch", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[1, 0, 1, 1, 1, 1, 0, 0])
    add("conv2d_err_explicit_not_explicit", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME", explicit_paddings=[0, 0, 1, 1, 1, 1, 0, 0])
    add("conv2d_err_format", "Conv2D", [("input", x), ("filter", w)],
        strides=[1, 1, 1, 1], padding="SAME", data_format="NHCW")
    # -- DepthwiseConv2dNative
    wd = _x((3, 3, 3, 2), 6)
    for pad in ("SAME", "VALID"):
        for s in (1, 2):
            add(f"dw_{pad}_s{s}", "DepthwiseConv2dNative", [("input", x), ("filter", wd)],
                strides=[1, s, s, 1], padding=pad)
    add("dw_m1_d2", "DepthwiseConv2dNative", [("input", x), ("filter", wd[..., :1])],
        strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 2, 2, 1])
    add("dw_explicit", "DepthwiseConv2dNative", [("input", x), ("filter", wd)],
        strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 2, 0, 1, 1, 0, 0])
    add("dw_nchw", "DepthwiseConv2dNative", [("input", x.transpose(0, 3, 1, 2).copy()),
                                             ("filter", wd)],
        strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    add("dw_f64", "DepthwiseConv2dNative", [("input", x.astype(np.float64)),
                                            ("filter", wd.astype(np.float64))],
        strides=[1, 1, 1, 1], padding="SAME")
    add("dw_err_depth", "DepthwiseConv2dNative", [("input", x), ("filter", wd[:, :, :2])],
        strides=[1, 1, 1, 1], padding="SAME")
    add("dw_err_rank", "DepthwiseConv2dNative", [("input", x[0]), ("filter", wd)],
        strides=[1, 1, 1, 1], padding="SAME")
    add("dw_err_filter_rank", "DepthwiseConv2dNative", [("input", x), ("filter", wd[0])],
        strides=[1, 1, 1, 1], padding="SAME")
    add("dw_err_unequal_strides", "DepthwiseConv2dNative", [("input", x), ("filter", wd)],
        strides=[1, 1, 2, 1], padding="SAME")
    add("dw_err_strides_len", "DepthwiseConv2dNative", [("input", x), ("filter", wd)],
        strides=[1, 1, 1], padding="SAME")
    add("dw_err_batch_stride", "DepthwiseConv2dNative", [("input", x), ("filter", wd)],
        strides=[1, 1, 1, 2], padding="SAME")
    add("dw_err_negative", "DepthwiseConv2dNative", [("input", x[:, :1]), ("filter", wd)],
        strides=[1, 1, 1, 1], padding="VALID")
    # -- Conv2DBackpropInput
    for pad in ("SAME", "VALID"):
        for s in (1, 2):
            out_h = -(-9 // s) if pad == "SAME" else (9 - 3) // s + 1
            out_w = -(-10 // s) if pad == "SAME" else (10 - 2) // s + 1
            add(f"bpi_{pad}_s{s}", "Conv2DBackpropInput",
                [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", w),
                 ("out_backprop", _x((2, out_h, out_w, 4), 7))],
                strides=[1, s, s, 1], padding=pad)
    add("bpi_dilated", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 9, 10, 4), 8))],
        strides=[1, 1, 1, 1], padding="SAME", dilations=[1, 2, 2, 1])
    add("bpi_explicit", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 5, 12, 4), 9))],
        strides=[1, 2, 1, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 3, 0, 0, 0])
    add("bpi_1x1_s2", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", _x((1, 1, 3, 4), 3)),
         ("out_backprop", _x((2, 5, 5, 4), 10))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_sizes2", "Conv2DBackpropInput",
        [("input_sizes", np.array([9, 10], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 5, 5, 4), 11))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_nchw", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 3, 9, 10], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 4, 5, 5), 12))],
        strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
    add("bpi_err_mismatch", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 4, 5, 4), 7))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_err_sizes_len", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 5, 5, 4), 7))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_err_depth", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 5], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 5, 5, 4), 7))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_err_out_depth", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 5, 5, 3), 7))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_err_batch", "Conv2DBackpropInput",
        [("input_sizes", np.array([3, 9, 10, 3], np.int32)), ("filter", w),
         ("out_backprop", _x((2, 5, 5, 4), 7))],
        strides=[1, 2, 2, 1], padding="SAME")
    add("bpi_err_filter_rank", "Conv2DBackpropInput",
        [("input_sizes", np.array([2, 9, 10, 3], np.int32)), ("filter", w[0]),
         ("out_backprop", _x((2, 5, 5, 4), 7))],
        strides=[1, 2, 2, 1], padding="SAME")
    # -- Conv3D
    x3 = _x((1, 5, 6, 7, 2), 13)
    w3 = _x((2, 3, 2, 2, 3), 14)
    for pad in ("SAME", "VALID"):
        add(f"conv3d_{pad}", "Conv3D", [("input", x3), ("filter", w3)],
            strides=[1, 1, 2, 1, 1], padding=pad)
    add("conv3d_dilated", "Conv3D", [("input", x3), ("filter", w3)],
        strides=[1, 1, 1, 1, 1], padding="SAME", dilations=[1, 2, 1, 2, 1])
    add("conv3d_ncdhw", "Conv3D", [("input", x3.transpose(0, 4, 1, 2, 3).copy()),
                                   ("filter", w3)],
        strides=[1, 1, 1, 2, 1], padding="SAME", data_format="NCDHW")
    add("conv3d_err_rank", "Conv3D", [("input", x3[0]), ("filter", w3)],
        strides=[1, 1, 1, 1, 1], padding="SAME")
    add("conv3d_err_depth", "Conv3D", [("input", x3), ("filter", _x((2, 3, 2, 3, 3), 1))],
        strides=[1, 1, 1, 1, 1], padding="SAME")
    add("conv3d_err_batch_stride", "Conv3D", [("input", x3), ("filter", w3)],
        strides=[2, 1, 1, 1, 1], padding="SAME")
    add("conv3d_err_strides_dilations", "Conv3D", [("input", x3), ("filter", w3)],
        strides=[1, 2, 1, 1, 1], padding="SAME", dilations=[1, 2, 1, 1, 1])
    add("conv3d_err_negative", "Conv3D", [("input", x3[:, :1]), ("filter", w3)],
        strides=[1, 1, 1, 1, 1], padding="VALID")
    # -- pooling
    xp = _x((2, 9, 10, 3), 15)
    for op in ("MaxPool", "AvgPool"):
        arg = "input" if op == "MaxPool" else "value"
        for pad in ("SAME", "VALID"):
            for k, s in ((2, 2), (3, 2), (3, 1), (1, 3)):
                add(f"{op}_{pad}_k{k}s{s}", op, [(arg, xp)], ksize=[1, k, k, 1],
                    strides=[1, s, s, 1], padding=pad)
        add(f"{op}_rect", op, [(arg, xp)], ksize=[1, 2, 4, 1], strides=[1, 3, 1, 1],
            padding="SAME")
        add(f"{op}_nchw", op, [(arg, xp.transpose(0, 3, 1, 2).copy())], ksize=[1, 1, 3, 3],
            strides=[1, 1, 2, 2], padding="SAME", data_format="NCHW")
        add(f"{op}_global", op, [(arg, xp)], ksize=[1, 9, 10, 1], strides=[1, 1, 1, 1],
            padding="VALID")
        add(f"{op}_f16", op, [(arg, xp.astype(np.float16))], ksize=[1, 3, 3, 1],
            strides=[1, 2, 2, 1], padding="SAME")
        add(f"{op}_err_rank", op, [(arg, xp[0])], ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1],
            padding="SAME")
        add(f"{op}_err_rank5", op, [(arg, xp[None])], ksize=[1, 2, 2, 1],
            strides=[1, 1, 1, 1], padding="SAME")
        add(f"{op}_err_rank2", op, [(arg, xp[0, 0])], ksize=[1, 2, 2, 1],
            strides=[1, 1, 1, 1], padding="SAME")
        add(f"{op}_err_ksize_len", op, [(arg, xp)], ksize=[1, 2, 2], strides=[1, 1, 1, 1],
            padding="SAME")
        add(f"{op}_err_strides_len", op, [(arg, xp)], ksize=[1, 2, 2, 1], strides=[1, 1, 1],
            padding="SAME")
        add(f"{op}_err_batch", op, [(arg, xp)], ksize=[2, 2, 2, 1], strides=[1, 1, 1, 1],
            padding="SAME")
        add(f"{op}_err_zero_ksize", op, [(arg, xp)], ksize=[1, 0, 2, 1], strides=[1, 1, 1, 1],
            padding="SAME")
        add(f"{op}_err_zero_stride", op, [(arg, xp)], ksize=[1, 2, 2, 1],
            strides=[1, 0, 1, 1], padding="SAME")
        add(f"{op}_err_negative", op, [(arg, xp)], ksize=[1, 10, 2, 1],
            strides=[1, 1, 1, 1], padding="VALID")
        add(f"{op}_err_depth_and_spatial", op, [(arg, xp)], ksize=[1, 2, 2, 3],
            strides=[1, 1, 1, 3], padding="VALID")
    add("MaxPool_int32", "MaxPool", [("input", (xp * 10).astype(np.int32))],
        ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    add("MaxPool_uint8", "MaxPool", [("input", (np.abs(xp) * 40).astype(np.uint8))],
        ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    add("MaxPool_explicit", "MaxPool", [("input", xp)], ksize=[1, 3, 3, 1],
        strides=[1, 2, 2, 1], padding="EXPLICIT", explicit_paddings=[0, 0, 1, 2, 0, 1, 0, 0])
    add("MaxPool_depthwise", "MaxPool", [("input", _x((1, 3, 3, 6), 16))],
        ksize=[1, 1, 1, 3], strides=[1, 1, 1, 3], padding="VALID")
    add("MaxPool_err_depth_window", "MaxPool", [("input", _x((1, 3, 3, 6), 16))],
        ksize=[1, 1, 1, 3], strides=[1, 1, 1, 2], padding="VALID")
    add("MaxPool_err_depth_divide", "MaxPool", [("input", _x((1, 3, 3, 5), 16))],
        ksize=[1, 1, 1, 3], strides=[1, 1, 1, 3], padding="VALID")
    for i, side in enumerate(("top", "bottom", "left", "right")):
        pads = [0] * 8
        pads[2 + i] = 2
        add(f"MaxPool_err_explicit_big_{side}", "MaxPool", [("input", xp)], ksize=[1, 2, 2, 1],
            strides=[1, 1, 1, 1], padding="EXPLICIT", explicit_paddings=pads)
    add("AvgPool_err_depth", "AvgPool", [("value", xp)], ksize=[1, 1, 1, 3],
        strides=[1, 1, 1, 3], padding="VALID")
    for pad in ("SAME", "VALID"):
        add(f"MaxPoolV2_{pad}", "MaxPoolV2", [("input", xp),
                                              ("ksize", np.array([1, 3, 3, 1], np.int32)),
                                              ("strides", np.array([1, 2, 2, 1], np.int32))],
            padding=pad)
    add("MaxPoolV2_err_ksize_len", "MaxPoolV2",
        [("input", xp), ("ksize", np.array([1, 3, 3], np.int32)),
         ("strides", np.array([1, 2, 2, 1], np.int32))], padding="SAME")
    add("MaxPoolV2_err_batch", "MaxPoolV2",
        [("input", xp), ("ksize", np.array([2, 3, 3, 1], np.int32)),
         ("strides", np.array([1, 2, 2, 1], np.int32))], padding="SAME")
    x5 = _x((2, 5, 6, 7, 3), 17)
    for op in ("MaxPool3D", "AvgPool3D"):
        for pad in ("SAME", "VALID"):
            add(f"{op}_{pad}", op, [("input", x5)], ksize=[1, 2, 3, 2, 1],
                strides=[1, 2, 2, 1, 1], padding=pad)
        add(f"{op}_ncdhw", op, [("input", x5.transpose(0, 4, 1, 2, 3).copy())],
            ksize=[1, 1, 2, 2, 2], strides=[1, 1, 2, 2, 2], padding="SAME",
            data_format="NCDHW")
        add(f"{op}_err_rank", op, [("input", x5[0])], ksize=[1, 2, 2, 2, 1],
            strides=[1, 1, 1, 1, 1], padding="SAME")
        add(f"{op}_err_ksize_len", op, [("input", x5)], ksize=[1, 2, 2, 1],
            strides=[1, 1, 1, 1, 1], padding="SAME")
        add(f"{op}_err_batch", op, [("input", x5)], ksize=[2, 2, 2, 2, 1],
            strides=[1, 1, 1, 1, 1], padding="SAME")
        add(f"{op}_err_depth", op, [("input", x5)], ksize=[1, 2, 2, 2, 2],
            strides=[1, 1, 1, 1, 1], padding="SAME")
        add(f"{op}_err_negative", op, [("input", x5)], ksize=[1, 6, 2, 2, 1],
            strides=[1, 1, 1, 1, 1], padding="VALID")
    # -- batch norm
    xb = _x((2, 4, 5, 3), 18)
    stats = [("scale", _pos((3,), 19)), ("offset", _x((3,), 20)), ("mean", _x((3,), 21)),
             ("variance", _pos((3,), 22))]
    for op in ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"):
        add(f"{op}_infer", op, [("x", xb)] + stats, is_training=False, epsilon=0.001)
        add(f"{op}_train", op, [("x", xb)] + stats, is_training=True, epsilon=0.001)
        add(f"{op}_train_avg", op, [("x", xb)] + stats, is_training=True, epsilon=0.001,
            exponential_avg_factor=0.25)
        add(f"{op}_infer_nchw", op, [("x", xb.transpose(0, 3, 1, 2).copy())] + stats,
            is_training=False, data_format="NCHW")
        add(f"{op}_train_nchw", op, [("x", xb.transpose(0, 3, 1, 2).copy())] + stats,
            is_training=True, data_format="NCHW")
        add(f"{op}_err_rank", op, [("x", xb[0])] + stats, is_training=False)
        add(f"{op}_err_scale_rank", op, [("x", xb), ("scale", stats[0][1][None])] + stats[1:],
            is_training=False)
        add(f"{op}_err_scale_len", op, [("x", xb), ("scale", stats[0][1][:2])] + stats[1:],
            is_training=False)
        add(f"{op}_err_offset_len", op, [("x", xb), stats[0], ("offset", stats[1][1][:2])]
            + stats[2:], is_training=False)
        add(f"{op}_err_mean_len", op, [("x", xb)] + stats[:2] + [("mean", stats[2][1][:2]),
                                                                 stats[3]],
            is_training=False)
        add(f"{op}_err_var_len_train_avg", op,
            [("x", xb)] + stats[:3] + [("variance", stats[3][1][:2])],
            is_training=True, exponential_avg_factor=0.5)
        add(f"{op}_train_stats_len_ok", op,
            [("x", xb)] + stats[:2] + [("mean", np.zeros(0, f32)), ("variance",
                                                                    np.zeros(0, f32))],
            is_training=True)
    add("FusedBatchNormV3_f16_infer", "FusedBatchNormV3",
        [("x", xb.astype(np.float16))] + stats, is_training=False)
    add("FusedBatchNormV3_f16_train", "FusedBatchNormV3",
        [("x", xb.astype(np.float16))] + stats, is_training=True)
    add("FusedBatchNormV3_5d", "FusedBatchNormV3", [("x", _x((2, 2, 3, 4, 3), 23))] + stats,
        is_training=False, data_format="NDHWC")
    add("FusedBatchNormV3_5d_train_ncdhw", "FusedBatchNormV3",
        [("x", _x((2, 3, 2, 3, 4), 23))] + stats, is_training=True, data_format="NCDHW")
    add("FusedBatchNormV3_err_5d_nhwc", "FusedBatchNormV3",
        [("x", _x((2, 2, 3, 4, 3), 23))] + stats, is_training=False)
    # -- LRN, L2Loss, BiasAddV1
    xl = _x((2, 3, 4, 7), 24)
    add("lrn_default", "LRN", [("input", xl)])
    add("lrn_alexnet", "LRN", [("input", xl)], depth_radius=2, alpha=2e-5, beta=0.75,
        bias=1.0)
    add("lrn_r0_b1", "LRN", [("input", xl)], depth_radius=0, alpha=0.5, beta=1.0, bias=2.0)
    add("lrn_big_radius", "LRN", [("input", xl)], depth_radius=10, alpha=0.1, beta=0.3)
    add("lrn_f16", "LRN", [("input", xl.astype(np.float16))], depth_radius=1)
    add("lrn_err_rank", "LRN", [("input", xl[0])])
    add("l2loss", "L2Loss", [("t", xl)])
    add("l2loss_f64", "L2Loss", [("t", xl.astype(np.float64))])
    add("l2loss_f16", "L2Loss", [("t", xl.astype(np.float16))])
    add("l2loss_scalar", "L2Loss", [("t", f32(3.0))])
    add("l2loss_empty", "L2Loss", [("t", np.zeros((0, 3), f32))])
    add("biasaddv1", "BiasAddV1", [("value", xl), ("bias", _x((7,), 25))])
    add("biasaddv1_int", "BiasAddV1", [("value", np.arange(12, dtype=np.int32).reshape(3, 4)),
                                       ("bias", np.arange(4, dtype=np.int32))])
    add("biasaddv1_err_len", "BiasAddV1", [("value", xl), ("bias", _x((3,), 25))])
    add("biasaddv1_err_rank", "BiasAddV1", [("value", _x((7,), 1)), ("bias", _x((7,), 25))])
    return cases


# -- builder programs: ``tf`` is tf.compat.v1 here and aioflow in the tests --------------------

def builder_conv(tf):
    """conv2d (int/list strides, explicit padding, dilations), conv2d_transpose,
    depthwise_conv2d (TF's composition) and depthwise_conv2d_native, conv3d."""
    x = tf.placeholder(tf.float32, shape=[None, 8, 8, 3], name="x")
    w = tf.constant(_x((3, 3, 3, 4), 30), name="w")
    wd = tf.constant(_x((3, 3, 3, 2), 31), name="wd")
    y1 = tf.nn.conv2d(x, w, strides=2, padding="SAME")
    y2 = tf.nn.conv2d(x, filters=w, strides=[1, 1], padding=[[0, 0], [1, 1], [2, 0], [0, 0]],
                      dilations=2, name="explicit")
    y3 = tf.nn.conv2d_transpose(y1, w, output_shape=[2, 8, 8, 3], strides=2, padding="SAME")
    y4 = tf.nn.depthwise_conv2d(x, wd, strides=[1, 1, 1, 1], padding="SAME")
    y5 = tf.nn.depthwise_conv2d_native(x, wd, strides=[1, 2, 2, 1], padding="VALID",
                                       name="dwn")
    x5 = tf.placeholder(tf.float32, shape=[None, 4, 6, 6, 2], name="x5")
    w5 = tf.constant(_x((2, 3, 3, 2, 3), 32), name="w5")
    y6 = tf.nn.conv3d(x5, w5, strides=[1, 1, 2, 2, 1], padding="SAME")
    return [y1, y2, y3, y4, y5, y6]


def builder_pool(tf):
    """max_pool / max_pool2d / max_pool_v2 / avg_pool / max_pool3d / avg_pool3d."""
    x = tf.placeholder(tf.float32, shape=[None, 8, 8, 3], name="x")
    x5 = tf.placeholder(tf.float32, shape=[None, 4, 6, 6, 2], name="x5")
    return [
        tf.nn.max_pool(x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
        tf.nn.max_pool(x, ksize=2, strides=2, padding="VALID", name="mp_int"),
        tf.nn.max_pool2d(x, ksize=3, strides=1, padding="SAME"),
        tf.nn.max_pool_v2(x, ksize=[2, 2], strides=[2, 2], padding="VALID"),
        tf.nn.max_pool(x, ksize=3, strides=2, padding=[[0, 0], [1, 1], [1, 1], [0, 0]],
                       name="mp_explicit"),
        tf.nn.avg_pool(x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME"),
        tf.nn.max_pool3d(x5, ksize=2, strides=2, padding="VALID"),
        tf.nn.avg_pool3d(x5, ksize=[1, 2, 2, 2, 1], strides=[1, 1, 1, 1, 1], padding="SAME"),
    ]


def builder_norm(tf):
    """fused_batch_norm (inference and training), lrn / local_response_normalization,
    l2_loss."""
    x = tf.placeholder(tf.float32, shape=[None, 4, 4, 3], name="x")
    scale = tf.constant([1.0, 2.0, 0.5], name="scale")
    offset = tf.constant([0.0, 0.1, -0.2], name="offset")
    mean = tf.constant([0.1, -0.3, 0.2], name="mean")
    var = tf.constant([1.0, 0.5, 2.0], name="var")
    # (TF's session cannot fetch an inference batch norm's other outputs: grappler's
    # remapper turns the node into a multiply-add.)
    y, _, _ = tf.nn.fused_batch_norm(x, scale, offset, mean, var, is_training=False)
    yt, mt, vt = tf.nn.fused_batch_norm(x, scale, offset, epsilon=1e-7, name="train")
    return [y, yt, mt, vt,
            tf.nn.lrn(x, depth_radius=1, alpha=0.5, beta=0.75),
            tf.nn.local_response_normalization(x, name="lrn2"),
            tf.nn.l2_loss(x)]


BUILDERS = ["builder_conv", "builder_pool", "builder_norm"]


def make_builder_fixtures(tf1) -> dict:
    """Each builder's GraphDef (nn_conv_<name>.pb) and fed/fetched values (in the npz)."""
    import tensorflow as tf

    arrays, meta = {}, {}
    for name in BUILDERS:
        g = tf.Graph()
        with g.as_default():
            fetches = globals()[name](tf1)
            feeds = {}
            for op in g.get_operations():
                if op.type == "Placeholder":
                    shape = [2 if d is None else d for d in op.outputs[0].shape.as_list()]
                    feeds[op.outputs[0]] = _x(shape, len(feeds) + 40)
            with tf1.Session(graph=g) as sess:
                values = sess.run(fetches, feeds)
        (HERE / f"nn_conv_{name}.pb").write_bytes(
            g.as_graph_def().SerializeToString(deterministic=True))
        for t, v in feeds.items():
            arrays[f"{name}:feed:{t.name}"] = v
        for t, v in zip(fetches, values, strict=True):
            arrays[f"{name}:fetch:{t.name}"] = np.asarray(v)
        meta[name] = {"feeds": [t.name for t in feeds], "fetches": [t.name for t in fetches]}
    np.savez_compressed(HERE / "nn_conv_builders.npz", **arrays)
    return meta


def _message(text: str) -> str:
    """The kernel's own message out of TF's session or eager error text."""
    text = text.split("\n\t [[")[0]
    m = re.search(r"\nNode: '[^']*'\n(.*)$", text, re.S)
    if m:
        text = m.group(1)
    text = re.sub(r"^\{\{function_node [^}]*\}\} ", "", text)
    text = re.sub(r" \[Op:\w+\]( name: .*)?$", "", text, flags=re.S)
    return text.strip()


# Eigen-kernel refusals that TF's default build (oneDNN on) runs instead: those cases are
# recorded from a second pass with oneDNN on, as a default TF install computes them.
_ONEDNN_RUNS = re.compile(r"only supports? (the )?N|NHWC|dilat|Depthwise convolution on CPU")


def _run_case(tf, op, inputs, attrs):
    tf1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        try:
            phs = [tf1.placeholder(tf.as_dtype(np.asarray(v).dtype), name=f"in{i}")
                   for i, (_, v) in enumerate(inputs)]
            args = {n: p for (n, _), p in zip(inputs, phs, strict=True)}
            out = getattr(tf.raw_ops, op)(**args, **attrs)
            built = True
        except (ValueError, TypeError, tf.errors.OpError):
            built = False
        if built:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            with tf1.Session(graph=g) as sess:
                try:
                    feed = {p: v for p, (_, v) in zip(phs, inputs, strict=True)}
                    return ("ok", sess.run(outs, feed))
                except tf.errors.OpError as e:
                    return ("error", type(e).__name__, _message(e.message), "session")
    with tf.device("/cpu:0"):
        try:
            out = getattr(tf.raw_ops, op)(**{n: tf.constant(v) for n, v in inputs}, **attrs)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            return ("ok", [o.numpy() for o in outs])
        except tf.errors.OpError as e:
            return ("error", type(e).__name__, _message(e.message), "eager")


def run_pass(only: set | None) -> dict:
    import tensorflow as tf

    results = {}
    for cid, op, inputs, attrs in _cases():
        if only is not None and cid not in only:
            continue
        outcome = _run_case(tf, op, inputs, attrs)
        if outcome[0] == "ok":
            results[cid] = {"outcome": "ok", "outputs": [np.asarray(v) for v in outcome[1]]}
        else:
            results[cid] = {"outcome": "error", "error": outcome[1], "message": outcome[2],
                            "where": outcome[3]}
    return results


def main() -> None:
    import pickle
    import subprocess

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
    onednn = pickle.loads(subprocess.run([sys.executable, __file__, "--pass", ",".join(redo)],
                                         env=env, check=True, capture_output=True).stdout)
    import tensorflow as tf

    builders = make_builder_fixtures(tf.compat.v1)
    arrays = {}
    manifest = []
    for cid, op, inputs, attrs in _cases():
        entry = {"id": cid, "op": op, "inputs": [], "attrs": attrs}
        for i, (name, value) in enumerate(inputs):
            key = f"{cid}:in{i}"
            arrays[key] = np.asarray(value)
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
              entry.get("error", ""), entry.get("message", ""), file=sys.stderr)
    np.savez_compressed(HERE / "nn_conv_cases.npz", **arrays)
    (HERE / "nn_conv_cases.json").write_text(json.dumps(
        {"tf_version": tf.__version__, "cases": manifest, "builders": builders},
        indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
