"""NonMaxSuppressionV3/V4/V5, TopKV2 and InTopKV2 kernels against TensorFlow 2.21's own
results (tests/data/image_cases.*), their input checks in TF's order, classes and words,
and NMS speed on thousands of boxes."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from kernel_testutil import create, run_kernel
from test_kernels_image import CASES, case_ids, check_case

from aioflow.framework import errors

NMS_OPS = ("NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5")


@pytest.mark.parametrize("case_id", case_ids(*NMS_OPS))
def test_nms_matches_tf(case_id):
    check_case(case_id)


def _unordered(case, got, want):
    if case["attrs"].get("sorted", True) is False:
        got, want = np.sort(got, axis=-1), np.sort(want, axis=-1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case_id", case_ids("TopKV2", "InTopKV2"))
def test_top_k_matches_tf(case_id):
    if case_id == "topk_k1_nan":
        pytest.skip("covered below")
    check_case(case_id, compare=_unordered)


def test_top_k_one_skips_nan_as_tf():
    values, indices = run_kernel("TopKV2", [np.float32([[np.nan, 1, np.nan, 2, 5],
                                                        [np.nan] * 5]), np.int32(1)])
    np.testing.assert_array_equal(indices, [[4], [0]])
    np.testing.assert_array_equal(values, np.float32([[5], [np.nan]]))


def test_every_check_has_a_tf_case():
    errs = {c["message"] for c in CASES.values() if c["outcome"] == "error"}
    for text in ("boxes must be 2-D", "boxes must have 4 columns", "scores must be 1-D",
                 "scores has incompatible shape", "max_output_size must be 0-D",
                 "output size must be non-negative", "iou_threshold must be 0-D",
                 "iou_threshold must be in [0, 1]", "score_threshold must be 0-D",
                 "soft_nms_sigma must be 0-D", "soft_nms_sigma_val must be >= 0",
                 "k must be scalar", "Need k >= 0", "input must be >= 1-D",
                 "input must have at least k columns", "k must be 0-D",
                 "predictions must be 2-dimensional", "targets must be 1-dimensional",
                 "First dimension of predictions"):
        assert any(m.startswith(text) for m in errs), text


def _random_boxes(n, seed=0):
    rng = np.random.default_rng(seed)
    yx = rng.uniform(0, 100, (n, 2))
    hw = rng.uniform(1, 10, (n, 2))
    return (np.concatenate([yx, yx + hw], 1).astype(np.float32),
            rng.random(n).astype(np.float32))


def _reference_nms(boxes, scores, max_out, iou_thr, score_thr):
    """TF's loop, one pair at a time (slow; for checking the vectorised one)."""
    def iou(i, j):
        yi0, yi1 = sorted((boxes[i, 0], boxes[i, 2]))
        xi0, xi1 = sorted((boxes[i, 1], boxes[i, 3]))
        yj0, yj1 = sorted((boxes[j, 0], boxes[j, 2]))
        xj0, xj1 = sorted((boxes[j, 1], boxes[j, 3]))
        ai, aj = (yi1 - yi0) * (xi1 - xi0), (yj1 - yj0) * (xj1 - xj0)
        if ai <= 0 or aj <= 0:
            return np.float32(0)
        inter = (max(min(yi1, yj1) - max(yi0, yj0), np.float32(0))
                 * max(min(xi1, xj1) - max(xi0, xj0), np.float32(0)))
        return inter / (ai + aj - inter)

    order = sorted((i for i in range(len(scores)) if scores[i] > score_thr),
                   key=lambda i: (-scores[i], i))
    selected = []
    for i in order:
        if len(selected) == max_out:
            break
        if all(iou(i, j) <= iou_thr for j in selected):
            selected.append(i)
    return selected


def test_nms_equals_tf_loop_on_random_boxes():
    boxes, scores = _random_boxes(400, seed=3)
    scores = np.round(scores * 10).astype(np.float32) / 10  # ties
    for thr in (0.0, 0.2, 0.7):
        got = run_kernel("NonMaxSuppressionV3",
                         [boxes, scores, np.int32(50), np.float32(thr), np.float32(0.1)])[0]
        assert got.tolist() == _reference_nms(boxes, scores, 50, np.float32(thr), 0.1)


def test_nms_handles_thousands_of_boxes_fast():
    boxes, scores = _random_boxes(10000, seed=1)
    kernel = create("NonMaxSuppressionV3",
                    [boxes, scores, np.int32(100), np.float32(0.5), np.float32(0.0)])
    inputs = [boxes, scores, np.int32(300), np.float32(0.5), np.float32(0.0)]
    assert kernel.expensive is None and kernel.is_expensive(inputs)
    assert not kernel.is_expensive([boxes[:10], scores[:10]] + inputs[2:])
    start = time.perf_counter()
    out = kernel.compute(None, inputs)[0]
    elapsed = time.perf_counter() - start
    assert len(out) == 300
    assert elapsed < 1.0, elapsed


def test_soft_nms_decays_scores():
    boxes = np.float32([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 5, 1, 6]])
    scores = np.float32([0.9, 0.8, 0.7])
    idx, sc, valid = run_kernel("NonMaxSuppressionV5", [
        boxes, scores, np.int32(5), np.float32(0.5), np.float32(0.0), np.float32(0.5)])
    assert idx.tolist() == [0, 2, 1] and int(valid) == 3
    iou = np.float32(0.9) / np.float32(1.1)
    assert sc[2] == np.float32(0.8) * np.float32(math.exp(np.float32(-1.0) * iou * iou))


def test_pad_to_max_output_size():
    boxes = np.float32([[0, 0, 1, 1], [0, 0, 1, 1]])
    scores = np.float32([0.5, 0.6])
    idx, valid = run_kernel("NonMaxSuppressionV4", [
        boxes, scores, np.int32(4), np.float32(0.5), np.float32(0.0)],
        pad_to_max_output_size=True)
    assert idx.tolist() == [1, 0, 0, 0] and int(valid) == 1


def test_top_k_large_rows():
    x = np.random.default_rng(2).integers(0, 50, (64, 5000)).astype(np.float32)
    values, indices = run_kernel("TopKV2", [x, np.int32(7)])
    order = np.lexsort((np.arange(5000)[None].repeat(64, 0), -x))[:, :7]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, 1))


def test_top_k_errors_name_nothing_but_tf_text():
    with pytest.raises(errors.InvalidArgumentError, match=r"^Need k >= 0, got -2$"):
        run_kernel("TopKV2", [np.float32([1, 2]), np.int32(-2)])


def test_builder_shapes_and_graph_checks(graph):
    import aioflow as af

    x = af.placeholder(af.float32, [3, 10])
    values, indices = af.nn.top_k(x, 4)
    assert values.shape.as_list() == [3, 4] and indices.dtype == af.int32
    assert af.math.top_k(x, 2, index_type=af.int64).indices.dtype == af.int64
    with pytest.raises(ValueError, match=r"input must have last dimension >= k = 11 but is 10"):
        af.nn.top_k(x, 11)
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1"):
        af.nn.top_k(x, [1])
    targets = af.placeholder(af.int32, [3])
    assert af.nn.in_top_k(targets, x, 2).shape.as_list() == [3]
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4"):
        af.nn.in_top_k(af.placeholder(af.int32, [4]), x, 2)
    boxes = af.placeholder(af.float32, [None, 4])
    scores = af.placeholder(af.float32, [None])
    assert af.image.non_max_suppression(boxes, scores, 5).shape.as_list() == [None]
    idx, sc = af.image.non_max_suppression_with_scores(boxes, scores, 5, soft_nms_sigma=0.5)
    assert sc.dtype == af.float32
    with pytest.raises(ValueError, match=r"Dimension must be 4 but is 3"):
        af.image.non_max_suppression(af.placeholder(af.float32, [None, 3]), scores, 5)


def test_detection_pipeline_runs_in_a_session(graph):
    import asyncio

    import aioflow as af

    boxes = af.placeholder(af.float32, [None, 4], name="boxes")
    scores = af.placeholder(af.float32, [None], name="scores")
    keep, kept_scores = af.image.non_max_suppression_with_scores(boxes, scores, 10,
                                                                 iou_threshold=0.5)
    best = af.nn.top_k(kept_scores, 2)
    feed = {boxes: np.float32([[0, 0, 1, 1], [0, 0.05, 1, 1.05], [3, 3, 4, 4]]),
            scores: np.float32([0.9, 0.95, 0.3])}

    async def main():
        async with af.Session(graph=graph) as sess:
            return await sess.run([keep, best.values, best.indices], feed)

    k, v, i = asyncio.run(main())
    assert k.tolist() == [1, 2]
    np.testing.assert_array_equal(v, np.float32([0.95, 0.3]))
    assert i.tolist() == [0, 1]
