"""Writes lookup_tf.json: TF 2.21's lookup-table OpDefs, and what its tables answer in a
v1 graph session: StaticHashTable from tensors and from text files (whole line, line
number, columns, vocab_size, offset), StaticVocabularyTable with OOV buckets (string and
int64 keys), MutableHashTable insert/remove/size/export, the v1 ref ops, and the errors
(uninitialized, initialized twice, duplicate keys, wrong default shape, short file).
Run with TF 2.21: /work/peers-venv/bin/python tests/data/make_lookup_tf.py"""

import json
import os
import tempfile
from pathlib import Path

from tf_error_text import error_record

OPS = ["HashTableV2", "MutableHashTableV2", "LookupTableFindV2", "LookupTableInsertV2",
       "LookupTableRemoveV2", "LookupTableImportV2", "LookupTableSizeV2",
       "LookupTableExportV2", "InitializeTableV2", "InitializeTableFromTextFileV2",
       "HashTable", "MutableHashTable", "LookupTableFind", "LookupTableInsert",
       "LookupTableImport", "LookupTableSize", "LookupTableExport", "InitializeTable",
       "InitializeTableFromTextFile"]
VOCAB = "apple\t10\tred\nbanana\t20\tyellow\ncherry\t30\tred\n"
KEYS = ["banana", "kiwi", "apple", "", "cherry"]


def plain(value):
    """Fetched values as JSON: nested lists, bytes as latin-1 text."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        value = value.tolist()
        return plain(value) if isinstance(value, list) else plain(value)
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def main():
    import tensorflow as tf
    from tensorflow.python.framework import op_def_registry

    v1 = tf.compat.v1
    v1.disable_eager_execution()
    out = {"opdefs": {n: str(op_def_registry.get(n)) for n in OPS}, "vocab": VOCAB,
           "keys": KEYS}
    folder = tempfile.mkdtemp()
    vocab = os.path.join(folder, "vocab.txt")
    with open(vocab, "w") as f:
        f.write(VOCAB)

    def run(build, init=True):
        try:
            with tf.Graph().as_default():
                fetch = build(vocab)
                with v1.Session() as sess:
                    if init:
                        sess.run(v1.tables_initializer())
                    got = sess.run(fetch)
            return {"value": plain(got)}
        except Exception as e:  # noqa: BLE001 - the error is the fixture
            record = error_record(e)
            record["message"] = record["message"].replace(vocab, "{vocab}")
            return record

    L = tf.lookup
    cases = {}
    cases["static_str_int"] = run(lambda _: L.StaticHashTable(
        L.KeyValueTensorInitializer(["apple", "banana", "cherry"],
                                    tf.constant([1, 2, 3], tf.int64)), -1).lookup(
        tf.constant(KEYS)))
    cases["static_int_str_2d"] = run(lambda _: L.StaticHashTable(
        L.KeyValueTensorInitializer(tf.constant([3, 1], tf.int64), ["three", "one"]),
        "?").lookup(tf.constant([[1, 2], [3, 3]], tf.int64)))
    cases["static_size_export"] = run(lambda _: (lambda t: [t.size(), t.lookup(
        tf.constant(["a"]))])(L.StaticHashTable(L.KeyValueTensorInitializer(
            ["a", "b"], [1.5, 2.5]), 0.0)))
    cases["text_line_number"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.string, L.TextFileIndex.WHOLE_LINE, tf.int64, L.TextFileIndex.LINE_NUMBER),
        -1).lookup(tf.constant(["banana\t20\tyellow", "apple"])))
    cases["text_columns"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.string, 0, tf.int64, 1), -1).lookup(tf.constant(KEYS)))
    cases["text_string_values"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.string, 0, tf.string, 2), "none").lookup(tf.constant(KEYS)))
    cases["text_int_keys"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.int64, 1, tf.string, 0), "none").lookup(tf.constant([20, 5, 30], tf.int64)))
    cases["text_vocab_size"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.string, 0, tf.int64, L.TextFileIndex.LINE_NUMBER, vocab_size=2), -1).lookup(
        tf.constant(KEYS)))
    cases["text_vocab_size_too_big"] = run(lambda p: L.StaticHashTable(
        L.TextFileInitializer(p, tf.string, 0, tf.int64, L.TextFileIndex.LINE_NUMBER,
                              vocab_size=5), -1).lookup(tf.constant(KEYS)))
    cases["text_bad_column"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.string, 0, tf.int64, 4), -1).lookup(tf.constant(KEYS)))
    cases["text_not_int"] = run(lambda p: L.StaticHashTable(L.TextFileInitializer(
        p, tf.string, 0, tf.int64, 2), -1).lookup(tf.constant(KEYS)))
    cases["vocab_oov_str"] = run(lambda p: L.StaticVocabularyTable(L.TextFileInitializer(
        p, tf.string, 0, tf.int64, L.TextFileIndex.LINE_NUMBER), 3).lookup(
        tf.constant(KEYS + ["zebra", "mango"])))
    cases["vocab_oov_int"] = run(lambda _: L.StaticVocabularyTable(
        L.KeyValueTensorInitializer(tf.constant([7, 9], tf.int64),
                                    tf.constant([0, 1], tf.int64)), 4).lookup(
        tf.constant([9, 7, 100, -5, 123456789], tf.int64)))

    def mutable(_):
        t = L.experimental.MutableHashTable(tf.string, tf.int64, -1)
        ins = t.insert(tf.constant(["a", "b", "c"]), tf.constant([1, 2, 3], tf.int64))
        with tf.control_dependencies([ins]):
            rem = t.remove(tf.constant(["b", "zz"]))
        with tf.control_dependencies([rem]):
            keys, values = t.export()  # (in no particular order: the test sorts them)
            return [t.lookup(tf.constant(["a", "b", "c", "d"])), t.size(), keys, values]
    cases["mutable"] = run(mutable, init=False)
    cases["uninitialized"] = run(lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        ["a"], tf.constant([1], tf.int64)), -1).lookup(tf.constant(["a"])), init=False)

    def twice(same):
        def build(_):
            t = L.StaticHashTable(L.KeyValueTensorInitializer(
                ["a", "b"], tf.constant([1, 2], tf.int64)), -1)
            again = tf.raw_ops.InitializeTableV2(
                table_handle=t.resource_handle, keys=tf.constant(["a", "b"]),
                values=tf.constant([1, 2] if same else [1, 5], tf.int64))
            with tf.control_dependencies([again]):
                return t.lookup(tf.constant(["b"]))
        return build
    cases["init_twice_same"] = run(twice(True))
    cases["init_twice_different"] = run(twice(False))
    cases["duplicate_keys"] = run(lambda _: L.StaticHashTable(L.KeyValueTensorInitializer(
        ["a", "a"], tf.constant([1, 2], tf.int64)), -1).lookup(tf.constant(["a"])))
    cases["duplicate_keys_same_value"] = run(lambda _: L.StaticHashTable(
        L.KeyValueTensorInitializer(["a", "a"], tf.constant([1, 1], tf.int64)), -1).lookup(
        tf.constant(["a"])))

    def wrong_default(_):
        t = L.StaticHashTable(L.KeyValueTensorInitializer(
            ["a"], tf.constant([1], tf.int64)), -1)
        return tf.raw_ops.LookupTableFindV2(table_handle=t.resource_handle,
                                            keys=tf.constant(["a"]),
                                            default_value=tf.constant([1, 2], tf.int64))
    cases["wrong_default_shape"] = run(wrong_default)

    def size_mismatch(_):
        t = tf.raw_ops.HashTableV2(key_dtype=tf.string, value_dtype=tf.int64)
        init = tf.raw_ops.InitializeTableV2(table_handle=t, keys=tf.constant(["a", "b"]),
                                            values=tf.constant([1], tf.int64))
        with tf.control_dependencies([init]):
            return tf.raw_ops.LookupTableSizeV2(table_handle=t)
    cases["size_mismatch"] = run(size_mismatch, init=False)

    def v1_ops(_):
        t = tf.raw_ops.HashTable(key_dtype=tf.string, value_dtype=tf.int64)
        init = tf.raw_ops.InitializeTable(table_handle=t, keys=tf.constant(["x", "y"]),
                                          values=tf.constant([4, 5], tf.int64))
        with tf.control_dependencies([init]):
            return [tf.raw_ops.LookupTableFind(table_handle=t, keys=tf.constant(["y", "q"]),
                                               default_value=tf.constant(0, tf.int64)),
                    tf.raw_ops.LookupTableSize(table_handle=t)]
    cases["v1_ops"] = run(v1_ops, init=False)
    out["cases"] = cases
    path = Path(__file__).with_name("lookup_tf.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
