"""The cases make_math_extra_fixtures.py runs through TensorFlow and the tests run through
aioflow's kernels: (id, op, inputs, attrs). An input that is a Python list is a list input
(Einsum's `inputs`); a dtype attr is written {"dtype": name}."""

from __future__ import annotations

import numpy as np

f16, f32, f64 = np.float16, np.float32, np.float64
i16, i32, i64 = np.int16, np.int32, np.int64
u8 = np.uint8
R = np.random.RandomState(7)


def rnd(*shape, dtype=f32):
    return R.standard_normal(shape).astype(dtype)


def dt(name):
    return {"dtype": name}


CASES: list = []


def case(case_id, op, inputs, **attrs):
    CASES.append((case_id, op, inputs, attrs))


# -- Einsum ---------------------------------------------------------------------------------
A23, B34 = rnd(2, 3), rnd(3, 4)
for n, (eq, ins) in enumerate([
    ("ij,jk->ik", [A23, B34]),
    ("ij,jk->ki", [A23, B34]),
    ("ij,jk->", [A23, B34]),
    ("ij,jk->i", [A23, B34]),
    ("iJ,Jk->ik", [A23, B34]),
    ("ij,ij->ij", [A23, rnd(2, 3)]),
    ("ij,kj->ikj", [A23, rnd(5, 3)]),
    ("ab,cd->abcd", [A23, B34]),
    ("bij,bjk->bik", [rnd(4, 2, 3), rnd(4, 3, 5)]),
    ("bhqd,bhkd->bhqk", [rnd(2, 3, 4, 5), rnd(2, 3, 6, 5)]),
    ("bhqk,bhkd->bqhd", [rnd(2, 3, 4, 6), rnd(2, 3, 6, 5)]),
    ("btd,dhk->bthk", [rnd(2, 4, 6), rnd(6, 2, 3)]),
    ("bthk,hkd->btd", [rnd(2, 4, 2, 3), rnd(2, 3, 6)]),
    ("...ij,...jk->...ik", [rnd(2, 1, 2, 3), rnd(5, 3, 4)]),
    ("...ij,jk->...ik", [rnd(2, 2, 3), B34]),
    ("i...j,jk->ik", [rnd(2, 5, 3), B34]),
    ("ij,jk->...ik", [A23, B34]),
    ("...j,j->...", [A23, rnd(3)]),
    ("...,...->...", [A23, rnd(2, 3)]),
    ("a...,...->a", [rnd(4, 2, 3), A23]),
    ("...->...", [A23]),
    ("ii->i", [rnd(3, 3)]),
    ("ii->", [rnd(3, 3)]),
    ("ij->ji", [A23]),
    ("ij->", [A23]),
    ("ijk->kji", [rnd(2, 3, 4)]),
    ("bii->bi", [rnd(2, 3, 3)]),
    ("ij,jk->ik", [np.zeros((0, 3), f32), B34]),
    ("ij,jk->ik", [np.zeros((2, 0), f32), np.zeros((0, 4), f32)]),
    ("ij,jk->ik", [np.arange(6, dtype=i32).reshape(2, 3), np.arange(12, dtype=i32).reshape(3, 4)]),
    ("ij,jk->ik", [np.arange(6, dtype=i64).reshape(2, 3), np.arange(12, dtype=i64).reshape(3, 4)]),
    ("ij,jk->ik", [A23.astype(f64), B34.astype(f64)]),
    ("ij,jk->ik", [A23.astype(f16), B34.astype(f16)]),
    ("ij,jk->ik", [(A23 + 1j * A23).astype(np.complex64), B34.astype(np.complex64)]),
    ("ij,jk->ik", [np.array([[np.nan, 1, np.inf]], f32), B34]),
    ("ij,jk->ik", [np.ones((1, 3), f32), B34]),
]):
    case(f"einsum_{n}", "Einsum", [ins], equation=eq)
# bad equations and shapes
for n, (eq, ins) in enumerate([
    ("ij,jk", [A23, B34]),
    ("ij,jk->ik->", [A23, B34]),
    ("ij,jk,kl->il", [A23, B34]),
    ("ij,jk->ik", [A23]),
    ("ij->ij", [A23, B34]),
    ("iij,jk->ik", [A23, B34]),
    ("ijk,jk->ik", [A23, B34]),
    ("ij,jk->ik", [A23, rnd(4, 4)]),
    ("...ij,...jk->...ik", [rnd(2, 2, 3), rnd(5, 3, 4)]),
    ("ij,ij->ij", [A23, rnd(1, 3)]),
    ("ii->i", [A23]),
]):
    case(f"einsum_bad_{n}", "Einsum", [ins], equation=eq)

# -- BatchMatMulV3 --------------------------------------------------------------------------
case("bmm3_0", "BatchMatMulV3", [rnd(2, 3, 4), rnd(2, 4, 5)], Tout=dt("float32"))
case("bmm3_1", "BatchMatMulV3", [rnd(2, 4, 3), rnd(1, 5, 4)], Tout=dt("float32"), adj_x=True,
     adj_y=True)
case("bmm3_2", "BatchMatMulV3", [R.randint(-9, 9, (2, 3, 4)).astype(np.int8),
                                 R.randint(-9, 9, (4, 2)).astype(np.int8)], Tout=dt("int32"))
case("bmm3_3", "BatchMatMulV3", [R.randint(0, 9, (3, 4)).astype(u8),
                                 R.randint(-9, 9, (4, 2)).astype(np.int8)], Tout=dt("int32"))
case("bmm3_4", "BatchMatMulV3", [rnd(3, 4), rnd(5, 4)], Tout=dt("float32"))
case("bmm3_5", "BatchMatMulV3", [rnd(3), rnd(3, 4)], Tout=dt("float32"))
case("bmm3_6", "BatchMatMulV3", [rnd(2, 3, 4), rnd(3, 4, 5)], Tout=dt("float32"))
case("bmm3_7", "BatchMatMulV3", [rnd(3, 4, dtype=f64), rnd(4, 2, dtype=f64)], Tout=dt("float64"))
case("bmm3_8", "BatchMatMulV3", [rnd(0, 3, 4), rnd(4, 2)], Tout=dt("float32"))
case("bmm3_9", "BatchMatMulV3", [rnd(3, 4, dtype=f16), rnd(4, 2, dtype=f16)], Tout=dt("half"))

# -- Lgamma / Digamma -----------------------------------------------------------------------
_SPECIAL = np.concatenate([
    np.linspace(-20.5, 20.5, 83), [-3.0, -2.0, -1.0, 0.0, -0.0, 1.0, 2.0, 0.5, 1e-8, -1e-8,
                                   1e-30, 1e5, 1e10, 1e20, 3e38, -1e10 - 0.5, np.inf, -np.inf,
                                   np.nan, 170.5, 171.7, 200.0, -170.5, -0.99999, 2.5e-5],
    np.exp(np.linspace(-10, 10, 41))])
for name, dtype in (("f32", f32), ("f64", f64), ("f16", f16)):
    with np.errstate(all="ignore"):
        x = _SPECIAL.astype(dtype)
    case(f"lgamma_{name}", "Lgamma", [x])
    case(f"digamma_{name}", "Digamma", [x])
case("lgamma_empty", "Lgamma", [np.zeros((0, 3), f32)])
case("digamma_2d", "Digamma", [np.abs(rnd(3, 4, dtype=f64)) * 10])

# -- ClipByValue ----------------------------------------------------------------------------
X = np.array([[-3, -1, 0], [1, 2, np.nan]], f32)
case("clip_0", "ClipByValue", [X, f32(-1.5), f32(1.5)])
case("clip_1", "ClipByValue", [X, np.full((2, 3), -1, f32), np.full((2, 3), 1, f32)])
case("clip_2", "ClipByValue", [X, f32(-1), np.full((2, 3), 1, f32)])
case("clip_3", "ClipByValue", [X, np.full((3,), -1, f32), f32(1)])
case("clip_4", "ClipByValue", [X, f32(2), f32(-2)])
case("clip_5", "ClipByValue", [np.arange(-5, 5, dtype=i32), i32(-2), i32(3)])
case("clip_6", "ClipByValue", [np.arange(-5, 5, dtype=i64), i64(-2), np.full((10,), 3, i64)])
case("clip_7", "ClipByValue", [X, f32(np.nan), f32(1)])
case("clip_8", "ClipByValue", [np.zeros((0,), f32), f32(0), f32(1)])
case("clip_9", "ClipByValue", [X, np.full((2, 3), -1, f32), np.full((3, 2), 1, f32)])
case("clip_10", "ClipByValue", [f32(5), f32(0), f32(1)])
case("clip_11", "ClipByValue", [X, np.full((1, 3), -1, f32), f32(1)])

# -- sorted segments ------------------------------------------------------------------------
D = np.arange(1, 13, dtype=f32).reshape(6, 2)
D[3, 1] = np.nan
for op in ("SegmentSum", "SegmentMean", "SegmentMax", "SegmentMin", "SegmentProd"):
    k = op[7:].lower()
    case(f"seg_{k}_0", op, [np.nan_to_num(D), i32([0, 0, 1, 1, 1, 3])])
    case(f"seg_{k}_nan", op, [D, i32([0, 0, 1, 1, 1, 3])])
    case(f"seg_{k}_nan_alone", op, [D, i32([0, 0, 1, 2, 2, 3])])
    case(f"seg_{k}_1", op, [D, i64([0, 1, 2, 3, 4, 5])])
    case(f"seg_{k}_2", op, [np.arange(6, dtype=i32), i32([2, 2, 2, 5, 5, 5])])
    case(f"seg_{k}_3", op, [np.zeros((0, 2), f32), np.zeros((0,), i32)])
    case(f"seg_{k}_4", op, [rnd(4, 2, 3, dtype=f64), i64([0, 0, 0, 1])])
    case(f"seg_{k}_unsorted", op, [D, i32([0, 0, 2, 1, 1, 3])])
    case(f"seg_{k}_negative", op, [D, i32([-1, 0, 1, 1, 1, 3])])
    case(f"seg_{k}_negative_later", op, [D, i32([0, 0, 1, 1, -1, 3])])
    case(f"seg_{k}_size", op, [D, i32([0, 0, 1])])
    case(f"seg_{k}_rank", op, [D, i32([[0, 0, 1, 1, 1, 3]])])
    case(f"seg_{k}_scalar_data", op, [f32(1), i32([0])])
    case(f"seg_{k}_int", op, [np.arange(12, dtype=i64).reshape(6, 2) - 5, i32([0, 0, 1, 1, 1, 3])])
case("seg_mean_int", "SegmentMean", [np.arange(6, dtype=i32), i32([0, 0, 0, 1, 1, 2])])
case("seg_max_f16", "SegmentMax", [D.astype(f16), i32([0, 0, 1, 1, 1, 3])])
case("seg_sum_u8", "SegmentSum", [np.full(6, 200, u8), i32([0, 0, 1, 1, 1, 3])])

# -- unsorted segments ----------------------------------------------------------------------
for op in ("UnsortedSegmentSum", "UnsortedSegmentMax", "UnsortedSegmentMin",
           "UnsortedSegmentProd"):
    k = op[15:].lower()
    case(f"useg_{k}_0", op, [D, i32([3, 0, 3, 1, 0, 3]), i32(5)])
    case(f"useg_{k}_1", op, [D, i64([3, 0, 3, 1, 0, 3]), i64(4)])
    case(f"useg_{k}_2d_ids", op, [rnd(2, 3, 2), i32([[0, 1, 0], [2, 2, 1]]), i32(3)])
    case(f"useg_{k}_negative", op, [D, i32([3, -1, 3, 1, -5, 3]), i32(4)])
    case(f"useg_{k}_too_big", op, [D, i32([3, 0, 4, 1, 7, 3]), i32(4)])
    case(f"useg_{k}_num_neg", op, [D, i32([0, 0, 0, 0, 0, 0]), i32(-1)])
    case(f"useg_{k}_num_vec", op, [D, i32([0, 0, 0, 0, 0, 0]), i32([2])])
    case(f"useg_{k}_shape", op, [D, i32([0, 0, 0]), i32(2)])
    case(f"useg_{k}_empty", op, [np.zeros((0, 2), f32), np.zeros((0,), i32), i32(3)])
    case(f"useg_{k}_zero", op, [np.zeros((0, 2), f32), np.zeros((0,), i32), i32(0)])
    case(f"useg_{k}_int", op, [np.arange(12, dtype=i32).reshape(6, 2) - 5,
                                i32([3, 0, 3, 1, 0, 3]), i32(5)])
    case(f"useg_{k}_scalar_ids", op, [f32(3), i32(1), i32(3)])
case("useg_sum_i16ids", "UnsortedSegmentSum", [D, i16([1, 0, 1, 1, 0, 1]), i32(2)])
case("useg_sum_complex", "UnsortedSegmentSum", [(D + 1j).astype(np.complex64),
                                                i32([1, 0, 1, 1, 0, 1]), i32(3)])

# -- sparse segments ------------------------------------------------------------------------
SD = np.arange(1, 13, dtype=f32).reshape(4, 3)
for op in ("SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"):
    k = op[13:].lower()
    case(f"sseg_{k}_0", op, [SD, i32([0, 1, 3, 3]), i32([0, 0, 1, 3])])
    case(f"sseg_{k}_1", op, [SD.astype(f64), i64([2, 0]), i64([0, 0])])
    case(f"sseg_{k}_2", op, [SD, i32([0, 1, 2]), i64([1, 1, 4])])
    case(f"sseg_{k}_empty", op, [SD, np.zeros((0,), i32), np.zeros((0,), i32)])
    case(f"sseg_{k}_bad_index", op, [SD, i32([0, 4, 1]), i32([0, 0, 1])])
    case(f"sseg_{k}_neg_index", op, [SD, i32([0, -1, 1]), i32([0, 0, 1])])
    case(f"sseg_{k}_unsorted", op, [SD, i32([0, 1, 2]), i32([1, 0, 1])])
    case(f"sseg_{k}_neg_seg", op, [SD, i32([0, 1, 2]), i32([-1, 0, 1])])
    case(f"sseg_{k}_sizes", op, [SD, i32([0, 1, 2]), i32([0, 1])])
    case(f"sseg_{k}_rank", op, [SD, i32([[0, 1, 2]]), i32([[0, 0, 1]])])
    case(f"sseg_{k}_f16", op, [SD.astype(f16), i32([0, 1, 3]), i32([0, 0, 2])])
    case(f"sseg_{k}_3d", op, [rnd(3, 2, 2), i32([2, 2, 0]), i32([0, 1, 1])])
    w = op + "WithNumSegments"
    case(f"ssegn_{k}_0", w, [SD, i32([0, 1, 3, 3]), i32([0, 0, 1, 3]), i32(6)])
    case(f"ssegn_{k}_1", w, [SD, i32([0, 1, 3]), i32([2, 0, 1]), i64(3)])
    case(f"ssegn_{k}_too_big", w, [SD, i32([0, 1, 3]), i32([0, 1, 4]), i32(3)])
    case(f"ssegn_{k}_small", w, [SD, i32([0, 1, 3]), i32([0, 1, 1]), i32(1)])
    case(f"ssegn_{k}_empty", w, [SD, np.zeros((0,), i32), np.zeros((0,), i32), i32(2)])
    case(f"ssegn_{k}_num_vec", w, [SD, i32([0]), i32([0]), i32([2])])
case("sseg_sum_int", "SparseSegmentSum", [np.arange(12, dtype=i64).reshape(4, 3), i32([0, 1, 3]),
                                          i32([0, 0, 2])])

# -- Unique ---------------------------------------------------------------------------------
for op in ("Unique", "UniqueWithCounts"):
    k = "u" if op == "Unique" else "uc"
    case(f"{k}_0", op, [i32([1, 1, 2, 4, 4, 4, 7, 8, 8])])
    case(f"{k}_1", op, [f32([3, np.nan, 1, np.nan, 3, -0.0, 0.0])], out_idx=dt("int64"))
    case(f"{k}_2", op, [np.array([b"b", b"a", b"b", b""], dtype=object)])
    case(f"{k}_empty", op, [np.zeros((0,), i64)])
    case(f"{k}_rank", op, [i32([[1, 2], [2, 1]])])
    case(f"{k}_scalar", op, [i32(1)])
    case(f"{k}_bool", op, [np.array([True, False, True])])
    v2 = op + "V2"
    M = i32([[1, 2, 1], [3, 4, 3], [1, 2, 1]])
    case(f"{k}v2_axis0", v2, [M, i64([0])])
    case(f"{k}v2_axis1", v2, [M, i32([1])])
    case(f"{k}v2_axis_neg", v2, [M, i64([-1])])
    case(f"{k}v2_axis_none", v2, [M, np.zeros((0,), i64)])
    case(f"{k}v2_axis_flat", v2, [i32([5, 5, 1]), np.zeros((0,), i64)])
    case(f"{k}v2_axis_bad", v2, [M, i64([2])])
    case(f"{k}v2_axis_two", v2, [M, i64([0, 1])])
    case(f"{k}v2_3d", v2, [np.tile(i32([[[1], [2]], [[3], [4]], [[1], [2]]]), (1, 1, 2)), i64([0])])

# -- BroadcastArgs --------------------------------------------------------------------------
case("bargs_0", "BroadcastArgs", [i32([2, 1, 3]), i32([4, 3])])
case("bargs_1", "BroadcastArgs", [i64([]), i64([5, 1])])
case("bargs_2", "BroadcastArgs", [i32([2, 3]), i32([4, 3])])
case("bargs_3", "BroadcastArgs", [i32([0, 1]), i32([1, 5])])
case("bargs_4", "BroadcastArgs", [i32([[2, 3]]), i32([3])])
case("bargs_5", "BroadcastArgs", [i32([1, 0]), i32([1, 1])])

# -- ReverseSequence ------------------------------------------------------------------------
RS = np.arange(24, dtype=f32).reshape(2, 3, 4)
case("rseq_0", "ReverseSequence", [RS, i64([3, 2]), ], seq_dim=2, batch_dim=0)
case("rseq_1", "ReverseSequence", [RS, i32([1, 2, 4]), ], seq_dim=2, batch_dim=1)
case("rseq_2", "ReverseSequence", [RS, i64([0, 3, 1, 2]), ], seq_dim=1, batch_dim=2)
case("rseq_3", "ReverseSequence", [RS, i64([2, 1, 0]), ], seq_dim=0, batch_dim=1)
case("rseq_neg_batch", "ReverseSequence", [RS, i64([2, 1, 0, 0]), ], seq_dim=0, batch_dim=-1)
case("rseq_neg_seq", "ReverseSequence", [RS, i64([2, 1]), ], seq_dim=-1, batch_dim=0)
case("rseq_same", "ReverseSequence", [RS, i64([2, 1]), ], seq_dim=0, batch_dim=0)
case("rseq_seq_oob", "ReverseSequence", [RS, i64([2, 1]), ], seq_dim=3, batch_dim=0)
case("rseq_batch_oob", "ReverseSequence", [RS, i64([2, 1]), ], seq_dim=1, batch_dim=3)
case("rseq_len_big", "ReverseSequence", [RS, i64([5, 1]), ], seq_dim=2, batch_dim=0)
case("rseq_len_neg", "ReverseSequence", [RS, i64([-1, 1]), ], seq_dim=2, batch_dim=0)
case("rseq_len_count", "ReverseSequence", [RS, i64([1, 1, 1]), ], seq_dim=2, batch_dim=0)
case("rseq_len_rank", "ReverseSequence", [RS, i64([[1, 1]]), ], seq_dim=2, batch_dim=0)
case("rseq_str", "ReverseSequence",
     [np.array([[b"a", b"b", b"c"], [b"d", b"e", b"f"]], dtype=object), i32([2, 3])],
     seq_dim=1, batch_dim=0)
case("rseq_empty", "ReverseSequence", [np.zeros((2, 0), f32), i64([0, 0])], seq_dim=1, batch_dim=0)

# -- Bucketize ------------------------------------------------------------------------------
case("bucket_0", "Bucketize", [f32([[-5, 10000], [150, 10], [5, 100], [np.nan, np.inf]])],
     boundaries=[0.0, 10.0, 100.0])
case("bucket_1", "Bucketize", [i32([-1, 0, 1, 2, 3])], boundaries=[0.0, 1.5, 2.0])
case("bucket_2", "Bucketize", [f64([1.0, 2.0])], boundaries=[])
case("bucket_3", "Bucketize", [i64([3, 1])], boundaries=[2.0, 1.0])
case("bucket_4", "Bucketize", [f32([0.1, 0.30000001])], boundaries=[0.1, 0.3])

# -- MatrixBandPart -------------------------------------------------------------------------
MB = np.arange(1, 21, dtype=f32).reshape(4, 5)
for n, (lo, up) in enumerate([(1, 1), (0, -1), (-1, 0), (0, 0), (-1, -1), (2, 3), (10, 10)]):
    case(f"band_{n}", "MatrixBandPart", [MB, i64(lo), i64(up)])
case("band_batch", "MatrixBandPart", [np.arange(24, dtype=i32).reshape(2, 3, 4), i32(1), i32(0)])
case("band_lo_big", "MatrixBandPart", [MB, i64(5), i64(0)])
case("band_up_big", "MatrixBandPart", [MB, i64(0), i64(6)])
case("band_lo_neg", "MatrixBandPart", [MB, i64(-2), i64(0)])
case("band_rank", "MatrixBandPart", [f32([1, 2]), i64(0), i64(0)])
case("band_vec_lo", "MatrixBandPart", [MB, i64([0]), i64(0)])
case("band_empty", "MatrixBandPart", [np.zeros((0, 3), f32), i64(0), i64(0)])

# -- MatrixDiag family ----------------------------------------------------------------------
DG = np.arange(1, 7, dtype=f32).reshape(2, 3)
case("mdiag_v1", "MatrixDiag", [DG])
case("mdiag_v1_scalar", "MatrixDiag", [f32(1)])
case("mdiag_part_v1", "MatrixDiagPart", [np.arange(24, dtype=f32).reshape(2, 3, 4)])
case("mdiag_part_v1_vec", "MatrixDiagPart", [f32([1, 2])])
case("mset_v1", "MatrixSetDiag", [np.zeros((2, 3, 4), f32), DG])
case("mset_v1_bad", "MatrixSetDiag", [np.zeros((2, 3, 4), f32), f32([[1, 2, 3, 4]] * 2)])
DIAG2 = np.arange(1, 13, dtype=f32).reshape(2, 2, 3)  # batch 2, 2 diagonals of length 3
for align in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
    a = align.lower()
    case(f"mdiag3_{a}_band", "MatrixDiagV3", [DIAG2, i32([-1, 0]), i32(-1), i32(-1), f32(9)],
         align=align)
    case(f"mdiag3_{a}_upper", "MatrixDiagV3", [DIAG2, i32([1, 2]), i32(-1), i32(-1), f32(0)],
         align=align)
    case(f"mdiag3_{a}_rect", "MatrixDiagV3", [DIAG2, i32([-1, 0]), i32(3), i32(4), f32(0)],
         align=align)
    P = np.arange(1, 25, dtype=f32).reshape(2, 3, 4)
    case(f"mdpart3_{a}_band", "MatrixDiagPartV3", [P, i32([-1, 1]), f32(-7)], align=align)
    case(f"mdpart3_{a}_one", "MatrixDiagPartV3", [P, i32(1), f32(0)], align=align)
    case(f"mdpart3_{a}_low", "MatrixDiagPartV3", [P, i32([-2, 0]), f32(0)], align=align)
    case(f"mset3_{a}_band", "MatrixSetDiagV3",
         [np.zeros((2, 3, 4), f32), np.arange(1, 19, dtype=f32).reshape(2, 3, 3), i32([-1, 1])],
         align=align)
    case(f"mset3_{a}_one", "MatrixSetDiagV3",
         [np.zeros((2, 3, 4), f32), np.arange(1, 7, dtype=f32).reshape(2, 3), i32(1)],
         align=align)
case("mdiag3_single_k", "MatrixDiagV3", [DG, i32(1), i32(-1), i32(-1), f32(0)])
case("mdiag3_k_bad", "MatrixDiagV3", [DIAG2, i32([1, 0]), i32(-1), i32(-1), f32(0)])
case("mdiag3_k_three", "MatrixDiagV3", [DIAG2, i32([0, 1, 2]), i32(-1), i32(-1), f32(0)])
case("mdiag3_rows_small", "MatrixDiagV3", [DG, i32(0), i32(2), i32(-1), f32(0)])
case("mdiag3_rows_cols_bad", "MatrixDiagV3", [DG, i32(0), i32(4), i32(4), f32(0)])
case("mdiag3_num_diags_bad", "MatrixDiagV3", [DIAG2, i32([-2, 0]), i32(-1), i32(-1), f32(0)])
case("mdiag3_pad_vec", "MatrixDiagV3", [DG, i32(0), i32(-1), i32(-1), f32([0])])
case("mdiag2", "MatrixDiagV2", [DIAG2, i32([-1, 0]), i32(-1), i32(-1), f32(5)])
case("mdpart2", "MatrixDiagPartV2", [np.arange(1, 25, dtype=f32).reshape(2, 3, 4),
                                    i32([-1, 1]), f32(-7)])
case("mset2", "MatrixSetDiagV2", [np.zeros((2, 3, 4), f32),
                                  np.arange(1, 19, dtype=f32).reshape(2, 3, 3), i32([-1, 1])])
case("mdpart3_k_oob", "MatrixDiagPartV3", [np.zeros((3, 4), f32), i32(4), f32(0)])
case("mdpart3_k_oob_low", "MatrixDiagPartV3", [np.zeros((3, 4), f32), i32(-3), f32(0)])
case("mdpart3_rank", "MatrixDiagPartV3", [f32([1, 2]), i32(0), f32(0)])
case("mset3_bad_shape", "MatrixSetDiagV3", [np.zeros((2, 3, 4), f32), np.zeros((2, 4), f32),
                                            i32(0)])
case("mset3_k_bad", "MatrixSetDiagV3", [np.zeros((3, 4), f32), np.zeros((3,), f32), i32(5)])
case("mdpart3_empty", "MatrixDiagPartV3", [np.zeros((2, 0, 3), f32), i32(0), f32(0)])
case("mdiag3_int", "MatrixDiagV3", [i64([1, 2]), i32(0), i32(-1), i32(-1), i64(0)])

# -- TensorScatter* -------------------------------------------------------------------------
T = np.arange(1, 9, dtype=f32).reshape(4, 2)
for op in ("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax",
           "TensorScatterMin", "ScatterNdNonAliasingAdd"):
    k = op.replace("TensorScatter", "ts_").replace("ScatterNdNonAliasingAdd", "nonalias").lower()
    case(f"{k}_rows", op, [T, i32([[1], [3]]), f32([[10, 20], [-30, 40]])])
    case(f"{k}_elems", op, [T, i64([[0, 1], [2, 0], [0, 1]]), f32([5, -6, 7])])
    case(f"{k}_oob", op, [T, i32([[1], [4]]), f32([[10, 20], [30, 40]])])
    case(f"{k}_neg", op, [T, i32([[-1]]), f32([[10, 20]])])
    case(f"{k}_shape", op, [T, i32([[1], [2]]), f32([[10, 20, 30], [30, 40, 50]])])
    case(f"{k}_empty", op, [T, np.zeros((0, 1), i32), np.zeros((0, 2), f32)])
    case(f"{k}_int", op, [np.arange(8, dtype=i32).reshape(4, 2), i32([[1], [1]]),
                          i32([[10, 20], [-5, 1]])])
    case(f"{k}_deep", op, [T, i32([[1, 0, 0]]), f32([1])])
    case(f"{k}_scalar_tensor", op, [f32(1), i32([[0]]), f32([1])])
    case(f"{k}_whole", op, [T, np.zeros((1, 0), i32), f32([np.ones((4, 2), f32)])[0][None]])
case("ts_update_str", "TensorScatterUpdate", [np.array([b"a", b"b", b"c"], dtype=object),
                                              i32([[2]]), np.array([b"z"], dtype=object)])
case("ts_update_dup", "TensorScatterUpdate", [T, i32([[1], [1]]), f32([[1, 2], [3, 4]])])
case("ts_update_bool", "TensorScatterUpdate", [np.array([True, False]), i64([[1]]),
                                               np.array([True])])
case("ts_add_nan", "TensorScatterAdd", [T, i32([[0, 0]]), f32([np.nan])])
case("ts_max_nan", "TensorScatterMax", [T, i32([[0, 0], [1, 1]]), f32([np.nan, 0])])
case("ts_update_i16", "TensorScatterUpdate", [T, i16([[2]]), f32([[0, 0]])])
case("nonalias_bool", "ScatterNdNonAliasingAdd", [np.array([True, False, False]), i32([[1]]),
                                                  np.array([True])])
