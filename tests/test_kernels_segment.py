"""Segment reductions (SegmentSum/Mean/Max/Min/Prod, UnsortedSegment*, SparseSegment* with
and without num_segments) against TF 2.21's CPU kernels, case by case
(tests/data/math_extra_cases.*), plus edge cases checked here directly."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_testutil import run1
from math_extra_fixtures import check_case, ids

from aioflow.framework import errors


@pytest.mark.parametrize("case_id", ids(["seg_", "useg_", "sseg_", "ssegn_"]))
def test_segment_matches_tf(case_id):
    check_case(case_id)


def test_sorted_segment_nan_rule():
    # TF's reducers: the values after a segment's last NaN decide; NaN last gives NaN
    data = np.array([6, np.nan, 10, 1, np.nan, 5, np.nan], np.float32)
    ids = np.array([0, 0, 0, 1, 1, 2, 2], np.int32)
    got = run1("SegmentMax", [data, ids])
    np.testing.assert_array_equal(got, np.array([10, np.nan, np.nan], np.float32))
    got = run1("SegmentMin", [data, ids])
    np.testing.assert_array_equal(got, np.array([10, np.nan, np.nan], np.float32))


def test_unsorted_segment_large_int64_ids_and_dropped_negatives():
    data = np.arange(10, dtype=np.float64)
    ids = np.array([-1, 0, 1, 1, -7, 2, 2, 2, 0, -1], np.int64)
    got = run1("UnsortedSegmentSum", [data, ids, np.int64(4)])
    np.testing.assert_array_equal(got, [1 + 8, 2 + 3, 5 + 6 + 7, 0])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^segment_ids\[1,0\] = 9 is out of range \[0, 3\)$"):
        run1("UnsortedSegmentMax", [np.ones((2, 2), np.float32),
                                   np.array([[0, 1], [9, 2]], np.int64), np.int32(3)])


def test_segment_large_input_vectorised():
    rng = np.random.RandomState(0)
    ids = np.sort(rng.randint(0, 1000, 200_000)).astype(np.int32)
    data = rng.standard_normal((200_000, 4)).astype(np.float64)
    got = run1("SegmentSum", [data, ids])
    want = np.zeros((ids[-1] + 1, 4))
    np.add.at(want, ids, data)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    got = run1("UnsortedSegmentMax", [data, ids[::-1].copy(), np.int32(1000)])
    want = np.full((1000, 4), np.finfo(np.float64).min)
    np.maximum.at(want, ids[::-1], data)
    np.testing.assert_array_equal(got, want)


def test_sparse_segment_mean_empty_and_half():
    data = np.arange(6, dtype=np.float16).reshape(3, 2)
    got = run1("SparseSegmentMeanWithNumSegments",
               [data, np.array([2, 0], np.int64), np.array([1, 1], np.int64), np.int64(3)])
    np.testing.assert_array_equal(got, np.array([[0, 0], [2, 3], [0, 0]], np.float16))
    assert got.dtype == np.float16
