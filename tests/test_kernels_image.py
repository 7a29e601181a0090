"""ResizeBilinear/NearestNeighbor/Bicubic and CropAndResize kernels against TensorFlow
2.21's own results (tests/data/image_cases.*, from tests/data/make_image_fixtures.py),
bit for bit, and their input checks in TF's order, classes and words; the af.image
builders against the GraphDefs TF's Python writes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
from kernel_testutil import create, run_kernel
from op_def_compare import assert_equal_to_tf

import aioflow as af
from aioflow.framework import dtypes, errors
from aioflow.proto import graph_pb2

DATA = Path(__file__).parent / "data"
CASES = {c["id"]: c for c in json.loads((DATA / "image_cases.json").read_text())}
_ARRAYS = None


def arrays():
    global _ARRAYS
    if _ARRAYS is None:
        with np.load(DATA / "image_cases.npz", allow_pickle=False) as z:
            _ARRAYS = {k: z[k] for k in z.files}
    return _ARRAYS


def case_ids(*ops, outcome=None):
    return [cid for cid, c in CASES.items()
            if c["op"] in ops and (outcome is None or c["outcome"] == outcome)]


def _attrs(case):
    return {k: dtypes.as_dtype(v["dtype"]) if isinstance(v, dict) else v
            for k, v in case["attrs"].items()}


def run_case(case_id):
    """(case, aioflow's outputs or the error raised, TF's outputs)."""
    case = CASES[case_id]
    a = arrays()
    inputs = [a[key] for key in case["inputs"]]
    try:
        outs = run_kernel(case["op"], inputs, **_attrs(case))
    except errors.OpError as e:
        outs = e
    expected = [a[f"out:{case_id}:{i}"] for i in range(case.get("n_outputs", 0))]
    return case, outs, expected


def check_case(case_id, compare=None):
    case, outs, expected = run_case(case_id)
    if case["outcome"] == "error":
        assert isinstance(outs, errors.OpError), outs
        assert type(outs).__name__ == case["error_class"]
        assert outs.message == case["message"]
        return
    assert not isinstance(outs, Exception), outs
    assert len(outs) == len(expected)
    for got, want in zip(outs, expected, strict=True):
        got = np.asarray(got)
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        assert got.shape == want.shape, (got.shape, want.shape)
        if compare is not None:
            compare(case, got, want)
        else:
            np.testing.assert_array_equal(got, want)


RESIZE_OPS = ("ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic")


@pytest.mark.parametrize("case_id", case_ids(*RESIZE_OPS, outcome="ok"))
def test_resize_matches_tf(case_id):
    check_case(case_id)


@pytest.mark.parametrize("case_id", case_ids(*RESIZE_OPS, outcome="error"))
def test_resize_checks_as_tf(case_id):
    check_case(case_id)


@pytest.mark.parametrize("case_id", case_ids("CropAndResize"))
def test_crop_and_resize_matches_tf(case_id):
    check_case(case_id)


def test_every_check_has_a_tf_case():
    errs = {c["message"] for c in CASES.values() if c["outcome"] == "error"}
    for text in ("If half_pixel_centers is True", "input must be 4-dimensional",
                 "shape_t must be 1-dimensional", "shape_t must have two elements",
                 "output dimensions must be positive", "image must have at least one channel",
                 "input image must be of non-zero size", "input image must be 4-D",
                 "image dimensions must be positive", "boxes must be 2-D, got",
                 "boxes must have 4 columns", "box_indices must be rank 1",
                 "box_index has incompatible shape", "crop_size must be 1-D",
                 "crop_size must have two elements", "crop dimensions must be positive",
                 "box_index has values outside"):
        assert any(m.startswith(text) for m in errs), text


@pytest.mark.parametrize("op", RESIZE_OPS)
def test_resize_is_vectorised_and_pools_large_outputs(op):
    img = np.random.default_rng(0).uniform(0, 1, (1, 256, 256, 3)).astype(np.float32)
    kernel = create(op, [img, np.int32([512, 512])], half_pixel_centers=True)
    assert kernel.expensive is None
    assert kernel.is_expensive([img, np.int32([512, 512])])
    assert not kernel.is_expensive([img, np.int32([8, 8])])
    start = time.perf_counter()
    out = kernel.compute(None, [img, np.int32([512, 512])])[0]
    assert out.shape == (1, 512, 512, 3)
    assert time.perf_counter() - start < 5.0


def test_crop_and_resize_pools_large_outputs():
    img = np.zeros((1, 8, 8, 3), np.float32)
    boxes = np.zeros((100, 4), np.float32)
    ind = np.zeros(100, np.int32)
    kernel = create("CropAndResize", [img, boxes, ind, np.int32([32, 32])])
    assert kernel.is_expensive([img, boxes, ind, np.int32([32, 32])])
    assert not kernel.is_expensive([img, boxes[:1], ind[:1], np.int32([4, 4])])


def test_errors_name_the_node(graph):
    img = af.placeholder(af.float32, [None, None, None, None], name="img")
    out = af.image.resize_bilinear(img, [2, 2], name="rb")

    async def main():
        async with af.Session(graph=graph) as sess:
            with pytest.raises(errors.InvalidArgumentError,
                               match=r"image must have at least one channel[\s\S]*rb"):
                await sess.run(out, {img: np.zeros((1, 3, 3, 0), np.float32)})
            return await sess.run(out, {img: np.ones((1, 3, 3, 1), np.float32)})

    import asyncio
    np.testing.assert_array_equal(asyncio.run(main()), np.ones((1, 2, 2, 1), np.float32))


# -- builders -----------------------------------------------------------------------------

def tf_builder_graphs():
    import sys
    sys.path.insert(0, str(DATA))
    import make_image_fixtures
    with np.load(DATA / "image_builders.npz", allow_pickle=False) as z:
        stored = {k: z[k].tobytes() for k in z.files}
    return make_image_fixtures, stored


def _node_summary(graph_def):
    out = {}
    for node in graph_def.node:
        attrs = {}
        for key, value in node.attr.items():
            if key in ("_output_shapes",):
                continue
            attrs[key] = value.SerializeToString(deterministic=True)
        out[node.name] = (node.op, list(node.input), attrs)
    return out


BUILDER_NAMES = ["builder_resize", "builder_resize_v1", "builder_crop_and_resize",
                 "builder_nms", "builder_top_k"]


@pytest.mark.parametrize("name", BUILDER_NAMES)
def test_builders_write_tf_graph(name):
    module, stored = tf_builder_graphs()
    want = graph_pb2.GraphDef()
    want.ParseFromString(stored[name])
    g = af.Graph()
    with g.as_default():
        getattr(module, name)(af)
    got = _node_summary(g.as_graph_def())
    expected = _node_summary(want)
    assert list(got) == list(expected)
    for node_name, (op, inputs, attrs) in expected.items():
        g_op, g_inputs, g_attrs = got[node_name]
        assert (g_op, g_inputs) == (op, inputs), node_name
        assert g_attrs == attrs, (node_name, set(g_attrs) ^ set(attrs))


def test_resize_builder_shapes_and_dtypes(graph):
    img = af.placeholder(af.uint8, [2, 4, 5, 3])
    assert af.image.resize(img, [6, 7]).shape.as_list() == [2, 6, 7, 3]
    assert af.image.resize(img, [6, 7]).dtype == af.float32
    assert af.image.resize(img, [6, 7], method="nearest").dtype == af.uint8
    assert af.image.resize(img[0], [6, 7]).shape.as_list() == [6, 7, 3]
    with pytest.raises(ValueError, match="Resize method is not implemented"):
        af.image.resize(img, [6, 7], method="gaussian_blur")
    with pytest.raises(ValueError, match="'images' must have either 3 or 4 dimensions"):
        af.image.resize(af.placeholder(af.float32, [2, 3]), [6, 7])
    crops = af.image.crop_and_resize(img, af.placeholder(af.float32, [5, 4]),
                                     af.placeholder(af.int32, [5]), [3, 4])
    assert crops.shape.as_list() == [5, 3, 4, 3]


def test_op_defs_equal_tf():
    """Our OpDefs are TF 2.21's field for field (TF lists ResizeBilinear's bfloat16 twice;
    the registry keeps each allowed type once)."""
    from aioflow.proto import op_def_pb2

    tf_ops = op_def_pb2.OpList()
    tf_ops.ParseFromString((DATA / "image_op_defs.pb").read_bytes())
    assert len(tf_ops.op) == 9
    assert_equal_to_tf(tf_ops)
