"""OpDefs of TF's lookup-table ops (tensorflow/core/ops/lookup_ops.cc): the resource
tables (HashTableV2, initialized once; MutableHashTableV2) with find, insert, remove,
import, export, size and the two initializers (from tensors, from a text file), and the
TF 1 ref-handle versions imported graphs carry.

Spelled as TF 2.21's OpDefs (tests/test_lookup.py compares them field by field with
tests/data/lookup_tf.json, written by TensorFlow)."""

from __future__ import annotations

from aioflow.framework import common_shapes as cs
from aioflow.framework.op_def_registry import register_op
from aioflow.framework.tensor_shape import TensorShape

_TABLE_ATTRS = ("container: string = ''", "shared_name: string = ''",
                "use_node_name_sharing: bool = false", "key_dtype: type", "value_dtype: type")


def _find(op) -> list[TensorShape]:
    """A table of scalars: one value per key."""
    return [op.inputs[1].shape]


def _initialize(op) -> list[TensorShape]:
    """Keys and values: vectors of one length (TF's shape-function error otherwise)."""
    keys, values = op.inputs[1].shape, op.inputs[2].shape
    for t in (keys, values):
        if t.rank is not None and t.rank != 1:
            raise ValueError(f"Shape must be rank 1 but is rank {t.rank} for '{op.name}' "
                             f"({op.type})")
    if keys.rank and values.rank:
        a, b = keys.as_list()[0], values.as_list()[0]
        if a is not None and b is not None and a != b:
            raise ValueError(f"Dimension 0 in both shapes must be equal, but are {a} and {b}. "
                             f"Shapes are [{a}] and [{b}]. for '{op.name}' ({op.type})")
    return []


def _export(op) -> list[TensorShape]:
    return [TensorShape([None]), TensorShape([None])]


def _table(name: str, handle: str) -> None:
    builder = register_op(name).output(f"table_handle: {handle}").set_is_stateful()
    for spec in _TABLE_ATTRS:
        builder.attr(spec)
    builder.set_shape_fn(cs.scalar if handle == "resource" else lambda op: [TensorShape([2])])


for _name, _handle, _suffix in (("V2", "resource", "V2"), ("", "Ref(string)", "")):
    _table(f"HashTable{_name}", _handle)
    _table(f"MutableHashTable{_name}", _handle)
    _stateful = _suffix == "V2"  # (TF's ref-handle ops are not marked stateful)

    def _op(name: str, stateful: bool = _stateful):
        builder = register_op(name)
        return builder.set_is_stateful() if stateful else builder

    (_op(f"LookupTableFind{_suffix}").input(f"table_handle: {_handle}").input("keys: Tin")
        .input("default_value: Tout").output("values: Tout").attr("Tin: type")
        .attr("Tout: type").set_shape_fn(_find))
    (_op(f"LookupTableInsert{_suffix}").input(f"table_handle: {_handle}").input("keys: Tin")
        .input("values: Tout").attr("Tin: type").attr("Tout: type")
        .set_shape_fn(cs.no_outputs))
    (_op(f"LookupTableImport{_suffix}").input(f"table_handle: {_handle}").input("keys: Tin")
        .input("values: Tout").attr("Tin: type").attr("Tout: type")
        .set_shape_fn(cs.no_outputs))
    (_op(f"LookupTableSize{_suffix}").input(f"table_handle: {_handle}").output("size: int64")
        .set_shape_fn(cs.scalar))
    (_op(f"LookupTableExport{_suffix}").input(f"table_handle: {_handle}")
        .output("keys: Tkeys").output("values: Tvalues").attr("Tkeys: type")
        .attr("Tvalues: type").set_shape_fn(_export))
    (_op(f"InitializeTable{_suffix}").input(f"table_handle: {_handle}").input("keys: Tkey")
        .input("values: Tval").attr("Tkey: type").attr("Tval: type")
        .set_shape_fn(_initialize))
    (_op(f"InitializeTableFromTextFile{_suffix}").input(f"table_handle: {_handle}")
        .input("filename: string").attr("key_index: int >= -2")
        .attr("value_index: int >= -2").attr("vocab_size: int >= -1 = -1")
        .attr("delimiter: string = '\\t'").attr("offset: int = 0")
        .set_shape_fn(cs.no_outputs))
(register_op("LookupTableRemoveV2").input("table_handle: resource").input("keys: Tin")
    .attr("Tin: type").set_is_stateful().set_shape_fn(cs.no_outputs))
