"""ResizeArea, ScaleAndTranslate and ScaleAndTranslateGrad kernels against TensorFlow
2.21's own results (tests/data/image_scale_cases.*, from tests/data/make_image_scale_tf.py),
their input checks in TF's order, classes and words, their OpDefs, and the af.image
builders (tf.image.resize with area / lanczos / gaussian / mitchellcubic / antialias, the
v1 resize_area and resize_images) against the GraphDefs TF's Python writes and the values
TF's tf.image.resize gives."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from aioflow.kernels.image import resize_area_kernels as image_scale_kernels
from kernel_testutil import create, run_kernel
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.compat import v1 as tf1
from aioflow.framework import errors
from aioflow.proto import graph_pb2, op_def_pb2

DATA = Path(__file__).parent / "data"
CASES = {c["id"]: c for c in json.loads((DATA / "image_scale_cases.json").read_text())}
with np.load(DATA / "image_scale_cases.npz", allow_pickle=False) as _z:
    ARRAYS = {k: _z[k] for k in _z.files}

# The kernels add TF's float32 terms in TF's order and compute the sampling kernels' weights
# as TF does, so every case is TF's bit for bit. Lanczos calls the C library's sinf: where
# it cannot be loaded the double sine rounded stands in, and a weight can be an ulp off;
# then those cases are compared within RTOL (a few float32 ulps) and ATOL (a few ulps of
# 255, for sums of 0..255 terms that cancel to near 0).
RTOL, ATOL = 1e-5, 1e-4


def case_ids(op, outcome):
    return [cid for cid, c in CASES.items() if c["op"] == op and c["outcome"] == outcome]


def run_case(case_id):
    case = CASES[case_id]
    inputs = [ARRAYS[key] for key in case["inputs"]]
    try:
        return case, run_kernel(case["op"], inputs, **case["attrs"])
    except errors.OpError as e:
        return case, e


def check_ok(case_id, exact: bool):
    case, outs = run_case(case_id)
    assert not isinstance(outs, Exception), outs
    want = ARRAYS[f"out:{case_id}:0"]
    got = np.asarray(outs[0])
    assert got.dtype == want.dtype == np.float32
    assert got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        assert (np.isnan(got) == np.isnan(want)).all()


def check_error(case_id):
    case, outs = run_case(case_id)
    assert isinstance(outs, errors.OpError), outs
    assert type(outs).__name__ == case["error_class"]
    assert outs.message == case["message"]


@pytest.mark.parametrize("case_id", case_ids("ResizeArea", "ok"))
def test_resize_area_matches_tf(case_id):
    check_ok(case_id, exact=True)


@pytest.mark.parametrize("case_id", case_ids("ScaleAndTranslate", "ok")
                         + case_ids("ScaleAndTranslateGrad", "ok"))
def test_scale_and_translate_matches_tf(case_id):
    lanczos = CASES[case_id]["attrs"].get("kernel_type", "lanczos3").lower().startswith("lanc")
    check_ok(case_id, exact=not lanczos or image_scale_kernels._c_sinf() is not None)


@pytest.mark.parametrize("case_id", case_ids("ResizeArea", "error")
                         + case_ids("ScaleAndTranslate", "error")
                         + case_ids("ScaleAndTranslateGrad", "error"))
def test_checks_as_tf(case_id):
    check_error(case_id)


def test_cases_cover_the_brief():
    kernels = {c["attrs"].get("kernel_type", "lanczos3").lower() for c in CASES.values()
               if c["op"] == "ScaleAndTranslate" and c["outcome"] == "ok"}
    assert kernels == {"lanczos1", "lanczos3", "lanczos5", "gaussian", "box", "triangle",
                       "keyscubic", "mitchellcubic"}
    aligns = {c["attrs"].get("align_corners", False) for c in CASES.values()
              if c["op"] == "ResizeArea" and c["outcome"] == "ok"}
    assert aligns == {False, True}
    messages = {c["message"] for c in CASES.values() if c["outcome"] == "error"}
    for text in ("input must be 4-dimensional", "output_shape_t must have two elements",
                 "shape_t must have two elements", "output dimensions must be positive",
                 "Scale must be greater than zero.", "t must be 1-dimensional",
                 "Unrecognized kernel type: bilinear"):
        assert any(m.startswith(text) for m in messages), text


@pytest.mark.parametrize("op, extra", [("ResizeArea", []),
                                       ("ScaleAndTranslate", [np.float32([2, 2]),
                                                              np.float32([0, 0])])])
def test_large_resizes_go_to_the_pool_and_are_vectorised(op, extra):
    img = np.random.default_rng(0).uniform(0, 255, (1, 256, 256, 3)).astype(np.float32)
    size = np.int32([512, 512])
    kernel = create(op, [img, size, *extra])
    assert kernel.expensive is None
    assert kernel.is_expensive([img, size, *extra])
    assert kernel.is_expensive([img, np.int32([8, 8]), *extra])  # a large input
    assert not kernel.is_expensive([img[:, :32, :32], np.int32([8, 8]), *extra])
    start = time.perf_counter()
    out = kernel.compute(None, [img, size, *extra])[0]
    assert out.shape == (1, 512, 512, 3)
    assert time.perf_counter() - start < 5.0


def test_resize_area_of_constant_image_is_constant():
    """Every output pixel is a weighted mean (weights summing to 1 up to float32)."""
    img = np.full((1, 17, 23, 2), 7.0, np.float32)
    out = run_kernel("ResizeArea", [img, np.int32([5, 9])])[0]
    np.testing.assert_allclose(out, 7.0, rtol=1e-6)


def test_errors_name_the_node(graph):
    img = af.placeholder(af.float32, [None, None, None, None], name="img")
    area = af.image.resize_area(img, [2, 2], name="ra")
    lanczos = af.image.resize(img, [2, 2], method="lanczos3", name="rl")

    async def main():
        async with af.Session(graph=graph) as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"image must have at least one channel[\s\S]*ra"):
                await sess.run(area, {img: np.zeros((1, 3, 3, 0), np.float32)})
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"input image must be of non-zero size[\s\S]*rl"):
                await sess.run(lanczos, {img: np.zeros((1, 0, 3, 1), np.float32)})
            return await sess.run([area, lanczos], {img: np.ones((1, 3, 3, 1), np.float32)})

    got_area, got_lanczos = asyncio.run(main())
    np.testing.assert_allclose(got_area, np.ones((1, 2, 2, 1)), rtol=1e-6)
    np.testing.assert_allclose(got_lanczos, np.ones((1, 2, 2, 1)), rtol=1e-6)


def test_op_defs_equal_tf():
    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "image_scale_op_defs.pb").read_bytes())
    assert [op.name for op in tf_ops.op] == ["ResizeArea", "ScaleAndTranslate",
                                            "ScaleAndTranslateGrad"]
    assert_equal_to_tf(tf_ops)


# -- builders -----------------------------------------------------------------------------

def _builder_module():
    sys.path.insert(0, str(DATA))
    try:
        import make_image_scale_tf
    finally:
        sys.path.remove(str(DATA))
    return make_image_scale_tf


def _aioflow_namespace():
    ns = types.SimpleNamespace(placeholder=af.placeholder, float32=af.float32,
                               int32=af.int32, uint8=af.uint8, image=af.image)
    ns.v1image = types.SimpleNamespace(resize_area=tf1.image.resize_area,
                                       resize_images=tf1.image.resize_images)
    return ns


def _node_summary(graph_def):
    out = {}
    for node in graph_def.node:
        attrs = {k: v.SerializeToString(deterministic=True) for k, v in node.attr.items()
                 if k != "_output_shapes"}
        out[node.name] = (node.op, list(node.input), attrs)
    return out


@pytest.mark.parametrize("name", ["builder_resize_area_v2", "builder_scale_and_translate",
                                  "builder_resize_v1"])
def test_builders_write_tf_graph(name):
    module = _builder_module()
    with np.load(DATA / "image_scale_builders.npz", allow_pickle=False) as z:
        want = graph_pb2.GraphDef.FromString(z[name].tobytes())
    g = af.Graph()
    with g.as_default():
        getattr(module, name)(_aioflow_namespace())
    got, expected = _node_summary(g.as_graph_def()), _node_summary(want)
    assert list(got) == list(expected)
    for node_name, (op, inputs, attrs) in expected.items():
        g_op, g_inputs, g_attrs = got[node_name]
        assert (g_op, g_inputs) == (op, inputs), node_name
        assert g_attrs == attrs, (node_name, set(g_attrs) ^ set(attrs))


def test_resize_methods_shapes_and_dtypes(graph):
    img = af.placeholder(af.uint8, [2, 4, 5, 3])
    for method in ("area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"):
        out = af.image.resize(img, [6, 7], method=method)
        assert out.dtype == af.float32 and out.shape.as_list() == [2, 6, 7, 3]
    assert af.image.resize(img, [6, 7], antialias=True).op.type == "ScaleAndTranslate"
    assert af.image.resize(img, [6, 7], method="nearest",
                           antialias=True).op.type == "ResizeNearestNeighbor"
    assert af.image.resize_area(img, [3, 3]).shape.as_list() == [2, 3, 3, 3]
    # v1's resize_images returns the images themselves when the size is already theirs
    assert tf1.image.resize_images(img, [4, 5], method=3) is img
    with pytest.raises(ValueError, match="Resize method is not implemented: 7"):
        tf1.image.resize_images(img, [4, 4], method=7)


@pytest.mark.parametrize("name", sorted(_builder_module().API_CALLS))
def test_api_runs_to_tf_values(name, graph):
    """af.image.resize (and the v1 resize_images / resize_area) run in a session give
    what TF 2.21's tf.image.resize gave eagerly, bit for bit."""
    module = _builder_module()
    key, call = module.API_CALLS[name]
    value = module.api_inputs()[key]
    images = af.placeholder(af.as_dtype(value.dtype), value.shape)
    out = call(_aioflow_namespace(), images)

    async def main():
        async with af.Session(graph=graph) as sess:
            return await sess.run(out, {images: value})

    got = asyncio.run(main())
    want = ARRAYS[f"api:{name}"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(image_scale_kernels._c_sinf() is None, reason="no C library sinf")
def test_lanczos_sine_is_the_c_librarys():
    """The Lanczos weights' sinf equals the C library's (TF's) on every argument tried."""
    c_sinf = image_scale_kernels._c_sinf()
    x = np.random.default_rng(3).uniform(0, 5 * np.pi, 60000).astype(np.float32)
    want = np.array([c_sinf(float(v)) for v in x], np.float32)
    np.testing.assert_array_equal(image_scale_kernels._sinf(x), want)
