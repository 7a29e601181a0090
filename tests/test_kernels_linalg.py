"""Einsum, BatchMatMulV3, MatrixBandPart and the MatrixDiag/DiagPart/SetDiag families
against TF 2.21's CPU kernels case by case (tests/data/math_extra_cases.*), plus edge cases
checked here directly."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_testutil import create, run1
from math_extra_fixtures import check_case, ids

from aioflow.framework import errors


@pytest.mark.parametrize("case_id", ids(["einsum_", "bmm3_", "band_", "mdiag", "mdpart",
                                         "mset"]))
def test_linalg_matches_tf(case_id):
    check_case(case_id)


@pytest.mark.parametrize("equation, message", [
    ("ij,jk->iz", "Einsum output subscripts for equation 'ij,jk->iz' has label 'z' which is "
                  "not present in the input subscripts"),
    ("i.j,jk->ik", r"Expected at most one ellipsis \(...\), but found 1 periods \(.\) in the "
                   "input subscript: i.j"),
    ("ij,jk->ikk", "repeated label 'k'"),
])
def test_einsum_bad_equations_fail_at_construction(equation, message):
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(errors.InvalidArgumentError, match=message):
        create("Einsum", [a, b], equation=equation)


def test_einsum_large_uses_optimize_and_matches_matmul():
    rng = np.random.RandomState(0)
    q, k = rng.standard_normal((2, 4, 64, 32)), rng.standard_normal((2, 4, 64, 32))
    got = run1("Einsum", [q, k], equation="bhqd,bhkd->bhqk")
    np.testing.assert_allclose(got, q @ np.swapaxes(k, -1, -2), rtol=1e-12)
    kernel = create("Einsum", [q, k], equation="bhqd,bhkd->bhqk")
    assert kernel.is_expensive([q, k]) == (2 * 4 * 64 * 64 * 32 > 1 << 21)


def test_einsum_arbitrary_label_characters_and_bfloat16():
    import ml_dtypes
    a = np.arange(6, dtype=ml_dtypes.bfloat16).reshape(2, 3)
    got = run1("Einsum", [a, a], equation="1#,1#->#")
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [9, 17, 29])


def test_band_part_negative_axes_batch_and_strings():
    x = np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object)
    got = run1("MatrixBandPart", [x, np.int64(0), np.int64(0)])
    assert got.tolist() == [[b"a", b""], [b"", b"d"]]


def test_matrix_set_diag_v3_round_trip():
    rng = np.random.RandomState(1)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    for align in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
        k = np.array([-2, 1], np.int32)
        part = run1("MatrixDiagPartV3", [x, k, np.float32(0)], align=align)
        back = run1("MatrixSetDiagV3", [np.zeros_like(x), part, k], align=align)
        band = run1("MatrixBandPart", [x, np.int64(2), np.int64(1)])
        np.testing.assert_array_equal(back, band)
        built = run1("MatrixDiagV3", [part, k, np.int32(4), np.int32(5), np.float32(0)],
                     align=align)
        np.testing.assert_array_equal(built, band)
