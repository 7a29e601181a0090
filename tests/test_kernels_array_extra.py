"""Lgamma, Digamma, ClipByValue, Unique (V2, WithCounts), BroadcastArgs, ReverseSequence,
Bucketize and the TensorScatter*/ScatterNdNonAliasingAdd kernels against TF 2.21's CPU
kernels case by case (tests/data/math_extra_cases.*), plus edge cases checked here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from kernel_testutil import run1, run_kernel
from math_extra_fixtures import check_case, ids

from aioflow.framework import dtypes, errors


@pytest.mark.parametrize("case_id", ids(["lgamma_", "digamma_", "clip_", "u_", "uc_", "uv2_",
                                         "ucv2_", "bargs_", "rseq_", "bucket_", "ts_",
                                         "nonalias_"]))
def test_array_extra_matches_tf(case_id):
    check_case(case_id)


def test_lgamma_digamma_against_math():
    xs = np.concatenate([np.linspace(0.01, 60, 997), -np.linspace(0.013, 30.3, 500)])
    want = np.array([math.lgamma(x) for x in xs])
    np.testing.assert_allclose(run1("Lgamma", [xs]), want, rtol=1e-13, atol=1e-13)
    # digamma: the recurrence psi(x + 1) - psi(x) = 1/x, and psi(1) = -Euler's gamma
    diff = run1("Digamma", [xs + 1]) - run1("Digamma", [xs])
    np.testing.assert_allclose(diff, 1 / xs, rtol=1e-10, atol=1e-12)
    assert run1("Digamma", [np.array([1.0])])[0] == pytest.approx(-0.5772156649015329, abs=1e-15)


def test_unique_large_and_int64_idx():
    rng = np.random.RandomState(0)
    x = rng.randint(0, 50, 100_000).astype(np.int64)
    y, idx, count = run_kernel("UniqueWithCounts", [x], out_idx=dtypes.int64)
    np.testing.assert_array_equal(y[idx], x)
    assert idx.dtype == np.int64 and count.sum() == x.size
    _, first = np.unique(x, return_index=True)
    np.testing.assert_array_equal(y, x[np.sort(first)])


def test_tensor_scatter_ignore_policy_skips_bad_indices():
    t = np.zeros(4, np.float32)
    got = run1("TensorScatterAdd", [t, np.array([[1], [9], [-1], [1]], np.int32),
                                    np.ones(4, np.float32)], bad_indices_policy="IGNORE")
    np.testing.assert_array_equal(got, [0, 2, 0, 0])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"^indices\[2\] = \[-1\] does not index into shape \[4\]$"):
        run1("TensorScatterAdd", [t, np.array([[1], [2], [-1]], np.int32),
                                  np.ones(3, np.float32)])


def test_reverse_sequence_batch_after_seq_and_int64_lengths():
    x = np.arange(24).reshape(4, 3, 2)
    got = run1("ReverseSequence", [x, np.array([1, 2], np.int64)], seq_dim=0, batch_dim=2)
    want = x.copy()
    want[:2, :, 1] = x[:2, :, 1][::-1]
    np.testing.assert_array_equal(got, want)


def test_clip_by_value_inf_and_empty():
    x = np.array([-np.inf, 0, np.inf], np.float64)
    np.testing.assert_array_equal(run1("ClipByValue", [x, np.float64(-1), np.float64(1)]),
                                  [-1, 0, 1])
    assert run1("ClipByValue", [np.zeros((0, 2), np.int8), np.int8(0), np.int8(1)]).shape == (0, 2)
