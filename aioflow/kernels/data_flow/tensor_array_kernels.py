"""Kernels of the TensorArray V3 ops, with TF's semantics and error messages.

A TensorArray is a Python object living for one step: TensorArrayV3 creates it, records
it in the step context's `step_resources` (so it goes away with the step), and outputs a
0-d object array holding it as the resource handle, plus a float32 flow scalar. Creating
one costs the same at any size; one-element reads and writes run inline; scatters,
splits, gathers and concats of many elements are vectorized and go to the thread pool,
so a TensorArray takes a lock around each operation.
"""

from __future__ import annotations

import itertools
import threading

import numpy as np

from aioflow.framework import dtypes, errors, tensor_shape
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.kernels.math.cwise_kernels import BIG

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


# Per-index state bits (TensorArray._flags).
_WRITTEN, _READ, _CLEARED = 1, 2, 4

# How a block's positions map to elements (_Block.kind).
_WHOLE = 0   # every position is the value itself (one write; zeros for unwritten reads)
_ROWS = 1    # position p is value[p] (a scatter or unstack)
_PIECES = 2  # position p is value[starts[p]:starts[p] + lengths[p]] (a split)

# Scatters, splits and gathers of fewer elements than this go element by element (the
# vectorized bookkeeping costs more than it saves).
_BULK = 64


class _Block:
    """The value of one write operation, shared by the indices it wrote; `live` counts
    those not yet cleared (the value is dropped when none is left)."""

    __slots__ = ("value", "kind", "starts", "lengths", "live")

    def __init__(self, value, kind: int, live: int, starts=None, lengths=None):
        self.value = value
        self.kind = kind
        self.live = live
        self.starts = starts
        self.lengths = lengths

    def element(self, p: int):
        if self.kind == _WHOLE:
            return self.value
        if self.kind == _ROWS:
            # [p, ...]: a 0-d array for a vector's row, where [p] gives a bare scalar
            # (a Python bytes object for strings, which kernels cannot take).
            return self.value[p, ...]
        start = int(self.starts[p])
        return self.value[start:start + int(self.lengths[p])]

    def element_shape(self, p: int) -> tuple:
        if self.kind == _WHOLE:
            return np.shape(self.value)
        if self.kind == _ROWS:
            return self.value.shape[1:]
        return (int(self.lengths[p]),) + self.value.shape[1:]


class TensorArray:
    """The per-step state behind a TensorArray handle (tensorflow/core/kernels/
    tensor_array.h): write-once elements, optional clear-after-read and dynamic size.

    State is kept in flat arrays indexed by element, grown on demand, so creating an
    array of any size costs nothing and a scatter, split or gather of n elements is a few
    vectorized passes, not n Python objects: `_block[i]` is the id (in `_blocks`, 0 for
    none) of the write that gave element i its value and `_pos[i]` its position in that
    write; `_flags[i]` holds _WRITTEN, _READ and _CLEARED. Large operations run on the
    thread pool, so every public method takes the array's lock.
    """

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
        # A gradient TensorArray (TensorArrayGradV3) sums the writes to one index.
        self.multiple_writes_aggregate = False
        self.marked_size = -1
        self._length = size
        self._block = np.zeros(0, np.int32)
        self._pos = np.zeros(0, np.int32)
        self._flags = np.zeros(0, np.uint8)
        self._blocks: list[_Block | None] = [None]
        self._fits = None  # (element_shape, value shape) last found compatible
        self._lock = threading.Lock()  # public methods take it; `_` methods run under it

    def __repr__(self) -> str:
        return f"<TensorArray {self.name} size={self._length} dtype={self.dtype.name}>"

    # -- state -------------------------------------------------------------------------------
    def check_open(self) -> None:
        if self.closed:
            raise _invalid(f"TensorArray {self.name} has already been closed.")

    def size(self) -> int:
        with self._lock:
            self.check_open()
            return self._length

    def close(self) -> None:
        with self._lock:
            self._block = self._pos = np.zeros(0, np.int32)
            self._flags = np.zeros(0, np.uint8)
            self._blocks = [None]
            self._length = 0
            self.closed = True

    def checkpoint(self) -> tuple:
        """The array's whole state, for `restore`: a compiled while loop reading and
        writing it checkpoints it first, so that it can run the loop node by node again
        (a copy of the per-index arrays and the blocks' counts; values are never changed
        in place, so they are shared)."""
        with self._lock:
            blocks = list(self._blocks)
            return (self._length, self._block.copy(), self._pos.copy(), self._flags.copy(),
                    blocks, [(b, b.live) for b in blocks if b is not None],
                    self.element_shape, self._fits, self.closed, self.marked_size)

    def restore(self, token: tuple) -> None:
        """Put back the state `checkpoint` returned (once per token)."""
        with self._lock:
            (self._length, self._block, self._pos, self._flags, self._blocks, lives,
             self.element_shape, self._fits, self.closed, self.marked_size) = token
            for block, live in lives:
                block.live = live

    def release(self, token: tuple) -> None:
        """The loop that took `token` finished (a checkpoint is a copy: nothing to do)."""

    def set_element_shape(self, shape) -> None:
        """Merge `shape` into the element shape (TF's SetElemShape)."""
        with self._lock:
            self.element_shape = _merge_shapes(self.element_shape,
                                               tensor_shape.as_shape(shape))

    def element_size_hint(self) -> int:
        """Elements per element, for deciding inline vs pool: from the element shape when
        it is known, else from the latest write (1 when nothing is written)."""
        n = self.element_shape.num_elements() if self.element_shape.rank is not None else None
        if n is not None:
            return n
        block = self._blocks[-1]
        if block is None or block.value is None:
            return 1
        return max(1, int(np.prod(block.element_shape(0), dtype=np.int64)))

    def _np_dtype(self):
        return self.dtype.as_numpy_dtype

    def _reserve(self, n: int) -> None:
        """Make the per-index arrays hold at least n elements (doubling, so that growing
        one write at a time stays linear)."""
        capacity = self._block.size
        if n <= capacity:
            return
        new = max(n, 2 * capacity if self.dynamic_size else min(2 * capacity, self._length))
        for name, dtype in (("_block", np.int32), ("_pos", np.int32), ("_flags", np.uint8)):
            grown = np.zeros(new, dtype)
            grown[:capacity] = getattr(self, name)
            setattr(self, name, grown)

    def _add_block(self, block: _Block) -> int:
        self._blocks.append(block)
        return len(self._blocks) - 1

    def _release(self, k: int, count: int) -> None:
        """`count` elements of block k were cleared: drop its value when none is left."""
        block = self._blocks[k]
        block.live -= count
        if block.live <= 0:
            self._blocks[k] = None

    # -- write -------------------------------------------------------------------------------
    def write(self, index: int, value, value_dtype=None) -> None:
        """Write `value` at `index` (TF's LockedWriteOrAggregate without aggregation)."""
        with self._lock:
            self._write(int(index), value, value_dtype)

    def _write(self, index: int, value, value_dtype) -> None:
        # (One write per map_fn element: the common case is kept to plain statements.)
        if self.closed:
            self.check_open()
        if index < 0 or index >= self._block.size:
            self._check_index(index)
        elif index >= self._length:  # within capacity, past the size: dynamic arrays grow
            self._check_index(index)
        self._check_value(index, value_dtype,
                          value.shape if type(value) is np.ndarray else np.shape(value))
        flags = int(self._flags[index])
        if self.multiple_writes_aggregate and flags & _WRITTEN and not flags & _READ:
            value = self._aggregated(index, value)
        elif flags:
            self._check_unused(index, flags)
        blocks = self._blocks
        blocks.append(_Block(value, _WHOLE, 1))
        self._block[index] = len(blocks) - 1
        self._pos[index] = 0
        self._flags[index] = _WRITTEN

    def _aggregated(self, index: int, value):
        """The value at `index` plus `value` (a gradient array's second write there)."""
        k = int(self._block[index])
        block = self._blocks[k]
        old = block.value if block.kind == _WHOLE else block.element(int(self._pos[index]))
        if np.shape(old) != np.shape(value):
            raise _invalid(f"TensorArray {self.name}: Could not aggregate to TensorArray "
                           f"index {index} because the existing shape is "
                           f"{shape_string(np.shape(old))} but the new input shape is "
                           f"{shape_string(np.shape(value))}.")
        self._release(k, 1)
        return np.add(old, value)

    def _check_index(self, index: int) -> None:
        """A write's index is in range (a dynamic array grows to hold it)."""
        if index < 0 or (not self.dynamic_size and index >= self._length):
            raise _invalid(f"TensorArray {self.name}: Tried to write to index {index} but "
                           f"array is not resizeable and size is: {self._length}")
        if index >= self._length:
            self._length = index + 1
        self._reserve(index + 1)

    def _check_value(self, index: int, value_dtype, shape: tuple) -> None:
        """A written value's dtype and shape fit the array; the first write fixes the
        element shape under identical_element_shapes."""
        if value_dtype is not None and value_dtype is not self.dtype:
            value_dtype = dtypes.as_dtype(value_dtype)
            if value_dtype != self.dtype:
                raise _invalid(
                    f"TensorArray {self.name}: Could not write to TensorArray index {index} "
                    f"because the value dtype is {type_string(value_dtype)} but TensorArray "
                    f"dtype is {type_string(self.dtype)}.")
        fits = self._fits
        if fits is not None and fits[0] is self.element_shape and fits[1] == shape:
            return  # as the previous write (the element shape has not changed since)
        if not self.element_shape.is_compatible_with(tensor_shape.TensorShape(shape)):
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because the value shape is {shape_string(shape)} which "
                           "is incompatible with the TensorArray's inferred element shape: "
                           f"{shape_string(self.element_shape)} (consider setting "
                           "infer_shape=False).")
        if self.identical_element_shapes and not self.element_shape.is_fully_defined():
            self.element_shape = tensor_shape.TensorShape(shape)
        self._fits = (self.element_shape, shape)

    def _check_unused(self, index: int, flags: int) -> None:
        if flags & _READ:
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because it has already been read.")
        if flags & _WRITTEN:
            raise _invalid(f"TensorArray {self.name}: Could not write to TensorArray index "
                           f"{index} because it has already been written to.")

    def write_rows(self, indices: np.ndarray, value: np.ndarray, value_dtype=None) -> None:
        """value[j] at indices[j] for every j (a scatter), with the outcome of writing
        them one by one in order: checked in bulk, element by element only to find which
        error to raise."""
        with self._lock:
            n = indices.size
            if n < _BULK or not self._bulk_write(indices, value, value_dtype):
                for j, index in enumerate(indices.tolist()):
                    self._write(index, value[j, ...], value_dtype)

    def write_pieces(self, value: np.ndarray, lengths: np.ndarray, value_dtype=None) -> None:
        """value split along its first dimension into pieces of `lengths`, piece i at
        index i (a split); as write_rows, bulk when nothing fails."""
        with self._lock:
            ends = np.cumsum(lengths, dtype=np.int64)
            starts = ends - lengths
            n = lengths.size
            if n < _BULK or not self._bulk_split(value, starts, lengths, value_dtype):
                for i in range(n):
                    self._write(i, value[int(starts[i]):int(ends[i])], value_dtype)

    def _bulk_write(self, indices, value, value_dtype) -> bool:
        """Scatter in bulk; False (nothing changed) when some element would fail."""
        idx = indices.astype(np.int64, copy=False)
        return self._bulk(idx, value_dtype, value.shape[1:],
                          lambda live: _Block(value, _ROWS, live))

    def _bulk_split(self, value, starts, lengths, value_dtype) -> bool:
        """Split in bulk when every piece has the same shape check outcome as piece 0."""
        n = lengths.size
        rest = value.shape[1:]
        dim0 = self.element_shape.as_list()[0] if self.element_shape.rank else None
        if (lengths < 0).any() or (lengths != lengths[0]).any() and (
                dim0 is not None or self.identical_element_shapes):
            return False
        return self._bulk(np.arange(n), value_dtype, (int(lengths[0]),) + rest,
                          lambda live: _Block(value, _PIECES, live, starts, lengths))

    def _bulk(self, idx, value_dtype, shape0: tuple, make_block) -> bool:
        """Write the elements of one block at `idx`, if none of them fails."""
        if self.closed:
            return False
        value_dtype = self.dtype if value_dtype is None else dtypes.as_dtype(value_dtype)
        lo, hi = int(idx.min()), int(idx.max())
        if (lo < 0 or (not self.dynamic_size and hi >= self._length)
                or value_dtype != self.dtype
                or not self.element_shape.is_compatible_with(tensor_shape.TensorShape(shape0))):
            return False
        self._reserve(hi + 1)
        if self._flags[idx].any():  # written or read before
            return False
        positions = np.arange(idx.size, dtype=np.int32)
        self._pos[idx] = positions
        if not (self._pos[idx] == positions).all():  # an index given twice
            self._pos[idx] = 0
            return False
        if hi >= self._length:
            self._length = hi + 1
        if self.identical_element_shapes and not self.element_shape.is_fully_defined():
            self.element_shape = tensor_shape.TensorShape(shape0)
        self._block[idx] = self._add_block(make_block(idx.size))
        self._flags[idx] = _WRITTEN
        return True

    # -- read --------------------------------------------------------------------------------
    def read(self, index: int):
        """Read the value at `index` (TF's LockedRead): zeros of the element shape for an
        unwritten index when that shape is fully defined."""
        with self._lock:
            return self._read(int(index))

    def _read(self, index: int):
        if self.closed:
            self.check_open()
        if index < 0 or index >= self._length:
            raise _invalid(f"Tried to read from index {index} but array size is: "
                           f"{self._length}")
        if index >= self._block.size:
            self._reserve(index + 1)
        flags = int(self._flags[index])
        if not flags & _WRITTEN:
            self._fill_unwritten(np.array([index]))
            flags = _WRITTEN
        if flags & _CLEARED:
            raise _invalid(f"TensorArray {self.name}: Could not read index {index} twice "
                           "because it was cleared after a previous read (perhaps try "
                           "setting clear_after_read = false?).")
        k = int(self._block[index])
        block = self._blocks[k]
        value = block.value if block.kind == _WHOLE else block.element(int(self._pos[index]))
        if self.clear_after_read:
            self._flags[index] = flags | _READ | _CLEARED
            self._release(k, 1)
        elif not flags & _READ:
            self._flags[index] = flags | _READ
        return value

    def _fill_unwritten(self, idx: np.ndarray) -> None:
        """Unwritten indices being read become zeros of the element shape, or TF's error
        (naming the first of them) when that shape is not fully defined."""
        if not self.element_shape.is_fully_defined():
            raise _invalid(
                f"TensorArray {self.name}: Could not read from TensorArray index "
                f"{int(idx[0])}.  Furthermore, the element shape is not fully defined: "
                f"{shape_string(self.element_shape)}.  It is possible you are working "
                "with a resizeable TensorArray and stop_gradients is not allowing the "
                "gradients to be written.  If you set the full element_shape property "
                "on the forward TensorArray, the proper all-zeros tensor will be "
                "returned instead of incurring this error.")
        zeros = np.zeros(self.element_shape.as_list(), dtype=self._np_dtype())
        k = self._add_block(_Block(zeros, _WHOLE, idx.size))
        self._block[idx] = k
        self._pos[idx] = 0
        self._flags[idx] = _WRITTEN

    def read_many(self, indices: np.ndarray) -> _Elements:
        """Read the values at `indices`, with the outcome of reading them one by one in
        order (TF's ReadMany): in bulk when none fails."""
        with self._lock:
            idx = indices.astype(np.int64, copy=False)
            if idx.size >= _BULK and self._can_read_in_bulk(idx):
                return self._read_in_bulk(idx)
            return _Elements.of_values([self._read(i) for i in idx.tolist()])

    def _can_read_in_bulk(self, idx: np.ndarray) -> bool:
        """No read of `idx` would fail: open, in range, none cleared, none read twice
        when reads clear, zeros known for the unwritten ones."""
        if self.closed or int(idx.min()) < 0 or int(idx.max()) >= self._length:
            return False
        self._reserve(self._length)
        flags = self._flags[idx]
        if (flags & _CLEARED).any():
            return False
        if not self.element_shape.is_fully_defined() and not (flags & _WRITTEN).all():
            return False
        return not (self.clear_after_read and _has_duplicates(idx, self._length))

    def _read_in_bulk(self, idx: np.ndarray) -> _Elements:
        unwritten = (self._flags[idx] & _WRITTEN) == 0
        if unwritten.any():
            self._fill_unwritten(idx[unwritten])
        ids, pos = self._block[idx], self._pos[idx]
        distinct = _unique(ids)
        elements = _Elements(self._blocks, ids, pos, distinct=distinct)
        self._flags[idx] |= _READ | (_CLEARED if self.clear_after_read else 0)
        if self.clear_after_read:
            if len(distinct) == 1:
                self._release(distinct[0], ids.size)
            else:
                counts = np.bincount(ids)
                for k in distinct:
                    self._release(k, int(counts[k]))
        return elements


def _has_duplicates(idx: np.ndarray, limit: int) -> bool:
    """Whether some index (all in [0, limit)) is given twice: by sorting when there are
    few, else by marking them (np.bincount would hold the GIL throughout)."""
    if idx.size * 8 < limit:
        return np.unique(idx).size != idx.size
    seen = np.zeros(limit, bool)
    seen[idx] = True
    return int(np.count_nonzero(seen)) != idx.size


class _Elements:
    """Values read from a TensorArray. From a few writes they stay (block, position)
    pairs, so that stacking or concatenating them is a slice or one fancy-index copy per
    block instead of n arrays; from many (one write per element) they are a list."""

    def __init__(self, blocks: list, ids: np.ndarray | None, pos: np.ndarray | None,
                 values: list | None = None, distinct: list[int] = ()):
        self._ids, self._pos, self._values = ids, pos, values
        self._blocks: dict[int, _Block] = {}
        if values is None:
            if len(distinct) > _FEW_BLOCKS:
                self._values = [blocks[k].element(p)
                                for k, p in zip(ids.tolist(), pos.tolist(), strict=True)]
            else:
                self._blocks = {k: blocks[k] for k in distinct}

    @classmethod
    def of_values(cls, values: list) -> _Elements:
        return cls([], None, None, values)

    def __len__(self) -> int:
        return len(self._values) if self._values is not None else self._ids.size

    def shape(self, j: int) -> tuple:
        if self._values is not None:
            return np.shape(self._values[j])
        return self._blocks[int(self._ids[j])].element_shape(int(self._pos[j]))

    def first_mismatch(self, same) -> int | None:
        """The first j whose shape fails `same(shape)`, or None."""
        if self._values is not None:
            return next((j for j, v in enumerate(self._values) if not same(np.shape(v))),
                        None)
        bad = np.zeros(self._ids.size, bool)
        for k, block in self._blocks.items():
            mine = np.flatnonzero(self._ids == k)
            if block.kind != _PIECES:
                if not same(block.element_shape(0)):
                    bad[mine] = True
                continue
            lengths = block.lengths[self._pos[mine]]
            for length in np.unique(lengths).tolist():
                if not same((length,) + block.value.shape[1:]):
                    bad[mine[lengths == length]] = True
        hits = np.flatnonzero(bad)
        return int(hits[0]) if hits.size else None

    def stack(self) -> np.ndarray:
        """The elements stacked along a new first dimension (all of one shape)."""
        if self._values is not None:
            return np.stack([np.asarray(v) for v in self._values])
        if len(self._blocks) == 1:
            (block,) = self._blocks.values()
            return _stack_block(block, self._pos)
        first = self._blocks[int(self._ids[0])]
        out = np.empty((self._ids.size,) + self.shape(0), dtype=np.asarray(first.value).dtype)
        for k, block in self._blocks.items():
            mine = self._ids == k
            out[mine] = _stack_block(block, self._pos[mine])
        return out

    def concat(self) -> tuple[np.ndarray, np.ndarray]:
        """The elements joined along their first dimension, and their lengths there."""
        if self._values is None and len(self._blocks) == 1:
            (block,) = self._blocks.values()
            joined = _concat_block(block, self._pos)
            if joined is not None:
                return joined
        values = self._values
        if values is None:
            values = [self._blocks[k].element(p)
                      for k, p in zip(self._ids.tolist(), self._pos.tolist(), strict=True)]
        values = [np.asarray(v) for v in values]
        lengths = np.array([v.shape[0] for v in values], dtype=np.int64)
        return np.concatenate(values, axis=0), lengths


# Reads from more distinct writes than this are handled element by element.
_FEW_BLOCKS = 8


def _unique(ids: np.ndarray) -> list[int]:
    """The distinct block ids in `ids`, in O(n) (one min and max when there is one)."""
    lo = int(ids.min())
    if lo == int(ids.max()):
        return [lo]
    return np.flatnonzero(np.bincount(ids)).tolist()


def _run(pos: np.ndarray) -> int | None:
    """The first position when `pos` is consecutive ascending positions, else None."""
    first = int(pos[0])
    if int(pos[-1]) - first != pos.size - 1:
        return None
    return first if (pos == np.arange(first, first + pos.size)).all() else None


def _stack_block(block: _Block, pos: np.ndarray) -> np.ndarray:
    """The elements of one block at positions `pos`, stacked (all of one shape)."""
    n = pos.size
    value = block.value
    if block.kind == _WHOLE:
        out = np.empty((n,) + np.shape(value), dtype=np.asarray(value).dtype)
        out[...] = value
        return out
    if block.kind == _ROWS:
        first = _run(pos)
        return value[first:first + n] if first is not None else value[pos]
    length = int(block.lengths[pos[0]])
    rows = block.starts[pos][:, None] + np.arange(length)
    return value[rows]


def _concat_block(block: _Block, pos: np.ndarray):
    """(joined, lengths) for consecutive elements of one scatter or split block (a view of
    its value); None otherwise."""
    first = _run(pos)
    if first is None or block.kind == _WHOLE:
        return None
    n = pos.size
    value = block.value
    if block.kind == _ROWS:
        rows = value[first:first + n]
        return rows.reshape((-1,) + value.shape[2:]), np.full(n, value.shape[1], np.int64)
    start = int(block.starts[first])
    lengths = block.lengths[first:first + n].astype(np.int64)
    return value[start:start + int(lengths.sum())], lengths


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


def _element_size(handle) -> int:
    """Elements per element of the TensorArray behind `handle` (1 when it is not one:
    compute then raises TF's error, inline)."""
    try:
        return get_tensor_array(handle).element_size_hint()
    except errors.InvalidArgumentError:
        return 1



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
        name = name.decode(errors="backslashreplace") if isinstance(name, bytes) else name
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


@register_kernel("TensorArrayGradV3", "CPU")
class TensorArrayGradOp(OpKernel):
    """The gradient TensorArray of a TensorArray for one gradient `source`: created at
    the forward array's size on first use, the same one afterwards (in every iteration of
    a gradient loop); its writes to one index are summed."""

    def __init__(self, ctx):
        super().__init__(ctx)
        source = ctx.get_attr("source")
        self.source = source.decode() if isinstance(source, bytes) else source

    def compute(self, ctx, inputs):
        handle, flow = inputs
        ta = get_tensor_array(handle)
        resources = getattr(ctx, "step_resources", None)
        key = ("_tensor_array_grads", ta.name, self.source)
        grad = resources.get(key) if resources is not None else None
        if grad is None:
            size = ta.size()
            grad = TensorArray(f"{ta.name}@{self.source}", ta.dtype, size, ta.element_shape,
                               identical_element_shapes=False, dynamic_size=False,
                               clear_after_read=True)
            grad.multiple_writes_aggregate = True
            if resources is not None:
                resources[key] = grad
        return (make_handle(grad), flow)


class _UndoableOnHandle(OpKernel):
    """A kernel changing only the TensorArray behind its handle (input 0): a compiled
    while loop may run it, checkpointing the array first (OpKernel.undoable_input)."""

    undoable_input = 0

    def __init__(self, ctx, dtype_attr: str):
        super().__init__(ctx)
        self.dtype = ctx.get_attr(dtype_attr, None)
        self._want = None if self.dtype is None else dtypes.as_dtype(self.dtype)

    def undoable_state(self, value):
        try:
            return get_tensor_array(value)
        except errors.InvalidArgumentError:
            return None

    def _plain(self, handle, index) -> TensorArray | None:
        """The TensorArray behind `handle` when the call needs none of compute's checks
        (a 0-d handle of an array of this kernel's dtype, a scalar index; what a compiled
        loop sees every iteration), else None."""
        if type(handle) is not np.ndarray or handle.shape or not (
                type(index) is np.ndarray and not index.shape or isinstance(index, np.integer)):
            return None
        ta = handle[()]
        if type(ta) is not TensorArray or (ta.dtype is not self._want and self._want is not None):
            return None
        return ta


@register_kernel("TensorArrayWriteV3", "CPU")
class TensorArrayWriteOp(_UndoableOnHandle):
    """Write `value` at `index`; flow_out is flow_in."""

    def __init__(self, ctx):
        super().__init__(ctx, "T")

    def compute(self, ctx, inputs):
        handle, index, value, flow = inputs
        index = _scalar_int(index, "TensorArray index")
        ta = get_tensor_array(handle)
        _check_dtype(ta, self.dtype, requested=False)
        ta.write(index, value, self.dtype)
        return (flow,)

    def compiled_fn(self):
        def write(handle, index, value, flow):
            ta = self._plain(handle, index)
            if ta is None:
                return self.compute(None, [handle, index, value, flow])[0]
            ta.write(index, value, self._want)
            return flow
        return write


@register_kernel("TensorArrayReadV3", "CPU")
class TensorArrayReadOp(_UndoableOnHandle):
    """Read the value at `index`."""

    def __init__(self, ctx):
        super().__init__(ctx, "dtype")

    def compute(self, ctx, inputs):
        handle, index, _flow_in = inputs
        index = _scalar_int(index, "TensorArray index")
        ta = get_tensor_array(handle)
        _check_dtype(ta, self.dtype, requested=True)
        return (ta.read(index),)

    def compiled_fn(self):
        def read(handle, index, flow):
            ta = self._plain(handle, index)
            if ta is None:
                return self.compute(None, [handle, index, flow])[0]
            return ta.read(index)
        return read


@register_kernel("TensorArrayGatherV3", "CPU")
class TensorArrayGatherOp(OpKernel):
    """Stack the values at `indices` along a new first dimension."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return inputs[1].size * _element_size(inputs[0]) > BIG

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
        elements = ta.read_many(indices)
        shape0 = elements.shape(0)
        if not self.element_shape.is_compatible_with(tensor_shape.TensorShape(shape0)):
            raise _invalid(f"TensorArray was passed element_shape "
                           f"{shape_string(self.element_shape)} which does not match the "
                           f"Tensor at index 0: {shape_string(shape0)}")
        bad = elements.first_mismatch(lambda shape: shape == shape0)
        if bad is not None:
            raise _invalid("TensorArray has inconsistent shapes.  Index 0 has shape: "
                           f"{shape_string(shape0)} but index {bad} has shape: "
                           f"{shape_string(elements.shape(bad))}")
        return (elements.stack(),)


@register_kernel("TensorArrayScatterV3", "CPU")
class TensorArrayScatterOp(OpKernel):
    """Write value[i] at indices[i]; flow_out is flow_in."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return inputs[1].size > BIG

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
        ta.write_rows(indices, value, self.dtype)
        return (flow,)


@register_kernel("TensorArrayConcatV3", "CPU")
class TensorArrayConcatOp(OpKernel):
    """Concatenate all values along their first dimension; also output their lengths."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        try:
            size = get_tensor_array(inputs[0])._length
        except errors.InvalidArgumentError:
            return False
        return size * _element_size(inputs[0]) > BIG

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
        elements = ta.read_many(np.arange(size))
        shape0 = elements.shape(0)
        if not shape0:
            raise _scalar_in_concat(0)
        except0 = shape0[1:]
        if not self.element_shape_except0.is_compatible_with(tensor_shape.TensorShape(except0)):
            raise _invalid(
                "TensorArray was passed element_shape_except0 "
                f"{shape_string(self.element_shape_except0)} but index 0 has (excepting "
                f"dimension 0) shape: {shape_string(except0)} which does not match.")
        bad = elements.first_mismatch(lambda shape: shape[1:] == except0 and len(shape) > 0)
        if bad is not None:
            shape = elements.shape(bad)
            if not shape:
                raise _scalar_in_concat(bad)
            raise _invalid("TensorArray has inconsistent shapes.  Index 0 has (excepting "
                           f"dimension 0) shape: {shape_string(except0)} but index {bad} "
                           f"has (excepting dimension 0) shape: {shape_string(shape[1:])}")
        return elements.concat()


def _scalar_in_concat(index: int) -> errors.InvalidArgumentError:
    return _invalid(f"Concat saw a scalar shape at index {index} but requires at least "
                    "vectors.  Did you mean to call pack?")


@register_kernel("TensorArraySplitV3", "CPU")
class TensorArraySplitOp(OpKernel):
    """Split `value` along its first dimension into pieces of `lengths`, one per index."""

    expensive = None

    def is_expensive(self, inputs: list) -> bool:
        return inputs[2].size > BIG

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
        ta.write_pieces(value, lengths.astype(np.int64), self.dtype)
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
