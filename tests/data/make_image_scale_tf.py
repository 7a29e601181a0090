"""Writes tests/data/image_scale_cases.{json,npz} (TensorFlow 2.21's CPU results for the
ResizeArea, ScaleAndTranslate and ScaleAndTranslateGrad kernels, case by case, and of the
tf.image.resize calls in API_CALLS end to end), image_scale_op_defs.pb (TF's OpDefs of
those three ops) and image_scale_builders.npz (the GraphDefs TF's Python writes for the
`builder_*` programs below: tf.image.resize with the area / lanczos / gaussian /
mitchellcubic methods and antialias, tf.compat.v1.image.resize_area and resize_images).

Each case runs one raw op eagerly (`tf.raw_ops.<Op>`) with oneDNN off and records its
outputs, or its error class and message (without the eager wrapper's "{{function_node
...}}" prefix and " [Op:...]" suffix). Same layout as make_image_fixtures.py. Run from the
project root with TensorFlow 2.21:

    TF_CPP_MIN_LOG_LEVEL=3 /work/peers-venv/bin/python tests/data/make_image_scale_tf.py

This module does not import TensorFlow at import time: the tests import its builders.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
f32, i32 = np.float32, np.int32
KERNEL_TYPES = ["lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle",
                "keyscubic", "mitchellcubic"]


# ---------------------------------------------------------------------------------------------
# Builder programs: `tf` is a namespace of TF's functions (tf.image of TF 2, and the
# tf.compat.v1.image ones under `v1image`) or aioflow's.
# ---------------------------------------------------------------------------------------------

def builder_resize_area_v2(tf):
    img = tf.placeholder(tf.uint8, shape=[2, 6, 5, 3], name="img")
    tf.image.resize(img, [3, 4], method="area")
    img3 = tf.placeholder(tf.float32, shape=[6, 5, 1], name="img3")
    tf.image.resize(img3, [9, 2], method=tf.image.ResizeMethod.AREA, name="area3")
    tf.image.resize(img, [4, 4], method="area", preserve_aspect_ratio=True)


def builder_scale_and_translate(tf):
    img = tf.placeholder(tf.float32, shape=[2, 6, 5, 3], name="img")
    for method in ("lanczos3", "lanczos5", "gaussian", "mitchellcubic"):
        tf.image.resize(img, [4, 7], method=method)
    tf.image.resize(img, [3, 3], method="lanczos3", antialias=True, name="aa")
    tf.image.resize(img, [3, 3], method="bilinear", antialias=True)
    tf.image.resize(img, [8, 9], method="bicubic", antialias=True)
    tf.image.resize(img, [8, 9], method="nearest", antialias=True)
    dyn = tf.placeholder(tf.uint8, shape=[None, None, None, 3], name="dyn")
    tf.image.resize(dyn, [5, 5], method="gaussian")
    img3 = tf.placeholder(tf.float32, shape=[6, 5, 2], name="img3")
    tf.image.resize(img3, [2, 3], method="mitchellcubic", antialias=True)


def builder_resize_v1(tf):
    img = tf.placeholder(tf.float32, shape=[1, 4, 5, 3], name="img")
    size = tf.placeholder(tf.int32, shape=[2], name="size")
    tf.v1image.resize_area(img, size, align_corners=True)
    tf.v1image.resize_area(img, [2, 2], name="ra")
    tf.v1image.resize_images(img, [3, 3], method=3)
    tf.v1image.resize_images(img, [3, 3], method="area", align_corners=True)
    tf.v1image.resize_images(img, size)
    tf.v1image.resize_images(img, [7, 2], method=2, align_corners=True)
    tf.v1image.resize_images(img, [6, 6], method=1, preserve_aspect_ratio=True)
    tf.v1image.resize_images(img, [4, 5], method=3)  # same size: no op at all
    img3 = tf.placeholder(tf.uint8, shape=[4, 5, 3], name="img3")
    tf.v1image.resize_images(img3, [2, 3], method=3, name="r3")


# End-to-end calls: name -> (input key, function of (namespace, images)); their results
# are stored as `api:<name>` (TF eager) and compared with aioflow's session runs.
API_CALLS = {
    "area_down": ("u8", lambda tf, x: tf.image.resize(x, [4, 3], method="area")),
    "area_up_3d": ("f32_3d", lambda tf, x: tf.image.resize(x, [9, 11], method="area")),
    "lanczos3": ("u8", lambda tf, x: tf.image.resize(x, [5, 4], method="lanczos3")),
    "lanczos3_aa": ("u8", lambda tf, x: tf.image.resize(x, [5, 4], method="lanczos3",
                                                        antialias=True)),
    "lanczos5_up": ("f32_3d", lambda tf, x: tf.image.resize(x, [10, 13], method="lanczos5")),
    "gaussian_aa": ("u8", lambda tf, x: tf.image.resize(x, [3, 5], method="gaussian",
                                                        antialias=True)),
    "mitchellcubic": ("u8", lambda tf, x: tf.image.resize(x, [12, 5],
                                                          method="mitchellcubic")),
    "bilinear_aa": ("u8", lambda tf, x: tf.image.resize(x, [4, 3], antialias=True)),
    "bicubic_aa": ("f32_3d", lambda tf, x: tf.image.resize(x, [3, 5], method="bicubic",
                                                           antialias=True)),
    "v1_area_align": ("u8", lambda tf, x: tf.v1image.resize_images(x, [5, 4], method=3,
                                                                  align_corners=True)),
    "v1_resize_area": ("f32_3d", lambda tf, x: tf.v1image.resize_area(x[None], [4, 5])),
}


def api_inputs() -> dict:
    rng = np.random.default_rng(7)
    return {"u8": rng.integers(0, 256, (2, 9, 7, 3)).astype(np.uint8),
            "f32_3d": rng.integers(0, 256, (6, 8, 1)).astype(f32)}


OP_NAMES = ["ResizeArea", "ScaleAndTranslate", "ScaleAndTranslateGrad"]
BUILDERS = [builder_resize_area_v2, builder_scale_and_translate, builder_resize_v1]


# ---------------------------------------------------------------------------------------------
# Kernel cases: (id, op, inputs, attrs).
# ---------------------------------------------------------------------------------------------

def _cases():
    rng = np.random.default_rng(20261126)
    cases = []

    def add(case_id, op, inputs, **attrs):
        cases.append((case_id, op, inputs, attrs))

    def image(shape, dtype=f32):
        # 0..255 pixel values (integer-valued floats too: they compress well)
        return rng.integers(0, 256 if np.dtype(dtype).itemsize > 1 else 120,
                            shape).astype(dtype)

    # ResizeArea: up, down, non-integer ratios, same size, 1-pixel in and out.
    sizes = [((3, 4), (7, 9)), ((5, 7), (2, 3)), ((10, 13), (4, 6)), ((6, 6), (5, 3)),
             ((4, 5), (4, 5)), ((4, 5), (1, 1)), ((1, 6), (3, 8)), ((2, 2), (1, 5)),
             ((7, 3), (3, 7)), ((9, 8), (6, 12))]
    for align in (False, True):
        tag = "align" if align else "plain"
        for n, ((ih, iw), (oh, ow)) in enumerate(sizes):
            channels = (3, 1, 2)[n % 3]
            add(f"area_{tag}_{n}", "ResizeArea",
                [image((2, ih, iw, channels)), i32([oh, ow])], align_corners=align)
    for dt in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.int64, np.float16,
               np.float64):
        add(f"area_{np.dtype(dt).name}", "ResizeArea", [image((1, 5, 6, 3), dt), i32([3, 4])])
    img = image((1, 4, 4, 1))
    img[0, 1, 2, 0] = np.inf
    img[0, 3, 0, 0] = np.nan
    add("area_nonfinite", "ResizeArea", [img, i32([3, 3])])
    add("area_big", "ResizeArea", [image((1, 31, 17, 3)), i32([12, 5])])
    zeros = np.zeros((1, 3, 4, 2), f32)
    add("area_err_rank", "ResizeArea", [zeros[0], i32([2, 2])])
    add("area_err_size_rank", "ResizeArea", [zeros, i32([[2, 2]])])
    add("area_err_size_len", "ResizeArea", [zeros, i32([1, 2, 3])])
    add("area_err_size_zero", "ResizeArea", [zeros, i32([0, 2])])
    add("area_err_size_neg", "ResizeArea", [zeros, i32([2, -1])])
    add("area_err_channels", "ResizeArea", [np.zeros((1, 3, 4, 0), f32), i32([2, 2])])
    add("area_err_height", "ResizeArea", [np.zeros((1, 0, 4, 1), f32), i32([2, 2])])
    add("area_empty_batch", "ResizeArea", [np.zeros((0, 3, 4, 1), f32), i32([2, 2])])

    # ScaleAndTranslate: every kernel, antialias both ways, scale = out / in (what
    # tf.image.resize writes) and arbitrary scales and translations.
    shapes = [((5, 7), (11, 9)), ((12, 10), (5, 3)), ((9, 9), (1, 1)), ((1, 6), (3, 4)),
              ((6, 5), (6, 5))]
    images = [image((2, ih, iw, (1, 3)[n % 2])) for n, ((ih, iw), _) in enumerate(shapes)]
    moved = image((1, 8, 7, 2))
    for kernel in KERNEL_TYPES:
        for aa in (True, False):
            tag = f"{kernel}_{'aa' if aa else 'noaa'}"
            for n, ((ih, iw), (oh, ow)) in enumerate(shapes):
                scale = f32([oh / ih, ow / iw])
                add(f"st_{tag}_{n}", "ScaleAndTranslate",
                    [images[n], i32([oh, ow]), scale, f32([0, 0])],
                    kernel_type=kernel, antialias=aa)
            add(f"st_{tag}_moved", "ScaleAndTranslate",
                [moved, i32([6, 9]), f32([0.7, 1.6]), f32([-1.3, 2.5])],
                kernel_type=kernel, antialias=aa)
    for dt in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.int64, np.float16,
               np.float64):
        add(f"st_{np.dtype(dt).name}", "ScaleAndTranslate",
            [image((1, 5, 6, 3), dt), i32([7, 4]), f32([1.4, 4 / 6]), f32([0, 0])])
    add("st_outside", "ScaleAndTranslate",  # samples left of and beyond the image
        [image((1, 4, 6, 1)), i32([5, 8]), f32([1.0, 1.0]), f32([2.0, -3.5])],
        kernel_type="triangle")
    add("st_wide_span", "ScaleAndTranslate",  # the span is clamped to the input
        [image((1, 40, 3, 1)), i32([3, 2]), f32([3 / 40, 2 / 3]), f32([0, 0])],
        kernel_type="lanczos5")
    add("st_uneven_scale", "ScaleAndTranslate",
        [image((1, 7, 9, 2)), i32([4, 13]), f32([0.37, 1.93]), f32([0.25, -0.75])],
        kernel_type="keyscubic")
    add("st_kernel_case", "ScaleAndTranslate",
        [image((1, 4, 4, 1)), i32([3, 5]), f32([0.75, 1.25]), f32([0, 0])],
        kernel_type="Lanczos3")
    img = image((1, 6, 6, 1))
    img[0, 1, 2, 0] = np.inf
    img[0, 4, 5, 0] = np.nan
    add("st_nonfinite", "ScaleAndTranslate", [img, i32([4, 9]), f32([4 / 6, 1.5]),
                                               f32([0, 0])], kernel_type="lanczos3")
    add("st_nonfinite_box", "ScaleAndTranslate", [img, i32([3, 3]), f32([0.5, 0.5]),
                                                   f32([0, 0])], kernel_type="box")
    add("st_big", "ScaleAndTranslate",
        [image((1, 33, 27, 3)), i32([14, 50]), f32([14 / 33, 50 / 27]), f32([0, 0])])
    # ScaleAndTranslateGrad: the forward op's transpose (grads of the output's shape, the
    # original image for its size).
    grad_shapes = [((7, 6), (3, 4), f32([3 / 7, 4 / 6]), f32([0, 0])),
                   ((4, 5), (9, 8), f32([9 / 4, 8 / 5]), f32([0, 0])),
                   ((8, 7), (6, 9), f32([0.7, 1.6]), f32([-1.3, 2.5]))]
    grads = [rng.integers(-9, 10, (2 - min(n, 1), oh, ow, 2)).astype(f32)
             for n, (_, (oh, ow), _, _) in enumerate(grad_shapes)]
    originals = [np.zeros((2 - min(n, 1), ih, iw, 2), f32)
                 for n, ((ih, iw), _, _, _) in enumerate(grad_shapes)]
    for kernel in KERNEL_TYPES:
        for aa in (True, False):
            for n, (_, _, scale, shift) in enumerate(grad_shapes):
                add(f"grad_{kernel}_{'aa' if aa else 'noaa'}_{n}", "ScaleAndTranslateGrad",
                    [grads[n], originals[n], scale, shift], kernel_type=kernel, antialias=aa)
    g, o = grads[0], originals[0]
    one, zero2 = f32([1, 1]), f32([0, 0])
    g_inf = g.copy()
    g_inf[0, 1, 2, 0] = np.inf
    add("grad_nonfinite", "ScaleAndTranslateGrad", [g_inf, o, grad_shapes[0][2], zero2])
    add("grad_err_rank", "ScaleAndTranslateGrad", [g[0], o, one, zero2])
    add("grad_err_original_rank", "ScaleAndTranslateGrad", [g, o[0], one, zero2])
    add("grad_err_scale_len", "ScaleAndTranslateGrad", [g, o, f32([1, 1, 1]), zero2])
    add("grad_err_scale_zero", "ScaleAndTranslateGrad", [g, o, f32([0, 1]), zero2])
    add("grad_err_translation_rank", "ScaleAndTranslateGrad", [g, o, one, f32([[0, 0]])])
    add("grad_err_kernel", "ScaleAndTranslateGrad", [g, o, one, zero2], kernel_type="cubic")
    add("grad_empty_batch", "ScaleAndTranslateGrad",
        [np.zeros((0, 3, 4, 2), f32), np.zeros((0, 5, 5, 2), f32), one, zero2])

    zeros = np.zeros((1, 3, 4, 2), f32)
    add("st_err_rank", "ScaleAndTranslate", [zeros[0], i32([2, 2]), one, zero2])
    add("st_err_size_rank", "ScaleAndTranslate", [zeros, i32([[2, 2]]), one, zero2])
    add("st_err_size_len", "ScaleAndTranslate", [zeros, i32([1, 2, 3]), one, zero2])
    add("st_err_size_zero", "ScaleAndTranslate", [zeros, i32([0, 2]), one, zero2])
    add("st_err_size_neg", "ScaleAndTranslate", [zeros, i32([2, -1]), one, zero2])
    add("st_err_channels", "ScaleAndTranslate",
        [np.zeros((1, 3, 4, 0), f32), i32([2, 2]), one, zero2])
    add("st_err_height", "ScaleAndTranslate",
        [np.zeros((1, 0, 4, 1), f32), i32([2, 2]), one, zero2])
    add("st_err_scale_rank", "ScaleAndTranslate", [zeros, i32([2, 2]), f32([[1, 1]]), zero2])
    add("st_err_scale_len", "ScaleAndTranslate", [zeros, i32([2, 2]), f32([1, 1, 1]), zero2])
    add("st_err_scale_zero", "ScaleAndTranslate", [zeros, i32([2, 2]), f32([1, 0]), zero2])
    add("st_err_scale_neg", "ScaleAndTranslate", [zeros, i32([2, 2]), f32([-1, 1]), zero2])
    add("st_err_scale_subnormal", "ScaleAndTranslate",  # denormals are zero in TF's kernels
        [zeros, i32([2, 2]), f32([1, 1e-45]), zero2])
    add("st_err_scale_nan", "ScaleAndTranslate",
        [zeros, i32([2, 2]), f32([np.nan, 1]), zero2])
    add("st_err_translation_len", "ScaleAndTranslate",
        [zeros, i32([2, 2]), one, f32([0, 0, 0])])
    add("st_err_translation_rank", "ScaleAndTranslate",
        [zeros, i32([2, 2]), one, f32(0)])
    add("st_err_kernel", "ScaleAndTranslate", [zeros, i32([2, 2]), one, zero2],
        kernel_type="bilinear")
    add("st_empty_batch", "ScaleAndTranslate",
        [np.zeros((0, 3, 4, 1), f32), i32([2, 2]), one, zero2])
    return cases


def _namespace(real_tf):
    """TF's functions the builder programs and API_CALLS use, under their names there."""
    v1 = real_tf.compat.v1

    class Namespace:
        pass

    mod = Namespace()
    for name in ("placeholder", "float32", "int32", "uint8"):
        setattr(mod, name, getattr(v1, name))
    mod.image = Namespace()
    mod.image.resize = real_tf.image.resize
    mod.image.ResizeMethod = real_tf.image.ResizeMethod
    mod.v1image = Namespace()
    mod.v1image.resize_area = v1.image.resize_area
    mod.v1image.resize_images = v1.image.resize_images
    return mod


def _make_builders(real_tf):
    """{builder name: the GraphDef TF's Python writes for it (graph mode)}."""
    mod = _namespace(real_tf)
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
    from tensorflow.core.framework import op_def_pb2
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
        op_def = op_def_registry.get(op)
        kwargs = {arg.name: tf.constant(v) for arg, v in zip(op_def.input_arg, inputs, strict=True)}
        try:
            out = getattr(tf.raw_ops, op)(**kwargs, **attrs)
        except Exception as e:  # noqa: BLE001
            message = re.sub(r"^\{\{function_node [^}]*\}\} ", "", str(e))
            message = re.sub(r" \[Op:\w+\]( name: \S*)?$", "", message)
            record.update(outcome="error", error_class=type(e).__name__, message=message)
        else:
            record.update(outcome="ok", n_outputs=1)
            arrays[f"out:{case_id}:0"] = out.numpy()
        records.append(record)
    mod = _namespace(tf)
    inputs = api_inputs()
    for name, (key, call) in API_CALLS.items():
        arrays[f"api:{name}"] = call(mod, tf.constant(inputs[key])).numpy()
    with open(os.path.join(HERE, "image_scale_cases.json"), "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
    np.savez_compressed(os.path.join(HERE, "image_scale_cases.npz"), **arrays)
    op_list = op_def_pb2.OpList(op=[op_def_registry.get(name) for name in OP_NAMES])
    with open(os.path.join(HERE, "image_scale_op_defs.pb"), "wb") as f:
        f.write(op_list.SerializeToString(deterministic=True))
    graph_defs = _make_builders(tf)
    np.savez_compressed(os.path.join(HERE, "image_scale_builders.npz"),
                        **{name: np.frombuffer(gd.SerializeToString(deterministic=True),
                                               np.uint8)
                           for name, gd in graph_defs.items()})


if __name__ == "__main__":
    main()
