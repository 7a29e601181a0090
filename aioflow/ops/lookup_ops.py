"""Lookup tables with TF's names (tf.lookup, tf.compat.v1.lookup): StaticHashTable
(HashTableV2, filled by its initializer), StaticVocabularyTable (ids for known keys,
hash buckets past them for the rest), MutableHashTable, their initializers
(KeyValueTensorInitializer: LookupTableImportV2; TextFileInitializer:
InitializeTableFromTextFileV2) and tables_initializer.

As in a TF 1 graph, a table's initializer op is built with the table and added to the
`table_initializer` collection; run `af.tables_initializer()` once (a SavedModel's
main op does) before looking anything up: until then a lookup fails with
FailedPreconditionError "Table not initialized."."""

from __future__ import annotations

from aioflow.framework import dtypes, ops
from aioflow.framework.op_def_library import apply_op
from aioflow.ops import array_ops, math_ops, string_ops
from aioflow.ops.constant_op import constant
from aioflow.ops.variables import GraphKeys


class TextFileIndex:
    """Where a TextFileInitializer takes a key or value: the whole line or its number."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


class KeyValueTensorInitializer:
    """Fills a table from a keys tensor and a values tensor (vectors of one length)."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        with ops.name_scope(name, "key_value_init", [keys, values]) as scope:
            self._keys = ops.convert_to_tensor(keys, dtype=key_dtype, name="keys")
            self._values = ops.convert_to_tensor(values, dtype=value_dtype, name="values")
            self._name = scope
        self.key_dtype, self.value_dtype = self._keys.dtype, self._values.dtype

    def initialize(self, table) -> ops.Operation:
        _check_dtypes(table, self.key_dtype, self.value_dtype)
        with ops.name_scope(self._name):
            op = apply_op("LookupTableImportV2", table_handle=table.resource_handle,
                          keys=self._keys, values=self._values)
        ops.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        return op


class TextFileInitializer:
    """Fills a table from a text file: per line a key and a value, each the whole line
    (TextFileIndex.WHOLE_LINE), its number (LINE_NUMBER) or a column at `delimiter`."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index,
                 vocab_size=None, delimiter="\t", name=None, value_index_offset=0):
        if key_index < -2 or value_index < -2:
            raise ValueError(f"Invalid key_index {key_index} or value_index {value_index}")
        if key_index == TextFileIndex.LINE_NUMBER and key_dtype != dtypes.int64:
            raise ValueError(f"Signature mismatch. Keys must be dtype {dtypes.int64}, got "
                             f"{key_dtype}.")
        if value_index == TextFileIndex.LINE_NUMBER and value_dtype != dtypes.int64:
            raise ValueError(f"Signature mismatch. Values must be dtype {dtypes.int64}, "
                             f"got {value_dtype}.")
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"Invalid vocab_size {vocab_size}.")
        self._filename = filename
        self.key_dtype, self.value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(
            value_dtype)
        self._key_index, self._value_index = key_index, value_index
        self._vocab_size = vocab_size
        self._delimiter = delimiter
        self._offset = value_index_offset
        self._name = name

    def initialize(self, table) -> ops.Operation:
        _check_dtypes(table, self.key_dtype, self.value_dtype)
        with ops.name_scope(self._name, "text_file_init", [table.resource_handle]):
            filename = ops.convert_to_tensor(self._filename, dtypes.string, name="asset_filepath")
            op = apply_op("InitializeTableFromTextFileV2", table_handle=table.resource_handle,
                          filename=filename, key_index=self._key_index,
                          value_index=self._value_index,
                          vocab_size=-1 if self._vocab_size is None else self._vocab_size,
                          delimiter=self._delimiter, offset=self._offset)
        ops.add_to_collection(GraphKeys.TABLE_INITIALIZERS, op)
        if filename.op.type == "Const":
            ops.add_to_collection(GraphKeys.ASSET_FILEPATHS, filename)
        return op


def _check_dtypes(table, key_dtype, value_dtype) -> None:
    if key_dtype.base_dtype != table.key_dtype:
        raise TypeError(f"Invalid key dtype for table, expected {table.key_dtype} but got "
                        f"{key_dtype}.")
    if value_dtype.base_dtype != table.value_dtype:
        raise TypeError(f"Invalid value dtype for table, expected {table.value_dtype} but "
                        f"got {value_dtype}.")


class _Table:
    """What the tables share: the handle op, find, size, export."""

    def __init__(self, op_type: str, key_dtype, value_dtype, default_value, name,
                 shared_name=None):
        self.key_dtype, self.value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(
            value_dtype)
        self.resource_handle = apply_op(op_type, name=name, key_dtype=self.key_dtype,
                                        value_dtype=self.value_dtype,
                                        shared_name=shared_name or "")
        self.name = self.resource_handle.op.name
        self.default_value = (None if default_value is None else ops.convert_to_tensor(
            default_value, dtype=self.value_dtype, name="default_value"))

    def lookup(self, keys, name=None) -> ops.Tensor:
        """Each key's value (the default where the table has none)."""
        with ops.name_scope(name, f"{self.name}_Lookup", [keys]):
            keys = ops.convert_to_tensor(keys, dtype=self.key_dtype, name="keys")
            return apply_op("LookupTableFindV2", table_handle=self.resource_handle,
                            keys=keys, default_value=self.default_value)

    def size(self, name=None) -> ops.Tensor:
        with ops.name_scope(name, f"{self.name}_Size"):
            return apply_op("LookupTableSizeV2", table_handle=self.resource_handle)

    def export(self, name=None):
        """(keys, values) of the whole table, in no particular order."""
        with ops.name_scope(name, f"{self.name}_lookup_table_export_values"):
            return apply_op("LookupTableExportV2", table_handle=self.resource_handle,
                            Tkeys=self.key_dtype, Tvalues=self.value_dtype)


class StaticHashTable(_Table):
    """A table filled once by `initializer`; missing keys give `default_value`."""

    def __init__(self, initializer, default_value, name=None):
        super().__init__("HashTableV2", initializer.key_dtype, initializer.value_dtype,
                         default_value, name or "hash_table")
        self._initializer = initializer
        self.initializer = initializer.initialize(self)


StaticHashTableV1 = StaticHashTable


class StaticVocabularyTable:
    """Ids for keys: the initializer's for known keys, else num_oov_buckets hash buckets
    after them (FarmHash of the key, or of its decimal text for integer keys)."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None):
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        if initializer is not None and initializer.value_dtype != dtypes.int64:
            raise TypeError(f"Invalid `value_dtype`, expected {dtypes.int64} but got "
                            f"{initializer.value_dtype}.")
        self._num_oov_buckets = num_oov_buckets
        self._table = None
        key_dtype = initializer.key_dtype if initializer is not None else dtypes.string
        self.key_dtype = dtypes.as_dtype(lookup_key_dtype or key_dtype)
        self.value_dtype = dtypes.int64
        with ops.name_scope(name, "hash_table"):
            if initializer is not None:
                self._table = StaticHashTable(initializer, -1)
                self.initializer = self._table.initializer
            else:
                self.initializer = array_ops.no_op()
        self.resource_handle = (self._table.resource_handle if self._table is not None
                                else None)

    def size(self, name=None) -> ops.Tensor:
        with ops.name_scope(name, "size"):
            base = self._table.size() if self._table is not None else constant(0, dtypes.int64)
            return math_ops.add(base, self._num_oov_buckets)

    def lookup(self, keys, name=None) -> ops.Tensor:
        with ops.name_scope(name, "lookup", [keys]):
            keys = ops.convert_to_tensor(keys, dtype=self.key_dtype, name="keys")
            text = keys if keys.dtype == dtypes.string else string_ops.as_string(keys)
            buckets = string_ops.to_hash_bucket_fast(text, self._num_oov_buckets,
                                                     name="hash_bucket")
            if self._table is None:
                return buckets
            ids = self._table.lookup(keys)
            buckets = math_ops.add(buckets, self._table.size())
            known = math_ops.not_equal(ids, self._table.default_value)
            return array_ops.where_v2(known, ids, buckets)


StaticVocabularyTableV1 = StaticVocabularyTable


class MutableHashTable(_Table):
    """A table changed by insert and remove; missing keys give `default_value`."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable"):
        super().__init__("MutableHashTableV2", key_dtype, value_dtype, default_value, name)

    def insert(self, keys, values, name=None) -> ops.Operation:
        with ops.name_scope(name, f"{self.name}_lookup_table_insert", [keys, values]):
            keys = ops.convert_to_tensor(keys, self.key_dtype, name="keys")
            values = ops.convert_to_tensor(values, self.value_dtype, name="values")
            return apply_op("LookupTableInsertV2", table_handle=self.resource_handle,
                            keys=keys, values=values)

    def remove(self, keys, name=None) -> ops.Operation:
        with ops.name_scope(name, f"{self.name}_lookup_table_remove", [keys]):
            keys = ops.convert_to_tensor(keys, self.key_dtype, name="keys")
            return apply_op("LookupTableRemoveV2", table_handle=self.resource_handle,
                            keys=keys)


def tables_initializer(name: str = "init_all_tables") -> ops.Operation:
    """One op running every table initializer of the default graph (a no-op if none)."""
    initializers = ops.get_collection(GraphKeys.TABLE_INITIALIZERS)
    if initializers:
        return array_ops.group(*initializers, name=name)
    return array_ops.no_op(name=name)


initialize_all_tables = tables_initializer

__all__ = ["KeyValueTensorInitializer", "MutableHashTable", "StaticHashTable",
           "StaticVocabularyTable", "TextFileIndex", "TextFileInitializer",
           "tables_initializer"]
