"""CPU kernels (NumPy) for the sparse ops a wide model's sparse features use: SparseToDense,
SparseTensorDenseMatMul, SparseReshape, SparseReorder, SparseReduceSum(Sparse),
SparseFillEmptyRows, SparseAdd, SparseSlice and SparseConcat.

A SparseTensor is three tensors: `indices` [nnz, rank] int64, `values` [nnz] and
`dense_shape` [rank] int64. Each kernel checks its inputs in TF 2.21's order, with TF's error
classes and words (tests/data/sparse_cases.json holds TF's own answers, side by side), and
checks every index before using it: an index out of range is TF's error (or, where TF's
kernel does not check it, TF's arithmetic on it), never a NumPy IndexError.

Everything is vectorised: np.lexsort orders indices, np.add.reduceat sums runs of equal
keys, SparseTensorDenseMatMul gathers the rows of b it needs and sums them per output row.
A call goes to the thread pool when it moves many elements (`is_expensive`).
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, allocate, register_kernel
from aioflow.kernels.array.array_kernels import _invalid
from aioflow.kernels.math.cwise_kernels import BIG, shape_str

_INDEX = [dtypes.int32, dtypes.int64]
_REAL = [dtypes.float32, dtypes.float64, dtypes.int32, dtypes.uint8, dtypes.int16, dtypes.int8,
         dtypes.int64, dtypes.bfloat16, dtypes.uint16, dtypes.float16, dtypes.uint32,
         dtypes.uint64]
_NUMBER = _REAL + [dtypes.complex64, dtypes.complex128]


def _internal(message: str) -> errors.InternalError:
    return errors.InternalError(None, None, message)


def _vector_dims(shape: np.ndarray) -> list[int]:
    """A dense_shape vector's dims; TF's TensorShape::BuildTensorShape error for a negative."""
    dims = shape.tolist()
    for d in dims:
        if d < 0:
            raise _invalid(f"Expected shape dimensions to be non-negative, got {d}")
    return dims


def _validate_shapes(indices, values, shape) -> None:
    """TF's sparse_utils::ValidateSparseTensorShape (SparseReorder, SparseSlice)."""
    if indices.ndim != 2:
        raise _invalid(f"Sparse indices must be rank 2 but is rank {indices.ndim}")
    if values.ndim != 1:
        raise _invalid(f"Sparse values must be rank 1 but is rank {values.ndim}")
    if shape.ndim != 1:
        raise _invalid(f"Sparse shape must be rank 1 but is rank {shape.ndim}")
    if values.shape[0] != indices.shape[0]:
        raise _invalid(f"Number of elements in indices ({indices.shape[0]}) and values "
                       f"({values.shape[0]}) do not match")
    if shape.size != indices.shape[1]:
        raise _invalid(f"Index rank ({indices.shape[1]}) and shape rank ({shape.size}) do not "
                       "match")


def _create_checks(indices, values, shape_size: int) -> None:
    """TF's sparse::SparseTensor::Create checks (SparseReduceSum, SparseReduceSumSparse)."""
    if values.ndim != 1:
        raise _invalid(f"vals must be a vec, but got: {shape_str(values.shape)}")
    if indices.ndim >= 1 and indices.shape[0] != values.shape[0]:
        raise _invalid("indices and values rows (indexing dimension) must match. (indices = "
                       f"{indices.shape[0]}, values = {values.shape[0]})")
    if indices.ndim != 2:
        raise _invalid(f"indices must be a matrix, but got: {shape_str(indices.shape)}")
    if indices.shape[1] != shape_size:
        raise _invalid("Order length must be SparseTensor rank.")


def _flat_key(ix: np.ndarray, cols, shape) -> np.ndarray | None:
    """One int64 per row ordering the rows as their columns `cols` do lexicographically (the
    row-major offset in `shape` of those columns), when every index is within `shape` and
    the offsets fit in an int64; else None."""
    if shape is None or not len(cols):
        return None
    dims = [int(shape[c]) for c in cols]
    if min(dims) <= 0 or float(np.prod(dims, dtype=np.float64)) >= 2.0**62:
        return None
    if not ix.shape[0]:
        return np.zeros(0, dtype=np.int64)
    sub = ix[:, cols]
    if sub.min() < 0 or (sub >= np.asarray(dims, dtype=np.int64)).any():
        return None
    return sub @ _strides(dims) if len(cols) > 1 else sub[:, 0]


def _lex_order(ix: np.ndarray, cols=None, shape=None) -> np.ndarray:
    """The stable permutation sorting the rows of `ix` by the columns `cols` (all, in order,
    by default), lexicographically: one argsort of a flat key when the indices lie within
    `shape`, else np.lexsort on the columns."""
    cols = list(range(ix.shape[1])) if cols is None else list(cols)
    key = _flat_key(ix, cols, shape)
    if key is not None:
        return np.argsort(key, kind="stable")
    keys = [ix[:, d] for d in reversed(cols)]
    if not keys:
        return np.arange(ix.shape[0])
    return np.lexsort(keys)


def _row_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal rows starts in `sorted_keys` [n, k] (n > 0)."""
    if sorted_keys.shape[1] == 0:
        return np.zeros(1, dtype=np.intp)
    change = (sorted_keys[1:] != sorted_keys[:-1]).any(axis=1)
    return np.concatenate(([0], np.flatnonzero(change) + 1))


def _lex_compare_next(ix: np.ndarray):
    """For each row after the first: (greater, less) than the row before it,
    lexicographically (compared, not subtracted: no overflow)."""
    gt = ix[1:] > ix[:-1]
    lt = ix[1:] < ix[:-1]
    nz = gt | lt
    first = nz.argmax(axis=1) if ix.shape[1] else np.zeros(len(nz), dtype=np.intp)
    rows = np.arange(len(nz))
    anynz = nz.any(axis=1)
    greater = anynz & gt[rows, first] if ix.shape[1] else anynz
    return greater, anynz & ~greater


def _indices_valid(ix: np.ndarray, dims) -> errors.InvalidArgumentError | None:
    """TF's SparseTensor::IndicesValid in standard order: the first entry out of bounds, out
    of order or repeated, with TF's words; None when all are valid."""
    n = ix.shape[0]
    if n == 0:
        return None
    key = _flat_key(ix, list(range(ix.shape[1])), dims)
    if key is not None and (n == 1 or bool((key[1:] > key[:-1]).all())):
        return None  # in bounds, strictly increasing: the common case, in one pass
    oob = ((ix < 0) | (ix >= np.asarray(dims, dtype=np.int64))).any(axis=1)
    bad = oob.copy()
    if n > 1:
        greater, _ = _lex_compare_next(ix)
        bad[1:] |= ~greater
    if not bad.any():
        return None
    r = int(bad.argmax())
    index = f"indices[{r}] = [" + ",".join(str(v) for v in ix[r].tolist())
    index += "]" if ix.shape[1] else ""
    if oob[r]:
        return _invalid(f"{index} is out of bounds: need 0 <= index < [" +
                        ",".join(str(d) for d in dims) + "]")
    if (ix[r] > ix[r - 1]).any() or (ix[r] < ix[r - 1]).any():
        return _invalid(f"{index} is out of order. Many sparse ops require sorted indices.\n"
                        "    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n")
    return _invalid(f"{index} is repeated")


def _is_sorted(ix: np.ndarray, strict: bool) -> bool:
    """Whether the rows of `ix` are in lexicographic order (strictly: no repeats)."""
    if ix.shape[0] < 2:
        return True
    greater, less = _lex_compare_next(ix)
    return bool(greater.all()) if strict else not bool(less.any())


class _SparseKernel(OpKernel):
    """The pool takes calls with many entries (the first input is the indices)."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) > BIG or np.size(inputs[1]) > BIG


# -- SparseToDense -----------------------------------------------------------------------------

@register_kernel("SparseToDense", "CPU", T=_NUMBER + [dtypes.bool, dtypes.string],
                 Tindices=_INDEX)
class SparseToDenseOp(OpKernel):
    """A dense tensor of `output_shape` holding `default_value` but at `sparse_indices`."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._validate = bool(ctx.get_attr("validate_indices", True))

    def is_expensive(self, inputs: list) -> bool:
        shape = inputs[1]
        if np.size(inputs[0]) > BIG:
            return True
        if np.ndim(shape) != 1 or shape.size > 64:
            return False
        out = 1
        for d in shape.tolist():
            out *= max(d, 0)
        return out > BIG

    def compute(self, ctx, inputs):
        indices, output_shape, values, default = (np.asarray(v) for v in inputs)
        if indices.ndim > 2:
            raise _invalid("sparse_indices should be a scalar, vector, or matrix, got shape "
                           f"{shape_str(indices.shape)}")
        num_elems = indices.shape[0] if indices.ndim > 0 else 1
        num_dims = indices.shape[1] if indices.ndim > 1 else 1
        if output_shape.ndim != 1:
            raise _invalid(f"output_shape must be rank 1, got shape "
                           f"{shape_str(output_shape.shape)}")
        if output_shape.size != num_dims:
            raise _invalid(f"output_shape has incorrect number of elements: "
                           f"{output_shape.size} should be: {num_dims}")
        if not (values.ndim == 0 or (values.ndim == 1 and values.size == num_elems)):
            raise _invalid(f"sparse_values has incorrect shape {shape_str(values.shape)}, "
                           f"should be [] or [{num_elems}]")
        if default.ndim != 0:
            raise _invalid("default_value should be a scalar.")
        dims = output_shape.tolist()
        for d in dims:
            if d < 0:
                raise _invalid(f"Dimension {d} must be >= 0")
        ix = indices.reshape(num_elems, num_dims).astype(np.int64, copy=False)
        if self._validate:
            error = _indices_valid(ix, dims)
            if error is not None:
                raise error
        elif ix.size and ((ix < 0) | (ix >= np.asarray(dims, dtype=np.int64))).any():
            raise _invalid(f"Indices are not valid (out of bounds).  Shape: {shape_str(dims)}")
        out = allocate(tuple(dims), default[()], values.dtype)
        if num_elems:
            out[tuple(ix.T)] = values  # a repeated index keeps its last value, as TF's
        return (out,)


# -- SparseTensorDenseMatMul -------------------------------------------------------------------

@register_kernel("SparseTensorDenseMatMul", "CPU", host_memory=("a_shape",),
                 T=[dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                    dtypes.int32, dtypes.complex64, dtypes.complex128],
                 Tindices=_INDEX)
class SparseTensorDenseMatMulOp(OpKernel):
    """product = op(A) @ op(B), A sparse [M, K] (op: adjoint when asked), B dense."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._adj_a = bool(ctx.get_attr("adjoint_a", False))
        self._adj_b = bool(ctx.get_attr("adjoint_b", False))

    def is_expensive(self, inputs: list) -> bool:
        b = inputs[3]
        nnz = np.shape(inputs[0])[0] if np.ndim(inputs[0]) else 0
        cols = b.shape[0 if self._adj_b else 1] if np.ndim(b) == 2 else 1
        return nnz * cols > BIG or b.size > 4 * BIG

    def compute(self, ctx, inputs):
        a_indices, a_values, a_shape, b = (np.asarray(v) for v in inputs)
        if b.ndim != 2:
            raise _invalid("Tensor 'b' is not a matrix")
        if a_shape.ndim != 1:
            raise _invalid("Tensor 'a_shape' is not a vector")
        if a_shape.size != 2:
            raise _invalid("Tensor 'a_shape' must have 2 elements")
        if a_values.ndim != 1:
            raise _invalid("Tensor 'a_values' is not a vector")
        if a_indices.ndim != 2:
            raise _invalid("Tensor 'a_indices' is not a matrix")
        nnz = a_indices.shape[0]
        if nnz != a_values.size:
            raise _invalid("Number of rows of a_indices does not match number of entries in "
                           "a_values")
        if a_indices.shape[1] != a_shape.size:
            raise _invalid("Number of columns of a_indices does not match number of entries "
                           "in a_shape")
        rows, cols = a_shape.tolist()
        outer_left, inner_left = (cols, rows) if self._adj_a else (rows, cols)
        inner_right, outer_right = b.shape[::-1] if self._adj_b else b.shape
        if inner_left != inner_right:
            raise _invalid(
                f"Cannot multiply A and B because inner dimension does not match: {inner_left} "
                f"vs. {inner_right}.  Did you forget a transpose?  Dimensions of A: [{rows}, "
                f"{cols}).  Dimensions of B: {shape_str(b.shape)}")
        # TF 2.21 aborts the process on a negative dim here; this is TensorShape's own error.
        _vector_dims(np.array([outer_left, outer_right], dtype=np.int64))
        out = allocate((outer_left, outer_right), 0, b.dtype)
        if out.size == 0 or nnz == 0 or b.size == 0:
            return (out,)
        ix = a_indices.astype(np.int64, copy=False)
        m = ix[:, 1 if self._adj_a else 0]
        k = ix[:, 0 if self._adj_a else 1]
        k_bad = (k < 0) | (k >= inner_right)
        m_bad = (m < 0) | (m >= outer_left)
        bad = k_bad | m_bad
        if bad.any():
            i = int(bad.argmax())
            if k_bad[i]:
                raise _invalid(f"k ({k[i]}) from index[{i},{0 if self._adj_a else 1}] out of "
                               f"bounds (>={inner_right})")
            raise _invalid(f"m ({m[i]}) from index[{i},{1 if self._adj_a else 0}] out of "
                           f"bounds (>={outer_left})")
        values = a_values.astype(b.dtype, copy=False)
        if self._adj_a and values.dtype.kind == "c":
            values = values.conj()
        rhs = b.conj().T if self._adj_b else b
        contrib = rhs[k] * values[:, None]  # row i of A's entry i times its row of op(B)
        if not _is_sorted(m[:, None], strict=False):
            order = np.argsort(m, kind="stable")
            m, contrib = m[order], contrib[order]
        starts = np.concatenate(([0], np.flatnonzero(m[1:] != m[:-1]) + 1))
        out[m[starts]] = np.add.reduceat(contrib, starts, axis=0)
        return (out,)


# -- SparseReshape -----------------------------------------------------------------------------

def _trunc_divmod(x: np.ndarray, d):
    """C++'s / and % (truncating toward zero) on int64, as TF's kernel computes."""
    q = np.abs(x) // d * np.sign(x)
    return q, x - q * d


@register_kernel("SparseReshape", "CPU")
class SparseReshapeOp(_SparseKernel):
    """The indices of a SparseTensor reshaped to `new_shape` (one -1 inferred)."""

    def compute(self, ctx, inputs):
        indices, shape_in, target = (np.asarray(v) for v in inputs)
        if indices.ndim != 2:
            raise _invalid("Input must be a matrix.")
        if shape_in.ndim != 1:
            raise _invalid("Input shape must be a vector.")
        if indices.shape[1] != shape_in.shape[0]:
            raise _invalid("Input tensor rank must match input shape length.")
        if target.ndim != 1:
            raise _invalid(f"Target shape should be a vector but received shape "
                           f"{shape_str(target.shape)}")
        in_dims = _vector_dims(shape_in)
        dense_size = int(np.prod(in_dims, dtype=np.int64))
        out_dims, product, unknown = [], 1, -1
        for d, size in enumerate(target.tolist()):
            if size == -1:
                if unknown != -1:
                    raise _invalid(f"only one output dimension may be -1, not both {unknown} "
                                   f"and {d}")
                unknown = d
                out_dims.append(1)
            else:
                if size < 0:
                    raise _invalid(f"size {d} must be non-negative, not {size}")
                product *= size
                out_dims.append(size)
        if unknown != -1:
            if product <= 0:
                raise _invalid("reshape cannot infer the missing input size for an empty "
                               "tensor unless all specified input sizes are non-zero")
            missing = dense_size // product
            if product * missing != dense_size:
                raise _invalid(
                    f"Input to reshape is a SparseTensor with {dense_size} dense values, but "
                    f"the requested shape requires a multiple of {product}. input_shape="
                    f"{shape_str(in_dims)} output_shape={shape_str(out_dims)}")
            out_dims[unknown] = missing
        out_size = int(np.prod(out_dims, dtype=np.int64))
        if out_size != dense_size:
            raise _invalid(
                f"Input to reshape is a tensor with {dense_size} dense values, but the "
                f"requested shape has {out_size}. input_shape={shape_str(in_dims)} "
                f"output_shape={shape_str(out_dims)}")
        if out_dims == in_dims:
            return indices, shape_in
        nnz = indices.shape[0]
        out_shape = np.array(out_dims, dtype=np.int64)
        if nnz == 0:
            return np.zeros((0, len(out_dims)), dtype=np.int64), out_shape
        if not (dense_size > 0 and product > 0):
            raise _invalid(f"Input tensor has {nnz} non zero elements but input shape "
                           f"({shape_str(in_dims)}) or output shape ({shape_str(out_dims)}) "
                           "is empty")
        in_strides = _strides(in_dims)
        flat = indices.astype(np.int64, copy=False) @ in_strides if in_dims else \
            np.zeros(nnz, dtype=np.int64)
        out = np.empty((nnz, len(out_dims)), dtype=np.int64)
        for j, stride in enumerate(_strides(out_dims).tolist()):
            out[:, j], flat = _trunc_divmod(flat, stride)
        return out, out_shape


def _strides(dims) -> np.ndarray:
    """Row-major strides of `dims` (int64, wrapping as TF's int64 products do)."""
    strides = np.ones(len(dims), dtype=np.int64)
    for d in range(len(dims) - 2, -1, -1):
        strides[d] = strides[d + 1] * np.int64(dims[d + 1])
    return strides


# -- SparseReorder -----------------------------------------------------------------------------

@register_kernel("SparseReorder", "CPU")
class SparseReorderOp(_SparseKernel):
    """The entries in standard (row-major) order; unchanged when already in it."""

    def compute(self, ctx, inputs):
        indices, values, shape = (np.asarray(v) for v in inputs)
        _validate_shapes(indices, values, shape)
        ix = indices.astype(np.int64, copy=False)
        if _indices_valid(ix, shape.tolist()) is None:
            return indices, values
        order = _lex_order(ix, shape=shape.tolist())
        return indices[order], values[order]


# -- SparseReduceSum / SparseReduceSumSparse ---------------------------------------------------

class _SparseReduceBase(_SparseKernel):
    """Checks and grouping shared by SparseReduceSum and SparseReduceSumSparse."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self._keep_dims = bool(ctx.get_attr("keep_dims", False))

    def _groups(self, inputs):
        """(dims, group_dims, reduced_shape, keys [g, len(group_dims)], sums [g]) with the
        groups in order of their keys."""
        indices, values, shape, axes = (np.asarray(v) for v in inputs)
        if shape.ndim != 1:
            raise _invalid(f"Expected input_shape to be a vector; got shape: "
                           f"{shape_str(shape.shape)}")
        if axes.ndim > 1:
            raise _invalid(f"Expected reduction_axes to be a scalar or a vector; got shape: "
                           f"{shape_str(axes.shape)}")
        rank = shape.size
        for axis in axes.ravel().tolist():
            if not -rank <= axis < rank:
                raise _invalid(f"Invalid reduction dimension {axis}, for input with {rank} "
                               "dimensions.")
        dims = _vector_dims(shape)
        _create_checks(indices, values, rank)
        reduced = sorted({(a + rank) % rank for a in axes.ravel().tolist()}) if rank else []
        group_dims = [d for d in range(rank) if d not in reduced]
        if self._keep_dims:
            reduced_shape = [1 if d in reduced else dims[d] for d in range(rank)]
        else:
            reduced_shape = [dims[d] for d in group_dims]
        ix = indices.astype(np.int64, copy=False)
        if ix.shape[0] == 0:
            return (dims, group_dims, reduced_shape, np.zeros((0, len(group_dims)), np.int64),
                    values[:0])
        order = _lex_order(ix, group_dims + reduced, dims)
        keys = ix[order][:, group_dims]
        starts = _row_starts(keys)
        sums = np.add.reduceat(values[order], starts, dtype=values.dtype)
        return dims, group_dims, reduced_shape, keys[starts], sums


@register_kernel("SparseReduceSum", "CPU", T=_NUMBER)
class SparseReduceSumOp(_SparseReduceBase):
    """The dense sum of a SparseTensor over `reduction_axes`."""

    def compute(self, ctx, inputs):
        dims, group_dims, reduced_shape, keys, sums = self._groups(inputs)
        out = allocate(tuple(reduced_shape), 0, np.asarray(inputs[1]).dtype)
        if len(sums) == 0:
            return (out,)
        if group_dims:
            flat = keys @ _strides([dims[d] for d in group_dims])
        else:
            flat = np.zeros(1, dtype=np.int64)
        bad = (flat < 0) | (flat >= out.size)
        if bad.any():
            raise _internal(f"Obtained a write index of {flat[bad.argmax()]} which is outside "
                            f"of bounds of [0, {out.size})")
        out.reshape(-1)[flat] = sums  # TF assigns group after group: the last one stays
        return (out,)


@register_kernel("SparseReduceSumSparse", "CPU", T=_NUMBER)
class SparseReduceSumSparseOp(_SparseReduceBase):
    """The sum of a SparseTensor over `reduction_axes`, as a SparseTensor of its groups."""

    def compute(self, ctx, inputs):
        dims, group_dims, reduced_shape, keys, sums = self._groups(inputs)
        if self._keep_dims:
            out_indices = np.zeros((len(sums), len(dims)), dtype=np.int64)
            out_indices[:, group_dims] = keys
        else:
            out_indices = np.ascontiguousarray(keys)
        return out_indices, sums, np.array(reduced_shape, dtype=np.int64)


# -- SparseFillEmptyRows -----------------------------------------------------------------------

@register_kernel("SparseFillEmptyRows", "CPU", host_memory=("dense_shape",))
class SparseFillEmptyRowsOp(_SparseKernel):
    """Every empty row of a 2-D-or-more SparseTensor gets `default_value` at [row, 0, ...]:
    output indices and values, empty_row_indicator [rows] and reverse_index_map [nnz] (where
    each input entry went)."""

    def is_expensive(self, inputs: list) -> bool:
        shape = inputs[2]
        return (np.size(inputs[0]) > BIG or np.size(inputs[1]) > BIG
                or (np.ndim(shape) == 1 and shape.size and int(shape[0]) > BIG))

    def compute(self, ctx, inputs):
        indices, values, dense_shape, default = (np.asarray(v) for v in inputs)
        if dense_shape.ndim != 1:
            raise _invalid(f"dense_shape must be a vector, saw: "
                           f"{shape_str(dense_shape.shape)}")
        if indices.ndim != 2:
            raise _invalid(f"indices must be a matrix, saw: {shape_str(indices.shape)}")
        if values.ndim != 1:
            raise _invalid(f"values must be a vector, saw: {shape_str(values.shape)}")
        if indices.shape[0] != values.shape[0]:
            raise _invalid(f"The length of `values` ({values.shape[0]}) must match the first "
                           f"dimension of `indices` ({indices.shape[0]}).")
        if default.ndim != 0:
            raise _invalid(f"default_value must be a scalar, saw: {shape_str(default.shape)}")
        if dense_shape.size == 0:
            raise _invalid("Dense shape cannot be empty.")
        n, rank = indices.shape
        dense_rows = int(dense_shape[0])
        _vector_dims(dense_shape[:1])
        if dense_rows == 0:
            if n != 0:
                raise _invalid(f"Received SparseTensor with dense_shape[0] = 0 but "
                               f"indices.shape[0] = {n}")
            return (np.zeros((0, rank), dtype=np.int64), values[:0],
                    np.zeros(0, dtype=bool), np.zeros(0, dtype=np.int64))
        rows = indices[:, 0].astype(np.int64, copy=False) if rank else np.zeros(n, np.int64)
        bad = (rows < 0) | (rows >= dense_rows)
        if bad.any():
            i = int(bad.argmax())
            raise _invalid(f"indices({i}, 0) is invalid: {rows[i]} >= {dense_rows}")
        counts = np.bincount(rows, minlength=dense_rows)
        empty = counts == 0
        ordered = n < 2 or not (rows[1:] < rows[:-1]).any()
        if ordered and not empty.any():
            return indices, values, empty, np.arange(n, dtype=np.int64)
        filled = np.maximum(counts, 1)
        start = np.cumsum(filled) - filled  # where each row's entries begin in the output
        order = np.argsort(rows, kind="stable")
        sorted_rows = rows[order]
        rank_in_row = np.arange(n) - np.searchsorted(sorted_rows, sorted_rows, side="left")
        position = np.empty(n, dtype=np.int64)
        position[order] = start[sorted_rows] + rank_in_row
        total = int(filled.sum())
        out_indices = np.zeros((total, rank), dtype=indices.dtype)
        out_values = np.empty(total, dtype=values.dtype)
        out_indices[position] = indices
        out_values[position] = values
        empty_rows = np.flatnonzero(empty)
        if rank:
            out_indices[start[empty_rows], 0] = empty_rows
        out_values[start[empty_rows]] = default[()]
        return out_indices, out_values, empty, position


# -- SparseAdd ---------------------------------------------------------------------------------

@register_kernel("SparseAdd", "CPU",
                 T=[dtypes.float32, dtypes.float64, dtypes.int64, dtypes.int32, dtypes.int16,
                    dtypes.int8, dtypes.complex64, dtypes.complex128])
class SparseAddOp(OpKernel):
    """The sum of two SparseTensors of one shape, merged in order as TF's kernel merges
    them; a sum of two entries whose magnitude is below `thresh` is dropped."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return np.size(inputs[0]) + np.size(inputs[3]) > BIG

    def compute(self, ctx, inputs):
        a_ix, a_val, a_shape, b_ix, b_val, b_shape, thresh = (np.asarray(v) for v in inputs)
        if a_ix.ndim != 2 or b_ix.ndim != 2:
            raise _invalid(f"Input indices should be matrices but received shapes: "
                           f"{shape_str(a_ix.shape)} and {shape_str(b_ix.shape)}")
        if a_ix.shape[1] != b_ix.shape[1]:
            raise _invalid(f"Input indices must have the same dimension, got "
                           f"{a_ix.shape[1]} and {b_ix.shape[1]}")
        if a_val.ndim != 1 or b_val.ndim != 1:
            raise _invalid(f"Input values should be vectors but received shapes: "
                           f"{shape_str(a_val.shape)} and {shape_str(b_val.shape)}")
        na, nb = a_ix.shape[0], b_ix.shape[0]
        if a_val.size != na or b_val.size != nb:
            raise _invalid(f"Expected {na} and {nb} non-empty input values, got {a_val.size} "
                           f"and {b_val.size}")
        if a_shape.ndim != 1 or b_shape.ndim != 1:
            raise _invalid(f"Input shapes should be a vector but received shapes "
                           f"{shape_str(a_shape.shape)} and {shape_str(b_shape.shape)}")
        if a_shape.size != b_shape.size:
            raise _invalid(f"Operands do not have the same ranks; got shapes: "
                           f"{_summarize(a_shape)} and {_summarize(b_shape)}")
        for i, (x, y) in enumerate(zip(a_shape.tolist(), b_shape.tolist(), strict=True)):
            if x != y:
                raise _invalid(f"Operands' shapes do not match: got {x} and {y} for "
                               f"dimension {i}")
        if thresh.ndim != 0:
            raise _invalid(f"The magnitude threshold must be a scalar: got shape "
                           f"{shape_str(thresh.shape)}")
        a = a_ix.astype(np.int64, copy=False)
        b = b_ix.astype(np.int64, copy=False)
        merged = _merge_flat(a, a_val, b, b_val, thresh[()], a_shape.tolist())
        if merged is not None:
            return merged[0], merged[1], a_shape
        if _is_sorted(a, strict=False) and _is_sorted(b, strict=False):
            out_ix, out_val = _merge_sorted(a, a_val, b, b_val, thresh[()])
        else:
            out_ix, out_val = _merge_loop(a, a_val, b, b_val, thresh[()])
        return out_ix, out_val, a_shape


def _summarize(v: np.ndarray) -> str:
    """Tensor::SummarizeValue(10) of an int vector: its first 10 values, space separated."""
    items = [str(x) for x in v.ravel()[:10].tolist()]
    return " ".join(items) + ("..." if v.size > 10 else "")


def _merge_sorted(a, a_val, b, b_val, thresh):
    """TF's merge of two lexicographically sorted index lists, vectorised: within a run of
    equal indices the k-th entry of a meets the k-th of b; their sum is kept when
    thresh <= |sum|, the entries left over follow."""
    na, nb = len(a), len(b)
    keys = np.concatenate([a, b])
    values = np.concatenate([a_val, b_val])
    if not len(keys):
        return keys, values
    side = np.repeat(np.array([0, 1], dtype=np.int8), [na, nb])
    rank = np.concatenate([_rank_in_run(a), _rank_in_run(b)])
    cols = [keys[:, d] for d in range(keys.shape[1] - 1, -1, -1)]
    order = np.lexsort([side, rank] + cols)
    keys, values, rank, side = keys[order], values[order], rank[order], side[order]
    pair = np.zeros(len(keys), dtype=bool)  # an entry of a met by the next one (of b)
    if len(keys) > 1:
        pair[:-1] = ((keys[1:] == keys[:-1]).all(axis=1) & (rank[1:] == rank[:-1])
                     & (side[:-1] == 0) & (side[1:] == 1))
    return _sum_pairs(keys, values, pair, thresh)


def _merge_flat(a, a_val, b, b_val, thresh, shape):
    """_merge_sorted on one int64 key per entry, when the indices lie within `shape` and both
    sides are sorted (the common case); None otherwise."""
    cols = list(range(a.shape[1]))
    fa, fb = _flat_key(a, cols, shape), _flat_key(b, cols, shape)
    if fa is None or fb is None or (fa[1:] < fa[:-1]).any() or (fb[1:] < fb[:-1]).any():
        return None
    flat = np.concatenate([fa, fb])
    if not len(flat):
        return np.concatenate([a, b]), np.concatenate([a_val, b_val])
    rank = np.concatenate([_rank_in_flat_run(fa), _rank_in_flat_run(fb)])
    order = _merge_order(flat, rank, len(fa))
    if order is None:
        return None
    keys = np.concatenate([a, b])[order]
    values = np.concatenate([a_val, b_val])[order]
    comp = (flat * (int(rank.max()) + 1) + rank)[order]
    pair = np.zeros(len(comp), dtype=bool)  # an entry of a met by the next one, of b
    pair[:-1] = comp[1:] == comp[:-1]
    return _sum_pairs(keys, values, pair, thresh)


def _sum_pairs(keys, values, pair, thresh):
    """Entries flagged in `pair` take the next entry's value added and drop it; a sum is kept
    when thresh <= |sum|."""
    keep = np.ones(len(keys), dtype=bool)
    where = np.flatnonzero(pair)
    if len(where):
        values = values.copy()
        values[where] = values[where] + values[where + 1]
        keep[where + 1] = False
        keep[where] = thresh <= np.abs(values[where])
    return keys[keep], values[keep]


def _rank_in_flat_run(flat: np.ndarray) -> np.ndarray:
    """For a sorted key: each entry's position within its run of equal keys."""
    n = len(flat)
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = flat[1:] != flat[:-1]
    return np.arange(n) - np.maximum.accumulate(np.where(new_run, np.arange(n), 0))


def _merge_order(flat: np.ndarray, rank: np.ndarray, na: int) -> np.ndarray | None:
    """The merged order of a's entries (the first `na`) and b's, both sorted, by (flat key,
    rank in run, a before b), by binary search: a key (flat, rank) is strictly increasing
    within each side. None when the combined key would not fit in an int64."""
    width = int(rank.max()) + 1
    if float(flat.max()) * width >= 2.0**62:
        return None
    comp = flat * width + rank
    ca, cb = comp[:na], comp[na:]
    order = np.empty(len(comp), dtype=np.intp)
    order[np.arange(na) + np.searchsorted(cb, ca, side="left")] = np.arange(na)
    order[np.arange(len(cb)) + np.searchsorted(ca, cb, side="right")] = \
        np.arange(na, len(comp))
    return order


def _rank_in_run(ix: np.ndarray) -> np.ndarray:
    """For sorted rows: each row's position within its run of equal rows."""
    n = len(ix)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    new_run = np.ones(n, dtype=bool)
    new_run[1:] = (ix[1:] != ix[:-1]).any(axis=1)
    run_start = np.maximum.accumulate(np.where(new_run, np.arange(n), 0))
    return np.arange(n) - run_start


def _merge_loop(a, a_val, b, b_val, thresh):
    """TF's merge, step by step, for inputs that are not sorted (its result on those is the
    merge's, whatever that means)."""
    al, bl = a.tolist(), b.tolist()
    i = j = 0
    src, vals = [], []
    while i < len(al) and j < len(bl):
        if al[i] < bl[j]:
            src.append((0, i))
            vals.append(a_val[i])
            i += 1
        elif al[i] == bl[j]:
            s = a_val[i] + b_val[j]
            if thresh <= abs(s):
                src.append((0, i))
                vals.append(s)
            i += 1
            j += 1
        else:
            src.append((1, j))
            vals.append(b_val[j])
            j += 1
    src += [(0, k) for k in range(i, len(al))] + [(1, k) for k in range(j, len(bl))]
    vals += list(a_val[i:]) + list(b_val[j:])
    out_ix = np.array([a[k] if s == 0 else b[k] for s, k in src], dtype=np.int64).reshape(
        len(src), a.shape[1])
    return out_ix, np.array(vals, dtype=a_val.dtype).reshape(len(vals))


# -- SparseSlice -------------------------------------------------------------------------------

@register_kernel("SparseSlice", "CPU")
class SparseSliceOp(_SparseKernel):
    """The entries with start <= index < start + size, shifted by -start (input order); the
    output shape is the overlap of the slice with the input's."""

    def compute(self, ctx, inputs):
        indices, values, shape, start, size = (np.asarray(v) for v in inputs)
        _validate_shapes(indices, values, shape)
        if start.ndim != 1:
            raise _invalid(f"Input start should be a vector but received shape "
                           f"{shape_str(start.shape)}")
        if size.ndim != 1:
            raise _invalid(f"Input size should be a vector but received shape "
                           f"{shape_str(size.shape)}")
        rank = shape.size
        if start.size != rank:
            raise _invalid(f"Expected start to be a vector of length {rank} but got length "
                           f"{start.size}")
        if size.size != rank:
            raise _invalid(f"Expected size to be a vector of length {rank} but got length "
                           f"{size.size}")
        for s in size.tolist():
            if s < 0:
                raise _invalid(f"Expected a non-negative size, got {s}")
        dims = shape.astype(np.int64)
        lo = start.astype(np.int64)
        hi = lo + size.astype(np.int64)
        out_shape = np.maximum(np.where(hi <= dims, hi - lo, dims - lo), 0)
        ix = indices.astype(np.int64, copy=False)
        hit = ((ix >= lo) & (ix < hi)).all(axis=1)
        return ix[hit] - lo, values[hit], out_shape


# -- SparseConcat ------------------------------------------------------------------------------

@register_kernel("SparseConcat", "CPU")
class SparseConcatOp(OpKernel):
    """SparseTensors of one rank joined along `concat_dim`, in standard order."""

    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self._dim = int(ctx.get_attr("concat_dim"))
        self._n = int(ctx.get_attr("N"))

    def is_expensive(self, inputs: list) -> bool:
        return sum(np.size(v) for v in inputs[:self._n]) > BIG

    def compute(self, ctx, inputs):
        n = self._n
        inds = [np.asarray(v) for v in inputs[:n]]
        vals = [np.asarray(v) for v in inputs[n:2 * n]]
        shapes = [np.asarray(v) for v in inputs[2 * n:]]
        for what, group, want in (("indices", inds, 2), ("values", vals, 1),
                                  ("shapes", shapes, 1)):
            for i, v in enumerate(group):
                if v.ndim != want:
                    kind = "a matrix" if want == 2 else "a vector"
                    raise _invalid(f"Input {what} should be {kind} but received shape "
                                   f"{shape_str(v.shape)} at position {i}")
        rank = shapes[0].size
        if not -rank <= self._dim < rank:
            raise _invalid(f"Concat dimension must be in range [{-rank}, {rank}), got "
                           f"{self._dim}")
        dim = self._dim + rank if self._dim < 0 else self._dim
        for i, s in enumerate(shapes[1:], 1):
            if s.size != rank:
                raise _invalid(f"Ranks of all input tensors must match: expected {rank} but "
                               f"got {s.size} at position {i}")
            for d in range(rank):
                if d != dim and s[d] != shapes[0][d]:
                    raise _invalid(f"Input shapes must match: expected {shapes[0][d]} for "
                                   f"dimension {d} but got {s[d]} at position {i}")
        for i, (ix, v) in enumerate(zip(inds, vals, strict=True)):
            if ix.shape[0] != v.shape[0] or ix.shape[1] != rank:
                raise _invalid(f"Input indices and values must have the same number of rows, "
                               f"and indices the input's rank, at position {i}")
        offsets = np.cumsum([0] + [int(s[dim]) for s in shapes])
        parts = []
        for ix, off in zip(inds, offsets[:-1].tolist(), strict=True):
            ix = ix.astype(np.int64, copy=True)
            ix[:, dim] += off
            parts.append(ix)
        out_ix = np.concatenate(parts)
        out_val = np.concatenate(vals)
        out_shape = shapes[0].astype(np.int64, copy=True)
        out_shape[dim] = offsets[-1]
        order = _lex_order(out_ix, shape=out_shape.tolist())
        return out_ix[order], out_val[order], out_shape
