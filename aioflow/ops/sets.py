"""tf.sets (TF's sets_impl.py): set_size, set_intersection, set_difference, set_union over
the last dimension of dense tensors or SparseTensors (dense with dense, dense with sparse;
a sparse first argument with a dense second is flipped, as TF does)."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.framework.sparse_tensor import SparseTensor

__all__ = ["set_size", "set_intersection", "set_difference", "set_union", "size",
           "intersection", "difference", "union"]

_VALID_DTYPES = frozenset({dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64,
                           dtypes.uint8, dtypes.uint16, dtypes.string})

def _convert(x, name: str):
    return x if isinstance(x, SparseTensor) else ops.convert_to_tensor(x, name=name)


def _dtype(x):
    return (x.values if isinstance(x, SparseTensor) else x).dtype.base_dtype


def set_size(a, validate_indices: bool = True):
    """The number of distinct values in each group of a SparseTensor's last dimension."""
    a = _convert(a, "a")
    if not isinstance(a, SparseTensor):
        raise TypeError(f"Expected `SparseTensor`, got {a}.")
    if _dtype(a) not in _VALID_DTYPES:
        raise TypeError(f"Invalid dtype `{a.values.dtype}` not in supported dtypes: "
                        f"`{sorted(d.name for d in _VALID_DTYPES)}`.")
    return apply_op("SetSize", set_indices=a.indices, set_values=a.values,
                    set_shape=a.dense_shape, validate_indices=validate_indices)


def _convert_pair(a, b):
    a = _convert(a, "a")
    if _dtype(a) not in _VALID_DTYPES:
        raise TypeError(f"'a' has invalid dtype `{_dtype(a)}` not in supported dtypes: "
                        f"`{sorted(d.name for d in _VALID_DTYPES)}`.")
    b = _convert(b, "b")
    if _dtype(b) != _dtype(a):
        raise TypeError(f"Types don't match, {_dtype(a)} vs {_dtype(b)}.")
    if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
        return b, a, True
    return a, b, False


def _set_operation(a, b, set_operation: str, validate_indices: bool = True) -> SparseTensor:
    if isinstance(a, SparseTensor):
        if not isinstance(b, SparseTensor):
            raise ValueError("Sparse,Dense is not supported, but Dense,Sparse is. Please flip "
                             "the order of your inputs.")
        out = apply_op("SparseToSparseSetOperation", set1_indices=a.indices,
                       set1_values=a.values, set1_shape=a.dense_shape,
                       set2_indices=b.indices, set2_values=b.values,
                       set2_shape=b.dense_shape, set_operation=set_operation,
                       validate_indices=validate_indices)
    elif isinstance(b, SparseTensor):
        out = apply_op("DenseToSparseSetOperation", set1=a, set2_indices=b.indices,
                       set2_values=b.values, set2_shape=b.dense_shape,
                       set_operation=set_operation, validate_indices=validate_indices)
    else:
        out = apply_op("DenseToDenseSetOperation", set1=a, set2=b,
                       set_operation=set_operation, validate_indices=validate_indices)
    return SparseTensor(*out)


def set_intersection(a, b, validate_indices: bool = True) -> SparseTensor:
    a, b, _ = _convert_pair(a, b)
    return _set_operation(a, b, "intersection", validate_indices)


def set_difference(a, b, aminusb: bool = True, validate_indices: bool = True):
    a, b, flipped = _convert_pair(a, b)
    if flipped:
        aminusb = not aminusb
    return _set_operation(a, b, "a-b" if aminusb else "b-a", validate_indices)


def set_union(a, b, validate_indices: bool = True) -> SparseTensor:
    a, b, _ = _convert_pair(a, b)
    return _set_operation(a, b, "union", validate_indices)


size, intersection, difference, union = set_size, set_intersection, set_difference, set_union
