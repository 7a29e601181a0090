"""Writes tests/data/image_cases.{json,npz} (TensorFlow 2.21's CPU results for the image
resizing, CropAndResize, non-max suppression and top-k kernels, case by case) and
tests/data/image_builders.npz (the GraphDefs TF's Python writes for the builder programs
in `BUILDERS` below, serialized, one uint8 array per program: tests rebuild each with
aioflow and compare node for node).

Each case runs one raw op eagerly (`tf.raw_ops.<Op>`: the kernel itself, no shape
function in the way) with oneDNN off and records its outputs, or its error class and
message (without the eager wrapper's "{{function_node ...}}" prefix and " [Op:...]"
suffix). Run from the project root with a TensorFlow 2.21 environment (see
tests/data/README.md):

    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfenv/bin/python tests/data/make_image_fixtures.py

- `image_cases.json`: [{id, op, attrs, inputs, outcome: "ok" | "error", error_class,
  message, n_outputs}]; a dtype attr is written {"dtype": name}; `inputs` are keys of
  the .npz.
- `image_op_defs.pb`: TF's OpDefs of these ops (an OpList).
- `image_cases.npz`: inputs `in:<digest>` (each distinct array once; cases share them)
  and outputs `out:<id>:<i>`.

This module does not import TensorFlow at import time: the tests import `BUILDERS`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
f32, i32 = np.float32, np.int32


# ---------------------------------------------------------------------------------------------
# Builder programs: `tf` is tf.compat.v1 (with `tf.image`/`tf.nn`/`tf.math` of TF 2) or
# aioflow; each takes the module and returns nothing (the graph is compared whole).
# ---------------------------------------------------------------------------------------------

def _ph(tf, dtype, shape, name):
    return tf.placeholder(dtype, shape=shape, name=name)


def builder_resize(tf):
    img = _ph(tf, tf.uint8, [2, 4, 5, 3], "img")
    tf.image.resize(img, [6, 7])
    img3 = _ph(tf, tf.float32, [4, 5, 3], "img3")
    tf.image.resize(img3, [6, 7], method="nearest")
    tf.image.resize(img3, [8, 2], method="bicubic", name="bic")
    tf.image.resize(img, [8, 8], preserve_aspect_ratio=True)
    tf.image.resize(img, tf.constant([3, 3]), method=tf.image.ResizeMethod.BILINEAR)


def builder_resize_v1(tf):
    img = _ph(tf, tf.float32, [1, 4, 5, 3], "img")
    size = _ph(tf, tf.int32, [2], "size")
    tf.image.resize_bilinear(img, size, align_corners=True)
    tf.image.resize_nearest_neighbor(img, [3, 3], half_pixel_centers=True, name="nn")
    tf.image.resize_bicubic(img, size)


def builder_crop_and_resize(tf):
    img = _ph(tf, tf.float32, [2, 8, 8, 3], "img")
    boxes = _ph(tf, tf.float32, [None, 4], "boxes")
    ind = _ph(tf, tf.int32, [None], "ind")
    tf.image.crop_and_resize(img, boxes, ind, [3, 4])
    tf.image.crop_and_resize(img, boxes, ind, [5, 5], method="nearest",
                             extrapolation_value=-1.0, name="crops")


def builder_nms(tf):
    boxes = _ph(tf, tf.float32, [None, 4], "boxes")
    scores = _ph(tf, tf.float32, [None], "scores")
    tf.image.non_max_suppression(boxes, scores, 10)
    tf.image.non_max_suppression(boxes, scores, 5, iou_threshold=0.3, score_threshold=0.1,
                                 name="nms")
    tf.image.non_max_suppression_with_scores(boxes, scores, 7, soft_nms_sigma=0.5)


def builder_top_k(tf):
    x = _ph(tf, tf.float32, [3, 10], "x")
    tf.nn.top_k(x, 3)
    tf.math.top_k(x, k=2, sorted=False, name="tk")
    targets = _ph(tf, tf.int32, [3], "targets")
    tf.nn.in_top_k(targets, x, 5)
    tf.math.in_top_k(targets, x, 2, name="itk")


OP_NAMES = ["ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic", "CropAndResize",
            "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5", "TopKV2",
            "InTopKV2"]
BUILDERS = [builder_resize, builder_resize_v1, builder_crop_and_resize, builder_nms,
            builder_top_k]


# ---------------------------------------------------------------------------------------------
# Kernel cases: (id, op, inputs, attrs).
# ---------------------------------------------------------------------------------------------

def _cases():
    rng = np.random.default_rng(20260521)
    cases = []

    def add(case_id, op, inputs, **attrs):
        cases.append((case_id, op, inputs, attrs))

    modes = {"legacy": {}, "align": {"align_corners": True}, "half": {"half_pixel_centers": True}}
    sizes = [((3, 4), (7, 9)), ((5, 7), (2, 3)), ((4, 5), (4, 5)), ((4, 5), (1, 1)),
             ((1, 6), (3, 8)), ((6, 6), (5, 3)), ((10, 13), (17, 6)), ((2, 2), (1, 5))]
    for op in ("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"):
        for mode, attrs in modes.items():
            for n, ((ih, iw), (oh, ow)) in enumerate(sizes):
                img = rng.uniform(-10, 10, (2, ih, iw, 3)).astype(f32)
                add(f"{op}_{mode}_{n}", op, [img, i32([oh, ow])], **attrs)
            for dt in (np.uint8, np.float64, np.int32, np.float16, np.int16, np.int64):
                img = rng.integers(0, 200, (1, 5, 6, 2)).astype(dt)
                add(f"{op}_{mode}_{np.dtype(dt).name}", op, [img, i32([8, 3])], **attrs)
        img = rng.uniform(-1, 1, (1, 4, 4, 1)).astype(f32)
        img[0, 1, 2, 0] = np.inf
        img[0, 3, 0, 0] = np.nan
        add(f"{op}_nonfinite", op, [img, i32([7, 6])], half_pixel_centers=True)
        add(f"{op}_nonfinite_same", op, [img, i32([4, 4])])
        big = rng.uniform(0, 255, (1, 24, 20, 3)).astype(f32)
        add(f"{op}_big", op, [big, i32([49, 37])], half_pixel_centers=True)
        add(f"{op}_big_down", op, [big, i32([13, 11])])
        add(f"{op}_big_align", op, [big, i32([35, 50])], align_corners=True)
        # errors, in TF's order
        img = np.zeros((1, 3, 4, 2), f32)
        add(f"{op}_err_both", op, [img, i32([2, 2])], align_corners=True,
            half_pixel_centers=True)
        add(f"{op}_err_rank", op, [img[0], i32([2, 2])])
        add(f"{op}_err_size_rank", op, [img, i32([[2, 2]])])
        add(f"{op}_err_size_len", op, [img, i32([1, 2, 3])])
        add(f"{op}_err_size_zero", op, [img, i32([0, 2])])
        add(f"{op}_err_size_neg", op, [img, i32([2, -1])])
        add(f"{op}_err_channels", op, [np.zeros((1, 3, 4, 0), f32), i32([2, 2])])
        add(f"{op}_err_height", op, [np.zeros((1, 0, 4, 1), f32), i32([2, 2])])
        add(f"{op}_empty_batch", op, [np.zeros((0, 3, 4, 1), f32), i32([2, 2])])

    # CropAndResize
    for n in range(6):
        img = rng.uniform(-5, 5, (3, 9, 11, 2)).astype(f32)
        k = 7
        boxes = rng.uniform(-0.3, 1.3, (k, 4)).astype(f32)
        boxes[0] = [0, 0, 1, 1]
        boxes[1] = [0.8, 0.9, 0.1, 0.2]  # flipped
        ind = rng.integers(0, 3, k).astype(i32)
        crop = [(3, 4), (1, 1), (1, 6), (5, 1), (8, 8), (2, 13)][n]
        for method in ("bilinear", "nearest"):
            add(f"crop_{n}_{method}", "CropAndResize", [img, boxes, ind, i32(crop)],
                method=method, extrapolation_value=[0.0, -2.5][n % 2])
    for dt in (np.uint8, np.float64, np.int32, np.float16, np.int64):
        img = rng.integers(0, 250, (2, 6, 7, 3)).astype(dt)
        boxes = rng.uniform(-0.1, 1.1, (4, 4)).astype(f32)
        add(f"crop_{np.dtype(dt).name}", "CropAndResize",
            [img, boxes, i32([0, 1, 1, 0]), i32([4, 5])])
        add(f"crop_{np.dtype(dt).name}_nearest", "CropAndResize",
            [img, boxes, i32([0, 1, 1, 0]), i32([4, 5])], method="nearest")
    img = np.zeros((1, 3, 4, 2), f32)
    box, bi, cs = f32([[0, 0, 1, 1]]), i32([0]), i32([2, 2])
    add("crop_err_image_rank", "CropAndResize", [img[0], box, bi, cs])
    add("crop_err_image_size", "CropAndResize", [np.zeros((1, 0, 4, 1), f32), box, bi, cs])
    add("crop_err_boxes_rank", "CropAndResize", [img, box[0], bi, cs])
    add("crop_err_boxes_cols", "CropAndResize", [img, box[:, :3], bi, cs])
    add("crop_err_ind_rank", "CropAndResize", [img, box, bi[None], cs])
    add("crop_err_ind_len", "CropAndResize", [img, box, i32([0, 0]), cs])
    add("crop_err_size_rank", "CropAndResize", [img, box, bi, cs[None]])
    add("crop_err_size_len", "CropAndResize", [img, box, bi, i32([2, 2, 2])])
    add("crop_err_size_zero", "CropAndResize", [img, box, bi, i32([0, 2])])
    add("crop_err_ind_high", "CropAndResize", [img, box, i32([1]), cs])
    add("crop_err_ind_neg", "CropAndResize", [img, box, i32([-1]), cs])
    add("crop_err_ind_and_size", "CropAndResize", [img, box, i32([3]), i32([0, 2])])
    add("crop_err_empty_batch", "CropAndResize", [np.zeros((0, 3, 4, 2), f32), box, bi, cs])
    add("crop_empty", "CropAndResize",
        [img, np.zeros((0, 4), f32), np.zeros((0,), i32), cs])
    add("crop_empty_3cols", "CropAndResize",
        [img, np.zeros((0, 3), f32), np.zeros((0,), i32), cs])
    add("crop_no_channels", "CropAndResize", [np.zeros((1, 3, 4, 0), f32), box, bi, cs])

    # Non-max suppression
    def random_boxes(n, quant=None):
        yx = rng.uniform(0, 10, (n, 2))
        hw = rng.uniform(0.5, 4, (n, 2))
        boxes = np.concatenate([yx, yx + hw], axis=1).astype(f32)
        flip = rng.random(n) < 0.2
        boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
        scores = rng.random(n).astype(f32)
        if quant:
            scores = (np.round(scores * quant) / quant).astype(f32)
        return boxes, scores

    for n, (num, quant) in enumerate([(20, None), (60, 8), (200, 20), (3000, 50)]):
        boxes, scores = random_boxes(num, quant)
        for iou in (0.0, 0.3, 0.5, 1.0) if num < 1000 else (0.5,):
            for st in (-np.inf, 0.4):
                tag = f"{n}_{iou}_{'st' if st > -np.inf else 'all'}"
                add(f"nms3_{tag}", "NonMaxSuppressionV3",
                    [boxes, scores, i32(num), f32(iou), f32(st)])
        add(f"nms3_{n}_max5", "NonMaxSuppressionV3",
            [boxes, scores, i32(5), f32(0.5), f32(-np.inf)])
        add(f"nms4_{n}_pad", "NonMaxSuppressionV4",
            [boxes, scores, i32(num // 2 + 3), f32(0.4), f32(0.2)],
            pad_to_max_output_size=True)
        if num < 1000:
            add(f"nms4_{n}_nopad", "NonMaxSuppressionV4",
                [boxes, scores, i32(num // 2 + 3), f32(0.4), f32(0.2)])
        for sigma in (0.0, 0.5, 2.0):
            if num > 1000 and sigma:
                continue
            add(f"nms5_{n}_{sigma}", "NonMaxSuppressionV5",
                [boxes, scores, i32(num), f32(0.5), f32(0.05), f32(sigma)])
            if num > 1000:
                continue
            add(f"nms5_{n}_{sigma}_pad", "NonMaxSuppressionV5",
                [boxes, scores, i32(num + 4), f32(0.6), f32(0.3), f32(sigma)],
                pad_to_max_output_size=True)
        h16 = np.float16
        add(f"nms3_{n}_half", "NonMaxSuppressionV3",
            [boxes.astype(h16), scores.astype(h16), i32(num), h16(0.5), h16(0.1)])
        if num < 1000:
            add(f"nms3_{n}_half_fthr", "NonMaxSuppressionV3",
                [boxes.astype(h16), scores.astype(h16), i32(num), f32(0.45), f32(0.1)])
        if num <= 200:
            add(f"nms5_{n}_half_soft", "NonMaxSuppressionV5",
                [boxes.astype(h16), scores.astype(h16), i32(num), h16(0.5), h16(0.05),
                 h16(0.5)])
    boxes = f32([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3], [1, 1, 0, 0],
                 [5, 5, 5, 6], [0, 0, 0.5, 1]])
    scores = f32([0.5, 0.5, 0.5, 0.6, 0.7, 0.9, 0.5])
    add("nms3_ties", "NonMaxSuppressionV3",
        [boxes, scores, i32(10), f32(0.0), f32(-np.inf)])
    add("nms3_ties_half_iou", "NonMaxSuppressionV3",
        [boxes, scores, i32(10), f32(0.5), f32(-np.inf)])
    add("nms3_score_equal_threshold", "NonMaxSuppressionV3",
        [boxes, scores, i32(10), f32(0.5), f32(0.5)])
    add("nms3_max0", "NonMaxSuppressionV3", [boxes, scores, i32(0), f32(0.5), f32(0)])
    add("nms3_empty", "NonMaxSuppressionV3",
        [np.zeros((0, 4), f32), np.zeros((0,), f32), i32(3), f32(0.5), f32(0)])
    add("nms4_empty_pad", "NonMaxSuppressionV4",
        [np.zeros((0, 4), f32), np.zeros((0,), f32), i32(3), f32(0.5), f32(0)],
        pad_to_max_output_size=True)
    nan_boxes = boxes.copy()
    nan_boxes[2, 1] = np.nan
    nan_scores = scores.copy()
    nan_scores[6] = np.nan
    add("nms3_nan", "NonMaxSuppressionV3",
        [nan_boxes, nan_scores, i32(10), f32(0.5), f32(-np.inf)])
    add("nms5_nan_soft", "NonMaxSuppressionV5",
        [nan_boxes, nan_scores, i32(10), f32(0.5), f32(-np.inf), f32(0.5)])
    add("nms5_inf_scores", "NonMaxSuppressionV5",
        [boxes, f32([np.inf, 1, -np.inf, 2, 3, np.inf, 0]), i32(10), f32(0.5),
         f32(-np.inf), f32(0.3)])
    B = f32([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]])
    S = f32([0.9, 0.8, 0.7])
    for ver in (3, 4, 5):
        op = f"NonMaxSuppressionV{ver}"
        extra = [f32(0.5)] if ver == 5 else []

        def err(tag, b=B, s=S, m=None, iou=None, st=None, ex=None, _op=op, _v=ver,
                _extra=extra):
            m = i32(5) if m is None else m
            iou = f32(0.5) if iou is None else iou
            st = f32(0) if st is None else st
            add(f"nms{_v}_err_{tag}", _op, [b, s, m, iou, st] + (_extra if ex is None else ex))

        err("boxes_rank", b=B[0])
        err("boxes_cols", b=B[:, :3])
        err("scores_rank", s=S[None])
        err("scores_len", s=S[:2])
        err("max_rank", m=i32([5]))
        err("max_neg", m=i32(-1))
        err("iou_rank", iou=f32([0.5]))
        err("iou_high", iou=f32(1.5))
        err("iou_neg", iou=f32(-0.5))
        err("iou_nan", iou=f32(np.nan))
        err("score_rank", st=f32([0]))
        err("order_boxes_max", b=B[0], m=i32(-1))
        err("order_boxes_score", b=B[0], st=f32([0]))
        err("order_max_iou", m=i32([1]), iou=f32(2))
        err("order_scores_max", s=S[:2], m=i32(-1))
        if ver == 5:
            err("sigma_rank", ex=[f32([0.5])])
            err("sigma_neg", ex=[f32(-0.5)])
            err("sigma_nan", ex=[f32(np.nan)])
            err("order_sigma_iou", iou=f32(2), ex=[f32(-1)])
            err("order_sigma_score", st=f32([0]), ex=[f32(-1)])
            err("order_sigma_boxes", b=B[0], ex=[f32(-1)])

    # TopKV2
    for n, shape in enumerate([(10,), (3, 12), (2, 3, 7), (4, 100), (2, 1)]):
        x = rng.integers(0, 6, shape).astype(f32)  # many ties
        for k in sorted({0, 1, 2, shape[-1] // 2, shape[-1]}):
            add(f"topk_{n}_{k}", "TopKV2", [x, i32(k)])
        y = rng.normal(size=shape).astype(f32)
        add(f"topk_{n}_distinct", "TopKV2", [y, i32(min(3, shape[-1]))])
    for dt in (np.int32, np.uint8, np.int64, np.float64, np.float16, np.int8, np.uint16,
               np.int16, np.uint32, np.uint64):
        x = rng.integers(0, 9, (3, 8)).astype(dt)
        add(f"topk_{np.dtype(dt).name}", "TopKV2", [x, i32(4)])
        add(f"topk_{np.dtype(dt).name}_k1", "TopKV2", [x, i32(1)])
    x = rng.integers(0, 6, (3, 12)).astype(f32)
    add("topk_index64", "TopKV2", [x, np.int64(5)], index_type={"dtype": "int64"})
    add("topk_index16", "TopKV2", [x, np.int16(5)], index_type={"dtype": "int16"})
    add("topk_unsorted_full", "TopKV2", [x, i32(12)], sorted=False)
    add("topk_unsorted", "TopKV2", [x, i32(4)], sorted=False)
    add("topk_extremes", "TopKV2",
        [f32([[-np.inf, 3, np.inf, -0.0, 0.0, 3, -np.inf]]), i32(5)])
    add("topk_k1_inf", "TopKV2", [f32([[-np.inf, -np.inf], [1, np.inf]]), i32(1)])
    add("topk_k1_nan", "TopKV2", [f32([[np.nan, 1, np.nan, 2, 5], [np.nan] * 5]), i32(1)])
    add("topk_empty_rows", "TopKV2", [np.zeros((0, 5), f32), i32(2)])
    x = f32([[3, 1, 3, 2]])
    add("topk_err_k_rank", "TopKV2", [x, i32([2])])
    add("topk_err_k_neg", "TopKV2", [x, i32(-1)])
    add("topk_err_k_big", "TopKV2", [x, i32(5)])
    add("topk_err_scalar", "TopKV2", [f32(1), i32(1)])
    add("topk_err_scalar_kneg", "TopKV2", [f32(1), i32(-1)])
    add("topk_err_k64_neg", "TopKV2", [x, np.int64(-3)])

    # InTopKV2
    p = rng.integers(0, 5, (6, 7)).astype(f32)
    t = rng.integers(0, 7, 6).astype(i32)
    for k in (-1, 0, 1, 2, 3, 7, 10):
        add(f"intopk_{k}", "InTopKV2", [p, t, i32(k)])
    add("intopk_int64", "InTopKV2", [p, t.astype(np.int64), np.int64(2)])
    q = p.copy()
    q[1, 3], q[2, 0], q[4, 5] = np.nan, np.inf, -np.inf
    add("intopk_nonfinite", "InTopKV2", [q, t, i32(7)])
    add("intopk_out_of_range", "InTopKV2", [p, i32([0, 7, -1, 3, 100, 6]), i32(3)])
    add("intopk_no_classes", "InTopKV2", [np.zeros((2, 0), f32), i32([0, 0]), i32(1)])
    p2, t2 = f32([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4]]), i32([1, 0])
    add("intopk_err_k_rank", "InTopKV2", [p2, t2, i32([1])])
    add("intopk_err_pred_rank", "InTopKV2", [p2[0], t2, i32(1)])
    add("intopk_err_targets_rank", "InTopKV2", [p2, t2[None], i32(1)])
    add("intopk_err_len", "InTopKV2", [p2, t2[:1], i32(1)])
    add("intopk_err_order", "InTopKV2", [p2[0], t2[None], i32([1])])
    return cases


def _make_builders(real_tf):
    """{builder name: the GraphDef TF's Python writes for it (graph mode)."""
    v1 = real_tf.compat.v1

    class Namespace:
        pass

    mod = Namespace()
    for name in ("placeholder", "constant", "float32", "int32", "uint8"):
        setattr(mod, name, getattr(v1, name))
    mod.image = Namespace()
    for name in ("resize", "crop_and_resize", "non_max_suppression",
                 "non_max_suppression_with_scores", "ResizeMethod"):
        setattr(mod.image, name, getattr(real_tf.image, name))
    for name in ("resize_bilinear", "resize_nearest_neighbor", "resize_bicubic"):
        setattr(mod.image, name, getattr(v1.image, name))
    mod.nn = Namespace()
    mod.nn.top_k = real_tf.nn.top_k
    mod.nn.in_top_k = real_tf.nn.in_top_k
    mod.math = Namespace()
    mod.math.top_k = real_tf.math.top_k
    mod.math.in_top_k = real_tf.math.in_top_k
    graph_defs = {}
    for fn in BUILDERS:
        g = real_tf.Graph()
        with g.as_default():
            fn(mod)
        graph_defs[fn.__name__] = g.as_graph_def()
    return graph_defs


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    records, arrays = [], {}
    for case_id, op, inputs, attrs in _cases():
        record = {"id": case_id, "op": op, "attrs": attrs, "inputs": []}
        for value in inputs:
            value = np.asarray(value)
            digest = hashlib.sha1(f"{value.dtype.str}{value.shape}".encode()
                                  + value.tobytes()).hexdigest()[:16]
            arrays[f"in:{digest}"] = value
            record["inputs"].append(f"in:{digest}")
        tf_attrs = {k: tf.as_dtype(v["dtype"]) if isinstance(v, dict) else v
                    for k, v in attrs.items()}
        op_def = op_def_registry.get(op)
        kwargs = {arg.name: tf.constant(v) for arg, v in zip(op_def.input_arg, inputs, strict=True)}
        try:
            out = getattr(tf.raw_ops, op)(**kwargs, **tf_attrs)
        except Exception as e:  # noqa: BLE001
            message = re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(e))
            message = re.sub(r" \[Op:\w+\]( name: \S*)?$", "", message)
            record.update(outcome="error", error_class=type(e).__name__, message=message)
        else:
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            record.update(outcome="ok", n_outputs=len(outs))
            for i, o in enumerate(outs):
                arrays[f"out:{case_id}:{i}"] = o.numpy()
        records.append(record)
    with open(os.path.join(HERE, "image_cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    np.savez_compressed(os.path.join(HERE, "image_cases.npz"), **arrays)
    from tensorflow.core.framework import op_def_pb2

    op_list = op_def_pb2.OpList(op=[op_def_registry.get(name) for name in OP_NAMES])
    with open(os.path.join(HERE, "image_op_defs.pb"), "wb") as f:
        f.write(op_list.SerializeToString(deterministic=True))
    graph_defs = _make_builders(tf)
    np.savez(os.path.join(HERE, "image_builders.npz"),
             **{name: np.frombuffer(gd.SerializeToString(deterministic=True), np.uint8)
                for name, gd in graph_defs.items()})


if __name__ == "__main__":
    main()
