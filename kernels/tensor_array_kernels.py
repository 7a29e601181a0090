"""Kernels of the TensorArray V3 ops, with TF's semantics and error messages.

A TensorArray is a Python object living for one step: TensorArrayV3 creates it, records
it in the step context's `step_resources` (so it goes away with the step), and outputs a
0-d object array holding it as the resource handle, plus a float32 flow scalar. Every
kernel here is cheap and runs on the event-loop thread, so the mutable TensorArray needs
no lock.
"""

from __future__ import annotations

import itertools

import numpy as np

from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.framework.op_kernel import OpKernel, register_kernel

_counter = itertools.count()

# TF's DataTypeString names, where they differ from aioflow's dtype names.
_TF_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "half"}


def type_string(dtype) -> str:
    """TF's DataTypeString: "float", "double", "int32", "string", ..."""
    name = dtypes.as_dtype(dtype).name
    return _TF_TYPE_NAMES.get(name, name)


def shape_string(shape) -> str:
    """TF's DebugString: "[2,3]" for a shape, "[?,2]" partial, "<unknown>" unknown rank."""
    if isinstance(shape, tensor_shape.TensorShape):
        if shape.rank is None:
            return "<unknown>"
        shape = shape.as_list()
    return "[" + ",".join("?" if d is None else str(int(d)) for d in shape) + "]"


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


class _Slot:
    """One index of a TensorArray: its value, shape and read/write state."""

    __slots__ = ("value", "shape", "written", "read", "cleared")

    def __init__(self):
        self.value = None
        self.shape: tuple | None = None
        self.written = False
        self.read = False
        self.cleared = False


class TensorArray:
    """The per-step state behind a TensorArray handle (tensorflow/core/kernels/
    tensor_array.h): write-once slots, optional clear-after-read and dynamic size."""

    def __init__(self, name: str, dtype, size: int, element_shape=None,
                 identical_element_shapes: bool = False, dynamic_size: bool = False,
                 clear_after_read: bool = True):
        self.name = name
        self.dtype = dtypes.as_dtype(dtype)
        self.element_shape = tensor_shape.as_shape(element_shape)
        self.identical_element_shapes = identical_element_shapes
        self.dynamic_size = dynamic_size
        self.clear_after_read = clear_after_read
        self.closed = False
        self.marked_size = -1
        self.slots = [_Slot() for _ in range(size)]

    def __repr__(self) -> str:
        return f"<TensorArray {self.name} size={len(self.slots)} dtype={self.dtype.name}>"

    # -- state -------------------------------------------------------------------------------
    def check_open(self) -> None:
        if self.closed:
            raise _invalid(f"TensorArray {self.name} has already been closed.")

    def size(self) -> int:
        self.check_open()
        return len(self.slots)

    def close(self) -> None:
        self.slots = []
        self.closed = True

    def set_element_shape(self, shape) -> None:
        """Merge `shape` into the element shape (TF's SetElemShape)."""
        merged = _merge_shapes(self.element_shape, tensor_shape.as_shape(shape))
        self.element_shape = merged

    def _np_dtype(self):
        return self.dtype.as_numpy_dtype

    # -- write -------------------------------------------------------------------------------
    def write(self, index: int, value, value_dtype=None) -> None:
        """Write `value` at `index` (TF's LockedWriteOrAggregate without aggregation)."""
        self.check_open()
        index = int(index)
        if index < 0 or (not self.dynamic_size and index >= len(self.slots)):
            raise _invalid(f"TensorArray {self.name}: Tried to write to index {index} but "
                           f"array is not resizeable and size is: {len(self.slots)}")
        if self.dynamic_size and index >= len(self.slots):
            self.slots.extend(_Slot() for _ in range(index + 1 - len(self.slots)))
        slot = self.slots[index]
        value_dtype = self.dtype if value_dtype is None else dtypes.as_dtype(value_dtype)
        if value_dtype != self.dtype:
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because the value dtype is {type_string(value_dtype)} "
                           f"but TensorArray dtype is {type_string(self.dtype)}.")
        shape = tuple(np.shape(value))
        if not self.element_shape.is_compatible_with(tensor_shape.TensorShape(shape)):
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because the value shape is {shape_string(shape)} which "
                           "is incompatible with the TensorArray's inferred element shape: "
                           f"{shape_string(self.element_shape)} (consider setting "
                           "infer_shape=False).")
        if self.identical_element_shapes and not self.element_shape.is_fully_defined():
            self.element_shape = tensor_shape.TensorShape(shape)
        if slot.read:
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because it has already been read.")
        if slot.written:
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because it has already been written to.")
        slot.value = value
        slot.shape = shape
        slot.written = True

    # -- read --------------------------------------------------------------------------------
    def read(self, index: int):
        """Read the value at `index` (TF's LockedRead): zeros of the element shape for an
        unwritten index when that shape is fully defined."""
        self.check_open()
        index = int(index)
        if index < 0 or index >= len(self.slots):
            raise _invalid(f"Tried to read from index {index} but array size is: "
                           f"{len(self.slots)}")
        slot = self.slots[index]
        if not slot.written:
            if not self.element_shape.is_fully_defined():
                raise _invalid(
                    f"TensorArray {self.name}: Could not read from TensorArray index {index}."
                    "  Furthermore, the element shape is not fully defined: "
                    f"{shape_string(self.element_shape)}.  It is possible you are working "
                    "with a resizeable TensorArray and stop_gradients is not allowing the "
                    "gradients to be written.  If you set the full element_shape property "
                    "on the forward TensorArray, the proper all-zeros tensor will be "
                    "returned instead of incurring this error.")
            slot.shape = tuple(self.element_shape.as_list())
            slot.written = True
        if slot.cleared:
            raise _invalid(f"TensorArray {self.name}: Could not read index {index} twice "
                           "because it was cleared after a previous read (perhaps try "
                           "setting clear_after_read = false?).")
        value = slot.value
        if value is None:
            value = np.zeros(slot.shape, dtype=self._np_dtype())
        if self.clear_after_read:
            slot.value = None
            slot.cleared = True
        else:
            slot.value = value
        slot.read = True
        return value


def _merge_shapes(a: tensor_shape.TensorShape, b: tensor_shape.TensorShape):
    """PartialTensorShape::MergeWith, with TF's error messages."""
    if a.rank is None:
        return b
    if b.rank is None:
        return a
    if a.rank != b.rank:
        raise _invalid(f"PartialTensorShape: Incompatible ranks during merge: {a.rank} vs. "
                       f"{b.rank}")
    dims = []
    for x, y in zip(a.as_list(), b.as_list(), strict=True):
        if x is not None and y is not None and x != y:
            raise _invalid(f"PartialTensorShape: Incompatible shapes during merge: "
                           f"{shape_string(a)} vs. {shape_string(b)}")
        dims.append(x if x is not None else y)
    return tensor_shape.TensorShape(dims)


def make_handle(ta: TensorArray) -> np.ndarray:
    """The resource-handle value: a 0-d object array holding the TensorArray."""
    handle = np.empty((), dtype=object)
    handle[()] = ta
    return handle


def get_tensor_array(handle) -> TensorArray:
    """The TensorArray behind a handle value (a 0-d object array, or the object)."""
    if isinstance(handle, np.ndarray) and handle.dtype == object and handle.size == 1:
        handle = handle.reshape(())[()]
    if not isinstance(handle, TensorArray):
        raise _invalid(f"Expected a TensorArray resource handle, got {type(handle).__name__}")
    return handle


def _scalar_int(value, what: str) -> int:
    if np.ndim(value) != 0:
        raise _invalid(f"{what} must be scalar, but had shape: {shape_string(np.shape(value))}")
    return int(value)


def _vector(value, what: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise _invalid(f"Expected {what} to be a vector, but received shape: "
                       f"{shape_string(arr.shape)}")
    return arr


def _check_dtype(ta: TensorArray, dtype, requested: bool) -> None:
    if dtype is None or dtypes.as_dtype(dtype) == ta.dtype:
        return
    verb = "Op requested dtype" if requested else "Op is trying to write dtype"
    raise _invalid(f"TensorArray dtype is {type_string(ta.dtype)} but {verb} "
                   f"{type_string(dtype)}.")


def _flow():
    return np.array(0.0, dtype=np.float32)


# -- kernels ---------------------------------------------------------------------------------

@register_kernel("TensorArrayV3", "CPU")
class TensorArrayOp(OpKernel):
    """Create a step-local TensorArray; outputs (handle, flow)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype")
        self.element_shape = ctx.get_attr("element_shape", None)
        self.dynamic_size = bool(ctx.get_attr("dynamic_size", False))
        self.clear_after_read = bool(ctx.get_attr("clear_after_read", True))
        self.identical_element_shapes = bool(ctx.get_attr("identical_element_shapes", False))
        name = ctx.get_attr("tensor_array_name", b"")
        name = name.decode() if isinstance(name, bytes) else name
        self.tensor_array_name = name or ctx.name

    def compute(self, ctx, inputs):
        size = inputs[0]
        if np.ndim(size) != 0:
            raise _invalid("TensorArray size must be scalar, but had shape: "
                           f"{shape_string(np.shape(size))}")
        size = int(size)
        if size < 0:
            raise _invalid("Size should be >= 0.")
        name = f"{self.tensor_array_name}_{next(_counter)}"
        ta = TensorArray(name, self.dtype, size, self.element_shape,
                         self.identical_element_shapes, self.dynamic_size,
                         self.clear_after_read)
        resources = getattr(ctx, "step_resources", None)
        if resources is not None:
            resources[("_tensor_arrays", name)] = ta
        return (make_handle(ta), _flow())


@register_kernel("TensorArrayWriteV3", "CPU")
class TensorArrayWriteOp(OpKernel):
    """Write `value` at `index`; flow_out is flow_in."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("T", None)

    def compute(self, ctx, inputs):
        handle, index, value, flow = inputs
        index = _scalar_int(index, "TensorArray index")
        ta = get_tensor_array(handle)
        _check_dtype(ta, self.dtype, requested=False)
        ta.write(index, value, self.dtype)
        return (flow,)


@register_kernel("TensorArrayReadV3", "CPU")
class TensorArrayReadOp(OpKernel):
    """Read the value at `index`."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype", None)

    def compute(self, ctx, inputs):
        handle, index, _flow_in = inputs
        index = _scalar_int(index, "TensorArray index")
        ta = get_tensor_array(handle)
        _check_dtype(ta, self.dtype, requested=True)
        return (ta.read(index),)


@register_kernel("TensorArrayGatherV3", "CPU")
class TensorArrayGatherOp(OpKernel):
    """Stack the values at `indices` along a new first dimension."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype", None)
        self.element_shape = tensor_shape.as_shape(ctx.get_attr("element_shape", None))

    def compute(self, ctx, inputs):
        handle, indices, _flow_in = inputs
        ta = get_tensor_array(handle)
        _check_dtype(ta, self.dtype, requested=True)
        ta.set_element_shape(self.element_shape)
        indices = _vector(indices, "indices")
        if indices.size == 0:
            if not self.element_shape.is_fully_defined():
                raise errors.UnimplementedError(
                    None, None, "TensorArray has size zero, but element shape "
                    f"{shape_string(self.element_shape)} is not fully defined. Currently "
                    "only static shapes are supported when packing zero-size TensorArrays.")
            return (np.zeros([0] + self.element_shape.as_list(), dtype=ta._np_dtype()),)
        values = [ta.read(i) for i in indices.tolist()]
        shape0 = np.shape(values[0])
        if not self.element_shape.is_compatible_with(tensor_shape.TensorShape(shape0)):
            raise _invalid(f"TensorArray was passed element_shape "
                           f"{shape_string(self.element_shape)} which does not match the "
                           f"Tensor at index 0: {shape_string(shape0)}")
        for i, v in enumerate(values[1:], 1):
            if np.shape(v) != shape0:
                raise _invalid("TensorArray has inconsistent shapes.  Index 0 has shape: "
                               f"{shape_string(shape0)} but index {i} has shape: "
                               f"{shape_string(np.shape(v))}")
        return (np.stack([np.asarray(v) for v in values]),)


@register_kernel("TensorArrayScatterV3", "CPU")
class TensorArrayScatterOp(OpKernel):
    """Write value[i] at indices[i]; flow_out is flow_in."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("T", None)

    def compute(self, ctx, inputs):
        handle, indices, value, flow = inputs
        ta = get_tensor_array(handle)
        value = np.asarray(value)
        _check_dtype(ta, self.dtype, requested=False)
        if value.ndim == 0:
            raise _invalid("Input value for unpack must be at least a vector but received "
                           f"shape: {shape_string(value.shape)}")
        array_size = ta.size()
        indices = _vector(indices, "indices")
        if indices.size != value.shape[0]:
            raise _invalid("Expected len(indices) == values.shape[0], but saw: "
                           f"{indices.size} vs. {value.shape[0]}")
        max_index = int(indices.max()) if indices.size else -1
        if ta.dynamic_size and array_size < max_index + 1:
            array_size = max_index + 1
        if max_index >= array_size:
            raise _invalid(f"Max scatter index must be < array size ({max_index} vs. "
                           f"{array_size})")
        for i, index in enumerate(indices.tolist()):
            ta.write(index, value[i], self.dtype)
        return (flow,)


@register_kernel("TensorArrayConcatV3", "CPU")
class TensorArrayConcatOp(OpKernel):
    """Concatenate all values along their first dimension; also output their lengths."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("dtype", None)
        self.element_shape_except0 = tensor_shape.as_shape(
            ctx.get_attr("element_shape_except0", None))

    def compute(self, ctx, inputs):
        handle, _flow_in = inputs
        ta = get_tensor_array(handle)
        _check_dtype(ta, self.dtype, requested=True)
        size = ta.size()
        if size == 0:
            if not self.element_shape_except0.is_fully_defined():
                raise errors.UnimplementedError(
                    None, None, "TensorArray has size zero, but element_shape_except0 "
                    f"{shape_string(self.element_shape_except0)} is not fully defined. "
                    "Currently only static shapes are supported when concatenating "
                    "zero-size TensorArrays.")
            shape = [0] + self.element_shape_except0.as_list()
            return (np.zeros(shape, dtype=ta._np_dtype()), np.zeros([0], dtype=np.int64))
        values = [np.asarray(ta.read(i)) for i in range(size)]
        lengths = np.empty([size], dtype=np.int64)
        except0 = None
        for i, v in enumerate(values):
            if v.ndim == 0:
                raise _invalid(f"Concat saw a scalar shape at index {i} but requires at least "
                               "vectors.  Did you mean to call pack?")
            lengths[i] = v.shape[0]
            rest = v.shape[1:]
            if i == 0:
                except0 = rest
                if not self.element_shape_except0.is_compatible_with(
                        tensor_shape.TensorShape(rest)):
                    raise _invalid(
                        "TensorArray was passed element_shape_except0 "
                        f"{shape_string(self.element_shape_except0)} but index 0 has "
                        f"(excepting dimension 0) shape: {shape_string(rest)} which does "
                        "not match.")
            elif rest != except0:
                raise _invalid("TensorArray has inconsistent shapes.  Index 0 has (excepting "
                               f"dimension 0) shape: {shape_string(except0)} but index {i} "
                               f"has (excepting dimension 0) shape: {shape_string(rest)}")
        return (np.concatenate(values, axis=0), lengths)


@register_kernel("TensorArraySplitV3", "CPU")
class TensorArraySplitOp(OpKernel):
    """Split `value` along its first dimension into pieces of `lengths`, one per index."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.dtype = ctx.get_attr("T", None)

    def compute(self, ctx, inputs):
        handle, value, lengths, flow = inputs
        ta = get_tensor_array(handle)
        lengths = np.asarray(lengths)
        if lengths.ndim != 1:
            raise _invalid("Expected lengths to be a vector, received shape: "
                           f"{shape_string(lengths.shape)}")
        value = np.asarray(value)
        num = int(lengths.size)
        cumulative = np.cumsum(lengths.astype(np.int64)) if num else np.zeros([0], np.int64)
        total = int(cumulative[-1]) if num else 0
        if value.ndim == 0:
            raise _invalid("Expected value to be at least a vector, but received shape: "
                           f"{shape_string(value.shape)}")
        if total != value.shape[0]:
            raise _invalid("Expected sum of lengths to be equal to values.shape[0], but sum "
                           f"of lengths is {total} and value's shape is: "
                           f"{shape_string(value.shape)}")
        array_size = ta.size()
        if ta.dynamic_size and array_size < num:
            array_size = num
        if array_size != num:
            raise _invalid(f"TensorArray's size is not equal to the size of lengths "
                           f"({array_size} vs. {num}), and the TensorArray is not marked as "
                           "dynamically resizeable")
        _check_dtype(ta, self.dtype, requested=False)
        ta.marked_size = array_size
        start = 0
        for i in range(num):
            end = int(cumulative[i])
            ta.write(i, value[start:end], self.dtype)
            start = end
        return (flow,)


@register_kernel("TensorArraySizeV3", "CPU")
class TensorArraySizeOp(OpKernel):
    """The TensorArray's current size, as an int32 scalar."""

    def compute(self, ctx, inputs):
        return (np.int32(get_tensor_array(inputs[0]).size()),)


@register_kernel("TensorArrayCloseV3", "CPU")
class TensorArrayCloseOp(OpKernel):
    """Release the values and mark the TensorArray closed (it stays until the step ends)."""

    def compute(self, ctx, inputs):
        get_tensor_array(inputs[0]).close()
        return ()
