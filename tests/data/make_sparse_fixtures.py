"""Write tests/data/sparse_cases.{json,npz}: the sparse kernels' outputs and errors as
TensorFlow 2.21.0's CPU kernels give them, case by case (tf.raw_ops, eager).

Run from the project root with a TensorFlow 2.21.0 environment (see README.md here):

    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfenv/bin/python tests/data/make_sparse_fixtures.py

The JSON also holds TF's OpDefs of these ops (text format, without docs).

Each case names an op, its inputs (in the op's input order) and attrs; the JSON holds, per
case, the input keys in the .npz and either the output keys or the error's class and
message (the kernel's own words: eager's "{{function_node ...}}" prefix and " [Op:...]"
suffix removed). String values are stored as NumPy bytes arrays ("S"); a test turns them
back into object arrays. Cases on which TF 2.21's kernel aborts the process (a negative
a_shape dimension in SparseTensorDenseMatMul) are not here.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
i32, i64, f32, f64 = np.int32, np.int64, np.float32, np.float64


def ix(rows, dtype=i64):
    """An index matrix (n rows of `rank` coordinates); ix([], rank) for none."""
    return np.array(rows, dtype=dtype)


def none(rank, dtype=i64):
    return np.zeros((0, rank), dtype=dtype)


RNG = np.random.RandomState(7)


def _random_sparse(shape, nnz, dtype=f32, sort=True, unique=True):
    """A random SparseTensor (indices, values, shape) of `shape` with `nnz` entries."""
    size = int(np.prod(shape))
    flat = RNG.choice(size, nnz, replace=not unique)
    if sort:
        flat = np.sort(flat)
    indices = np.stack(np.unravel_index(flat, shape), axis=1).astype(i64) if nnz else \
        none(len(shape))
    values = (RNG.randn(nnz) * 4).astype(dtype) if np.dtype(dtype).kind in "fc" else \
        RNG.randint(-9, 9, nnz).astype(dtype)
    return indices, values, i64(shape)


CASES: list = []


def case(name, op, inputs, **attrs):
    CASES.append((name, op, inputs, attrs))


# -- SparseToDense -----------------------------------------------------------------------------
def s2d(name, indices, shape, values, default, **attrs):
    case("s2d_" + name, "SparseToDense",
         [("sparse_indices", indices), ("output_shape", shape), ("sparse_values", values),
          ("default_value", default)], **attrs)


s2d("basic", ix([[0, 1], [1, 2]]), i64([2, 3]), f32([1, 2]), f32(-1))
s2d("int32_idx", ix([[0, 1], [1, 2]], i32), i32([2, 3]), f32([1, 2]), f32(0))
s2d("scalar_value", ix([[0, 1], [1, 0], [1, 2]]), i64([2, 3]), f32(5), f32(0))
s2d("vector_indices", i64([0, 3, 4]), i64([6]), i32([7, 8, 9]), i32(1))
s2d("scalar_index", i64(2), i64([4]), f64(3), f64(0))
s2d("rank3", ix([[0, 0, 1], [0, 2, 0], [1, 1, 1]]), i64([2, 3, 2]), i64([1, 2, 3]), i64(0))
s2d("empty", none(2), i64([2, 3]), f32([]), f32(9))
s2d("empty_scalar_values", none(2), i64([2, 3]), f32(1), f32(9))
s2d("zero_dim", none(2), i64([0, 3]), f32([]), f32(9))
s2d("bool", ix([[1], [2]]), i64([4]), np.array([True, True]), np.bool_(False))
s2d("string", ix([[0], [2]]), i64([3]), np.array([b"a", b"bc"]), np.array(b"-"))
s2d("unsorted", ix([[1, 0], [0, 0]]), i64([2, 2]), f32([1, 2]), f32(0))
s2d("repeated", ix([[0, 1], [0, 1]]), i64([2, 2]), f32([1, 2]), f32(0))
s2d("out_of_bounds", ix([[0, 1], [2, 0]]), i64([2, 2]), f32([1, 2]), f32(0))
s2d("negative_index", ix([[0, 1], [1, -1]]), i64([2, 2]), f32([1, 2]), f32(0))
s2d("oob_before_unsorted", ix([[1, 1], [0, 5], [0, 0]]), i64([2, 2]), f32([1, 2, 3]), f32(0))
s2d("unsorted_before_oob", ix([[1, 1], [0, 0], [0, 5]]), i64([2, 2]), f32([1, 2, 3]), f32(0))
s2d("vector_repeated", i64([1, 1]), i64([3]), f32([1, 2]), f32(0))
s2d("vector_unsorted", i64([2, 1]), i64([3]), f32([1, 2]), f32(0))
s2d("vector_oob", i64([1, 3]), i64([3]), f32([1, 2]), f32(0))
s2d("no_validate_unsorted", ix([[1, 0], [0, 0]]), i64([2, 2]), f32([1, 2]), f32(0),
    validate_indices=False)
s2d("no_validate_repeated_last_wins", ix([[1, 0], [1, 0]]), i64([2, 2]), f32([1, 2]), f32(0),
    validate_indices=False)
s2d("no_validate_oob", ix([[1, 0], [5, 0]]), i64([2, 2]), f32([1, 2]), f32(0),
    validate_indices=False)
s2d("indices_rank3", np.zeros((1, 1, 1), i64), i64([2]), f32([1]), f32(0))
s2d("shape_scalar", i64(1), i64(3), f32([1]), f32(0))
s2d("shape_matrix", ix([[1]]), i64([[3]]), f32([1]), f32(0))
s2d("shape_wrong_size", ix([[1, 0]]), i64([3]), f32([1]), f32(0))
s2d("values_wrong_size", ix([[1], [2]]), i64([3]), f32([1, 2, 3]), f32(0))
s2d("values_matrix", ix([[1], [2]]), i64([3]), f32([[1, 2]]), f32(0))
s2d("default_not_scalar", ix([[1]]), i64([3]), f32([1]), f32([0]))
s2d("negative_dim", ix([[0]]), i64([-2]), f32([1]), f32(0))
_bi, _bv, _bs = _random_sparse((300, 400), 3000)
s2d("large", _bi, _bs, _bv, f32(0.5))

# -- SparseTensorDenseMatMul -------------------------------------------------------------------
def mm(name, indices, values, shape, b, **attrs):
    case("mm_" + name, "SparseTensorDenseMatMul",
         [("a_indices", indices), ("a_values", values), ("a_shape", shape), ("b", b)], **attrs)


B = (np.arange(12, dtype=f32).reshape(3, 4) - 5) / 2
mm("basic", ix([[0, 1], [1, 0], [1, 2]]), f32([1, 2, 3]), i64([2, 3]), B)
mm("int32_idx", ix([[0, 1], [1, 0], [1, 2]], i32), f32([1, 2, 3]), i64([2, 3]), B)
mm("duplicates_sum", ix([[1, 2], [0, 1], [1, 2]]), f32([1, 2, 3]), i64([2, 3]), B)
mm("adjoint_a", ix([[0, 1], [1, 0], [2, 1]]), f32([1, 2, 3]), i64([3, 2]), B, adjoint_a=True)
mm("adjoint_b", ix([[0, 1], [1, 0], [1, 2]]), f32([1, 2, 3]), i64([2, 4]), B, adjoint_b=True)
mm("adjoint_both", ix([[0, 1], [1, 0], [2, 1]]), f32([1, 2, 3]), i64([4, 2]), B,
   adjoint_a=True, adjoint_b=True)
mm("complex_adjoint", ix([[0, 1], [1, 0]]), np.complex64([1 + 2j, 3 - 1j]), i64([2, 2]),
   np.complex64([[1j, 2], [3, 4 - 1j]]), adjoint_a=True, adjoint_b=True)
mm("double", ix([[0, 0], [2, 1]]), f64([1.5, -2]), i64([3, 2]), f64([[1, 2], [3, 4]]))
mm("int32", ix([[0, 0], [2, 1]]), i32([3, -2]), i64([3, 2]), i32([[1, 2], [3, 4]]))
mm("empty", none(2), f32([]), i64([2, 3]), B)
mm("zero_rows", none(2), f32([]), i64([0, 3]), B)
mm("zero_inner", none(2), f32([]), i64([2, 0]), np.zeros((0, 4), f32))
mm("k_oob", ix([[0, 1], [1, 5]]), f32([1, 2]), i64([2, 3]), B)
mm("m_oob", ix([[0, 1], [4, 1]]), f32([1, 2]), i64([2, 3]), B)
mm("k_and_m_oob_same_row", ix([[7, 9]]), f32([1]), i64([2, 3]), B)
mm("m_oob_before_k_oob", ix([[7, 1], [0, 9]]), f32([1, 2]), i64([2, 3]), B)
mm("negative_k", ix([[0, -1]]), f32([1]), i64([2, 3]), B)
mm("k_oob_adjoint", ix([[5, 0]]), f32([1]), i64([3, 2]), B, adjoint_a=True)
mm("k_oob_adjoint_b", ix([[0, 4]]), f32([1]), i64([2, 4]), B, adjoint_b=True)
mm("inner_mismatch", ix([[0, 1]]), f32([1]), i64([2, 5]), B)
mm("b_not_matrix", ix([[0, 1]]), f32([1]), i64([2, 3]), f32([1, 2, 3]))
mm("shape_not_vector", ix([[0, 1]]), f32([1]), i64([[2, 3]]), B)
mm("shape_3", ix([[0, 1, 0]]), f32([1]), i64([2, 3, 1]), B)
mm("values_not_vector", ix([[0, 1]]), f32([[1]]), i64([2, 3]), B)
mm("indices_not_matrix", i64([0, 1]), f32([1, 2]), i64([2, 3]), B)
mm("nnz_mismatch", ix([[0, 1]]), f32([1, 2]), i64([2, 3]), B)
mm("indices_cols", ix([[0, 1, 1]]), f32([1]), i64([2, 3]), B)
_mi, _mv, _ms = _random_sparse((500, 300), 3000)
mm("large", _mi, _mv, _ms, RNG.randn(300, 40).astype(f32))
_mi, _mv, _ms = _random_sparse((64, 300), 900, sort=False)
mm("unsorted_wide", _mi, _mv, _ms, RNG.randn(300, 3).astype(f32))


# -- SparseReshape -----------------------------------------------------------------------------
def rs(name, indices, shape, new_shape):
    case("rs_" + name, "SparseReshape",
         [("input_indices", indices), ("input_shape", shape), ("new_shape", new_shape)])


rs("basic", ix([[0, 1], [1, 2]]), i64([2, 3]), i64([3, 2]))
rs("infer", ix([[0, 1], [1, 2]]), i64([2, 3]), i64([-1]))
rs("infer_middle", ix([[0, 0, 1], [1, 1, 0]]), i64([2, 2, 2]), i64([2, -1, 1]))
rs("rank1_to_3", ix([[0], [5], [11]]), i64([12]), i64([2, 3, 2]))
rs("same", ix([[0, 1]]), i64([2, 3]), i64([2, 3]))
rs("to_scalar", ix([[0]]), i64([1]), i64([]))
rs("empty", none(2), i64([2, 3]), i64([6, -1]))
rs("zero_dims", none(2), i64([0, 3]), i64([3, 0]))
rs("two_unknown", ix([[0, 1]]), i64([2, 3]), i64([-1, -1]))
rs("negative", ix([[0, 1]]), i64([2, 3]), i64([-2, 3]))
rs("infer_zero", none(2), i64([0, 3]), i64([0, -1]))
rs("not_multiple", ix([[0, 1]]), i64([2, 3]), i64([4, -1]))
rs("size_mismatch", ix([[0, 1]]), i64([2, 3]), i64([7]))
rs("indices_not_matrix", i64([0, 1]), i64([2, 3]), i64([6]))
rs("shape_not_vector", ix([[0, 1]]), i64([[2, 3]]), i64([6]))
rs("new_not_vector", ix([[0, 1]]), i64([2, 3]), i64([[6]]))
rs("negative_input_dim", ix([[0, 1]]), i64([-2, 3]), i64([6]))
rs("rank_mismatch", ix([[0, 1, 0]]), i64([2, 3]), i64([6]))
rs("out_of_bounds", ix([[0, 9]]), i64([2, 3]), i64([3, 2]))
_ri, _rv, _rsh = _random_sparse((40, 30, 20), 3000)
rs("large", _ri, _rsh, i64([-1, 600]))


# -- SparseReorder -----------------------------------------------------------------------------
def ro(name, indices, values, shape):
    case("ro_" + name, "SparseReorder",
         [("input_indices", indices), ("input_values", values), ("input_shape", shape)])


ro("basic", ix([[1, 0], [0, 2], [0, 1]]), f32([1, 2, 3]), i64([2, 3]))
ro("sorted", ix([[0, 1], [1, 0]]), f32([1, 2]), i64([2, 3]))
ro("duplicates", ix([[1, 0], [0, 2], [1, 0]]), i32([1, 2, 3]), i64([2, 3]))
ro("rank1", ix([[4], [0], [2]]), i64([1, 2, 3]), i64([5]))
ro("rank3", ix([[1, 0, 1], [0, 2, 0], [1, 0, 0], [0, 0, 1]]), f64([1, 2, 3, 4]), i64([2, 3, 2]))
ro("string", ix([[2], [0]]), np.array([b"x", b"y"]), i64([3]))
ro("empty", none(2), f32([]), i64([2, 3]))
ro("zero_dim", none(2), f32([]), i64([0, 3]))
ro("out_of_bounds", ix([[5], [1]]), f32([1, 2]), i64([3]))
ro("negative_dim", ix([[0]]), f32([1]), i64([-3]))
ro("rank_mismatch", ix([[0]]), f32([1]), i64([3, 3]))
ro("indices_not_matrix", i64([0, 1]), f32([1, 2]), i64([3]))
ro("values_not_vector", ix([[0]]), f32([[1]]), i64([3]))
ro("shape_not_vector", ix([[0]]), f32([1]), i64([[3]]))
ro("nnz_mismatch", ix([[0], [1]]), f32([1]), i64([3]))
_oi, _ov, _os = _random_sparse((50, 40, 30), 3000, sort=False)
ro("large", _oi, _ov, _os)


# -- SparseReduceSum / SparseReduceSumSparse ---------------------------------------------------
def red(name, indices, values, shape, axes, **attrs):
    for op, short in (("SparseReduceSum", "rsum_"), ("SparseReduceSumSparse", "rsums_")):
        case(short + name, op, [("input_indices", indices), ("input_values", values),
                                ("input_shape", shape), ("reduction_axes", axes)], **attrs)


R3 = ix([[0, 0, 1], [0, 2, 0], [1, 0, 1], [1, 1, 1], [1, 1, 0]])
V3 = f32([1, 2, 3, 4, 5])
S3 = i64([2, 3, 2])
red("axis0", R3, V3, S3, i32(0))
red("axis1_keep", R3, V3, S3, i32(1), keep_dims=True)
red("axis_neg", R3, V3, S3, i32(-1))
red("axes_02", R3, V3, S3, i32([0, 2]))
red("axes_20_keep", R3, V3, S3, i32([2, 0]), keep_dims=True)
red("all", R3, V3, S3, i32([0, 1, 2]))
red("all_keep", R3, V3, S3, i32([0, 1, 2]), keep_dims=True)
red("no_axes", R3, V3, S3, np.zeros(0, i32))
red("duplicate_axes", R3, V3, S3, i32([1, 1, -2]))
red("unsorted_input", ix([[1, 1], [0, 2], [1, 0], [0, 2]]), i64([1, 2, 3, 4]), i64([2, 3]),
    i32(1))
red("rank1", ix([[0], [3]]), i32([4, 5]), i64([5]), i32(0))
red("complex", ix([[0, 1], [0, 0]]), np.complex128([1 + 1j, 2]), i64([1, 2]), i32(1))
red("empty", none(2), f32([]), i64([2, 3]), i32(1))
red("empty_all", none(2), f32([]), i64([2, 3]), i32([0, 1]))
red("zero_dim", none(2), f32([]), i64([0, 3]), i32(0))
red("axis_oob", R3, V3, S3, i32(3))
red("axis_oob_neg", R3, V3, S3, i32([0, -4]))
red("axes_matrix", R3, V3, S3, i32([[0]]))
red("shape_not_vector", R3, V3, i64([[2, 3, 2]]), i32(0))
red("negative_dim", ix([[0]]), f32([1]), i64([-3]), i32(0))
red("values_not_vector", ix([[0]]), f32([[1]]), i64([3]), i32(0))
red("nnz_mismatch", ix([[0], [1]]), f32([1]), i64([3]), i32(0))
red("indices_not_matrix", i64([0, 1]), f32([1, 2]), i64([3]), i32(0))
red("rank_mismatch", ix([[0, 1]]), f32([1]), i64([3]), i32(0))
red("oob_write", ix([[0, 5]]), f32([1]), i64([2, 3]), i32(0))
red("oob_wraps_in", ix([[1, 5]]), f32([1]), i64([2, 3]), i32(1))
red("oob_first_dim", ix([[5, 1]]), f32([1]), i64([2, 3]), i32(1))
_di, _dv, _ds = _random_sparse((60, 50, 40), 3000, sort=False)
red("large", _di, _dv, _ds, i32([1]))


# -- SparseFillEmptyRows -----------------------------------------------------------------------
def fill(name, indices, values, shape, default):
    case("fill_" + name, "SparseFillEmptyRows",
         [("indices", indices), ("values", values), ("dense_shape", shape),
          ("default_value", default)])


fill("basic", ix([[0, 1], [0, 3], [2, 0], [3, 1]]), f32([1, 2, 3, 4]), i64([5, 6]), f32(-1))
fill("no_empty", ix([[0, 1], [1, 0]]), f32([1, 2]), i64([2, 3]), f32(-1))
fill("unordered_rows", ix([[2, 1], [0, 3], [2, 0]]), i64([1, 2, 3]), i64([4, 4]), i64(9))
fill("unordered_full", ix([[1, 1], [0, 3]]), i32([1, 2]), i64([2, 4]), i32(9))
fill("rank1", ix([[1], [3]]), f32([1, 2]), i64([4]), f32(0))
fill("rank3", ix([[1, 1, 1], [1, 0, 2]]), f64([1, 2]), i64([3, 2, 3]), f64(7))
fill("string", ix([[1, 0]]), np.array([b"a"]), i64([2, 2]), np.array(b"z"))
fill("empty", none(2), f32([]), i64([3, 2]), f32(5))
fill("zero_rows", none(2), f32([]), i64([0, 2]), f32(5))
fill("zero_rows_nnz", ix([[0, 0]]), f32([1]), i64([0, 2]), f32(5))
fill("zero_cols", none(2), f32([]), i64([2, 0]), f32(5))
fill("row_oob", ix([[5, 0]]), f32([1]), i64([3, 2]), f32(0))
fill("row_negative", ix([[0, 0], [-1, 0]]), f32([1, 2]), i64([3, 2]), f32(0))
fill("col_oob_kept", ix([[1, 9]]), f32([1]), i64([3, 2]), f32(0))
fill("shape_not_vector", ix([[0, 0]]), f32([1]), i64([[3, 2]]), f32(0))
fill("indices_not_matrix", i64([0, 0]), f32([1, 2]), i64([3, 2]), f32(0))
fill("values_not_vector", ix([[0, 0]]), f32([[1]]), i64([3, 2]), f32(0))
fill("nnz_mismatch", ix([[0, 0]]), f32([1, 2]), i64([3, 2]), f32(0))
fill("default_not_scalar", ix([[0, 0]]), f32([1]), i64([3, 2]), f32([0]))
fill("empty_shape", none(0), f32([]), np.zeros(0, i64), f32(0))
_fi, _fv, _fs = _random_sparse((3000, 8), 2000, sort=False)
fill("large", _fi, _fv, _fs, f32(0))


# -- SparseAdd ---------------------------------------------------------------------------------
def add(name, a, b, thresh):
    case("add_" + name, "SparseAdd",
         [("a_indices", a[0]), ("a_values", a[1]), ("a_shape", a[2]), ("b_indices", b[0]),
          ("b_values", b[1]), ("b_shape", b[2]), ("thresh", thresh)])


SH = i64([3, 3])
add("basic", (ix([[0, 1], [1, 1], [2, 0]]), f32([1, 2, 3]), SH),
    (ix([[0, 0], [1, 1], [2, 2]]), f32([4, -2, 6]), SH), f32(0))
add("thresh_drops", (ix([[0, 1], [1, 1]]), f32([1, 2]), SH),
    (ix([[0, 1], [1, 1]]), f32([-0.5, -1.9]), SH), f32(0.2))
add("thresh_keeps_singles", (ix([[0, 0]]), f32([0.01]), SH), (ix([[2, 2]]), f32([0.02]), SH),
    f32(1))
add("thresh_equal_kept", (ix([[0, 0]]), f32([1]), SH), (ix([[0, 0]]), f32([1]), SH), f32(2))
add("duplicates", (ix([[0, 0], [0, 0], [1, 0]]), i32([1, 2, 3]), SH),
    (ix([[0, 0], [1, 0], [1, 0], [1, 0]]), i32([10, 20, 30, 40]), SH), i32(0))
add("int64", (ix([[1, 2]]), i64([5]), SH), (ix([[0, 2]]), i64([-5]), SH), i64(3))
add("complex", (ix([[0, 0], [1, 1]]), np.complex64([1 + 1j, 2]), SH),
    (ix([[1, 1]]), np.complex64([-2 + 0.1j]), SH), f32(0.5))
add("rank1", (ix([[0], [4]]), f64([1, 2]), i64([5])), (ix([[2], [4]]), f64([3, 4]), i64([5])),
    f64(0))
add("rank3", (ix([[0, 1, 0], [1, 0, 1]]), f32([1, 2]), i64([2, 2, 2])),
    (ix([[0, 0, 1], [1, 0, 1]]), f32([3, 4]), i64([2, 2, 2])), f32(0))
add("empty_a", (none(2), f32([]), SH), (ix([[0, 1]]), f32([1]), SH), f32(0))
add("both_empty", (none(2), f32([]), SH), (none(2), f32([]), SH), f32(0))
add("zero_dims", (none(2), f32([]), i64([0, 3])), (none(2), f32([]), i64([0, 3])), f32(0))
add("unsorted_a", (ix([[2, 0], [0, 0]]), f32([1, 2]), SH), (ix([[0, 0]]), f32([1]), SH), f32(0))
add("out_of_bounds", (ix([[5, 0]]), f32([1]), SH), (ix([[0, 0]]), f32([1]), SH), f32(0))
add("negative_index", (ix([[-1, 0]]), f32([1]), SH), (ix([[0, 0]]), f32([1]), SH), f32(0))
add("shape_mismatch", (ix([[0, 0]]), f32([1]), SH), (ix([[0, 0]]), f32([1]), i64([3, 4])),
    f32(0))
add("rank_mismatch", (ix([[0, 0]]), f32([1]), SH), (ix([[0]]), f32([1]), i64([3])), f32(0))
add("indices_not_matrix", (i64([0, 0]), f32([1, 2]), i64([3])), (ix([[0]]), f32([1]), i64([3])),
    f32(0))
add("values_not_vector", (ix([[0, 0]]), f32([[1]]), SH), (ix([[0, 0]]), f32([1]), SH), f32(0))
add("nnz_mismatch", (ix([[0, 0]]), f32([1, 2]), SH), (ix([[0, 0]]), f32([1]), SH), f32(0))
add("shape_not_vector", (ix([[0, 0]]), f32([1]), i64([[3, 3]])), (ix([[0, 0]]), f32([1]), SH),
    f32(0))
add("thresh_not_scalar", (ix([[0, 0]]), f32([1]), SH), (ix([[0, 0]]), f32([1]), SH), f32([0]))
add("index_cols_mismatch", (ix([[0, 0, 0]]), f32([1]), SH), (ix([[0, 0]]), f32([1]), SH), f32(0))
_a = _random_sparse((200, 300), 3000)
_b = _random_sparse((200, 300), 3000)
add("large", _a, _b, f32(0.5))


# -- SparseSlice -------------------------------------------------------------------------------
def sl(name, indices, values, shape, start, size):
    case("slice_" + name, "SparseSlice",
         [("indices", indices), ("values", values), ("shape", shape), ("start", start),
          ("size", size)])


SI = ix([[0, 0], [0, 3], [1, 1], [2, 2], [3, 0], [3, 4]])
SV = f32([1, 2, 3, 4, 5, 6])
SS = i64([4, 5])
sl("basic", SI, SV, SS, i64([1, 1]), i64([2, 3]))
sl("clipped", SI, SV, SS, i64([2, 2]), i64([5, 5]))
sl("all", SI, SV, SS, i64([0, 0]), i64([4, 5]))
sl("empty_result", SI, SV, SS, i64([1, 2]), i64([1, 1]))
sl("start_past_end", SI, SV, SS, i64([9, 0]), i64([1, 1]))
sl("zero_size", SI, SV, SS, i64([1, 1]), i64([0, 2]))
sl("rank1", ix([[0], [3], [4]]), i32([1, 2, 3]), i64([6]), i64([2]), i64([3]))
sl("unsorted", ix([[3, 0], [0, 3], [1, 1]]), SV[:3], SS, i64([0, 0]), i64([4, 4]))
sl("empty", none(2), f32([]), SS, i64([0, 0]), i64([2, 2]))
sl("start_wrong_len", SI, SV, SS, i64([0]), i64([2, 2]))
sl("size_wrong_len", SI, SV, SS, i64([0, 0]), i64([2]))
sl("negative_start", SI, SV, SS, i64([-1, 0]), i64([2, 2]))
sl("negative_size", SI, SV, SS, i64([0, 0]), i64([-2, 2]))
sl("indices_not_matrix", i64([0, 1]), f32([1, 2]), i64([3]), i64([0]), i64([2]))
sl("values_not_vector", ix([[0]]), f32([[1]]), i64([3]), i64([0]), i64([2]))
sl("shape_not_vector", ix([[0]]), f32([1]), i64([[3]]), i64([0]), i64([2]))
sl("start_not_vector", ix([[0]]), f32([1]), i64([3]), i64([[0]]), i64([2]))
sl("out_of_bounds", ix([[7, 0]]), f32([1]), SS, i64([0, 0]), i64([9, 9]))


# -- SparseConcat ------------------------------------------------------------------------------
def cc(name, parts, concat_dim):
    inputs = [(f"indices_{k}", p[0]) for k, p in enumerate(parts)]
    inputs += [(f"values_{k}", p[1]) for k, p in enumerate(parts)]
    inputs += [(f"shapes_{k}", p[2]) for k, p in enumerate(parts)]
    case("concat_" + name, "SparseConcat", inputs, concat_dim=concat_dim)


P1 = (ix([[0, 1], [1, 0]]), f32([1, 2]), i64([2, 3]))
P2 = (ix([[0, 0], [1, 2]]), f32([3, 4]), i64([2, 4]))
P3 = (ix([[0, 2], [2, 1]]), f32([5, 6]), i64([3, 3]))
cc("dim1", [P1, P2], 1)
cc("dim_neg", [P1, P2], -1)
cc("dim0", [P1, P3], 0)
cc("three", [P1, P2, P1], 1)
cc("empty_part", [P1, (none(2), f32([]), i64([2, 2])), P2], 1)
cc("unsorted", [(ix([[1, 0], [0, 1]]), f32([1, 2]), i64([2, 3])), P2], 1)
cc("rank1", [(ix([[0], [2]]), i32([1, 2]), i64([3])), (ix([[1]]), i32([3]), i64([2]))], 0)
cc("dim_oob", [P1, P2], 2)
cc("shape_mismatch", [P1, P3], 1)
cc("rank_mismatch", [P1, (ix([[0]]), f32([1]), i64([3]))], 0)
cc("indices_not_matrix", [P1, (i64([0, 1]), f32([1, 2]), i64([2, 3]))], 1)
cc("values_not_vector", [P1, (ix([[0, 0]]), f32([[1]]), i64([2, 3]))], 1)
cc("shape_not_vector", [P1, (ix([[0, 0]]), f32([1]), i64([[2, 3]]))], 1)


def _message(e) -> str:
    m = getattr(e, "message", str(e))
    m = re.sub(r"^\{\{function_node [^}]*\}\} ", "", m)
    return re.sub(r" \[Op:\w+\]( name: .*)?$", "", m, flags=re.S)


def _store(value) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype == object:
        return value.astype(bytes)
    return value


def _raw(op, inputs, attrs):
    fn = getattr(tf.raw_ops, op)
    if op == "SparseConcat":
        n = len(inputs) // 3
        vals = [v for _, v in inputs]
        return fn(indices=vals[:n], values=vals[n:2 * n], shapes=vals[2 * n:], **attrs)
    return fn(**{k: tf.constant(v) for k, v in inputs}, **attrs)


OPS = ["SparseToDense", "SparseTensorDenseMatMul", "SparseReshape", "SparseReorder",
       "SparseReduceSum", "SparseReduceSumSparse", "SparseFillEmptyRows", "SparseAdd",
       "SparseSlice", "SparseConcat"]


def _op_defs() -> dict:
    """TF's OpDefs of these ops in text format, without their docs."""
    from google.protobuf import text_format
    from tensorflow.python.framework import op_def_registry

    out = {}
    for name in OPS:
        op_def = op_def_registry.get(name)
        op_def.ClearField("summary")
        op_def.ClearField("description")
        for a in list(op_def.input_arg) + list(op_def.output_arg) + list(op_def.attr):
            a.ClearField("description")
        out[name] = text_format.MessageToString(op_def)
    return out


def main():
    arrays, meta = {}, []
    for name, op, inputs, attrs in CASES:
        entry = {"name": name, "op": op, "attrs": attrs, "inputs": []}
        for k, (_, value) in enumerate(inputs):
            key = f"{name}/in{k}"
            arrays[key] = _store(value)
            entry["inputs"].append(key)
        try:
            outputs = _raw(op, inputs, attrs)
            outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
            entry["outputs"] = []
            for k, out in enumerate(outputs):
                key = f"{name}/out{k}"
                arrays[key] = _store(out.numpy())
                entry["outputs"].append(key)
        except tf.errors.OpError as e:
            entry["error"] = type(e).__name__
            entry["message"] = _message(e)
        meta.append(entry)
    np.savez_compressed(os.path.join(HERE, "sparse_cases.npz"), **arrays)
    with open(os.path.join(HERE, "sparse_cases.json"), "w") as f:
        out = {"tensorflow": tf.__version__, "cases": meta, "op_defs": _op_defs()}
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(meta)} cases")


if __name__ == "__main__":
    main()
