"""Kernels of TF's lookup tables: HashTableV2 (filled once by InitializeTableV2 or
InitializeTableFromTextFileV2; a second initialization changes nothing, as TF's) and
MutableHashTableV2 (insert, remove, import), with find, size and export; and the TF 1
ops with a ref handle, whose handle here carries the table itself.

A table lives in the device's ResourceMgr under (container, "LookupTable", name): the
node's shared_name, else its name with use_node_name_sharing, else a name of its own
(one table per kernel, which the session's executors share). Keys are int64s or strings,
values one scalar per key; errors are TF's (lookup_table_op.cc, lookup_util.cc)."""

from __future__ import annotations

import itertools
import threading

import numpy as np

from aioflow.framework import dtypes, errors
from aioflow.framework.io_errors import io_error
from aioflow.framework.op_kernel import OpKernel, register_kernel
from aioflow.framework.var import ResourceHandle, handle_value
from aioflow.kernels.math.cwise_kernels import shape_str
from aioflow.kernels.state.resource_variable_kernels import handle_of
from aioflow.kernels.state.variable_kernels import _type_name

TABLE_TYPE = "LookupTable"
_CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
_unique = itertools.count()
WHOLE_LINE, LINE_NUMBER = -2, -1


def _invalid(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, message)


def _failed(message: str) -> errors.FailedPreconditionError:
    return errors.FailedPreconditionError(None, None, message)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _as_keys(array: np.ndarray, dtype) -> list:
    """Dict keys for the elements of `array` (bytes for strings, Python numbers else)."""
    flat = np.ravel(array).tolist()
    if dtype == dtypes.string:
        return [v if isinstance(v, bytes) else str(v).encode() for v in flat]
    return flat


class LookupTable:
    """One table: key and value types, a dict, a lock; `initializable` tables are
    filled once (HashTable), the others change by insert/remove/import."""

    def __init__(self, key_dtype, value_dtype, initializable: bool, container: str = "",
                 name: str = ""):
        self.key_dtype, self.value_dtype = key_dtype, value_dtype
        self.container, self.name = container, name
        self.initializable = initializable
        self.initialized = not initializable
        self.data: dict = {}
        self.lock = threading.Lock()

    def read_ref(self, input_name: str) -> np.ndarray:
        """A TF 1 ref handle read as a value (fetched, say): TF's [container, name]."""
        out = np.empty(2, dtype=object)
        out[:] = [self.container.encode(), self.name.encode()]
        return out

    def check_types(self, keys, values_or_default, what: str = "Value") -> None:
        key_dtype = dtypes.as_dtype(keys.dtype) if keys.dtype != object else dtypes.string
        if key_dtype != self.key_dtype:
            raise _invalid(f"Key must be type {_type_name(self.key_dtype)} but got "
                           f"{_type_name(key_dtype)}")
        if values_or_default is not None:
            v = values_or_default
            value_dtype = dtypes.as_dtype(v.dtype) if v.dtype != object else dtypes.string
            if value_dtype != self.value_dtype:
                raise _invalid(f"{what} must be type {_type_name(self.value_dtype)} but got "
                               f"{_type_name(value_dtype)}")

    def find(self, keys: np.ndarray, default: np.ndarray) -> np.ndarray:
        if np.shape(default) not in ((), (1,)):
            raise _invalid(f"Expected shape [] or [1] for default value, got "
                           f"{shape_str(np.shape(default))}")
        with self.lock:
            if not self.initialized:
                raise _failed("Table not initialized.")
            get, data = self.data.get, self.data
            fallback = np.ravel(default)[0]
            found = [get(k, fallback) for k in _as_keys(keys, self.key_dtype)] if data \
                else [fallback] * int(np.size(keys))
        out = np.empty(len(found), dtype=self.value_dtype.as_numpy_dtype
                       if self.value_dtype != dtypes.string else object)
        out[:] = found
        return out.reshape(np.shape(keys))

    def initialize(self, keys: list, values: list) -> None:
        """Fill an initializable table once; later calls change nothing (TF's)."""
        with self.lock:
            if self.initialized:
                return
            data: dict = {}
            for k, v in zip(keys, values, strict=True):
                old = data.setdefault(k, v)
                if old != v:
                    raise _failed(f"HashTable has different value for same key. Key "
                                  f"{_text(k)} has {_text(old)} and trying "
                                  f"to add value {_text(v)}")
            self.data = data
            self.initialized = True

    def insert(self, keys: list, values: list) -> None:
        with self.lock:
            self.data.update(zip(keys, values, strict=True))

    def remove(self, keys: list) -> None:
        with self.lock:
            for k in keys:
                self.data.pop(k, None)

    def replace(self, keys: list, values: list) -> None:
        with self.lock:
            self.data = dict(zip(keys, values, strict=True))

    def num_entries(self) -> int:
        with self.lock:
            return len(self.data) if self.initialized else 0

    def export(self) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            keys, values = list(self.data), list(self.data.values())
        return _column(keys, self.key_dtype), _column(values, self.value_dtype)


def _column(items: list, dtype) -> np.ndarray:
    out = np.empty(len(items), dtype=object if dtype == dtypes.string
                   else dtype.as_numpy_dtype)
    out[:] = items
    return out


class _TableOp(OpKernel):
    """HashTableV2 / MutableHashTableV2: the table's handle (the table made once)."""

    initializable = True
    ref_handle = False

    def __init__(self, ctx):
        super().__init__(ctx)
        self.key_dtype = dtypes.as_dtype(ctx.get_attr("key_dtype"))
        self.value_dtype = dtypes.as_dtype(ctx.get_attr("value_dtype"))
        self.container = _text(ctx.get_attr("container", b""))
        name = _text(ctx.get_attr("shared_name", b""))
        if not name:
            name = (ctx.name if ctx.get_attr("use_node_name_sharing", False)
                    else f"_{next(_unique)}_{ctx.name}")
        self.table_name = name
        self.device = ctx.node_def.device or _CPU0
        self._cached = (None, None)

    def compute(self, ctx, inputs):
        mgr, value = self._cached
        if mgr is ctx.resource_mgr:
            return (value,)
        container = self.container or ctx.resource_mgr.default_container
        table = ctx.resource_mgr.lookup_or_create(
            self.container, TABLE_TYPE, self.table_name,
            lambda: LookupTable(self.key_dtype, self.value_dtype, self.initializable,
                                container, self.table_name))
        if (table.key_dtype, table.value_dtype) != (self.key_dtype, self.value_dtype):
            raise _invalid(f"Conflicting key/value dtypes {_type_name(self.key_dtype)}->"
                           f"{_type_name(self.value_dtype)} with "
                           f"{_type_name(table.key_dtype)}-{_type_name(table.value_dtype)} "
                           f"for table {self.table_name}")
        if self.ref_handle:
            value = table
        else:
            value = handle_value(ResourceHandle(
                self.device, self.container or ctx.resource_mgr.default_container,
                self.table_name, TABLE_TYPE))
            value.flags.writeable = False
        self._cached = (ctx.resource_mgr, value)
        return (value,)


@register_kernel("HashTableV2", "CPU")
class HashTableOp(_TableOp):
    """A table filled once by an initializer."""


@register_kernel("MutableHashTableV2", "CPU")
class MutableHashTableOp(_TableOp):
    """A table changed by insert, remove and import."""

    initializable = False


@register_kernel("HashTable", "CPU")
class RefHashTableOp(HashTableOp):
    ref_handle = True


@register_kernel("MutableHashTable", "CPU")
class RefMutableHashTableOp(MutableHashTableOp):
    ref_handle = True


def table_of(ctx, value) -> LookupTable:
    """The table an input carries: the table itself (ref handle) or its resource handle."""
    if isinstance(value, LookupTable):
        return value
    handle = handle_of(value)
    return ctx.resource_mgr.lookup(handle.container, TABLE_TYPE, handle.name)


def _register(name: str):
    """Register a kernel for the resource op `nameV2` and the ref op `name`."""
    def wrap(cls):
        register_kernel(name + "V2", "CPU")(cls)
        register_kernel(name, "CPU")(cls)
        return cls
    return wrap


class _TableKernel(OpKernel):
    expensive = None

    def is_expensive(self, inputs) -> bool:
        return len(inputs) > 1 and np.size(inputs[1]) > 100_000


@_register("LookupTableFind")
class LookupTableFindOp(_TableKernel):
    """Each key's value, or the default."""

    def compute(self, ctx, inputs):
        table = table_of(ctx, inputs[0])
        keys, default = inputs[1], np.asarray(inputs[2])
        table.check_types(np.asarray(keys), default)
        return (table.find(np.asarray(keys), default),)


@_register("LookupTableInsert")
class LookupTableInsertOp(_TableKernel):
    def compute(self, ctx, inputs):
        table = table_of(ctx, inputs[0])
        keys, values = np.asarray(inputs[1]), np.asarray(inputs[2])
        _mutable(table, "insert")
        table.check_types(keys, values)
        _same_size(keys, values)
        table.insert(_as_keys(keys, table.key_dtype), np.ravel(values).tolist())
        return ()


@register_kernel("LookupTableRemoveV2", "CPU")
class LookupTableRemoveOp(_TableKernel):
    def compute(self, ctx, inputs):
        table = table_of(ctx, inputs[0])
        keys = np.asarray(inputs[1])
        _mutable(table, "remove")
        table.check_types(keys, None)
        table.remove(_as_keys(keys, table.key_dtype))
        return ()


@_register("LookupTableImport")
class LookupTableImportOp(_TableKernel):
    """Replaces a mutable table's contents; fills an initializable one once."""

    def compute(self, ctx, inputs):
        table = table_of(ctx, inputs[0])
        keys, values = np.asarray(inputs[1]), np.asarray(inputs[2])
        table.check_types(keys, values)
        _same_size(keys, values)
        pairs = _as_keys(keys, table.key_dtype), np.ravel(values).tolist()
        (table.initialize if table.initializable else table.replace)(*pairs)
        return ()


@_register("LookupTableSize")
class LookupTableSizeOp(OpKernel):
    def compute(self, ctx, inputs):
        return (np.int64(table_of(ctx, inputs[0]).num_entries()),)


@_register("LookupTableExport")
class LookupTableExportOp(OpKernel):
    def compute(self, ctx, inputs):
        return table_of(ctx, inputs[0]).export()


def _mutable(table: LookupTable, what: str) -> None:
    if table.initializable:
        raise _invalid(f"Table does not support {what}: it is initialized once (a "
                       f"HashTable)")


def _same_size(keys, values) -> None:
    if np.size(keys) != np.size(values):
        raise _invalid(f"Expected shape {shape_str(np.shape(keys))} for value, got "
                       f"{shape_str(np.shape(values))}")


def _initializable(table: LookupTable, handle) -> LookupTable:
    if not table.initializable:
        name = handle.name if isinstance(handle, ResourceHandle) else ""
        raise _invalid(f"Table {getattr(handle, 'container', '')} {name} is not "
                       f"initializable")
    return table


@_register("InitializeTable")
class InitializeTableOp(_TableKernel):
    """Fill a table from a keys vector and a values vector."""

    def compute(self, ctx, inputs):
        table = table_of(ctx, inputs[0])
        _initializable(table, inputs[0])
        keys, values = np.asarray(inputs[1]), np.asarray(inputs[2])
        table.check_types(keys, values)
        if keys.ndim != 1:
            raise _invalid(f"Keys must be a vector, but received shape"
                           f"{shape_str(keys.shape)}")
        if values.ndim != 1:
            raise _invalid(f"Values must be a vector, but received shape"
                           f"{shape_str(values.shape)}")
        if keys.size != values.size:
            raise _invalid(f"Keys and values must have the same size {keys.size} vs "
                           f"{values.size}")
        table.initialize(_as_keys(keys, table.key_dtype), values.tolist())
        return ()


@_register("InitializeTableFromTextFile")
class InitializeTableFromTextFileOp(OpKernel):
    """Fill a table from the lines of a text file: a key and a value per line, each the
    whole line (-2), its number (-1) or a column split at `delimiter`."""

    expensive = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.key_index = int(ctx.get_attr("key_index"))
        self.value_index = int(ctx.get_attr("value_index"))
        self.vocab_size = int(ctx.get_attr("vocab_size", -1))
        delimiter = ctx.get_attr("delimiter", b"\t")
        delimiter = delimiter if isinstance(delimiter, bytes) else delimiter.encode()
        if len(delimiter) != 1:
            raise _invalid(f"delimiter should be only 1 char, got {len(delimiter)}")
        self.delimiter = delimiter
        self.offset = int(ctx.get_attr("offset", 0))

    def compute(self, ctx, inputs):
        table = _initializable(table_of(ctx, inputs[0]), inputs[0])
        filename = np.asarray(inputs[1])
        if filename.ndim != 0:
            raise _invalid(f"filename should be a single string, but got "
                           f"{shape_str(filename.shape)}")
        path = _text(filename.item())
        _check_indices(table, self.key_index, self.value_index)
        keys, values = self._read(path, table)
        table.initialize(keys, values)
        return ()

    def _read(self, path: str, table: LookupTable) -> tuple[list, list]:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise io_error(e, path) from None
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        keys, values = [], []
        position = 0
        split = max(self.key_index, self.value_index) >= 0
        for number, line in enumerate(lines):
            position += len(line) + 1
            if self.vocab_size != -1 and number >= self.vocab_size:
                break
            if not line:
                raise _invalid(f"Invalid content in {path}: empty line found at position "
                               f"{position}.")
            tokens = line.split(self.delimiter) if split else []
            needed = max(self.key_index, self.value_index) + 1
            if split and len(tokens) < needed:
                raise _invalid(f"Invalid number of columns in {path} line {number} "
                               f"({_text(line)}) : expected at least {needed} got "
                               f"{len(tokens)}")
            keys.append(self._field(line, tokens, self.key_index, table.key_dtype, number))
            values.append(self._field(line, tokens, self.value_index, table.value_dtype,
                                      number))
        if self.vocab_size != -1 and len(keys) != self.vocab_size:
            raise _invalid(f"Invalid vocab_size in {path}: expected {self.vocab_size} but "
                           f"got {len(keys)}")
        return keys, values

    def _field(self, line: bytes, tokens: list, index: int, dtype, number: int):
        if index == LINE_NUMBER:
            return number + self.offset
        token = line if index == WHOLE_LINE else tokens[index]
        if dtype == dtypes.string:
            return token
        try:
            if dtype in (dtypes.int64, dtypes.int32):
                text = token.strip()  # (TF's safe_strto64 skips spaces at either end)
                if b"_" in text:
                    raise ValueError
                value = int(text)
                info = np.iinfo(dtype.as_numpy_dtype)
                if not info.min <= value <= info.max:
                    raise ValueError
                return value + (self.offset if dtype == dtypes.int32 else 0)
            return float(token)
        except ValueError:
            raise _invalid(f"Field {_text(token)} in line {number} is not a valid "
                           f"{_type_name(dtype)}.") from None


def _check_indices(table: LookupTable, key_index: int, value_index: int) -> None:
    """The key and value sources the table's types allow (TF's checks, in its words)."""
    if key_index == LINE_NUMBER and table.key_dtype != dtypes.int64:
        raise _invalid(f"Key index for line number requires table key dtype of int64, got "
                       f"{_type_name(table.key_dtype)}")
    if key_index == WHOLE_LINE and not (table.key_dtype.is_integer
                                        or table.key_dtype == dtypes.string):
        raise _invalid(f"Key index for whole line requires string or integer table key, got "
                       f"{_type_name(table.key_dtype)}")
    if value_index == LINE_NUMBER and table.value_dtype != dtypes.int64:
        raise _invalid(f"Value index for line number requires table value dtype of int64, "
                       f"got {_type_name(table.value_dtype)}")
    if value_index == WHOLE_LINE and not (table.value_dtype.is_integer
                                          or table.value_dtype == dtypes.string):
        raise _invalid(f"Value index for whole line requires table value dtype of integer "
                       f"or string, got {_type_name(table.value_dtype)}")
