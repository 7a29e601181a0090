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


def test_builders_build_tf_nodes_and_run():
    """The builders make the nodes TF 2.21's tf.compat.v1 makes (names, ops) and run."""
    import aioflow as af

    g = af.Graph()
    with g.as_default():
        x = af.placeholder(af.float32, [2, 3], name="x")
        y = af.placeholder(af.float32, [3, 4], name="y")
        d = af.placeholder(af.float32, [3], name="d")
        outs = {
            "diag": af.linalg.diag(d),
            "diag_part": af.linalg.diag_part(x),
            "band": af.linalg.band_part(x, 1, -1),
            "clip": af.clip_by_value(x, 0.0, 1.0),
            "einsum": af.einsum("ij,jk", x, y),
            "einsum3": af.linalg.einsum("ij,jk,kl->il", x, y, af.ones([4, 5])),
            "seg": af.math.segment_sum(x, [0, 0]),
            "useg": af.math.unsorted_segment_max(x, [0, 1], 3),
            "sseg": af.math.sparse_segment_mean(x, [0, 1], [0, 0], num_segments=3),
            "rseq": af.reverse_sequence(x, [1, 2], seq_axis=1, batch_axis=0),
            "bargs": af.broadcast_dynamic_shape([2, 1], [3]),
            "ts": af.tensor_scatter_nd_update(x, [[0]], [[1.0, 2.0, 3.0]]),
            "bucket": af.math.bucketize(x, [0.0, 0.5]),
        }
        uy, uidx = af.unique(af.constant([3, 1, 3], af.int32))
    ops_by_name = {op.name: op.type for op in g.get_operations()}
    for name, op_type in [("diag", "MatrixDiagV3"), ("diag/k", "Const"),
                          ("diag_part", "MatrixDiagPartV3"), ("MatrixBandPart", "MatrixBandPart"),
                          ("clip_by_value/Minimum", "Minimum"), ("clip_by_value", "Maximum"),
                          ("einsum/Einsum", "Einsum"), ("SegmentSum", "SegmentSum"),
                          ("UnsortedSegmentMax", "UnsortedSegmentMax"),
                          ("SparseSegmentMeanWithNumSegments",
                           "SparseSegmentMeanWithNumSegments"),
                          ("ReverseSequence", "ReverseSequence"),
                          ("BroadcastArgs", "BroadcastArgs"),
                          ("TensorScatterUpdate", "TensorScatterUpdate"), ("Unique", "Unique")]:
        assert ops_by_name.get(name) == op_type, (name, ops_by_name.get(name))
    assert outs["einsum"].op.get_attr("equation") in (b"ij,jk->ik", "ij,jk->ik")
    assert outs["einsum"].shape.as_list() == [2, 4]
    xv = np.array([[0.25, -1, 2], [0.75, 0.5, 3]], np.float32)
    yv = np.arange(12, dtype=np.float32).reshape(3, 4)
    with af.SyncSession(graph=g) as sess:
        got = sess.run(outs, {x: xv, y: yv, d: np.array([1, 2, 3], np.float32)})
        assert sess.run(uy).tolist() == [3, 1]
    np.testing.assert_array_equal(got["diag"], np.diag([1, 2, 3]).astype(np.float32))
    np.testing.assert_array_equal(got["clip"], np.clip(xv, 0, 1))
    np.testing.assert_allclose(got["einsum"], xv @ yv, rtol=1e-6)
    np.testing.assert_allclose(got["einsum3"], xv @ yv @ np.ones((4, 5)), rtol=1e-5)
    np.testing.assert_array_equal(got["seg"], xv.sum(0, keepdims=True))
    np.testing.assert_array_equal(got["bargs"], [2, 3])
    np.testing.assert_array_equal(got["bucket"], [[1, 0, 2], [2, 2, 2]])


def test_kernel_errors_name_the_node_in_a_session():
    import aioflow as af

    g = af.Graph()
    with g.as_default():
        ids = af.placeholder(af.int32, [None], name="ids")
        out = af.math.segment_sum(af.constant([1.0, 2.0, 3.0]), ids, name="segsum")
    with af.SyncSession(graph=g) as sess:
        with pytest.raises(errors.InvalidArgumentError,
                           match=r"segment ids are not increasing\n\t \[\[\{\{node segsum\}\}"):
            sess.run(out, {ids: np.array([1, 0, 2], np.int32)})
