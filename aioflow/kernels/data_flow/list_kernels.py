"""Kernels of TF's TensorList ops (tensorflow/core/kernels/list_kernels.{h,cc}), with TF's
semantics and error messages.

A list is a `TensorList` held in a 0-d object array (a variant tensor). Lists are values:
an op never changes a list it was given, it outputs a new one (TF changes the input in
place only when nothing else holds it; here the constant folder, CSE and several
consumers may share a value, so every op copies the list of element references, not the
elements). An element is a NumPy array, or None for TF's DT_INVALID slot: uninitialized,
read as zeros of the element shape when that shape can be known.

Element shapes are None (unknown rank) or a tuple of dims with -1 for an unknown dim, as
TF's PartialTensorShape.

Where TF 2.21's kernel crashes the process (a negative index given to SetItem with
resize_if_index_out_of_bounds, or to ScatterIntoExistingList; an index or size that is
not a scalar), these raise InvalidArgumentError. The slots ScatterIntoExistingList adds
to grow a list are uninitialized here; TF 2.21 fills them with empty float tensors
(shape [0]), which its Stack then copies as garbage memory.
"""

from __future__ import annotations

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.data_flow.tensor_array_kernels import type_string
from aioflow.kernels.math.cwise_kernels import BIG

__all__ = ["TensorList", "make_list", "get_list"]


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class TensorList:
    """TF's TensorList: `tensors` (arrays, None where uninitialized), `element_shape`,
    `element_dtype` (a DType) and `max_num_elements` (-1: unbounded)."""

    __slots__ = ("tensors", "element_shape", "element_dtype", "max_num_elements")

    def __init__(self, tensors: list, element_shape, element_dtype, max_num_elements=-1):
        self.tensors = tensors
        self.element_shape = element_shape
        self.element_dtype = element_dtype
        self.max_num_elements = max_num_elements

    def copy(self, tensors: list | None = None) -> TensorList:
        return TensorList(list(self.tensors) if tensors is None else tensors,
                          self.element_shape, self.element_dtype, self.max_num_elements)

    def zeros_like(self) -> TensorList:
        """TF's TensorListZerosLike: the same list with each set element zeroed."""
        return self.copy([None if t is None else np.zeros_like(t) for t in self.tensors])

    def __repr__(self) -> str:  # TF's DebugString
        return "TensorList"


def make_list(lst: TensorList) -> np.ndarray:
    """The variant value holding `lst`: a 0-d object array."""
    out = np.empty((), dtype=object)
    out[()] = lst
    return out


def get_list(value) -> TensorList:
    """TF's GetInputList: the TensorList in a scalar variant."""
    if isinstance(value, TensorList):
        return value
    shape = np.shape(value)
    if shape != ():
        raise _invalid(f"Input list must be a scalar saw: {_debug(shape)}")
    item = value[()] if isinstance(value, np.ndarray) else value
    if not isinstance(item, TensorList):
        raise _invalid(f"Input handle is not a list. Saw: '{_variant_debug(item)}'")
    return item


def _variant_debug(item) -> str:
    if isinstance(item, (bytes, str)):
        return "<unknown>"
    return type(item).__name__


# -- partial shapes ---------------------------------------------------------------------------

def _debug(shape) -> str:
    """TF's (Partial)TensorShape::DebugString."""
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d < 0 else str(int(d)) for d in shape) + "]"


def _fully_defined(shape) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


def _compatible(a, b) -> bool:
    """PartialTensorShape::IsCompatibleWith."""
    if a is None or b is None:
        return True
    if len(a) != len(b):
        return False
    return all(x < 0 or y < 0 or x == y for x, y in zip(a, b, strict=True))


def _merge(a, b):
    """a.MergeWith(b), with TF's messages."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise _invalid(f"PartialTensorShape: Incompatible ranks during merge: {len(a)} vs. "
                       f"{len(b)}")
    out = []
    for x, y in zip(a, b, strict=True):
        if x >= 0 and y >= 0 and x != y:
            raise _invalid(f"PartialTensorShape: Incompatible shapes during merge: "
                           f"{_debug(a)} vs. {_debug(b)}")
        out.append(x if x >= 0 else y)
    return tuple(out)


def _shape_from_tensor(t):
    """TF's TensorShapeFromTensor: a scalar -1 is an unknown shape; a vector its dims."""
    t = np.asarray(t)
    if t.dtype not in (np.int32, np.int64):
        raise _invalid("Expected an int32 or int64 shape tensor; found "
                       f"{type_string(dtypes.as_dtype(t.dtype))}")
    if t.ndim == 0:
        if int(t) == -1:
            return None
        raise _invalid("The only valid scalar shape tensor is the fully unknown shape "
                       "specified as -1.")
    if t.ndim != 1:
        raise _invalid(f"Shape must be a vector, but saw shape: {_debug(t.shape)}")
    dims = tuple(int(d) for d in t)
    for d in dims:
        if d < -1:
            raise _invalid(f"Dimension {d} must be >= -1")
    return dims


def _element_shape_from_input(value, lst: TensorList):
    """TF's GetElementShapeFromInput: the input's shape merged with the list's."""
    return _merge(_shape_from_tensor(value), lst.element_shape)


def _scalar(value, what: str) -> int:
    if np.ndim(value) != 0:
        raise _invalid(f"{what} must be a scalar, but saw shape: {_debug(np.shape(value))}")
    return int(value)


def _slots(n: int) -> list:
    """n uninitialized slots; memory that cannot hold them is TF's OOM."""
    try:
        return [None] * n
    except (MemoryError, OverflowError):
        raise errors.ResourceExhaustedError(
            None, None, f"OOM when allocating a list of {n} elements") from None


def _zeros(shape, dtype) -> np.ndarray:
    """Zeros (b"" for strings) of `shape`; memory that cannot hold them is TF's OOM."""
    dtype = dtypes.as_dtype(dtype)
    try:
        if dtype == dtypes.string:
            return np.full(shape, b"", dtype=object)
        return np.zeros(shape, dtype=dtype.as_numpy_dtype)
    except (MemoryError, ValueError):  # ValueError: more than NumPy can address
        raise errors.ResourceExhaustedError(
            None, None, f"OOM when allocating tensor with shape{_debug(shape)} and type "
                        f"{type_string(dtype)}") from None


def _check_dtype(lst: TensorList, dtype) -> None:
    if dtypes.as_dtype(dtype) != lst.element_dtype:
        raise _invalid(f"Invalid data types; op elements {type_string(dtype)} but list "
                       f"elements {type_string(lst.element_dtype)}")


def _dtype_of(value) -> dtypes.DType:
    value = np.asarray(value)
    if value.dtype == object and value.size and not isinstance(value.flat[0], (bytes, str)):
        return dtypes.variant  # a list, an optional...: held in an object array as strings are
    return dtypes.as_dtype(value.dtype)


def _rows(value: np.ndarray) -> list:
    """The elements of an unstacked tensor: views of its rows."""
    return [value[i] for i in range(value.shape[0])]


def _stacked(elements: list, element_shape: tuple, dtype) -> np.ndarray:
    """Stack elements (None: zeros of element_shape) into [len] + element_shape."""
    out = _zeros((len(elements),) + tuple(element_shape), dtype)
    if out.size:
        for i, t in enumerate(elements):
            if t is not None:
                out[i] = t
    return out


def _big(inputs, index: int = 0) -> bool:
    """For lists: whether the list behind inputs[index] holds more than BIG elements."""
    try:
        lst = get_list(inputs[index])
    except errors.InvalidArgumentError:
        return False
    return sum(t.size for t in lst.tensors if t is not None) > BIG


class _ListKernel(OpKernel):
    """A list kernel: cheap (inline) unless it copies a large list's contents."""

    # Pure: a list op outputs a new list and never changes its inputs, and produces
    # every output; so it may run inside a compiled segment, a compiled v1 loop or a
    # compiled function body (a While v2 body of a Keras RNN).
    compilable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.element_dtype = (dtypes.as_dtype(ctx.get_attr("element_dtype"))
                              if ctx.has_attr("element_dtype") else None)


# -- creating lists ---------------------------------------------------------------------------

@register_kernel("EmptyTensorList", "CPU")
class EmptyTensorListOp(_ListKernel):
    def compute(self, ctx, inputs):
        shape, max_num = inputs
        if np.ndim(max_num) != 0:
            raise _invalid("max_num_elements expected to be a scalar but got shape: "
                           f"{_debug(np.shape(max_num))}")
        element_shape = _shape_from_tensor(shape)
        return (make_list(TensorList([], element_shape, self.element_dtype, int(max_num))),)


@register_kernel("TensorListReserve", "CPU")
class TensorListReserveOp(_ListKernel):
    def compute(self, ctx, inputs):
        shape, num = inputs
        element_shape = _shape_from_tensor(shape)
        if np.ndim(num) != 0:
            raise _invalid("The num_elements to reserve must be a tensor size 1, but got "
                           f"{_debug(np.shape(num))}")
        num = int(num)
        if num < 0:
            raise _invalid("The num_elements to reserve must be a non negative number, but "
                           f"got {num}")
        return (make_list(TensorList(_slots(num), element_shape, self.element_dtype)),)


@register_kernel("TensorListFromTensor", "CPU")
class TensorListFromTensorOp(_ListKernel):
    def compute(self, ctx, inputs):
        tensor, shape = inputs
        element_shape = _shape_from_tensor(shape)
        tensor = np.asarray(tensor)
        if tensor.ndim < 1:
            raise _invalid("Tensor must be at least a vector, but saw shape: "
                           f"{_debug(tensor.shape)}")
        if not _compatible(element_shape, tensor.shape[1:]):
            raise _invalid(f"Specified a list with shape {_debug(element_shape)} from a tensor "
                           f"with shape {_debug(tensor.shape[1:])}")
        return (make_list(TensorList(_rows(tensor), element_shape, _dtype_of(tensor))),)


@register_kernel("TensorListSplit", "CPU")
class TensorListSplitOp(_ListKernel):
    def compute(self, ctx, inputs):
        tensor, shape, lengths = inputs
        element_shape = _shape_from_tensor(shape)
        if element_shape is not None and len(element_shape) < 1:
            raise _invalid("TensorListSplit requires element_shape to be at least of rank 1, "
                           f"but saw: {_debug(element_shape)}")
        tensor = np.asarray(tensor)
        if tensor.ndim < 1:
            raise _invalid("Tensor must be at least a vector, but saw shape: "
                           f"{_debug(tensor.shape)}")
        rest = None if element_shape is None else element_shape[1:]
        if not _compatible(rest, tensor.shape[1:]):
            raise _invalid(f"tensor shape {_debug(tensor.shape)} is not compatible with "
                           f"element_shape {_debug(element_shape)}")
        lengths = np.asarray(lengths)
        if lengths.ndim != 1:
            raise _invalid("Expected lengths to be a vector, received shape: "
                           f"{_debug(lengths.shape)}")
        pieces, start, total = [], 0, tensor.shape[0]
        for length in lengths.tolist():
            if length < 0:
                raise _invalid(f"Invalid value in lengths: {length}")
            end = start + length
            if end > total:
                raise _invalid(f"Attempting to slice [{start}, {end}] from tensor with length "
                               f"{total}")
            pieces.append(tensor[start:end])
            start = end
        if start != total:
            raise _invalid(f"Unused values in tensor. Length of tensor: {total} Values used: "
                           f"{start}")
        return (make_list(TensorList(pieces, element_shape, _dtype_of(tensor))),)


# -- reading ----------------------------------------------------------------------------------

@register_kernel("TensorListLength", "CPU")
class TensorListLengthOp(_ListKernel):
    def compute(self, ctx, inputs):
        return (np.int32(len(get_list(inputs[0]).tensors)),)


@register_kernel("TensorListElementShape", "CPU")
class TensorListElementShapeOp(_ListKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.out_type = dtypes.as_dtype(ctx.get_attr("shape_type")).as_numpy_dtype

    def compute(self, ctx, inputs):
        shape = get_list(inputs[0]).element_shape
        if shape is None:
            return (np.array(-1, self.out_type),)
        return (np.array(shape, self.out_type).reshape(len(shape)),)


@register_kernel("TensorListGetItem", "CPU")
class TensorListGetItemOp(_ListKernel):
    def compute(self, ctx, inputs):
        handle, index, shape = inputs
        lst = get_list(handle)
        _check_dtype(lst, self.element_dtype)
        index = _scalar(index, "index")
        n = len(lst.tensors)
        if not 0 <= index < n:
            raise _invalid(f"Trying to access element {index} in a list with {n} elements.")
        item = lst.tensors[index]
        if item is not None:
            return (item,)
        partial = _element_shape_from_input(shape, lst)
        if not _fully_defined(partial):
            for t in lst.tensors:
                if t is not None:
                    partial = _merge(partial, t.shape)
        if not _fully_defined(partial):
            raise _invalid("Trying to read an uninitialized tensor but element_shape is not "
                           f"fully defined: {_debug(partial)} and no list element is set.")
        return (_zeros(partial, self.element_dtype),)


@register_kernel("TensorListStack", "CPU")
class TensorListStackOp(_ListKernel):
    expensive = None

    def __init__(self, ctx):
        super().__init__(ctx)
        self.num_elements = int(ctx.get_attr("num_elements", -1))

    def is_expensive(self, inputs):
        return _big(inputs)

    def compute(self, ctx, inputs):
        handle, shape = inputs
        lst = get_list(handle)
        _check_dtype(lst, self.element_dtype)
        n = len(lst.tensors)
        if self.num_elements != -1 and n != self.num_elements:
            raise _invalid(f"Operation expected a list with {self.num_elements} elements but "
                           f"got a list with {n} elements.")
        partial = _element_shape_from_input(shape, lst)
        if not _fully_defined(partial) and not n:
            raise _invalid("Tried to stack elements of an empty list with non-fully-defined "
                           f"element_shape: {_debug(partial)}")
        # TF merges only when the list's shape is not fully defined; merging always gives
        # the same result for lists made by the ops that check shapes, and an error (not
        # garbage) for one that ScatterIntoExistingList (which checks none) filled wrongly
        for t in lst.tensors:
            if t is not None:
                partial = _merge(partial, t.shape)
        if not _fully_defined(partial):
            raise _invalid("Tried to stack list which only contains uninitialized tensors and "
                           f"has a non-fully-defined element_shape: {_debug(partial)}")
        return (_stacked(lst.tensors, partial, self.element_dtype),)


@register_kernel("TensorListGather", "CPU")
class TensorListGatherOp(_ListKernel):
    expensive = None

    def is_expensive(self, inputs):
        return _big(inputs)

    def compute(self, ctx, inputs):
        handle, indices, shape = inputs
        lst = get_list(handle)
        _check_dtype(lst, self.element_dtype)
        indices = np.asarray(indices).ravel().tolist()
        partial = _element_shape_from_input(shape, lst)
        if not _fully_defined(partial) and not indices:
            raise _invalid("Tried to gather 0-elements from a list with non-fully-defined "
                           f"shape: {_debug(partial)}")
        n = len(lst.tensors)
        if not _fully_defined(lst.element_shape):
            for i in indices:
                if not 0 <= i < n:
                    raise _invalid(f"Trying to gather element {i} in a list with {n} "
                                   "elements.")
                t = lst.tensors[i]
                if t is not None:
                    partial = _merge(partial, t.shape)
        else:
            for i in indices:
                if not 0 <= i < n:  # (TF's words, typo included)
                    raise _invalid(f"Index {i} out o range; list only has {n} elements.")
            for i in indices:  # (see TensorListStack)
                t = lst.tensors[i]
                if t is not None:
                    partial = _merge(partial, t.shape)
        if not _fully_defined(partial):
            raise _invalid("Tried to gather uninitialized tensors from a list with "
                           f"non-fully-defined element_shape: {_debug(partial)}")
        return (_stacked([lst.tensors[i] for i in indices], partial, self.element_dtype),)


@register_kernel("TensorListConcatV2", "CPU")
class TensorListConcatV2Op(_ListKernel):
    expensive = None

    def is_expensive(self, inputs):
        return _big(inputs)

    def compute(self, ctx, inputs):
        handle, shape, leading_dims = inputs
        lst = get_list(handle)
        _check_dtype(lst, self.element_dtype)
        element_shape = _element_shape_from_input(shape, lst)
        if element_shape is not None and len(element_shape) < 1:
            raise _invalid("Concat requires elements to be at least vectors, found scalars "
                           "instead.")
        first_dim = -1 if element_shape is None else element_shape[0]
        rest = None if element_shape is None else element_shape[1:]
        tensors = lst.tensors
        if not tensors and not _fully_defined(rest):
            raise _invalid("All except the first dimension must be fully defined when "
                           f"concating an empty tensor list. element_shape: {_debug(rest)}")
        # TF checks the elements only when the list's shape is not fully defined (see
        # TensorListStack)
        check_dim, inferred = first_dim == -1, first_dim
        for i, t in enumerate(tensors):
            if t is None:
                continue
            if t.ndim < 1:
                raise _invalid(f"Concat saw a scalar shape at index {i} but requires at "
                               "least vectors.")
            rest = _merge(rest, t.shape[1:])
            if first_dim != -1 and first_dim != t.shape[0]:
                raise _invalid("First entry of element_shape input does not match the "
                               f"first dim of list element at index: {i} Expected: "
                               f"{first_dim} Actual: {t.shape[0]}")
            if check_dim:
                if inferred == -1:
                    inferred = t.shape[0]
                elif inferred != t.shape[0]:
                    inferred, check_dim = -1, False
        first_dim = inferred
        if not _fully_defined(rest):
            raise _invalid("Trying to concat list with only uninitialized tensors but "
                           f"element_shape_except_first_dim_ is not fully defined: "
                           f"{_debug(rest)}")
        leading = np.asarray(leading_dims).ravel().tolist()
        lengths, pieces = [], []
        for i, t in enumerate(tensors):
            if t is not None:
                dim = t.shape[0]
                pieces.append(t)
            else:
                if i >= len(leading) and first_dim != -1:
                    dim = first_dim
                elif i >= len(leading):
                    raise _invalid(f"List contains uninitialized tensor at index {i} but "
                                   f"leading_dims has only {len(leading)} elements.")
                else:
                    dim = int(leading[i])
                pieces.append(_zeros((dim,) + tuple(rest), self.element_dtype))
            lengths.append(dim)
        if pieces:
            value = np.concatenate(pieces, axis=0)
        else:
            value = _zeros((0,) + tuple(rest), self.element_dtype)
        return (value, np.array(lengths, np.int64))


# -- new lists from old ones ------------------------------------------------------------------

@register_kernel("TensorListSetItem", "CPU")
class TensorListSetItemOp(_ListKernel):
    def __init__(self, ctx):
        super().__init__(ctx)
        self.resize = bool(ctx.get_attr("resize_if_index_out_of_bounds", False))

    def compute(self, ctx, inputs):
        handle, index, item = inputs
        lst = get_list(handle)
        _check_dtype(lst, self.element_dtype)
        index = _scalar(index, "index")
        n = len(lst.tensors)
        if index < 0 or (index >= n and not self.resize):
            raise _invalid(f"Trying to modify element {index} in a list with {n} elements.")
        item = np.asarray(item)
        if not _compatible(lst.element_shape, item.shape):
            raise _invalid("Tried to set a tensor with incompatible shape at a list index. "
                           f"Item element shape: {_debug(item.shape)} list shape: "
                           f"{_debug(lst.element_shape)}")
        out = lst.copy()
        if index >= n:
            out.tensors.extend(_slots(index + 1 - n))
        out.tensors[index] = item
        return (make_list(out),)


@register_kernel("TensorListPushBack", "CPU")
class TensorListPushBackOp(_ListKernel):
    def compute(self, ctx, inputs):
        handle, tensor = inputs
        tensor = np.asarray(tensor)
        if _dtype_of(tensor) != self.element_dtype:
            raise _invalid(f"Invalid data types; list elements {type_string(self.element_dtype)}"
                           f" but tried to append {type_string(_dtype_of(tensor))}")
        lst = get_list(handle)
        if not _compatible(lst.element_shape, tensor.shape):
            raise _invalid("Tried to append a tensor with incompatible shape to a list. Op "
                           f"element shape: {_debug(tensor.shape)} list shape: "
                           f"{_debug(lst.element_shape)}")
        _check_dtype(lst, self.element_dtype)
        n = len(lst.tensors)
        if lst.max_num_elements != -1 and n >= lst.max_num_elements:
            raise _invalid(f"Tried to push item into a full list list size: {n} "
                           f"max_num_elements: {lst.max_num_elements}")
        return (make_list(lst.copy(lst.tensors + [tensor])),)


@register_kernel("TensorListPopBack", "CPU")
class TensorListPopBackOp(_ListKernel):
    def compute(self, ctx, inputs):
        handle, shape = inputs
        lst = get_list(handle)
        _check_dtype(lst, self.element_dtype)
        if not lst.tensors:
            raise _invalid("Trying to pop from an empty list.")
        last = lst.tensors[-1]
        if last is None:
            partial = _element_shape_from_input(shape, lst)
            if not _fully_defined(partial):
                raise _invalid("Trying to read an uninitialized tensor but element_shape is "
                               f"not fully defined.{_debug(partial)}")
            last = _zeros(partial, self.element_dtype)
        return (make_list(lst.copy(lst.tensors[:-1])), last)


@register_kernel("TensorListScatterIntoExistingList", "CPU")
class TensorListScatterIntoExistingListOp(_ListKernel):
    def compute(self, ctx, inputs):
        handle, tensor, indices = inputs
        lst = get_list(handle)
        tensor, indices = np.asarray(tensor), np.asarray(indices)
        if _dtype_of(tensor) != lst.element_dtype:
            raise _invalid(f"Invalid data types; input tensor type: "
                           f"{type_string(_dtype_of(tensor))} list element_type: "
                           f"{type_string(lst.element_dtype)}")
        if tensor.ndim < 1:
            raise _invalid("Tensor must be at least a vector, but saw shape: "
                           f"{_debug(tensor.shape)}")
        if indices.ndim != 1:
            raise _invalid("Expected indices to be a vector, but received shape: "
                           f"{_debug(indices.shape)}")
        if indices.size != tensor.shape[0]:
            raise _invalid("Expected len(indices) == tensor.shape[0], but saw: "
                           f"{indices.size} vs. {tensor.shape[0]}")
        indices = indices.tolist()
        if any(i < 0 for i in indices):
            raise _invalid("Indices in TensorListScatter must all be non-negative.")
        out = lst.copy()
        top = max(indices, default=-1) + 1
        if top > len(out.tensors):
            out.tensors.extend(_slots(top - len(out.tensors)))
        for row, i in enumerate(indices):
            out.tensors[i] = tensor[row]
        return (make_list(out),)


@register_kernel("TensorListResize", "CPU")
class TensorListResizeOp(_ListKernel):
    def compute(self, ctx, inputs):
        handle, size = inputs
        lst = get_list(handle)
        size = _scalar(size, "size")
        if size < 0:
            raise _invalid(f"TensorListSlice expects size to be non-negative. Got: {size}")
        tensors = lst.tensors[:size] + _slots(max(0, size - len(lst.tensors)))
        return (make_list(lst.copy(tensors)),)
