"""CPU kernels of TF's set ops: DenseToDenseSetOperation, DenseToSparseSetOperation,
SparseToSparseSetOperation ("a-b", "b-a", "intersection", "union" of the sets in the last
dimension, group by group) and SetSize. A dense group is every value of its row; a sparse
group the values whose indices share the leading coordinates. Results are SparseTensors
holding each group's set sorted ascending, shaped [groups..., the largest set], as TF's
set_kernels.cc."""

from __future__ import annotations

import itertools

import numpy as np

from aioflow.framework import dtypes
from aioflow.framework.op_kernel import OpKernel, attr_text, register_kernel
from aioflow.kernels.array.array_kernels import _invalid
from aioflow.kernels.math.cwise_kernels import shape_str

_SET_T = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
          dtypes.string]
_OPERATIONS = {
    "a-b": lambda a, b: a - b,
    "b-a": lambda a, b: b - a,
    "intersection": lambda a, b: a & b,
    "union": lambda a, b: a | b,
}


def _operation(name) -> callable:
    name = attr_text(name)  # any bytes: a name that is not one is refused, never a decode error
    if name not in _OPERATIONS:
        raise _invalid(f"Invalid set_operation {name}.")
    return _OPERATIONS[name]


def _dense_groups(values: np.ndarray) -> tuple[list[int], dict]:
    """The group shape of a dense set tensor and each group's set, by coordinates."""
    if values.ndim < 2:
        raise _invalid(f"Expected rank >= 2, got {values.ndim}.")
    group_shape = list(values.shape[:-1])
    rows = values.reshape(-1, values.shape[-1])
    coords = itertools.product(*(range(d) for d in group_shape))
    return group_shape, {c: set(row.tolist()) for c, row in zip(coords, rows, strict=True)}


def _check_sparse(indices, values, shape, validate: bool) -> None:
    if indices.ndim != 2 or values.ndim != 1 or shape.ndim != 1:
        raise _invalid(f"Invalid sparse tensor: indices {shape_str(indices.shape)}, values "
                       f"{shape_str(values.shape)}, shape {shape_str(shape.shape)}.")
    if shape.size < 2:
        raise _invalid(f"Expected rank >= 2, got {shape.size}.")
    if indices.shape[0] != values.shape[0] or indices.shape[1] != shape.size:
        raise _invalid(f"Invalid sparse tensor: indices {shape_str(indices.shape)}, values "
                       f"{shape_str(values.shape)}, shape {shape_str(shape.shape)}.")
    if validate and indices.shape[0] > 1:
        keys = [tuple(row) for row in indices.tolist()]
        for k, (prev, cur) in enumerate(itertools.pairwise(keys)):
            if cur <= prev:
                raise _invalid(f"indices[{k + 1}] = {list(cur)} is out of order. Many sparse "
                               f"ops require sorted indices.")


def _sparse_groups(indices, values, shape) -> tuple[list[int], dict]:
    groups: dict = {}
    for row, value in zip(indices.tolist(), values.tolist(), strict=True):
        groups.setdefault(tuple(row[:-1]), set()).add(value)
    return shape.tolist()[:-1], groups


def _result(group_shape: list[int], results: dict, np_dtype):
    """The SparseTensor of the groups' sorted sets."""
    rows, vals, widest = [], [], 0
    for coords in sorted(results):
        members = sorted(results[coords])
        widest = max(widest, len(members))
        for j, v in enumerate(members):
            rows.append(list(coords) + [j])
            vals.append(v)
    rank = len(group_shape) + 1
    indices = np.asarray(rows, np.int64).reshape(-1, rank)
    values = np.asarray(vals, dtype=np_dtype) if vals else np.zeros([0], np_dtype)
    return indices, values, np.asarray(group_shape + [widest], np.int64)


def _np_dtype(ctx):
    dtype = ctx.get_attr("T")
    return object if dtype == dtypes.string else dtype.as_numpy_dtype


@register_kernel("DenseToDenseSetOperation", "CPU", T=_SET_T)
class DenseToDenseSetOperationOp(OpKernel):
    """A set operation between the rows of two dense tensors of equal group shape."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.operation = _operation(ctx.get_attr("set_operation"))
        self.np_dtype = _np_dtype(ctx)

    def compute(self, ctx, inputs):
        shape1, sets1 = _dense_groups(np.asarray(inputs[0]))
        shape2, sets2 = _dense_groups(np.asarray(inputs[1]))
        if shape1 != shape2:
            raise _invalid(f"Mismatched group shapes {shape_str(shape1)} vs "
                           f"{shape_str(shape2)}.")
        results = {c: self.operation(sets1[c], sets2[c]) for c in sets1}
        return _result(shape1, results, self.np_dtype)


@register_kernel("DenseToSparseSetOperation", "CPU", T=_SET_T)
class DenseToSparseSetOperationOp(OpKernel):
    """A set operation between a dense tensor's rows and a SparseTensor's groups."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.operation = _operation(ctx.get_attr("set_operation"))
        self.validate = bool(ctx.get_attr("validate_indices"))
        self.np_dtype = _np_dtype(ctx)

    def compute(self, ctx, inputs):
        dense = np.asarray(inputs[0])
        indices, values, shape = (np.asarray(v) for v in inputs[1:])
        _check_sparse(indices, values, shape, self.validate)
        shape1, sets1 = _dense_groups(dense)
        shape2, sets2 = _sparse_groups(indices, values, shape)
        if shape1 != shape2:
            raise _invalid(f"Mismatched group shapes {shape_str(shape1)} vs "
                           f"{shape_str(shape2)}.")
        results = {c: self.operation(sets1[c], sets2.get(c, set())) for c in sets1}
        return _result(shape1, results, self.np_dtype)


@register_kernel("SparseToSparseSetOperation", "CPU", T=_SET_T)
class SparseToSparseSetOperationOp(OpKernel):
    """A set operation between the groups of two SparseTensors (every group either
    holds)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.operation = _operation(ctx.get_attr("set_operation"))
        self.validate = bool(ctx.get_attr("validate_indices"))
        self.np_dtype = _np_dtype(ctx)

    def compute(self, ctx, inputs):
        first = [np.asarray(v) for v in inputs[:3]]
        second = [np.asarray(v) for v in inputs[3:]]
        _check_sparse(*first, self.validate)
        _check_sparse(*second, self.validate)
        shape1, sets1 = _sparse_groups(*first)
        shape2, sets2 = _sparse_groups(*second)
        if shape1 != shape2:
            raise _invalid(f"Mismatched group shapes {shape_str(shape1)} vs "
                           f"{shape_str(shape2)}.")
        results = {c: self.operation(sets1.get(c, set()), sets2.get(c, set()))
                   for c in set(sets1) | set(sets2)}
        return _result(shape1, results, self.np_dtype)


@register_kernel("SetSize", "CPU", T=_SET_T)
class SetSizeOp(OpKernel):
    """The number of distinct values in each group of a SparseTensor's last dimension."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.validate = bool(ctx.get_attr("validate_indices"))

    def compute(self, ctx, inputs):
        indices, values, shape = (np.asarray(v) for v in inputs)
        _check_sparse(indices, values, shape, self.validate)
        group_shape, groups = _sparse_groups(indices, values, shape)
        out = np.zeros(group_shape, np.int32)
        for coords, members in groups.items():
            out[coords] = len(members)
        return (out,)
