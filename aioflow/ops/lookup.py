"""The `af.lookup` namespace: TF's `tf.lookup` names (tables and their initializers; see
aioflow/ops/lookup_ops.py). `af.lookup.experimental.MutableHashTable` as TF's."""

import types

from aioflow.ops.lookup_ops import (
    KeyValueTensorInitializer,
    MutableHashTable,
    StaticHashTable,
    StaticVocabularyTable,
    TextFileIndex,
    TextFileInitializer,
)

experimental = types.SimpleNamespace(MutableHashTable=MutableHashTable)

__all__ = ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable",
           "TextFileIndex", "TextFileInitializer", "experimental"]
